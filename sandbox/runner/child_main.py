"""A child's life, from its fork by the zygote to its job (zygote.py forks it; the runner's Child holds it):
its descriptors, its confinement prepared and its warm-up, READY, the job, the job's limits and seccomp, then
the job's own code: a test job's (execute.py) or a benchmark's (execute_bench.py). The one entry of every child.
"""

from __future__ import annotations

import os

from . import confine, forbid, protocol, torchstate
from .child_job import ChildJob
from .execute import EXIT_BAD_JOB, EXIT_NOT_CONFINED, _send, serve_tests, warm_up
from .execute_bench import bench_main
from .messages import Report
from .protocol import Outcome
from .shared import AreaError, ChildArea


def _isolate(cmd_r: int, res_w: int, out_w: int, shared: int) -> None:
    os.setsid()
    devnull = os.open("/dev/null", os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(out_w, 1)
    os.dup2(out_w, 2)
    keep = {0, 1, 2, cmd_r, res_w, shared}
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _area(shared: int, job: ChildJob) -> ChildArea | None:
    """A benchmark module's area, mapped (its descriptor closed); for any other job, its descriptor closed."""
    if shared < 0:
        return None
    if job.bench is None or not job.source:
        os.close(shared)
        return None
    try:
        return ChildArea(shared)
    except (OSError, ValueError, AreaError):
        os._exit(EXIT_NOT_CONFINED)


def child_main(cmd_r: int, res_w: int, out_w: int, shared: int = -1, protected: tuple[int, ...] = ()) -> None:
    """Never returns: the child leaves through os._exit so no atexit hook of the submission runs. `shared`: a
    benchmark module's area (shared.py), mapped before its limits apply, else closed unused."""
    _isolate(cmd_r, res_w, out_w, shared)
    confinement = confine.Confinement(protected)
    try:
        confinement.prepare()
        warm_up()
    except (OSError, ValueError):
        os._exit(EXIT_NOT_CONFINED)  # never run a submission half-confined
    # The judge's own settings, put back before and after every test: read before the job comes (nothing but
    # the confinement runs in between), so that reading them is not on the job's path.
    settings = torchstate.snapshot()
    _send(res_w, protocol.CHILD_READY, Report(Outcome.OK).header())  # the runner hands its container back then
    try:
        kind, _, body = protocol.read_frame(cmd_r, max_body=protocol.MAX_JOB_BYTES)
        if kind != protocol.CHILD_JOB:
            os._exit(EXIT_BAD_JOB)
        job = ChildJob.parse(body)
    except (EOFError, protocol.FrameError, OSError):
        os._exit(EXIT_BAD_JOB)
    area = _area(shared, job)
    try:
        confinement.apply(job.memory_mb, job.cpu_s, job.protect, job.cpu)
    except (OSError, ValueError):
        os._exit(EXIT_NOT_CONFINED)  # never run a submission half-confined
    forbid.apply(job.forbid)  # before the module loads: it never holds a forbidden function
    # The job is handed on, none of it left in this frame (its helpers are the problem's, not the submission's).
    jobs = [job]
    del job
    if jobs[0].bench is not None:
        bench_main(cmd_r, res_w, jobs.pop(), area)
    serve_tests(cmd_r, res_w, jobs.pop(), settings)
