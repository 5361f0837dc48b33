"""The runner on the host (tests/unit/runner_harness.py): each outcome it owns, from children scripted in
plain Python. What it sends is read by the grader's strict decoder, so every frame here is one the
trusted side accepts: hostile children included."""

from __future__ import annotations

import os

import pytest

from sandbox.runner import protocol
from sandbox.runner.messages import Report
from sandbox.runner.protocol import Outcome
from tests.unit.runner_harness import HostRunner, job, never_ready_child, scripted_child

pytestmark = pytest.mark.timeout(120)

MODULE = "def f(x):\n    return x * 2\n"


def _texts(exchange) -> list[str]:  # type: ignore[no-untyped-def]
    return [frame.body.decode() for frame in exchange.tests]


def test_a_job_is_loaded_once_and_every_test_answered_in_order(host: HostRunner) -> None:
    assert host.hello.header.torch == "none"  # type: ignore[union-attr]
    done = host.run(job(MODULE, "result = f(INDEX)", "result = f(SEED) + 1", "result = 'é' * 3"))
    assert done.load.header.status is Outcome.OK
    assert [frame.header.index for frame in done.tests] == [0, 1, 2]  # type: ignore[union-attr]
    assert done.statuses() == ["ok"] * 3 and _texts(done) == ["0", "3", "ééé"]
    assert done.done is not None and done.done.header.clean and done.done.header.ready  # type: ignore[union-attr]
    # The container serves the next job with the child it readied for it.
    again = host.run(job(MODULE, "result = f(21)"))
    assert _texts(again) == ["42"]


def test_a_module_that_does_not_compile_ends_the_job_at_its_load(host: HostRunner) -> None:
    done = host.run(job("def f(:\n", "result = 1", "result = 2"))
    assert done.load.header.status is Outcome.COMPILE_ERROR and done.load.header.line == 1  # type: ignore[union-attr]
    assert done.tests == [] and done.done.header.clean  # type: ignore[union-attr]


def test_a_test_that_runs_out_of_time_is_charged_alone_and_the_rest_run_in_a_fresh_child(host: HostRunner) -> None:
    done = host.run(job(MODULE, "result = os.getpid()", "time.sleep(30)", "result = os.getpid()", time_s=0.5))
    assert done.statuses() == ["ok", "timeout", "ok"]
    assert "time limit exceeded during test 2" in done.tests[1].header.message  # type: ignore[union-attr]
    assert 0.5 <= done.tests[1].header.time_ms / 1000 < 3  # type: ignore[union-attr]
    first, last = _texts(done)[0], _texts(done)[2]
    assert first != last  # a fresh process for the tests after the one that ended its own


def test_after_a_timeout_the_tests_that_follow_are_skipped_when_the_job_asks(host: HostRunner) -> None:
    done = host.run(job(MODULE, "time.sleep(30)", "result = 1", "result = 2", time_s=0.3, skip_after_timeout=True))
    assert done.statuses() == ["timeout", "skipped", "skipped"]
    assert "test 1 ran out of time" in done.tests[1].header.message  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("code", "words"),
    [
        ("os.kill(os.getpid(), signal.SIGSEGV)", "killed by SIGSEGV during test 1"),
        ("os._exit(3)", "exited (code 3) during test 1"),
        ("os.close(RES); time.sleep(30)", "closed its result channel during test 1"),
    ],
    ids=["crash", "exit", "closed-channel"],
)
def test_a_child_that_ends_during_a_test_is_that_tests_error(host: HostRunner, code: str, words: str) -> None:
    done = host.run(job(MODULE, code, "result = f(1)"))
    assert done.statuses() == ["error", "ok"]
    assert words in done.tests[0].header.message, done.tests[0].header  # type: ignore[union-attr]
    assert _texts(done)[1] == "2"


def test_printing_past_the_limit_is_the_output_limit(host: HostRunner) -> None:
    done = host.run(job(MODULE, "print('x' * 200_000, flush=True); time.sleep(5)", "print('hi'); result = 1"))
    assert done.statuses() == ["output", "ok"]
    assert "printed more than 64 KiB during test 1" in done.tests[0].header.message  # type: ignore[union-attr]
    assert done.tests[1].header.output == "hi\n"  # type: ignore[union-attr]


HOSTILE_FRAMES = {
    "garbage": "os.write(RES, b'not a frame at all' * 10); time.sleep(5)",
    "wrong-kind": "from sandbox.runner import protocol as p; os.write(RES, p.encode(p.CHILD_LOAD, {'status': 'ok'}))\n"
    "time.sleep(5)",
    "deep-header": "from sandbox.runner import protocol as p\n"
    "os.write(RES, p.PREFIX.pack(p.MAGIC, p.CHILD_RESULT, 20000, 0) + b'[' * 10000 + b']' * 10000); time.sleep(5)",
    "huge-body": "from sandbox.runner import protocol as p\n"
    "os.write(RES, p.PREFIX.pack(p.MAGIC, p.CHILD_RESULT, 2, 1 << 30) + b'{}'); time.sleep(5)",
}


@pytest.mark.parametrize("name", list(HOSTILE_FRAMES))
def test_whatever_a_child_writes_the_runner_answers_with_a_frame_the_grader_accepts(
    host: HostRunner, name: str
) -> None:
    done = host.run(job(MODULE, HOSTILE_FRAMES[name], "result = f(2)"))
    assert done.statuses()[1] == "ok" and _texts(done)[1] == "4"
    assert done.statuses()[0] in ("error", "output"), done.tests[0].header
    assert done.tests[0].body == b""


def test_a_childs_hostile_report_is_bounded_and_its_lies_dropped(host: HostRunner) -> None:
    """A child claiming another test's index, an unknown status, a long message and fields of its own."""
    lie = (
        "from sandbox.runner import protocol as p\n"
        "header = {'status': 'ok', 'index': INDEX + 1, 'memory_mb': 1, 'x': [1]}\n"
        "os.write(RES, p.encode(p.CHILD_RESULT, header, b'forged')); time.sleep(5)"
    )
    unknown = (
        "from sandbox.runner import protocol as p\n"
        "header = {'status': 'accepted', 'index': INDEX, 'settings_changed': ['grad mode', 'nope'], 'line': -1,\n"
        "          'message': 'm' * 50_000}\n"
        "os.write(RES, p.encode(p.CHILD_RESULT, header, b'forged')); time.sleep(5)"
    )
    done = host.run(job(MODULE, lie, unknown))
    first, second = done.tests[0].header, done.tests[1].header
    assert first.status is Outcome.ERROR and first.message == "result for the wrong test"  # type: ignore[union-attr]
    assert second.status is Outcome.ERROR and second.settings_changed == ["grad mode"]  # type: ignore[union-attr]
    assert second.line is None and done.tests[0].body == done.tests[1].body == b""  # type: ignore[union-attr]
    assert len(second.message) == protocol.MAX_MESSAGE  # type: ignore[union-attr]


def test_each_test_runs_in_a_child_confined_to_its_own_memory(host: HostRunner) -> None:
    """Memory is applied once per process: where a test's limit differs, the runner starts a fresh child
    for it, loaded again, and the tests that share it run in that one."""
    code = "result = f'{JOB.memory_mb} {os.getpid()}'"
    done = host.run(job(MODULE, code, code, code, code, memory_mb=[4096, 4096, 16384, 4096]))
    assert done.statuses() == ["ok"] * 4
    memories, pids = zip(*(text.split() for text in _texts(done)), strict=True)
    assert memories == ("4096", "4096", "16384", "4096")
    assert pids[0] == pids[1] and len({pids[1], pids[2], pids[3]}) == 3


def test_a_module_that_fails_to_load_again_fails_the_tests_that_follow(host: HostRunner, tmp_path) -> None:  # type: ignore[no-untyped-def]
    marker = tmp_path / "loaded"
    source = (
        f"import os\nif os.path.exists({str(marker)!r}):\n    raise RuntimeError('second load')\n"
        f"open({str(marker)!r}, 'w').close()\n"
    )
    done = host.run(job(source, "os._exit(1)", "result = 1", "result = 2"))
    assert done.load.header.status is Outcome.OK
    assert done.statuses() == ["error", "error", "error"]
    assert all("failed to load again" in frame.header.message for frame in done.tests[1:])  # type: ignore[union-attr]


def test_a_malformed_job_ends_the_runner_saying_why() -> None:
    host = HostRunner()
    os.write(host.to_w, protocol.encode(protocol.JOB, {}, b'{"source": 1}'))
    with pytest.raises(EOFError):
        host.next_frame(10)
    assert "cannot read a job: FrameError" in host.close()


def test_a_first_child_that_never_gets_ready_ends_the_job_without_a_verdict() -> None:
    """No code of the job ran: the container comes back unclean (the grader replaces it), never a verdict."""
    host = HostRunner(main=never_ready_child, ready_wait_s=0.2)
    try:
        os.write(host.to_w, protocol.encode(protocol.JOB, {}, job(MODULE, "result = 1", load_time_s=0.5).payload()))
        done = host.next_frame(15)
        assert done.kind == protocol.DONE and not done.header.clean  # type: ignore[union-attr]
    finally:
        said = host.close()
    assert "ChildNotReady" in said


def test_the_scripted_child_speaks_the_contract() -> None:
    """The harness's child is the contract's: a sanity check that a broken harness cannot pass the tests."""
    assert scripted_child.__module__ == "tests.unit.runner_harness"
    assert Report(Outcome.OK, index=1).header() == {"status": "ok", "index": 1}


# -- the zygote's bookkeeping, as the runner sees it (zygote.ZygoteClient) -----------------------------------
def _client_and_zygote():  # type: ignore[no-untyped-def]
    import socket

    from sandbox.runner import zygote

    runner_end, zygote_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    return zygote.ZygoteClient(runner_end), zygote_end


def test_the_client_files_each_exit_under_its_child_and_drops_the_abandoned() -> None:
    import socket

    from sandbox.runner import zygote

    client, zygote_end = _client_and_zygote()
    read_end, write_end = os.pipe()
    try:
        # A fork request carries three descriptors; the zygote answers FORKED, and EXITED records as children end.
        zygote_end.sendall(zygote.RECORD.pack(zygote.FORKED, 101, 0))
        assert client.fork_child((read_end, write_end, write_end)) == 101
        message, fds, _, _ = socket.recv_fds(zygote_end, 1, 3)
        assert message == zygote.FORK and len(fds) == 3
        for fd in fds:
            os.close(fd)
        assert client.exit_status(101, block=False) is None
        client.abandon(102)
        for pid, status in ((102, 9), (103, 256), (101, 0)):
            zygote_end.sendall(zygote.RECORD.pack(zygote.EXITED, pid, status))
        assert client.exit_status(101, block=True) == 0
        assert client.exit_status(103, block=False) == 256
        assert 102 not in client.exits and not client.abandoned
        zygote_end.sendall(zygote.RECORD.pack(zygote.FAILED, 0, 11))
        with pytest.raises(BlockingIOError):  # EAGAIN: the pid budget is spent; the child forker retries
            client.fork_child((read_end, write_end, write_end))
        zygote_end.close()
        with pytest.raises(zygote.ZygoteLost):
            client.exit_status(104, block=True)
    finally:
        os.close(read_end)
        os.close(write_end)


def test_the_runner_its_children_and_the_contract_import_without_torch_and_never_the_grader() -> None:
    import ast
    import subprocess
    import sys
    from pathlib import Path

    modules = ["runner", "child", "zygote", "cleanup", "messages", "protocol", "confine", "landlock", "seccomp"]
    probe = "import sys\n" + "".join(f"import sandbox.runner.{name}\n" for name in modules)
    probe += "assert 'torch' not in sys.modules and 'numpy' not in sys.modules and 'grader' not in sys.modules"
    subprocess.run([sys.executable, "-c", probe], check=True, timeout=60)
    for path in (Path(__file__).resolve().parents[2] / "sandbox" / "runner").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                names.append(node.module or "")
            assert not any(name.split(".")[0] in ("grader", "pydantic", "tests") for name in names), path


def test_loads_again_share_one_budget_so_a_crashing_module_cannot_outlast_the_graders_bound(host: HostRunner) -> None:
    """Each test ends its process and the module takes 0.4 s to load: fresh children load it again until the
    job's reload budget (one load's time here: messages.py Job.reload_budget_s) is spent; the tests left
    are errors, and the job ends within what the trusted side waits for (execution.py job_bound_s)."""
    import time

    started = time.monotonic()
    done = host.run(job("import time\ntime.sleep(0.4)\n" + MODULE, *["os._exit(1)"] * 8, load_time_s=1.0))
    elapsed = time.monotonic() - started
    assert done.statuses() == ["error"] * 8
    assert "exited (code 1)" in done.tests[0].header.message  # type: ignore[union-attr]
    assert "failed to load again" in done.tests[-1].header.message  # type: ignore[union-attr]
    assert elapsed < 0.4 + 1.0 + 1.5, elapsed  # the first load, the budget, and slack


def test_held_results_go_out_before_a_fresh_child_loads(host: HostRunner) -> None:
    """Quick results are held for a moment, never through a fresh child's load: the first test's result
    arrives before the slow reload that the next test's memory needs."""
    import time

    source = "import time\nif JOB.memory_mb > 4096:\n    time.sleep(1.5)\n" + MODULE
    os.write(
        host.to_w,
        protocol.encode(protocol.JOB, {}, job(source, "result = 1", "result = 2", memory_mb=[4096, 8192]).payload()),
    )
    started = time.monotonic()
    assert host.next_frame(10).kind == protocol.LOAD
    first = host.next_frame(10)
    assert first.kind == protocol.TEST and time.monotonic() - started < 1.0
    assert host.next_frame(10).kind == protocol.TEST and host.next_frame(10).kind == protocol.DONE
