"""The service's requests to a judge process: JSON with the returned bytes beside it, decoded without building
any object a request names by itself; and nothing on the trusted side deserialises with pickle or torch.load."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from grader.containers.protocol import Outcome, TestHeader
from grader.grading import judge_wire
from grader.grading.judge_wire import JudgeSpec, PitfallSpec, RuleSpec
from grader.grading.verdict import TestResult, TestStatus

GRADER = Path(__file__).resolve().parents[2] / "grader"


def test_a_hint_request_comes_back_as_it_was_sent() -> None:
    header = TestHeader(index=2, status=Outcome.OK, time_ms=1.5)
    result = TestResult(index=2, name="t", status=TestStatus.FAILED, visible=True)
    request = ("hint", b"\x00digest", None, ([b"ref", None], [[b"\xff" * 3, None]], {2: (header, b"body")}, [result]))
    op, digest, blob, (reference, pitfalls, frames, tests) = judge_wire.decode(judge_wire.encode(request))
    assert (op, digest, blob) == ("hint", b"\x00digest", None)
    assert reference == [b"ref", None] and pitfalls == [[b"\xff\xff\xff", None]]
    ((index, (got_header, body)),) = frames.items()
    assert index == 2 and got_header == header and body == b"body"
    assert tests == [result]


def test_a_spec_comes_back_equal_and_dict_keys_are_never_tags() -> None:
    check = {"$b": 0, "expect": "x * 2", "tolerance": {"rtol": 1e-5, "atol": float("inf")}}
    spec = JudgeSpec("p", "v1", (RuleSpec("t", False, 1.0, "tolerance", check),), (PitfallSpec("n", "h"),))
    again = judge_wire.decode(judge_wire.encode(spec))
    assert again == spec
    assert again.tests[0].check["$b"] == 0


@pytest.mark.parametrize("value", [object(), {1, 2}, TestResult.model_construct, Path("/etc/passwd")])
def test_nothing_else_can_be_sent(value: object) -> None:
    with pytest.raises(TypeError):
        judge_wire.encode(("test", b"", None, (value,)))


def test_an_unknown_tag_is_refused() -> None:
    raw = judge_wire.encode(["x"]).replace(b'"x"', b'{"$p":1}')
    raw = judge_wire.LENGTH.pack(len(raw) - 4) + raw[4:]
    with pytest.raises(ValueError, match="not a judge request"):
        judge_wire.decode(raw)


def test_the_trusted_side_never_deserialises_with_pickle_or_torch_load() -> None:
    refused = {"pickle", "cPickle", "dill", "shelve", "marshal", "joblib", "cloudpickle", "torch.load"}
    found = []
    for path in sorted(GRADER.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module.split(".")[0]]
            elif isinstance(node, ast.Attribute) and node.attr == "load" and getattr(node.value, "id", "") == "torch":
                names = ["torch.load"]
            found += [
                f"{path.relative_to(GRADER)}:{node.lineno} {name}" for name in names if name in refused | {"torch.load"}
            ]
    assert found == []
