"""The program of a judge process (started by grading/isolated.py): it judges what a sandbox returned under
limits that the operating system enforces, and answers in bounded JSON.

Decoding a returned value, comparing it, evaluating a check's `expect:`/`holds:` expressions and matching
pitfalls all work on data a submission chose; guards in the code bound what each operation may build, and
this process bounds everything else: its address space (RLIMIT_AS: what it needed to start, plus
GRADER_JUDGE_MEMORY_MB), its CPU for each request (RLIMIT_CPU, moved up by the budget before each request,
so that a request past it ends the process with SIGXCPU), no file written (RLIMIT_FSIZE 0), no core dump.
What it is sent comes from the service (judge_wire.py: JSON, the returned bytes beside it); what it
answers the service reads as hostile:
JSON of a bounded size and nesting, validated against the fields it expects. It never imports torch.

Requests, one at a time: (op, spec digest, encoded JudgeSpec or None, arguments). Answers: for "test" and
"call" (a benchmark call's value), {} (passed) or a status, message and details; for "tests" (the tests
that landed together), {"results": [such an answer for each of the first ones, in order]};
{"pitfall": n} for "hint";
{"described": [...]} for "describe"; {"need_spec": true} when it no longer holds the problem's spec;
{"limit": "memory"} when a request ran out of memory; {"error": type} for anything else that failed.
"""

from __future__ import annotations

import os

# One thread: no BLAS pool reserving address space, nothing running beside the request.
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import json  # noqa: E402
import math  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
from collections import OrderedDict  # noqa: E402
from multiprocessing.connection import Connection  # noqa: E402
from typing import Any  # noqa: E402

from grader.containers.protocol import MAX_MESSAGE, LoadHeader, Outcome, TestHeader  # noqa: E402
from grader.grading import judge_wire  # noqa: E402
from grader.grading.bounds import cap, cap_details  # noqa: E402
from grader.grading.execution import ModuleRun, TestRun  # noqa: E402
from grader.grading.expected import Expected  # noqa: E402
from grader.grading.hints import matching_pitfall  # noqa: E402
from grader.grading.judge import compare, describe_bodies, judge_call, judge_test  # noqa: E402
from grader.grading.judge_wire import JudgeSpec  # noqa: E402
from grader.grading.verdict import TestStatus  # noqa: E402

SPECS_KEPT = 64
RETURNED = TestHeader(index=0, status=Outcome.OK, time_ms=0.0)  # the header of a test that returned a value
CPU_S = [0.0]  # each request's CPU budget (serve's argument)
SHARE = 0.25  # of a request's CPU budget, after which a "tests" request starts no further test


# -- the limits ---------------------------------------------------------------------------------------------
def _own_size() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def limit_self(memory_mb: int) -> None:
    """The address space this process has now, plus the budget; no files, no cores."""
    size = _own_size() + memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (size, size))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def cpu_budget(seconds: float) -> None:
    """The next request may use `seconds` of CPU: past them the kernel ends this process (SIGXCPU)."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    soft = math.ceil(used.ru_utime + used.ru_stime + seconds)
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    resource.setrlimit(resource.RLIMIT_CPU, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))


# -- requests -----------------------------------------------------------------------------------------------
def _test(spec: JudgeSpec, args: tuple[Any, ...]) -> dict[str, Any]:
    """A returned value judged against the expected one: {} when it passes, else its status, message and
    details (judge.judge_test on a test that returned)."""
    index, expected_body, body = args
    expected = Expected([expected_body if i == index else None for i in range(len(spec.tests))], [])
    result = judge_test(spec, expected, index, TestRun(RETURNED, body))  # type: ignore[arg-type]
    if result.status == TestStatus.PASSED:
        return {}
    details = cap_details(result.details) if result.details is not None else None
    return {"status": result.status.value, "message": cap(result.message, MAX_MESSAGE), "details": details}


def _tests(spec: JudgeSpec, args: tuple[Any, ...]) -> dict[str, Any]:
    """Tests that landed together, each judged as by "test", in order, under the request's one CPU budget: no
    test is started once the request has used SHARE of it, so that a request holds this process no longer
    than one test's may, and a test that ends it takes down only what was judged within that share. The
    service sends again the tests not judged here (at least one is)."""
    (items,) = args
    started = _cpu_seconds()
    results: list[dict[str, Any]] = []
    for item in items:
        if results and _cpu_seconds() - started > SHARE * CPU_S[0]:
            break
        results.append(_test(spec, tuple(item)))
    return {"results": results}


def _cpu_seconds() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def _hint(spec: JudgeSpec, args: tuple[Any, ...]) -> dict[str, Any]:
    reference, pitfalls, frames, tests = args
    run = ModuleRun(load=LoadHeader(status=Outcome.OK), tests={i: TestRun(h, b) for i, (h, b) in frames.items()})
    expected = Expected(reference, pitfalls)
    number = matching_pitfall(
        spec,  # type: ignore[arg-type]
        expected.reference,
        expected.pitfalls,
        run,
        tests,
        lambda i, a, b: compare(spec, i, a, b),  # type: ignore[arg-type]
    )
    return {"pitfall": number}


def _call(spec: JudgeSpec, args: tuple[Any, ...]) -> dict[str, Any]:
    """A benchmark call's value against the reference's (judge.judge_call): {} or its message and details."""
    expected_body, body, check = args
    found = judge_call(expected_body, body, check)
    if not found:
        return {}
    details = cap_details(found["details"]) if found.get("details") is not None else None
    return {"status": TestStatus.FAILED.value, "message": cap(found.get("message"), MAX_MESSAGE), "details": details}


OPS = {
    "test": _test,
    "tests": _tests,
    "call": _call,
    "hint": _hint,
    "describe": lambda spec, args: {"described": describe_bodies(args[0])},
}


def answer(raw: bytes, specs: OrderedDict[bytes, JudgeSpec]) -> dict[str, Any]:
    op, digest, blob, args = judge_wire.decode(raw)  # JSON and bytes: nothing in a request builds objects
    spec = specs.get(digest)
    if spec is None:
        if blob is None:
            return {"need_spec": True}
        spec = specs[digest] = judge_wire.decode(blob).parsed()
        while len(specs) > SPECS_KEPT:
            specs.popitem(last=False)
    specs.move_to_end(digest)
    try:
        return OPS[op](spec, args)  # type: ignore[no-untyped-call]
    except MemoryError:
        return {"limit": "memory"}
    except Exception as exc:  # noqa: BLE001 - reported as the request's failure, by type only
        return {"error": type(exc).__name__[:100]}


def _jsonable(value: Any) -> Any:
    item = getattr(value, "item", None)
    if callable(item):
        return item()
    return str(value)[:100]


def serve(requests: Connection, answers: Connection, cpu_s: float) -> None:
    specs: OrderedDict[bytes, JudgeSpec] = OrderedDict()
    CPU_S[0] = cpu_s
    while True:
        try:
            raw = requests.recv_bytes()
        except EOFError:
            return
        cpu_budget(cpu_s)
        try:
            reply = answer(raw, specs)
            encoded = json.dumps(reply, default=_jsonable, separators=(",", ":")).encode()
        except MemoryError:
            encoded = b'{"limit":"memory"}'
        answers.send_bytes(encoded)


def main(argv: list[str]) -> int:
    memory_mb, cpu_s = int(argv[0]), float(argv[1])
    # Answers go out on a copy of stdout; stdout itself becomes stderr (the void), so that nothing printed
    # by a library can break a frame.
    answers = Connection(os.dup(1), readable=False)
    os.dup2(2, 1)
    requests = Connection(os.dup(0), writable=False)
    limit_self(memory_mb)
    serve(requests, answers, cpu_s)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
