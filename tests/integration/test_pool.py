"""The warm pool: containers are reused, replaced after their quota, and replaced when they die idle."""

from __future__ import annotations

import io
import logging
import os
import signal
import tarfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from grader.app import create_app
from grader.components import Components, build
from grader.containers.container import docker_client
from grader.problems.registry import parse_problem
from tests.conftest import PROBLEMS_DIR, make_settings, wait_until_ready

pytestmark = pytest.mark.docker

REFERENCE = parse_problem((PROBLEMS_DIR / "embedding-layer.yaml").read_text(), "embedding-layer.yaml").reference


def _accepted(client: TestClient) -> None:
    response = client.post("/api/submissions?wait=60", json={"problem_id": "embedding-layer", "source": REFERENCE})
    assert response.status_code == 200
    assert response.json()["status"] == "accepted", response.json()


def _idle_after_ready(service: Components) -> list[str]:
    wait_until_ready(service)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        names = service.pool.idle_names()
        if len(names) == service.pool.size:
            return names
        time.sleep(0.05)
    raise AssertionError("the pool did not refill")


@pytest.mark.parametrize("reuse", [1, 100])
def test_containers_are_reused_up_to_their_quota(tmp_path: Path, reuse: int) -> None:
    service = build(make_settings(tmp_path, pool_size=1, sandbox_reuse=reuse))
    service.start()
    try:
        with TestClient(create_app(service.settings, components=service)) as client:
            first = _idle_after_ready(service)
            _accepted(client)
            _accepted(client)
            after = _idle_after_ready(service)
            if reuse == 1:
                assert not set(first) & set(after), "a container served a second submission"
            else:
                assert first == after, "a warm container was replaced without reason"
    finally:
        service.stop()


def test_settling_containers_are_waited_for_by_threads_kept_for_it_until_the_pool_closes(tmp_path: Path) -> None:
    """A container settles after each job in the background: the threads doing it are kept, not one
    started per job, and they end with the pool."""
    others = set(threading.enumerate())  # another pool's (a session-wide service's) are not this one's

    def settling() -> set[threading.Thread]:
        return {thread for thread in threading.enumerate() if thread.name == "sandbox-settle"} - others

    service = build(make_settings(tmp_path, pool_size=1))
    service.start()
    try:
        with TestClient(create_app(service.settings, components=service)) as client:
            _idle_after_ready(service)
            for _ in range(4):
                _accepted(client)
            _idle_after_ready(service)
            settlers = settling()
            assert 1 <= len(settlers) <= 2, settlers
            for _ in range(2):
                _accepted(client)
            _idle_after_ready(service)
            assert settling() == settlers, "a settling thread was started for a job"
    finally:
        service.stop()
    deadline = time.monotonic() + 10
    while any(thread.is_alive() for thread in settlers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(thread.is_alive() for thread in settlers), "a settling thread outlived its pool"


@pytest.mark.parametrize(
    ("change", "status"),
    [
        ("", "accepted"),
        ("raise ValueError('at import')\n", "runtime_error"),  # the child ends after loading
        (
            "import os\n_real = embed_tokens\n"
            "embed_tokens = lambda e, t, d: os._exit(3) if d == 7 else _real(e, t, d)\n",
            "runtime_error",
        ),
        (
            "_real = embed_tokens\n"
            "embed_tokens = lambda e, t, d: next(filter(None, iter(int, 1))) if d == 7 else _real(e, t, d)\n",
            "time_limit_exceeded",
        ),
    ],
    ids=["accepted", "fails-to-load", "a-test-ends-its-process", "a-test-times-out"],
)
def test_a_container_is_handed_back_with_its_next_child_prepared_and_warm(
    tmp_path: Path, change: str, status: str
) -> None:
    """After every job, however it ended, the runner says DONE only once the next job's child has
    prepared its confinement and warmed up: that work is off the next submission's path."""
    service = build(make_settings(tmp_path, pool_size=1))
    service.start()
    try:
        with TestClient(create_app(service.settings, components=service)) as client:
            (name,) = _idle_after_ready(service)
            for _ in range(2):
                body = {"problem_id": "embedding-layer", "source": REFERENCE + "\n" + change}
                response = client.post("/api/submissions?wait=60", json=body)
                assert response.status_code == 200, response.text
                verdict = response.json()
                assert verdict["status"] == status, verdict
                assert _idle_after_ready(service) == [name], "the container was not reused"
                assert service.pool.status()["cold_handbacks"] == 0, "handed back without its next child ready"
            assert "torchjudge_sandbox_cold_handbacks_total 0.0" in client.get("/metrics").text
    finally:
        service.stop()


def test_a_container_that_dies_while_idle_is_replaced(tmp_path: Path) -> None:
    service = build(make_settings(tmp_path, pool_size=1))
    service.start()
    try:
        with TestClient(create_app(service.settings, components=service)) as client:
            (victim,) = _idle_after_ready(service)
            docker_client().containers.get(victim).kill()
            time.sleep(0.5)
            _accepted(client)
            assert victim not in _idle_after_ready(service)
    finally:
        service.stop()


def test_a_container_whose_runner_dies_says_why_and_is_replaced(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The runner killed from outside: the zygote ends the container and writes why on its stderr; the
    pool's log shows that line when it replaces the container, and grading goes on."""
    service = build(make_settings(tmp_path, pool_size=1))
    service.start()
    try:
        with TestClient(create_app(service.settings, components=service)) as client:
            (victim,) = _idle_after_ready(service)
            zygote = docker_client().containers.get(victim).attrs["State"]["Pid"]
            children = Path(f"/proc/{zygote}/task/{zygote}/children").read_text().split()
            # The runner is the one process holding the container's stdin (the zygote's children have /dev/null).
            (runner,) = [int(pid) for pid in children if os.readlink(f"/proc/{pid}/fd/0") != "/dev/null"]
            os.kill(runner, signal.SIGKILL)
            time.sleep(1.0)
            with caplog.at_level(logging.WARNING, logger="grader.containers.pool"):
                _accepted(client)
            assert victim not in _idle_after_ready(service)
            (line,) = [r.getMessage() for r in caplog.records if victim in r.getMessage()]
            assert "died while idle" in line and "zygote: the runner ended (signal 9)" in line, line
    finally:
        service.stop()


# Appended to the image's execute.py: the child the zygote forks next after HANG_MARKER appears hangs in
# its warm-up, so that it never says READY (the zygote removes the marker: one marker, one such child).
HANG_MARKER = "/tmp/torchjudge-test-hang"
HANGING_WARM_UP = f"""

# -- a fault injected by tests/integration/test_pool.py -----------------------------------------------
from . import zygote as _zygote

_hang = False
_fork_request = _zygote._Zygote._fork_request
_real_warm_up = warm_up


def _marked_fork_request(self):
    global _hang
    try:
        os.unlink({HANG_MARKER!r})
        _hang = True
    except OSError:
        _hang = False
    _fork_request(self)


def warm_up():
    if _hang:
        time.sleep(600)
    _real_warm_up()


_zygote._Zygote._fork_request = _marked_fork_request
"""


@pytest.fixture
def image_with_hanging_children() -> Iterator[str]:
    source = (Path(__file__).parents[2] / "sandbox" / "runner" / "execute.py").read_text()
    files = {
        "Dockerfile": b"FROM torchjudge-sandbox\nCOPY execute.py /opt/runner/execute.py\n",
        "execute.py": (source + HANGING_WARM_UP).encode(),
    }
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    context.seek(0)
    tag = f"torchjudge-sandbox-hanging-{uuid.uuid4().hex[:8]}"
    docker_client().images.build(fileobj=context, custom_context=True, tag=tag, pull=False, rm=True)
    try:
        yield tag
    finally:
        docker_client().images.remove(tag, force=True)


def _hang_next_child(name: str) -> None:
    command = ["python3", "-I", "-c", f"open({HANG_MARKER!r}, 'w').close()"]
    result = docker_client().containers.get(name).exec_run(command, user="10001:10001")
    assert result.exit_code == 0, result.output


def test_a_child_that_never_gets_ready_costs_time_never_a_verdict(
    tmp_path: Path, image_with_hanging_children: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A spare child that does not say READY in time is dropped: the container is handed back cold (and
    counted), and the next job forks its own. A job's first child that never gets ready is the sandbox's
    failure, not the submission's: nothing of the job ran, the container is replaced, and the job runs in
    another one. Each submission is accepted."""
    settings = make_settings(tmp_path, pool_size=1, sandbox_image=image_with_hanging_children, load_time_s=4)
    service = build(settings)
    service.start()
    try:
        with TestClient(create_app(service.settings, components=service)) as client:
            (first,) = _idle_after_ready(service)
            _accepted(client)  # the reference runs too: what follows starts from a settled, warm container
            assert _idle_after_ready(service) == [first] and service.pool.status()["cold_handbacks"] == 0

            _hang_next_child(first)  # the spare readied after the next job hangs
            _accepted(client)
            assert _idle_after_ready(service) == [first], "a container handed back cold is still reused"
            assert service.pool.status()["cold_handbacks"] == 1
            assert "torchjudge_sandbox_cold_handbacks_total 1.0" in client.get("/metrics").text

            _hang_next_child(first)  # now the next job's own child: forked for it, it hangs
            with caplog.at_level(logging.WARNING, logger="grader.grading.execution"):
                _accepted(client)
            assert first not in _idle_after_ready(service), "the container whose child never got ready stays"
            assert any("expected the load result first" in r.getMessage() for r in caplog.records), caplog.text
    finally:
        service.stop()


def test_the_zygotes_memory_is_on_huge_pages(tmp_path: Path) -> None:
    """Every child is a fork of the zygote: with its memory collapsed into huge pages (sandbox/runner/
    hugepages.py), a fork and a child's end cost a quarter of what they did. Read from the host."""
    if Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text().strip().endswith("[never]"):
        pytest.fail("transparent huge pages are disabled on this host; forks of the zygote cost 4x")
    service = build(make_settings(tmp_path, pool_size=1))
    service.start()
    try:
        (name,) = _idle_after_ready(service)
        pid = docker_client().containers.get(name).attrs["State"]["Pid"]
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
        huge_kb = next(int(line.split()[1]) for line in rollup.splitlines() if line.startswith("AnonHugePages:"))
        anonymous_kb = next(int(line.split()[1]) for line in rollup.splitlines() if line.startswith("Anonymous:"))
        assert huge_kb >= anonymous_kb // 2, f"{huge_kb} KiB of {anonymous_kb} KiB on huge pages"
    finally:
        service.stop()
