"""A test's code compiled once per container by the runner (sandbox/runner/testcode.py), read by the child."""

from __future__ import annotations

import marshal
import traceback

from sandbox.runner.testcode import TestCodes, compile_test


def _run(code: object) -> list[int]:
    namespace: dict = {}
    exec(code, namespace)  # noqa: S102 - the test's own code
    try:
        namespace["__test__"]()
    except ZeroDivisionError as exc:
        return [frame.lineno for frame in traceback.extract_tb(exc.__traceback__)[1:]]
    raise AssertionError("the test did not fail")


def test_a_compiled_test_keeps_its_own_line_numbers_through_marshal() -> None:
    code = "x = 1\ndef inner():\n    return 1 / 0\nreturn inner()\n"
    assert _run(compile_test(code, "<test 3>")) == [4, 3]
    kept = TestCodes().get(code, 2)
    loaded = marshal.loads(kept)
    assert loaded.co_filename == "<test 3>"
    assert _run(loaded) == [4, 3]


def test_each_test_is_compiled_once_and_what_is_kept_is_bounded() -> None:
    codes = TestCodes(max_bytes=4000)
    first = codes.get("return 1", 0)
    assert codes.get("return 1", 0) is first  # kept: not compiled again
    assert codes.get("return 1", 1) != first  # its index is in its file name
    for number in range(200):
        codes.get(f"return {number}", 0)
    assert codes.size <= 4000 and len(codes.kept) < 200
    assert ("return 199", 0) in codes.kept and ("return 1", 0) not in codes.kept  # the least recently used went


def test_code_that_does_not_compile_is_left_to_the_child() -> None:
    codes = TestCodes()
    assert codes.get("return (", 0) == b""
    assert codes.get("x = " + "(" * 500 + ")" * 500, 0) in (b"", codes.get("x = " + "(" * 500 + ")" * 500, 0))
    assert codes.kept.get(("return (", 0)) is None
