"""What a test job's child does once confined (child_main.py): load the submission, then run the tests the
runner sends, one at a time, answering each with one frame.

The child is where untrusted code runs. Nothing it writes is believed by the trusted side beyond the
shape of the data: the runner keeps its own clock, and the grader decodes every result strictly.
"""

from __future__ import annotations

import builtins
import errno
import linecache
import marshal
import math
import os
import random
import sys
import traceback
import types
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from . import protocol, torchstate, values
from .child_job import ChildJob
from .messages import Report, TestCommand
from .protocol import Outcome
from .testcode import compile_test, test_filename

SUBMISSION_FILE = "submission.py"
HELPERS_FILE = "<helpers>"
ALLOCATION_FAILURES = ("can't allocate memory", "not enough memory", "out of memory")
EXIT_BAD_JOB = 3
EXIT_NOT_CONFINED = 4


def _safe_text(produce, limit: int) -> str:  # type: ignore[no-untyped-def]
    """Renders a message from an untrusted object; a hostile __str__ cannot take the child down."""
    try:
        text = produce()
        if type(text) is not str:
            text = "<unprintable>"
        return protocol.bounded_text(text, limit)
    except BaseException:  # noqa: BLE001 - the object is hostile by assumption
        return "<unprintable>"


def _describe(exc: BaseException, status: Outcome) -> Report:
    kind = type(exc)
    name = _safe_text(lambda: kind.__name__, protocol.MAX_ERROR_TYPE)
    message = _safe_text(lambda: str(exc), protocol.MAX_MESSAGE)
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == SUBMISSION_FILE:
            line = tb.tb_lineno
        tb = tb.tb_next
    trace = _safe_text(lambda: _user_traceback(exc), protocol.MAX_TRACEBACK)
    return Report(status, error_type=name, message=message, line=line, traceback=trace)


def _user_traceback(exc: BaseException) -> str:
    """The traceback as the author of the code sees it: only frames of the submission and the test."""
    frames_seen = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if frame.filename in (SUBMISSION_FILE, HELPERS_FILE) or frame.filename.startswith("<test ")
    ]
    lines = ["Traceback (most recent call last):\n", *traceback.format_list(frames_seen)]
    lines.extend(traceback.format_exception_only(type(exc), exc))
    return "".join(lines)


def _is_memory_failure(exc: BaseException) -> bool:
    if isinstance(exc, MemoryError):
        return True
    if isinstance(exc, OSError) and exc.errno == errno.ENOMEM:  # mmap and friends past the limit
        return True
    if isinstance(exc, RuntimeError):
        text = _safe_text(lambda: str(exc), 1000).lower()
        return any(marker in text for marker in ALLOCATION_FAILURES)
    return False


def _failure(exc: BaseException) -> Report:
    return _describe(exc, Outcome.MEMORY if _is_memory_failure(exc) else Outcome.ERROR)


def _flush_output() -> None:
    """What the code printed reaches the runner before the frame that ends its test or its loading."""
    for stream in {id(s): s for s in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__)}.values():
        try:
            stream.flush()  # type: ignore[union-attr]
        except BaseException:  # noqa: BLE001 - a replaced stream may be anything
            pass


def _send(res_w: int, kind: bytes, header: dict, body: bytes = b"") -> None:
    """A frame to the runner."""
    _flush_output()
    protocol.write_all(res_w, protocol.encode(kind, header, body))


def _test_globals(entry_points: dict) -> dict:
    namespace = {
        "__builtins__": builtins,
        "__name__": "__test__",
        "torch": torch,
        "nn": nn,
        "F": F,
        "math": math,
        "np": np,
    }
    namespace.update(entry_points)
    return namespace


def _exception_text(exc: BaseException) -> str:
    return _safe_text(lambda: f"{type(exc).__name__}: {exc}", protocol.MAX_MESSAGE)


def _syntax_error(exc: SyntaxError) -> Report:
    line = exc.lineno if isinstance(exc.lineno, int) and 0 <= exc.lineno <= protocol.MAX_LINE else None
    where = f"line {line}: " if line else ""
    message = _safe_text(lambda: f"{where}{type(exc).__name__}: {exc.msg}", protocol.MAX_MESSAGE)
    return Report(Outcome.COMPILE_ERROR, message=message, line=line)


def load_submission(source: str, entry_point_names: tuple[str, ...] | list[str]) -> tuple[dict, Report | None]:
    """Runs the submission's module; returns (entry points, None) or ({}, a load outcome that is not ok)."""
    linecache.cache[SUBMISSION_FILE] = (len(source), None, source.splitlines(True), SUBMISSION_FILE)
    try:
        code = compile(source, SUBMISSION_FILE, "exec", dont_inherit=True)
    except SyntaxError as exc:
        return {}, _syntax_error(exc)
    except (ValueError, MemoryError, RecursionError) as exc:
        return {}, Report(Outcome.COMPILE_ERROR, message=_exception_text(exc))
    module = types.ModuleType("submission")
    module.__file__ = SUBMISSION_FILE
    sys.modules["submission"] = module
    try:
        exec(code, module.__dict__)
    except BaseException as exc:  # noqa: BLE001 - SystemExit at import is the submission's error too
        return {}, _failure(exc)
    entry_points = {}
    for name in entry_point_names:
        function = module.__dict__.get(name)
        if function is None:
            return {}, Report(Outcome.COMPILE_ERROR, message=f"missing function: {name}")
        if not callable(function):
            message = f"{name} is defined but is not a function"
            return {}, Report(Outcome.COMPILE_ERROR, message=message)
        entry_points[name] = function
    return entry_points, None


def run_test(
    index: int,
    seed: int,
    code: str,
    entry_points: dict,
    max_result: int,
    helpers: str = "",
    settings: dict | None = None,
    compiled: types.CodeType | None = None,
    learner: torchstate.LearnerSettings | None = None,
) -> tuple[Report, bytes]:
    """Runs one test's code (`compiled`: as the runner compiled it, testcode.py); once it is done, nothing of
    the test is left for the submission to read: no source lines in linecache, no namespace holding the test
    function (emptied, so that a reference the submission kept to it finds nothing), no syntax tree.
    `settings`: torch's process-wide settings as the judge has them (torchstate.py), put back before the test
    (what the submission's import or an earlier test set is gone) and after it; `learner`: the settings the
    submission's import left, in force while its own code runs (torchstate.LearnerSettings)."""
    filename = test_filename(index)
    namespace = _test_globals(entry_points)
    try:
        # The lines as compiled (indented into __test__): a traceback's carets are placed by the compiled
        # columns, and its lines are shown stripped, so the test's own lines show as written.
        lines = ["    " + line for line in code.splitlines(True)]
        linecache.cache[filename] = (len(code), None, lines, filename)
        exec(compiled if compiled is not None else compile_test(code, filename), namespace)
        # The CPU generator, which is all there is here (torch.manual_seed would also queue a seeding of
        # every accelerator backend, on every test: docs/BENCHMARKS.md, "Costs behind the code").
        torch.default_generator.manual_seed(seed)
        random.seed(seed)
        np.random.seed(seed % 2**32)
        try:
            if settings is not None:
                torchstate.restore(settings)
            if helpers:  # the problem's shared code, in the test's namespace, after the seeds (it may draw)
                linecache.cache[HELPERS_FILE] = (len(helpers), None, helpers.splitlines(True), HELPERS_FILE)
                exec(_helpers_code(helpers), namespace)
            if learner:
                learner.begin()
            try:
                with torch.inference_mode(False):  # a submission may have entered inference mode and stayed there
                    result = namespace["__test__"]()
            finally:
                if learner:
                    learner.end()
        except BaseException as exc:  # noqa: BLE001 - sys.exit() inside a test is a runtime error
            outcome, value = _failure(exc), b""
        else:
            outcome, value = _encode_result(result, max_result)
    finally:
        linecache.cache.pop(filename, None)
        namespace.clear()
        left = _restore_quietly(settings) if settings is not None else []
    if left:  # what the test's code (or the module it called) left changed: the problem check names it
        outcome.settings_changed = left
    return outcome, value


_helpers_compiled: dict[str, types.CodeType] = {}


def _helpers_code(helpers: str) -> types.CodeType:
    """The problem's helpers compiled once per child (every test of its job runs the same)."""
    code = _helpers_compiled.get(helpers)
    if code is None:
        _helpers_compiled.clear()
        code = _helpers_compiled[helpers] = compile(helpers, HELPERS_FILE, "exec", dont_inherit=True)
    return code


def _learner_settings(judge: dict) -> torchstate.LearnerSettings:
    """What the submission's import left set (none where it broke a getter: its calls find what they find)."""
    try:
        return torchstate.LearnerSettings(judge, torchstate.snapshot(), SUBMISSION_FILE)
    except BaseException:  # noqa: BLE001 - a getter the submission broke
        return torchstate.LearnerSettings(judge, judge, SUBMISSION_FILE)


def _restore_quietly(settings: dict) -> list[str]:
    try:
        return torchstate.restore(settings)
    except BaseException:  # noqa: BLE001 - a submission may have broken torch's setters: the next test says so
        return []


def _encode_result(result: object, max_result: int, encode: Callable = values.encode_value) -> tuple[Report, Any]:
    """A returned value encoded by `encode` (values.encode_value: bytes; encode_parts: parts), or why not."""
    try:
        return Report(Outcome.OK), encode(result, max_result)
    except values.TooLarge as exc:
        return Report(Outcome.OUTPUT, message=f"the returned value is larger than {max_result} bytes ({exc})"), b""
    except values.Unencodable as exc:
        return Report(Outcome.ERROR, error_type="UnsupportedResult", message=str(exc)), b""
    except BaseException as exc:  # noqa: BLE001 - a hostile value can raise anything while read
        return _failure(exc), b""


# Run once by each child before its job comes: the first touches of torch's, numpy's and the judge's own
# code paths after a fork copy pages and fill caches; done here, the submission's first test does not pay.
WARM_UP_TEST = """x = torch.randn(4, 3)
layer, table = nn.Linear(3, 2), nn.Embedding(5, 3)
with torch.no_grad():
    table.weight.copy_(torch.tensor([[0.5, -1.0, 2.0]] * 5))
y = F.relu(layer(x + table(torch.tensor([1, 2, 3, 4])) * math.sqrt(3))).sum(dim=0) * 2 + 1
return {"out": y, "n": [1, 2.5, "s", None, True], "v": y.max().item(), "r": float(np.random.rand(2).sum())}
"""


def warm_up() -> None:
    """Our own code, before any job: nothing of a submission or a test is in this process yet. The
    random states are put back, so what a submission draws at load is what it would draw without it."""
    states = torch.random.get_rng_state(), random.getstate(), np.random.get_state()
    try:
        run_test(0, 0, WARM_UP_TEST, {}, 1 << 20)
    finally:
        torch.random.set_rng_state(states[0])
        random.setstate(states[1])
        np.random.set_state(states[2])


def serve_tests(cmd_r: int, res_w: int, job: ChildJob, settings: dict) -> None:
    """Never returns: a test job's child (child_main.py), confined: loads the submission, then runs each test the
    runner sends. `settings`: the judge's own torch settings, read before the job came."""
    entry_points, failure = load_submission(job.source, job.entry_points)
    helpers, max_result = job.helpers, job.max_result_bytes
    del job
    loaded = failure or Report(Outcome.OK)
    loaded.settings_changed = torchstate.changed(settings)  # by the module's import; put back before the first test
    learner = _learner_settings(settings)
    entry_points = {name: learner.wrapped(function) for name, function in entry_points.items()}
    _send(res_w, protocol.CHILD_LOAD, loaded.header())
    if failure is not None:
        os._exit(0)
    while True:
        try:
            kind, header, body = protocol.read_frame(cmd_r, max_body=protocol.MAX_JOB_BYTES)
            command = TestCommand.parse(header)
            code = body[: command.code_bytes].decode()
            compiled = marshal.loads(body[command.code_bytes :]) if len(body) > command.code_bytes else None
        except (EOFError, protocol.FrameError, OSError, ValueError, TypeError):
            os._exit(0)
        if compiled is not None and type(compiled) is not types.CodeType:
            os._exit(0)
        del body
        report, value = run_test(
            command.index, command.seed, code, entry_points, max_result, helpers, settings, compiled, learner
        )
        del code, compiled
        report.index = command.index
        _send(res_w, protocol.CHILD_RESULT, report.header(), value)
