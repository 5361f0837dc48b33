"""The requests the service sends a judge process (grading/isolated.py -> isolated_worker.py): JSON, with the
bytes a sandbox returned carried beside it, never inside a format that can build objects (no pickle).

A request is: u32 length of a JSON document | the document | the byte strings it names, one after another.
In the document every dict is {"$d": [[key, value], ...]} (keys of any JSON type, none of them taken as a
tag), a byte string {"$b": n} (the n-th, with its length in the document's "sizes"), and the three types a
request holds by name: a test's header ({"$h": ...}), a test's result ({"$r": ...}) and a problem's judging
spec ({"$s": ...}); lists and tuples are lists. Anything else cannot be sent (TypeError)."""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel

from grader.containers.protocol import TestHeader
from grader.grading import checkers
from grader.grading.verdict import TestResult

LENGTH = struct.Struct(">I")


@dataclass(frozen=True)
class RuleSpec:
    """What judging needs of one test."""

    name: str
    visible: bool
    weight: float
    checker: str
    check: Mapping[str, Any]


@dataclass(frozen=True)
class PitfallSpec:
    name: str
    hint: str
    code: str = ""


@dataclass(frozen=True)
class JudgeSpec:
    """What judging needs of a problem (the parts of grading/model.py ProblemSpec it reads): no code."""

    id: str
    version: str
    tests: tuple[RuleSpec, ...]
    pitfalls: tuple[PitfallSpec, ...]

    @classmethod
    def of(cls, problem: Any) -> JudgeSpec:
        return cls(
            id=problem.id,
            version=problem.version,
            tests=tuple(
                RuleSpec(test.name, test.visible, float(test.weight), test.checker, _plain_check(test.check))
                for test in problem.tests
            ),
            pitfalls=tuple(PitfallSpec(pitfall.name, pitfall.hint) for pitfall in problem.pitfalls),
        )

    def parsed(self) -> JudgeSpec:
        """Each test's options validated (and expressions compiled) once, here."""
        tests = tuple(replace(test, check=checkers.get(test.checker).parse(test.check)) for test in self.tests)
        return replace(self, tests=tests)


def _plain_check(check: Mapping[str, Any]) -> dict[str, Any]:
    return {
        key: value.model_dump(exclude_none=True) if isinstance(value, BaseModel) else value
        for key, value in check.items()
    }


def encode(value: Any) -> bytes:
    blobs: list[bytes] = []
    tree = _tree(value, blobs)
    document = json.dumps({"v": tree, "sizes": [len(blob) for blob in blobs]}, separators=(",", ":")).encode()
    return LENGTH.pack(len(document)) + document + b"".join(blobs)


def decode(raw: bytes) -> Any:
    (length,) = LENGTH.unpack_from(raw)
    document = json.loads(raw[LENGTH.size : LENGTH.size + length])
    blobs, offset = [], LENGTH.size + length
    for size in document["sizes"]:
        blobs.append(raw[offset : offset + size])
        offset += size
    return _value(document["v"], blobs)


def _tree(value: Any, blobs: list[bytes]) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        blobs.append(bytes(value))
        return {"$b": len(blobs) - 1}
    if isinstance(value, (list, tuple)):
        return [_tree(item, blobs) for item in value]
    if isinstance(value, dict):
        return {"$d": [[_tree(key, blobs), _tree(item, blobs)] for key, item in value.items()]}
    if isinstance(value, TestHeader):
        return {"$h": value.model_dump(mode="json")}
    if isinstance(value, TestResult):
        return {"$r": value.model_dump(mode="json")}
    if isinstance(value, JudgeSpec):
        tests = [[t.name, t.visible, t.weight, t.checker, _tree(dict(t.check), blobs)] for t in value.tests]
        pitfalls = [[p.name, p.hint, p.code] for p in value.pitfalls]
        return {"$s": [value.id, value.version, tests, pitfalls]}
    raise TypeError(f"a judge request cannot carry {type(value).__name__}")


def _value(tree: Any, blobs: list[bytes]) -> Any:
    if isinstance(tree, list):
        return [_value(item, blobs) for item in tree]
    if not isinstance(tree, dict):
        return tree
    ((tag, body),) = tree.items()
    if tag == "$b":
        return blobs[body]
    if tag == "$d":
        return {_hashable(_value(key, blobs)): _value(item, blobs) for key, item in body}
    if tag == "$h":
        return TestHeader.model_validate(body)
    if tag == "$r":
        return TestResult.model_validate(body)
    if tag == "$s":
        spec_id, version, tests, pitfalls = body
        return JudgeSpec(
            spec_id,
            version,
            tuple(RuleSpec(n, v, w, c, _value(check, blobs)) for n, v, w, c, check in tests),
            tuple(PitfallSpec(n, h, code) for n, h, code in pitfalls),
        )
    raise ValueError(f"not a judge request: {tag[:20]!r}")


def _hashable(key: Any) -> Any:
    return tuple(key) if isinstance(key, list) else key
