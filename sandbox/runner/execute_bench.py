"""What a benchmark's child does (bench_job.py): build every call's inputs, then load the module, then make the
calls the runner asks for, one at a time, answering each with the returned value.

The inputs are built first, before any code of the module has run in this process: nothing the module does
(a replaced torch function, a thread of its own) can take part in making them, so that no work of the
module's is done where the runner's clock does not run. What the module does at import is timed by the
runner (its load); each call from the command to the whole value sent back.
"""

from __future__ import annotations

import linecache
import os
import random

import numpy as np
import torch

from . import protocol
from .bench_job import Bench, CallCommand
from .execute import _compile_test, _encode_result, _failure, _send, _test_globals, load_submission
from .messages import ChildJob, Report
from .protocol import Outcome

INPUTS_FILE = "<inputs>"
HELPERS_FILE = "<helpers>"

Inputs = tuple[list, dict]


class InputsFailed(Exception):
    """The problem's inputs' code failed or returned something that is not a call's arguments."""


def _arguments(value: object, device: str) -> Inputs:
    """A call's positional and keyword arguments from what the inputs' code returned: a list or tuple (the
    positional ones) or a dict with string keys (the keyword ones), its tensors moved to `device`."""
    if isinstance(value, (list, tuple)):
        args, kwargs = list(value), {}
    elif isinstance(value, dict) and all(type(key) is str for key in value):
        args, kwargs = [], dict(value)
    else:
        raise InputsFailed(f"the inputs' code returned a {type(value).__name__}, not a list or a dict of arguments")
    if device != "cpu":
        args = [item.to(device) if isinstance(item, torch.Tensor) else item for item in args]
        kwargs = {key: item.to(device) if isinstance(item, torch.Tensor) else item for key, item in kwargs.items()}
    return args, kwargs


def build_inputs(bench: Bench) -> list[list[Inputs | None]]:
    """Every call's arguments, per size, each drawn under its own seed (bench.call_seed); InputsFailed."""
    code = _compile_test(bench.inputs, INPUTS_FILE)
    built: list[list[Inputs | None]] = []
    linecache.cache[INPUTS_FILE] = (len(bench.inputs), None, bench.inputs.splitlines(True), INPUTS_FILE)
    try:
        for index, size in enumerate(bench.sizes):
            calls: list[Inputs | None] = []
            for call in range(bench.calls):
                seed = bench.call_seed(index, call)
                torch.default_generator.manual_seed(seed)
                random.seed(seed)
                np.random.seed(seed % 2**32)
                namespace = _test_globals({})
                if bench.helpers:
                    exec(compile(bench.helpers, HELPERS_FILE, "exec", dont_inherit=True), namespace)
                namespace["size"] = size.scope()
                exec(code, namespace)
                with torch.no_grad():
                    calls.append(_arguments(namespace["__test__"](), bench.device))
                namespace.clear()
            built.append(calls)
    except InputsFailed:
        raise
    except BaseException as exc:  # noqa: BLE001 - the problem's code: whatever it raises is its failure
        report = _failure(exc)
        raise InputsFailed(f"{report.error_type}: {report.message}") from None
    finally:
        linecache.cache.pop(INPUTS_FILE, None)
    return built


def _call(function: object, arguments: Inputs, device: str, max_result: int) -> tuple[Report, bytes]:
    """One call, and its value encoded: the runner times both, for the subject and the baseline alike."""
    args, kwargs = arguments
    try:
        with torch.inference_mode(False):
            result = function(*args, **kwargs)  # type: ignore[operator]
            if device == "cuda":
                torch.cuda.synchronize()  # the work queued on the device is part of the call
    except BaseException as exc:  # noqa: BLE001 - the module's error, at this call
        return _failure(exc), b""
    return _encode_result(result, max_result)


def bench_main(cmd_r: int, res_w: int, job: ChildJob) -> None:
    """Never returns: builds the inputs, loads the module, then serves calls until the runner stops."""
    bench = job.bench
    assert isinstance(bench, Bench)
    try:
        inputs = build_inputs(bench)
    except InputsFailed as exc:
        message = protocol.bounded_text(f"the benchmark's inputs could not be built: {exc}", protocol.MAX_MESSAGE)
        _send(res_w, protocol.CHILD_BUILT, Report(Outcome.ERROR, error_type="BenchInputs", message=message).header())
        os._exit(0)
    _send(res_w, protocol.CHILD_BUILT, Report(Outcome.OK).header())
    try:  # the runner's word to load: the load is timed from it, without the inputs' making
        kind, _, _ = protocol.read_frame(cmd_r, max_body=0)
    except (EOFError, protocol.FrameError, OSError):
        os._exit(0)
    if kind != protocol.CHILD_GO:
        os._exit(0)
    entry_points, failure = load_submission(job.source, (bench.entry_point,))
    max_result = job.max_result_bytes
    del job
    _send(res_w, protocol.CHILD_LOAD, (failure or Report(Outcome.OK)).header())
    if failure is not None:
        os._exit(0)
    function = entry_points[bench.entry_point]
    while True:
        try:
            kind, header, _ = protocol.read_frame(cmd_r, max_body=0)
            if kind != protocol.CHILD_CALL:
                os._exit(0)
            command = CallCommand.parse(header, bench)
        except (EOFError, protocol.FrameError, OSError, ValueError):
            os._exit(0)
        arguments = inputs[command.size][command.call]
        inputs[command.size][command.call] = None  # each call's inputs are its own, used once
        if arguments is None:
            os._exit(0)
        report, value = _call(function, arguments, bench.device, max_result)
        del arguments
        report.index = command.call
        _send(res_w, protocol.CHILD_RESULT, report.header(), value)
