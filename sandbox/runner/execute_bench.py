"""What a benchmark's children do (bench_job.py, timing.py), in two roles.

The inputs' child runs the judge's and the problem's code only: for each call the runner names, it builds that
call's arguments under the call's own seed and sends them, encoded (values.py). No module being timed runs in
it, so none can take part in making the inputs.

A module's child (the subject's, the baseline's) loads its module when told (the load is timed), then makes
the calls the runner asks for, one at a time. A region's inputs are put in the child's shared area (shared.py)
while it is stopped, just before the region is timed; each command names where its call's inputs lie, and they
are decoded into arrays of the call's own inside the timed call. So a module never holds the inputs of a call
before that call's region (it cannot compute a later call's result ahead, in an earlier region, at import or in
the warm-up: ahead within a region is on the same clock). Its value is written into the area, whole, before
the call's result.

The null module's child (the judge's, no code of anyone else's) does the same with a function that does
nothing and returns a value of as many bytes as its command says: the harness's own cost of a call on the same
inputs with a value of the same size, which the runner takes off a module's time.
"""

from __future__ import annotations

import ctypes
import linecache
import os
import random
from collections.abc import Callable

import numpy as np
import torch

from . import protocol, values
from .bench_job import Bench, CallCommand
from .child_job import ChildJob
from .execute import EXIT_BAD_JOB, _encode_result, _failure, _send, _test_globals, load_submission
from .messages import Report
from .protocol import Outcome
from .shared import AreaError, ChildArea
from .testcode import compile_test

INPUTS_FILE = "<inputs>"
HELPERS_FILE = "<helpers>"


class InputsFailed(Exception):
    """The problem's inputs' code failed or returned something that is not a call's arguments."""


def _arguments(value: object) -> dict:
    """A call's arguments from what the inputs' code returned, a list or tuple (positional) or a dict with string
    keys (keyword), as the value that travels: {"args": [...], "kwargs": {...}}."""
    if isinstance(value, (list, tuple)):
        return {"args": list(value), "kwargs": {}}
    if isinstance(value, dict) and all(type(key) is str for key in value):
        return {"args": [], "kwargs": dict(value)}
    raise InputsFailed(f"the inputs' code returned a {type(value).__name__}, not a list or a dict of arguments")


def build_call(bench: Bench, code: object, size: int, call: int) -> dict:
    """One call's arguments, drawn under its own seed (bench.call_seed); InputsFailed."""
    seed = bench.call_seed(size, call)
    torch.default_generator.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    namespace = _test_globals({})
    try:
        if bench.helpers:
            exec(compile(bench.helpers, HELPERS_FILE, "exec", dont_inherit=True), namespace)
        namespace["size"] = bench.sizes[size].scope()
        exec(code, namespace)  # type: ignore[arg-type]
        with torch.no_grad():
            return _arguments(namespace["__test__"]())
    except InputsFailed:
        raise
    except BaseException as exc:  # noqa: BLE001 - the problem's code: whatever it raises is its failure
        report = _failure(exc)
        raise InputsFailed(f"{report.error_type}: {report.message}") from None
    finally:
        namespace.clear()


def _commands(cmd_r: int, bench: Bench):  # type: ignore[no-untyped-def]
    """The runner's call commands, until it stops sending them (then the child ends); each is a few bytes (the
    inputs' child is sent none; a module's child finds a call's inputs in its area)."""
    while True:
        try:
            kind, header, _ = protocol.read_frame(cmd_r, max_body=0)
            if kind != protocol.CHILD_CALL:
                os._exit(0)
            yield CallCommand.parse(header, bench)
        except (EOFError, protocol.FrameError, OSError, ValueError):
            os._exit(0)


def inputs_main(cmd_r: int, res_w: int, job: ChildJob) -> None:
    """The inputs' child: never returns. Each call's arguments, encoded, for each call the runner names."""
    bench = job.bench
    assert isinstance(bench, Bench)
    linecache.cache[INPUTS_FILE] = (len(bench.inputs), None, bench.inputs.splitlines(True), INPUTS_FILE)
    code = compile_test(bench.inputs, INPUTS_FILE)
    _send(res_w, protocol.CHILD_BUILT, Report(Outcome.OK).header())
    for command in _commands(cmd_r, bench):
        try:
            body = values.encode_value(build_call(bench, code, command.size, command.call), job.max_result_bytes)
            report = Report(Outcome.OK, index=command.call)
        except InputsFailed as exc:
            report, body = Report(Outcome.ERROR, error_type="BenchInputs", message=str(exc), index=command.call), b""
        except (values.TooLarge, values.Unencodable) as exc:
            message = f"a call's inputs cannot be sent: {type(exc).__name__} {exc}"
            report, body = Report(Outcome.ERROR, error_type="BenchInputs", message=message, index=command.call), b""
        _send(res_w, protocol.CHILD_RESULT, report.header(), body)


class Ballast:
    """The null module's values: a slice of one buffer (its pages touched once), as many bytes as asked for less
    a manifest's, within the job's cap on a value. The buffer grows to the largest size asked for, once: however
    many sizes a module's values take, the null module holds one buffer and pays for its making once."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.buffer = torch.ones(0, dtype=torch.uint8)

    def __call__(self, value_bytes: int) -> torch.Tensor:
        wanted = max(0, min(value_bytes, self.max_bytes) - 64)
        if wanted > self.buffer.numel():
            self.buffer = torch.ones(wanted, dtype=torch.uint8)
        return self.buffer[:wanted]


def _call(function: object, inputs: Callable[[], object], device: str, max_result: int) -> tuple[Report, list | bytes]:
    """One call on its inputs (decoded here by `inputs` from the area, inside the timed call, each array into one
    of its own, for both modules alike), and its value encoded in parts, views of the value's own arrays
    (values.encode_parts), to be written into the area once the call is done: the runner times all of it."""
    try:
        arguments = inputs()
        args, kwargs = arguments["args"], arguments["kwargs"]
        if device != "cpu":
            args = [item.to(device) if isinstance(item, torch.Tensor) else item for item in args]
            kwargs = {key: item.to(device) if isinstance(item, torch.Tensor) else item for key, item in kwargs.items()}
    except Exception as exc:  # noqa: BLE001 - the judge's bytes: they decode, unless the runner is broken
        return Report(Outcome.ERROR, error_type="BenchInputs", message=f"undecodable inputs: {exc!r}"[:200]), b""
    try:
        with torch.inference_mode(False):
            result = function(*args, **kwargs)  # type: ignore[operator]
            if device == "cuda":
                torch.cuda.synchronize()  # the work queued on the device is part of the call
    except BaseException as exc:  # noqa: BLE001 - the module's error, at this call
        return _failure(exc), b""
    return _encode_result(result, max_result, values.encode_parts)


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters
STEADY_BYTES = 1 << 30


def steady_allocator() -> None:
    """Memory freed stays with the process, to be used again (no block of any size is mapped afresh, none handed
    back): by glibc's defaults a large block (a call's value, its inputs) is mapped anew at each call and its
    pages faulted in again, which costs the same call 0.1-0.5 ms per MB more or less by chance (1.13 ms against
    0.57 for torch.cdist of 512 x 512 points of 64 beside a value's sending, docs/BENCHMARKS.md). Set in every
    timed module's child alike, and in the fidelity benchmark's truth; never in a test's child, whose memory is
    measured per test."""
    try:
        libc = ctypes.CDLL(None)
        if not libc.mallopt(M_MMAP_THRESHOLD, STEADY_BYTES):
            libc.mallopt(M_MMAP_THRESHOLD, 32 << 20)  # the most some versions take
        libc.mallopt(M_TRIM_THRESHOLD, STEADY_BYTES)
    except (OSError, AttributeError):  # not glibc: its own allocator's ways
        pass


def bench_main(cmd_r: int, res_w: int, job: ChildJob, area: ChildArea | None = None) -> None:
    """Never returns: an inputs' child (no source), or a module's (with its shared area: shared.py): says it is
    ready, loads its module when told, then serves calls until the runner stops."""
    if not job.source:
        inputs_main(cmd_r, res_w, job)
    bench = job.bench
    assert isinstance(bench, Bench)
    if area is None:
        os._exit(EXIT_BAD_JOB)  # a module is timed only with its inputs and values in its area
    steady_allocator()
    _send(res_w, protocol.CHILD_BUILT, Report(Outcome.OK).header())
    try:  # the runner's word to load: the load is timed from it
        kind, _, _ = protocol.read_frame(cmd_r, max_body=0)
    except (EOFError, protocol.FrameError, OSError):
        os._exit(0)
    if kind != protocol.CHILD_GO:
        os._exit(0)
    entry_points, failure = load_submission(job.source, () if bench.null else (bench.entry_point,))
    max_result = job.max_result_bytes
    del job
    _send(res_w, protocol.CHILD_LOAD, (failure or Report(Outcome.OK)).header())
    if failure is not None:
        os._exit(0)
    ballast = Ballast(max_result)
    for command in _commands(cmd_r, bench):
        inputs = lambda: values.decode_value(area.inputs(command.at, command.length))  # noqa: B023, E731
        if bench.null:  # its value made inside the call's own handling: a failure there is told, never a crash
            size = command.value_bytes
            report, value = _call(lambda *_, **__: ballast(size), inputs, bench.device, max_result)  # noqa: B023
        else:
            report, value = _call(entry_points[bench.entry_point], inputs, bench.device, max_result)
        del inputs
        report.index = command.call
        if report.error_type == "BenchInputs":  # the judge's own failure: nothing more can be timed
            _send(res_w, protocol.CHILD_RESULT, report.header())
            os._exit(0)
        body = b""
        if report.status == Outcome.OK:
            try:  # inside the call's time: the value is written where the runner reads it
                body = area.put_value(value)
            except AreaError as exc:
                report = Report(Outcome.OUTPUT, message=f"the returned value does not fit: {exc}", index=command.call)
        del value
        _send(res_w, protocol.CHILD_RESULT, report.header(), body)
