"""One hardened sandbox container with a warm runner inside, driven over its attached stdin/stdout."""

from __future__ import annotations

import logging
import select
import socket
import struct
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import docker
from docker.errors import DockerException, NotFound
from docker.types import Ulimit

from grader import phases
from grader.config_grading import LimitsSettings, SandboxSettings
from grader.containers.frames import Frame, FrameDecoder, FrameError, encode_job
from grader.containers.hardening import GVISOR_EXTRA_MEMORY_MB, GVISOR_PIDS_FACTOR, ipc_sysctls, is_gvisor, no_host_logs
from grader.containers.losses import SandboxLost, SandboxProtocolError
from grader.containers.protocol import (
    DONE,
    HELLO,
    LOAD,
    TEST,
    DoneHeader,
    HelloHeader,
    Job,
    LoadHeader,
    Outcome,
    TestHeader,
    contract_digest,
)

log = logging.getLogger(__name__)
# Hears test frames as they land: those that came together, in order.
OnTests = Callable[[list[tuple[TestHeader, bytes]]], None]

LABEL = "torchjudge.sandbox"
CONTRACT = contract_digest()  # what this grader's copy of the contract is (sandbox/runner/protocol.py)
DOCKER_STREAM_HEADER = struct.Struct(">BxxxI")
MAX_STDERR_KEPT = 4096


LOADING = -1  # SandboxLost.during_test while the submission is being loaded
# How much longer than the runner's own limits the next frame may take (forks, cleanup, a busy host).
# A runner that says nothing for longer was stopped or wedged (a submission can SIGSTOP it: same
# uid), and the job is not left to wait for its whole deadline.
FRAME_SLACK_S = 10.0
# How long a runner may take to clean up after a job before its container is given up.
SETTLE_S = 15.0


@dataclass
class JobOutcome:
    load: LoadHeader
    tests: list[tuple[TestHeader, bytes]] = field(default_factory=list)


def owner_label(data_dir: Path) -> str:
    """Which service owns a container: its data directory. A restart removes its own orphans only."""
    import hashlib

    return hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:16]


def docker_client() -> docker.DockerClient:
    return docker.from_env(version="auto", timeout=60)


def _may_skip(job: Job, outcome: JobOutcome) -> bool:
    """A test may be reported skipped only when the job asked for it and a test before it ran out of time."""
    return job.skip_after_timeout and any(header.status == Outcome.TIMEOUT for header, _ in outcome.tests)


class SandboxContainer:
    def __init__(
        self, client: docker.DockerClient, sandbox: SandboxSettings, limits: LimitsSettings, owner: str
    ) -> None:
        self.client = client
        self.sandbox = sandbox
        self.limits = limits
        self.owner = owner  # the label of its pool's containers (owner_label, or a pool's own)
        self.name = f"torchjudge-sandbox-{uuid.uuid4().hex[:12]}"
        self.container_id: str | None = None
        self.uses = 0
        self._sock: socket.socket | None = None
        self._response = None
        self._pending = bytearray()
        self._frames: deque[Frame] = deque()
        self._decoder = FrameDecoder(max_body=sandbox.max_result_bytes + 1024 * 1024)
        self._stderr = b""
        self.hello: HelloHeader | None = None
        # After a job's last result the runner cleans the container and then says whether it is clean
        # (DONE). That is waited for by settle(), off the submission's path, before the next job.
        self._done_due: float | None = None
        self.warm_child = False  # the last DONE said the next job's child is prepared and warm

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        sandbox = self.sandbox
        # Sized for the largest limit a problem may have: each test's process is held to its own problem's
        # limit inside (RLIMIT_DATA, or RLIMIT_AS under gVisor: sandbox/runner/confine.py).
        memory_mb = self.limits.max_memory_mb + sandbox.memory_overhead_mb
        pids_limit = sandbox.pids_limit
        if is_gvisor(sandbox.runtime):
            memory_mb += GVISOR_EXTRA_MEMORY_MB
            pids_limit *= GVISOR_PIDS_FACTOR
        memory = memory_mb * 1024 * 1024
        api = self.client.api
        host_config = api.create_host_config(
            network_mode="none",
            read_only=True,
            tmpfs={"/tmp": f"rw,noexec,nosuid,nodev,size={sandbox.tmpfs_mb}m,mode=1777"},
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            pids_limit=pids_limit,
            mem_limit=memory,
            memswap_limit=memory,
            nano_cpus=int(sandbox.cpus * 1e9),
            # No docker-init: the runner's zygote is PID 1, the one process a submission cannot signal.
            init=False,
            ulimits=[Ulimit(name="nofile", soft=256, hard=256), Ulimit(name="core", soft=0, hard=0)],
            runtime=sandbox.runtime,
            ipc_mode="private",
            sysctls=ipc_sysctls(sandbox),
            log_config=no_host_logs(),
            # When the grader goes away (even by kill -9) the attach stream closes, the runner sees
            # EOF on stdin and exits; the engine then removes the container, so none is left behind.
            auto_remove=True,
        )
        # The runner reads every file of the image into the page cache at start (sandbox/runner/prewarm.py),
        # except under gVisor, whose sentry would keep a copy of them in this container's memory.
        command = [] if sandbox.prewarm and not is_gvisor(sandbox.runtime) else ["--no-prewarm"]
        try:
            created = api.create_container(
                sandbox.image,
                command=command or None,
                name=self.name,
                stdin_open=True,
                tty=False,
                user="10001:10001",
                environment={},
                network_disabled=True,
                labels={LABEL: self.owner},
                host_config=host_config,
            )
            self.container_id = created["Id"]
            raw = api.attach_socket(self.container_id, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
            self._response = raw
            self._sock = raw._sock  # the socket under the SocketIO wrapper
            api.start(self.container_id)
        except DockerException as exc:
            self.remove()
            raise SandboxLost(f"cannot start a sandbox container: {exc}") from exc
        deadline = time.monotonic() + sandbox.start_timeout_s
        try:
            frame = self._next_frame(deadline)
        except SandboxLost:
            self.remove()
            raise
        if frame.kind != HELLO:
            self.remove()
            raise SandboxLost("the sandbox runner did not say hello")
        assert isinstance(frame.header, HelloHeader)
        if frame.header.contract != CONTRACT:
            self.remove()
            raise SandboxLost(
                f"the sandbox image {sandbox.image!r} speaks another contract ({frame.header.contract!r}) than this "
                f"grader ({CONTRACT!r}): it was built before sandbox/runner last changed; rebuild it "
                "(scripts/build-sandbox-image.sh)"
            )
        self.hello = frame.header

    def remove(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            except OSError:
                pass
            self._sock = None
        if self.container_id is not None:
            try:
                self.client.api.remove_container(self.container_id, force=True)
            except NotFound:
                pass
            except DockerException as exc:
                log.warning("could not remove sandbox %s: %s", self.name, exc)
            self.container_id = None

    def alive(self) -> bool:
        """A cheap health check: an idle runner sends nothing, so a readable socket means EOF or garbage."""
        if self._sock is None:
            return False
        try:
            readable, _, _ = select.select([self._sock], [], [], 0)
        except (OSError, ValueError):
            return False
        return not readable and not self._pending and not self._frames

    def paused(self) -> bool:
        """Whether the engine holds the container paused (`docker pause`, a frozen cgroup): nothing in it runs,
        so what it did not answer is the judge's. False when the engine cannot say."""
        if self.container_id is None:
            return False
        try:
            state = self.client.api.inspect_container(self.container_id).get("State") or {}
        except Exception:  # noqa: BLE001 - an engine that cannot say: not shown to be the judge's
            return False
        return state.get("Paused") is True

    def last_words(self, wait_s: float = 0.2) -> str:
        """The end of what a stopped container wrote on its stderr: the zygote's and the runner's line on
        why they ended it. Read from what is on the stream within wait_s; '' if nothing came."""
        deadline = time.monotonic() + wait_s
        try:
            while True:
                self._read_record(deadline)
        except SandboxLost:
            pass
        return self._said()

    def _said(self) -> str:
        """The end of the container's stderr so far, as text (bounded: only ever shown in logs)."""
        return self._stderr[-500:].decode("ascii", "replace").strip()

    # -- one job -------------------------------------------------------------------------------
    def run_job(
        self,
        job: Job,
        deadline: float,
        on_tests: OnTests | None = None,
    ) -> JobOutcome:
        """Sends a job and collects its results: the load result, then one per test. Returns as soon as
        the last one is in; the runner's cleaning-up that follows is settle()'s to wait for. Raises
        SandboxLost if the container fails or breaks the protocol. on_tests hears the tests' frames as they
        land, those that came together at once (the runner sends quick tests' results in one write, and
        a judge process judges them in one request), and must not raise."""
        # The runner enforces the limits itself; the trusted side only bounds the wait for each frame:
        # a test's result may follow a reload of the submission in a fresh child (load time).
        load_budget = job.load_time_s + FRAME_SLACK_S
        frame_budget = job.load_time_s + max(test.limits.time_s for test in job.tests) + FRAME_SLACK_S
        self.send(encode_job(job), deadline)
        with phases.timed("job"):
            return self._collect(job, deadline, load_budget, frame_budget, on_tests)

    def send(self, frame: bytes, deadline: float) -> None:
        """Sends a job's frame (a job, or a benchmark: grader/containers/bench.py), once the previous job is
        settled; the frames that answer it are next_frame()'s. Raises SandboxLost."""
        if self._sock is None:
            raise SandboxLost("the sandbox is not running")
        if self._done_due is not None and not self.settle():
            raise SandboxLost("the sandbox did not come back clean from its previous job", during_test=LOADING)
        self.uses += 1
        try:
            self._sock.sendall(frame)
        except OSError as exc:
            raise SandboxLost(f"cannot send the job to the sandbox: {exc}") from exc
        self._done_due = deadline + SETTLE_S

    def next_frame(self, deadline: float) -> Frame:
        """The next frame the runner sends, decoded strictly; SandboxLost past the deadline."""
        return self._next_frame(deadline)

    def _collect(
        self,
        job: Job,
        deadline: float,
        load_budget: float,
        frame_budget: float,
        on_tests: OnTests | None,
    ) -> JobOutcome:
        try:
            frame = self._next_frame(min(deadline, time.monotonic() + load_budget))
        except SandboxLost as exc:
            exc.during_test = LOADING
            raise
        if frame.kind != LOAD:
            raise SandboxProtocolError("expected the load result first", during_test=LOADING)
        assert isinstance(frame.header, LoadHeader)
        outcome = JobOutcome(load=frame.header)
        phases.add("load", (outcome.load.time_ms or 0.0) / 1000)
        if outcome.load.status != "ok":
            return outcome
        landed: list[tuple[TestHeader, bytes]] = []
        try:
            for expected_index in range(len(job.tests)):
                try:
                    frame = self._next_frame(min(deadline, time.monotonic() + frame_budget))
                except SandboxLost as exc:
                    exc.during_test = expected_index
                    raise
                if frame.kind == DONE:
                    raise SandboxProtocolError("the sandbox skipped tests", during_test=expected_index)
                if frame.kind != TEST:
                    raise SandboxProtocolError("unexpected frame kind during a job", during_test=expected_index)
                header = frame.header
                assert isinstance(header, TestHeader)
                if header.index != expected_index:
                    raise SandboxProtocolError("test results out of order", during_test=expected_index)
                if header.status == Outcome.SKIPPED and not _may_skip(job, outcome):
                    raise SandboxProtocolError("a test skipped without a timeout before it", during_test=expected_index)
                outcome.tests.append((header, frame.body))
                phases.add("first test" if expected_index == 0 else "other tests", header.time_ms / 1000)
                landed.append((header, frame.body))
                if on_tests is not None and not self._frames:  # nothing more came with it: heard now
                    heard, landed = landed, []
                    on_tests(heard)
        finally:
            if on_tests is not None and landed:  # what landed before the end (or before the sandbox was lost)
                on_tests(landed)
        return outcome

    @property
    def settling(self) -> bool:
        """A job's results are in, and the runner's word that it cleaned up after it is not yet."""
        return self._done_due is not None

    def settle(self) -> bool:
        """Waits for the end of the last job (the runner's DONE, sent once the container is clean
        again); whether the container can take another job. False for anything else it sends."""
        if self._done_due is None:
            return True
        due, self._done_due = self._done_due, None
        try:
            frame = self._next_frame(min(due, time.monotonic() + SETTLE_S))
        except SandboxLost as exc:
            log.warning("sandbox %s did not settle: %s", self.name, exc)
            return False
        if frame.kind != DONE or self._frames:
            log.warning("sandbox %s sent more than its job's results", self.name)
            return False
        assert isinstance(frame.header, DoneHeader)
        self.warm_child = frame.header.ready
        if not frame.header.clean and self._said():  # the runner's own fault, said on its stderr
            log.warning("sandbox %s came back unclean: %r", self.name, self._said())
        return frame.header.clean

    # -- the attached stream ---------------------------------------------------------------------
    def _next_frame(self, deadline: float) -> Frame:
        while not self._frames:
            self._read_record(deadline)
        return self._frames.popleft()

    def _read_record(self, deadline: float) -> None:
        """Reads one docker stream record; stdout feeds the frame decoder, stderr is kept briefly for logs."""
        stream, size = DOCKER_STREAM_HEADER.unpack(self._recv_exactly(DOCKER_STREAM_HEADER.size, deadline))
        data = self._recv_exactly(size, deadline)
        if stream == 1:
            try:
                self._frames.extend(self._decoder.feed(data))
            except FrameError as exc:
                raise SandboxProtocolError(f"malformed frame from the sandbox: {exc}") from exc
        elif stream not in (0, 2):
            raise SandboxProtocolError("malformed stream record from the engine")
        elif stream == 2:
            self._stderr = (self._stderr + data)[-MAX_STDERR_KEPT:]

    def _recv_exactly(self, count: int, deadline: float) -> bytes:
        while len(self._pending) < count:
            if self._sock is None:
                raise SandboxLost("the sandbox was removed")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if self.paused():
                    raise SandboxLost("the sandbox did not answer in time: the engine holds it paused", judges=True)
                raise SandboxLost("the sandbox did not answer in time")
            try:
                ready, _, _ = select.select([self._sock], [], [], remaining)
            except (OSError, ValueError, TypeError) as exc:  # removed by another thread (the watchdog)
                raise SandboxLost(f"lost the sandbox connection: {exc}") from exc
            if not ready:
                continue
            try:
                data = self._sock.recv(1 << 16)
            except (OSError, AttributeError) as exc:  # closed, or removed by another thread meanwhile
                raise SandboxLost(f"lost the sandbox connection: {exc}") from exc
            if not data:
                words = self._said()
                detail = f" ({words!r})" if words else ""
                raise SandboxLost("the sandbox container stopped" + detail)
            self._pending += data
        chunk, self._pending = bytes(self._pending[:count]), self._pending[count:]
        return chunk
