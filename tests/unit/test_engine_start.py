"""scripts/ensure-docker.sh starts an engine that outlives the command that started it: Ctrl-C on `make run`
(SIGINT to the terminal's process group) stops the service, never the Docker engine and every container
on the machine with it. The engine here is a stand-in that, like dockerd, stops on SIGINT."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from grader.config import REPO_ROOT

FAKE_DOCKERD = """\
#!{python}
import os, signal, sys, time
state = {state!r}
def stop(signum, frame):
    open(os.path.join(state, "stopped-by-signal"), "w").write(str(signum))
    sys.exit(0)
signal.signal(signal.SIGINT, stop)
signal.signal(signal.SIGTERM, stop)
open(os.path.join(state, "pid"), "w").write(str(os.getpid()))
open(os.path.join(state, "running"), "w").write("")
time.sleep(120)
"""

FAKE_DOCKER = """\
#!/bin/sh
# `docker info` answers once the stand-in engine runs.
[ -f {state}/running ] && [ ! -f {state}/stopped-by-signal ]
"""


def _as_a_terminal_foreground_job() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_ctrl_c_on_the_command_that_started_the_engine_leaves_the_engine_running(tmp_path: Path) -> None:
    bin_dir, state = tmp_path / "bin", tmp_path / "state"
    bin_dir.mkdir()
    state.mkdir()
    (bin_dir / "dockerd").write_text(FAKE_DOCKERD.format(python=sys.executable, state=str(state)))
    (bin_dir / "docker").write_text(textwrap.dedent(FAKE_DOCKER.format(state=state)))
    for name in ("dockerd", "docker"):
        (bin_dir / name).chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "TORCHJUDGE_LOG_DIR": str(tmp_path),
        "TORCHJUDGE_DOCKERD_DIRECT": "1",
    }
    # As `make run` in a terminal: the script, then the service in the foreground, one process group.
    command = f"{REPO_ROOT / 'scripts' / 'ensure-docker.sh'} && exec sleep 60"
    # A terminal's foreground job takes Ctrl-C with SIGINT's default action. The suite itself may run where SIGINT
    # is ignored (a shell's background job: `make test &`), and an ignored signal stays ignored across exec, so
    # the command is given the terminal's disposition rather than the suite's.
    session = subprocess.Popen(
        ["bash", "-c", command], env=env, start_new_session=True, preexec_fn=_as_a_terminal_foreground_job
    )
    pid = None
    try:
        deadline = time.monotonic() + 30
        while not (state / "running").exists():
            assert time.monotonic() < deadline, "the engine was not started"
            assert session.poll() is None, "ensure-docker.sh failed"
            time.sleep(0.05)
        pid = int((state / "pid").read_text())
        own_session = os.getsid(pid) != os.getsid(session.pid)
        # The script has waited for `docker info` and the service is in the foreground: bash exec'd it, in place.
        cmdline = Path(f"/proc/{session.pid}/cmdline")
        while not cmdline.read_bytes().startswith(b"sleep"):
            assert time.monotonic() < deadline, "the script never handed over to the service"
            time.sleep(0.05)
        os.killpg(session.pid, signal.SIGINT)  # Ctrl-C
        assert session.wait(timeout=10) != 0, "the foreground command stopped on Ctrl-C"
        time.sleep(0.5)
        assert not (state / "stopped-by-signal").exists(), "Ctrl-C reached the engine and stopped it"
        assert _alive(pid), "the engine died with the command that started it"
        assert own_session, "the engine runs in a session of its own"
    finally:
        if session.poll() is None:
            os.killpg(session.pid, signal.SIGKILL)
        if pid is not None and _alive(pid):
            os.kill(pid, signal.SIGKILL)
