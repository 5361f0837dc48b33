"""Author mistakes the check names, each with its file:line and field: what the file says (visible tests
after hidden ones, no visible test) and what the reference's outputs show (a `check` key the test never
returns, a test returning None or something the judge cannot compare, a test the reference fails under
its own `expect`/`holds`)."""

from __future__ import annotations

from typing import Any

from grader.containers.values import Opaque
from grader.grading.judge import compare
from grader.grading.model import ProblemSpec
from grader.problems.check.inside import computed_bools
from grader.problems.check.locate import Locator

# What a type the judge cannot compare is usually meant to be, by the name the sandbox sends.
INSTEAD = {
    "Size": ("torch.Size", "return a tuple or a tensor"),
    "Parameter": ("nn.Parameter", "return the tensor (p.detach())"),
    "dtype": ("torch.dtype", "return str(dtype)"),
    "device": ("torch.device", "return str(device)"),
    "generator": ("a generator", "return a list"),
    "map": ("a map object", "return a list"),
    "range": ("a range", "return a list"),
}
DEFAULT_INSTEAD = "return tensors, numbers, bools, strings, or lists, tuples and dicts of these"
# Opaque values named by what they are, not their type's name alone (sandbox/runner/values.py).
INSTEAD_BY_PREFIX = {
    "tensor of layout": "return it dense (.to_dense()): a layout is not carried, and a sparse value is never compared",
    "nested tensor": "return its parts as a list (.unbind())",
}


def file_findings(problem: ProblemSpec, locate: Locator) -> tuple[list[str], list[str]]:
    """(errors, warnings) about the order and visibility of the tests, and the bools their code computes."""
    errors = _computed_bools(problem, locate)
    tests = problem.tests
    first_hidden = next((i for i, test in enumerate(tests) if not test.visible), None)
    if first_hidden is not None:
        for index in range(first_hidden + 1, len(tests)):
            if tests[index].visible:
                errors.append(
                    locate.error(
                        ("tests", index, "visible"),
                        f"visible test {index + 1} {tests[index].name!r} comes after hidden test {first_hidden + 1}: "
                        "put the visible tests first (a learner sees them in order, numbered before the hidden ones)",
                    )
                )
    warnings = [] if any(test.visible for test in tests) else ["no test is visible: a learner sees no example"]
    return errors, warnings


def _computed_bools(problem: ProblemSpec, locate: Locator) -> list[str]:
    """An error for each value a test returns that is a bool its own code computes (check/inside.py)."""
    errors: list[str] = []
    for index, test in enumerate(problem.tests):
        for found in computed_bools(test.code, problem.helpers):
            what = f"`{found.key}`" if found.key is not None else "a value"
            message = (
                f"test {index + 1} {test.name!r} returns {what}, a bool its code computes (`{found.what}`) beside "
                "the submission, which can replace torch.equal, Tensor.all or == in its own process and make it "
                "True: return the values themselves and decide on the judge's side (compared with the "
                "reference's values, or `check: {key: {holds: [...]}}` / `expect:`)"
            )
            loc = ("tests", index, "code")
            errors.append(locate.error(loc, message, locate.code_line(loc, found.line)))
    return errors


def _opaque(value: Any, path: str) -> tuple[str, str] | None:
    """The path and type name of the first value the judge cannot compare."""
    if isinstance(value, Opaque):
        return path, value.type_name
    items: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        items = [(f"{path}[{key!r}]", item) for key, item in value.items()]
    elif isinstance(value, (list, tuple)):
        items = [(f"{path}[{i}]", item) for i, item in enumerate(value)]
    for child_path, item in items:
        found = _opaque(item, child_path)
        if found is not None:
            return found
    return None


def reference_findings(problem: ProblemSpec, values: list[Any], locate: Locator) -> list[str]:
    """Errors in the tests that the reference's outputs show."""
    errors: list[str] = []
    for index, (test, value) in enumerate(zip(problem.tests, values, strict=True)):
        label = f"test {index + 1} {test.name!r}"
        if value is None:
            message = f"{label} returns None: end its code with `return {{...}}` at the top level"
            errors.append(locate.error(("tests", index, "code"), message))
            continue
        opaque = _opaque(value, "")
        if opaque is not None:
            path, name = opaque
            advice = next((text for prefix, text in INSTEAD_BY_PREFIX.items() if name.startswith(prefix)), None)
            shown, advice = INSTEAD.get(name, (name, advice or DEFAULT_INSTEAD))
            where = f" (at {path})" if path else ""
            message = f"{label} returns {shown}{where}, which the judge cannot compare; {advice}"
            errors.append(locate.error(("tests", index, "code"), message))
            continue
        returned = sorted(value) if isinstance(value, dict) else None
        missing = [key for key in test.check if returned is None or key not in returned]
        for key in missing:
            keys = ", ".join(repr(k) for k in returned[:10]) if returned else "no dict"
            message = (
                f"{label} returns no key {key!r} (it returns {keys}): the check of a key never returned is ignored"
            )
            errors.append(locate.error(("tests", index, "check", key), message))
        if missing:
            continue
        result = compare(problem, index, value, value)
        if not result.passed:
            message = f"the reference fails {label} under its own check: {result.details.get('reason')}"
            errors.append(locate.error(("tests", index, "check"), message))
    return errors
