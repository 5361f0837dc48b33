"""What runs in a forked child: load the submission, then run the tests the runner sends, one at a time.

The child is where untrusted code runs. Nothing it writes is believed by the trusted side beyond
the shape of the data: the runner keeps its own clock, and the grader decodes every result strictly.
"""

from __future__ import annotations

import ast
import builtins
import ctypes
import json
import linecache
import math
import mmap
import os
import random
import resource
import sys
import time
import traceback
import types

import frames
import numpy as np
import seccomp
import torch
import torch.nn as nn
import torch.nn.functional as F
import values

MAX_MESSAGE = 4 * 1024
MAX_TRACEBACK = 16 * 1024
SUBMISSION_FILE = "submission.py"
ALLOCATION_FAILURES = ("can't allocate memory", "not enough memory", "out of memory")


def _safe_text(produce, limit: int) -> str:
    """Renders a message from an untrusted object; a hostile __str__ cannot take the child down."""
    try:
        text = produce()
        if type(text) is not str:
            text = "<unprintable>"
    except BaseException:  # noqa: BLE001 - the object is hostile by assumption
        text = "<unprintable>"
    if len(text) > limit:
        text = text[:limit] + f"... [{len(text) - limit} more characters]"
    return text


def _describe(exc: BaseException) -> dict:
    kind = type(exc)
    name = _safe_text(lambda: kind.__name__, 200)
    message = _safe_text(lambda: str(exc), MAX_MESSAGE)
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == SUBMISSION_FILE:
            line = tb.tb_lineno
        tb = tb.tb_next
    trace = _safe_text(lambda: _user_traceback(exc), MAX_TRACEBACK)
    return {"error_type": name, "message": message, "line": line, "traceback": trace}


def _user_traceback(exc: BaseException) -> str:
    """The traceback as the author of the code sees it: only frames of the submission and the test."""
    frames_seen = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if frame.filename == SUBMISSION_FILE or frame.filename.startswith("<test ")
    ]
    lines = ["Traceback (most recent call last):\n", *traceback.format_list(frames_seen)]
    lines.extend(traceback.format_exception_only(type(exc), exc))
    return "".join(lines)


def _is_memory_failure(exc: BaseException) -> bool:
    if isinstance(exc, MemoryError):
        return True
    if isinstance(exc, RuntimeError):
        text = _safe_text(lambda: str(exc), 1000).lower()
        return any(marker in text for marker in ALLOCATION_FAILURES)
    return False


ADDRESS_SPACE_SLACK = 512 * 1024 * 1024  # thread stacks and allocator reservations, where RLIMIT_AS is used
M_ARENA_MAX = -8


def _status_bytes(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _data_limit_enforced(memory: int) -> bool:
    """Whether the kernel applies RLIMIT_DATA to anonymous mappings (Linux >= 4.7 does; gVisor does not)."""
    try:
        probe = mmap.mmap(-1, memory + (64 << 20), flags=mmap.MAP_PRIVATE)
    except (OSError, ValueError, OverflowError):
        return True
    probe.close()
    return False


def _apply_limits(limits: dict, test_count: int, protected: tuple[int, ...]) -> None:
    memory = int(limits["memory_mb"]) * 1024 * 1024
    # RLIMIT_DATA counts private anonymous mappings too (Linux >= 4.7), so torch's large
    # allocations fail with an allocator error instead of growing past the limit.
    data = _status_bytes("VmData") + memory
    resource.setrlimit(resource.RLIMIT_DATA, (data, data))
    if not _data_limit_enforced(memory):
        # Under gVisor an allocation past the container's memory would take the whole sandbox down
        # (the host sees one process): bound the address space instead, with room for thread stacks,
        # and at most two malloc arenas (each reserves 64 MiB of address space).
        try:
            ctypes.CDLL(None).mallopt(M_ARENA_MAX, 2)
        except (OSError, AttributeError):
            pass
        space = _status_bytes("VmSize") + memory + ADDRESS_SPACE_SLACK
        resource.setrlimit(resource.RLIMIT_AS, (space, space))
    cpu = int(math.ceil(float(limits["time_s"]) * (test_count + 2) + 5))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (32 * 1024 * 1024, 32 * 1024 * 1024))
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    try:
        # The runner is not dumpable, and a child inherits that, which would leave its /proc files
        # owned by root: the child makes itself dumpable again (it only exposes itself).
        ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE
        # The child, never the runner, is the one the kernel picks when memory runs out.
        with open("/proc/self/oom_score_adj", "w") as adj:
            adj.write("1000")
    except OSError:
        pass
    # Last: from here on the child cannot signal, trace or re-limit the runner and the zygote, nor
    # make SysV IPC objects, keys or namespaces (seccomp.py). Nothing it starts can lift it.
    seccomp.install(protected)


def _isolate(cmd_r: int, res_w: int, out_w: int) -> None:
    os.setsid()
    devnull = os.open("/dev/null", os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(out_w, 1)
    os.dup2(out_w, 2)
    keep = {0, 1, 2, cmd_r, res_w}
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _send(res_w: int, kind: bytes, header: dict, body: bytes = b"") -> None:
    frames.write_all(res_w, frames.encode(kind, header, body))


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


def _load_submission(job: dict) -> tuple[dict, dict | None]:
    """Returns (entry points, None) or ({}, a compile result that is not ok)."""
    source = job["source"]
    linecache.cache[SUBMISSION_FILE] = (len(source), None, source.splitlines(True), SUBMISSION_FILE)
    try:
        code = compile(source, SUBMISSION_FILE, "exec", dont_inherit=True)
    except SyntaxError as exc:
        kind = type(exc).__name__
        line = exc.lineno
        where = f"line {line}: " if line else ""
        message = f"{where}{kind}: {exc.msg}"
        return {}, {"status": "compile_error", "message": message, "line": line}
    except (ValueError, MemoryError, RecursionError) as exc:
        return {}, {"status": "compile_error", "message": f"{type(exc).__name__}: {exc}", "line": None}
    module = types.ModuleType("submission")
    module.__file__ = SUBMISSION_FILE
    sys.modules["submission"] = module
    try:
        exec(code, module.__dict__)
    except BaseException as exc:  # noqa: BLE001 - SystemExit at import is the submission's error too
        status = "memory" if _is_memory_failure(exc) else "runtime_error"
        return {}, {"status": status, **_describe(exc)}
    entry_points = {}
    for name in job["entry_points"]:
        function = module.__dict__.get(name)
        if function is None:
            return {}, {"status": "compile_error", "message": f"missing function: {name}", "line": None}
        if not callable(function):
            return {}, {
                "status": "compile_error",
                "message": f"{name} is defined but is not a function",
                "line": None,
            }
        entry_points[name] = function
    return entry_points, None


def _run_test(index: int, seed: int, code: str, entry_points: dict, max_result: int) -> tuple[dict, bytes]:
    filename = f"<test {index + 1}>"
    body = "".join("    " + line + "\n" for line in code.splitlines()) or "    pass\n"
    # Line numbers in tracebacks are those of the test's own code, not of this wrapper.
    tree = ast.increment_lineno(ast.parse("def __test__():\n" + body, filename), -1)
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    namespace = _test_globals(entry_points)
    exec(compile(tree, filename, "exec", dont_inherit=True), namespace)
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)
    try:
        result = namespace["__test__"]()
    except BaseException as exc:  # noqa: BLE001 - sys.exit() inside a test is a runtime error
        status = "memory" if _is_memory_failure(exc) else "error"
        return {"status": status, **_describe(exc)}, b""
    try:
        return {"status": "ok"}, values.encode_value(result, max_result)
    except values.TooLarge as exc:
        return {"status": "output", "message": f"the returned value is larger than {max_result} bytes ({exc})"}, b""
    except values.Unencodable as exc:
        return {"status": "error", "error_type": "UnsupportedResult", "message": str(exc)}, b""
    except BaseException as exc:  # noqa: BLE001 - a hostile value can raise anything while read
        status = "memory" if _is_memory_failure(exc) else "error"
        return {"status": status, **_describe(exc)}, b""


def child_main(cmd_r: int, res_w: int, out_w: int, protected: tuple[int, ...] = ()) -> None:
    """Never returns: the child leaves through os._exit so no atexit hook of the submission runs."""
    _isolate(cmd_r, res_w, out_w)
    try:
        kind, _, body = frames.read_frame(cmd_r, max_body=16 * 1024 * 1024)
        if kind != frames.JOB:
            os._exit(3)
        job = json.loads(body)
    except (EOFError, frames.FrameError, ValueError, OSError):
        os._exit(3)
    _apply_limits(job["limits"], len(job["tests"]), protected)
    entry_points, failure = _load_submission(job)
    _send(res_w, frames.CHILD_COMPILE, failure or {"status": "ok"})
    if failure is not None:
        os._exit(0)
    max_result = int(job["max_result_bytes"])
    while True:
        try:
            kind, header, body = frames.read_frame(cmd_r, max_body=1024 * 1024)
        except (EOFError, frames.FrameError, OSError):
            os._exit(0)
        index = int(header["index"])
        started = time.perf_counter()
        outcome, value = _run_test(index, int(header["seed"]), body.decode(), entry_points, max_result)
        outcome["index"] = index
        outcome["cpu_ms"] = round((time.perf_counter() - started) * 1000, 3)
        _send(res_w, frames.CHILD_RESULT, outcome, value)
