"""A test's code as the child runs it: the body of a function `__test__`, compiled with the test's own line
numbers. Torch-free, so that the runner compiles each test once per container and keeps it (TestCodes): the
child then reads the compiled code (marshal) instead of compiling it again for every submission."""

from __future__ import annotations

import marshal
import types
from collections import OrderedDict

MAX_KEPT_BYTES = 8 * 1024 * 1024  # what the runner keeps of compiled tests, at most


def compile_test(code: str, filename: str) -> types.CodeType:
    """The test's code as the body of a function `__test__`, its line numbers those of the test's own code
    (the wrapper's `def` line is line 0): every code object in it moved up one line."""
    body = "".join("    " + line + "\n" for line in code.splitlines()) or "    pass\n"
    module = compile("def __test__():\n" + body, filename, "exec", dont_inherit=True)
    return module.replace(co_consts=tuple(_moved_up(const) for const in module.co_consts))


def _moved_up(const: object) -> object:
    if not isinstance(const, types.CodeType):
        return const
    inner = tuple(_moved_up(item) for item in const.co_consts)
    return const.replace(co_firstlineno=const.co_firstlineno - 1, co_consts=inner)


def test_filename(index: int) -> str:
    return f"<test {index + 1}>"


class TestCodes:
    """The runner's compiled tests (marshal bytes), by code and index, the least recently used dropped past
    MAX_KEPT_BYTES. b"" for code that does not compile here: the child compiles it and reports why."""

    def __init__(self, max_bytes: int = MAX_KEPT_BYTES) -> None:
        self.max_bytes = max_bytes
        self.kept: OrderedDict[tuple[str, int], bytes] = OrderedDict()
        self.size = 0

    def get(self, code: str, index: int) -> bytes:
        key = (code, index)
        found = self.kept.get(key)
        if found is not None:
            self.kept.move_to_end(key)
            return found
        try:
            compiled = marshal.dumps(compile_test(code, test_filename(index)))
        except Exception:  # noqa: BLE001 - a syntax error, a nesting too deep: the child's to report
            return b""
        cost = len(compiled) + len(code)
        if cost > self.max_bytes:
            return compiled
        self.kept[key] = compiled
        self.size += cost
        while self.size > self.max_bytes:
            (old_code, _), old = self.kept.popitem(last=False)
            self.size -= len(old) + len(old_code)
        return compiled
