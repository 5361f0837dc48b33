"""What a problem's tests and its custom-input test share, validated the same way wherever they are
declared (schema.py TestCase, custom_test.py CustomTest): the checker, its options, the body."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from grader.grading import checkers


class NestedError(ValueError):
    """An error inside a field that a validator checks itself (a checker's options): where in the field,
    so that the problem's loader can name the line of the very value."""

    def __init__(self, loc: tuple[str | int, ...], message: str) -> None:
        super().__init__(f"{'.'.join(map(str, loc))}: {message}")
        self.loc = loc
        self.message = message


def known_checker(name: str) -> str:
    if name not in checkers.names():
        raise ValueError(f"unknown checker {name!r}; known: {', '.join(checkers.names())}")
    return name


def parsed_check(name: str, check: dict[str, Any]) -> dict[str, Any]:
    """The checker's options per returned key, parsed; NestedError naming the key and the option."""
    parsed = {}
    for key, options in check.items():
        try:
            parsed.update(checkers.get(name).parse({key: options}))
        except ValidationError as exc:
            first = exc.errors()[0]
            raise NestedError((key, *first.get("loc", ())), f"{first.get('msg')} ({name} checker)") from None
    return parsed


def compiled_body(code: str) -> str:
    """A test's code, which must compile as the body of a function."""
    body = "".join("    " + line + "\n" for line in code.splitlines())
    try:
        compile("def __test__():\n" + body, "<test>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise ValueError(f"test code does not compile: line {(exc.lineno or 2) - 1}: {exc.msg}") from exc
    return code


def forbiddable(names: list[str]) -> list[str]:
    """A problem's forbid/require names: dotted names of a function of a torch module. Never a class or a class's
    method (torch.Tensor.detach), nor NumPy's or Python's: the judge's own code in the sandbox seeds, encodes and
    compares with those, and a rule on them would refuse a correct solution."""
    for name in names:
        parts = name.split(".")
        if len(name) > 200 or len(parts) < 2 or not all(part.isidentifier() for part in parts):
            raise ValueError(f"{name[:80]!r} is not a dotted name of a module's attribute (torch.nn.functional.relu)")
        if parts[0] != "torch" or any(part[:1].isupper() for part in parts):
            raise ValueError(
                f"{name[:80]!r}: only a function of a torch module can be named (torch.nn.functional.layer_norm), "
                "not a class, a method or another library's"
            )
    return names
