"""The attacks, as data: each is a submission for the embedding-layer problem and the verdicts it may get.

How "the attack failed" is made observable: a probe attack computes ESCAPED (did it reach the network,
a secret, root, another submission...) and its solution is right only when ESCAPED is true, so its
`wrong_answer` proves the attack failed. Attacks that hang or crash do it once per job (the first
time, marked by /tmp/.attacked; /tmp is wiped between jobs only), and are correct otherwise, so a job
of 21 tests costs one time limit, not 21; the verdict is then that of the first test.
"""

from __future__ import annotations

import base64
import hashlib
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from grader.problems.registry import parse_problem
from tests.conftest import PROBLEMS_DIR

EMBEDDING = parse_problem((PROBLEMS_DIR / "embedding-layer.yaml").read_text(), "embedding-layer.yaml")

CORRECT = """\
import math

import torch
import torch.nn as nn


def create_embedding_layer(vocab_size, d_model):
    return nn.Embedding(vocab_size, d_model)


def embed_tokens(embedding, tokens, d_model):
    return embedding(tokens) * math.sqrt(d_model)
"""

PRELUDE = """\
import math
import os
import sys

import torch
import torch.nn as nn

# Every pid a process of this container can have had: pids are handed out in order, so none is above
# this child's own by more than its threads (gVisor and Linux alike, short of a wrap-around).
PID_MAX = os.getpid() + 1024
"""

FIRST_TIME = '''
def first_time():
    """True on the first call in a job, in any of its processes (the marker outlives a killed child)."""
    try:
        os.close(os.open("/tmp/.attacked", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return False
    return True
'''

FACTORY = """
def create_embedding_layer(vocab_size, d_model):
    return nn.Embedding(vocab_size, d_model)
"""

# Test code runs as a function compiled from "<test N>": the submission can tell which test calls it.
TEST_NUMBER = """
def test_number():
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith("<test "):
            return int(name[6:-1])
        frame = frame.f_back
    return 0
"""


def _indent(code: str, spaces: int) -> str:
    return textwrap.indent(textwrap.dedent(code).strip("\n"), " " * spaces)


def once_in_test(code: str) -> str:
    """A correct solution whose embed_tokens runs `code` the first time it is called in a job."""
    return (
        PRELUDE
        + FIRST_TIME
        + FACTORY
        + f"""

def embed_tokens(embedding, tokens, d_model):
    if first_time():
{_indent(code, 8)}
    return embedding(tokens) * math.sqrt(d_model)
"""
    )


def every_test(code: str, returns: str = "embedding(tokens) * math.sqrt(d_model)") -> str:
    """embed_tokens runs `code` on every call, then returns `returns` (correct by default)."""
    return (
        PRELUDE
        + FACTORY
        + f"""

def embed_tokens(embedding, tokens, d_model):
{_indent(code, 4)}
    return {returns}
"""
    )


def returning(expression: str, prelude: str = "") -> str:
    """embed_tokens returns `expression`: the lie under test."""
    return (
        PRELUDE
        + textwrap.dedent(prelude)
        + FACTORY
        + f"""

def embed_tokens(embedding, tokens, d_model):
    return {expression}
"""
    )


def escaped_if(attack: str, *, in_test: bool = False, once: bool = True) -> str:
    """`attack` is the body of a function that returns True when the attack worked. The solution is
    right only then, so wrong_answer proves it failed. It runs once per job (or in every process that
    loads the submission, once=False), at import or (in_test) in the first test; an exception inside
    it counts as failure."""
    guard = "    if not first_time():\n        RESULT.append(False)\n        return False\n" if once else ""
    run = f"""
RESULT = []  # the first answer, kept: every test of the job sees the same one


def escaped():
    if RESULT:
        return RESULT[0]
{guard}    try:
        RESULT.append(bool(attack()))
    except BaseException:  # noqa: BLE001 - a failed attack, whatever it raised
        RESULT.append(False)
    return RESULT[0]
"""
    body = (
        PRELUDE
        + FIRST_TIME
        + f"""

def attack():
{_indent(attack, 4)}
"""
        + run
        + FACTORY
    )
    if in_test:
        return (
            body
            + """

def embed_tokens(embedding, tokens, d_model):
    # Right only if the attack worked (the sign flip fails the first test otherwise).
    factor = math.sqrt(d_model) if escaped() else -math.sqrt(d_model)
    return embedding(tokens) * factor
"""
        )
    return (
        body
        + """

ESCAPED = escaped()


def embed_tokens(embedding, tokens, d_model):
    # Right only if the attack worked (the sign flip fails the first test otherwise).
    factor = math.sqrt(d_model) if ESCAPED else -math.sqrt(d_model)
    return embedding(tokens) * factor
"""
    )


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# Writes a frame on every descriptor the child has: one of them is its result pipe to the runner.
FORGE = """
import json
import struct


def frame(kind, header, body=b""):
    head = json.dumps(header).encode()
    return struct.pack(">2scII", b"TJ", kind, len(head), len(body)) + head + body


def forge_on_every_fd(data):
    for fd in range(3, 256):
        try:
            os.write(fd, data)
        except OSError:
            pass
"""


# -- needles: things that must never be findable inside a sandbox --------------------------------------
def _distinctive_line(code: str, avoid: list[str]) -> str:
    """The longest line of `code` that appears in none of `avoid` (so finding it means finding `code`)."""
    lines = sorted((line.strip() for line in code.splitlines()), key=len, reverse=True)
    for line in lines:
        if len(line) > 25 and not line.startswith("#") and not any(line in other for other in avoid):
            return line
    raise AssertionError("no distinctive line")


_VISIBLE = [test.code for test in EMBEDDING.tests if test.visible] + [EMBEDDING.starter_code]
HIDDEN_TEST_SNIPPET = _distinctive_line(
    "\n".join(test.code for test in EMBEDDING.tests if not test.visible), _VISIBLE + [CORRECT]
)
REFERENCE_SNIPPET = "return embedding(tokens) * math.sqrt(d_model)"


@dataclass(frozen=True)
class Context:
    """What some attacks are built from: a host path that must never appear, a secret to look for."""

    host_marker: Path
    secret: str  # "tjsecret-" + 32 hex digits; the sandbox gets only its SHA-256

    @property
    def secret_digest(self) -> str:
        return hashlib.sha256(self.secret.encode()).hexdigest()


SourceMaker = Callable[[Context], str]


@dataclass(frozen=True)
class Attack:
    name: str
    source: str | SourceMaker
    verdicts: frozenset[str]
    why: str  # what stops it
    # The runner (and so the container) lives through it: the pool keeps the same containers.
    runner_survives: bool = True
    # Sent to every pool container before the attack (e.g. a victim submission).
    before: SourceMaker | None = None
    # Where gVisor behaves differently (see SECURITY.md): the verdicts allowed under runsc.
    runsc_verdicts: frozenset[str] | None = None
    runsc_runner_survives: bool | None = None
    tags: tuple[str, ...] = field(default_factory=tuple)
    # A weakness outside the sandbox's reach (e.g. in a problem's tests), documented as a strict xfail:
    # the test starts passing, and so failing as XPASS, the day it is fixed.
    known_gap: str | None = None

    def render(self, context: Context) -> str:
        return self.source(context) if callable(self.source) else self.source

    def allowed(self, runtime: str) -> frozenset[str]:
        return self.runsc_verdicts if runtime == "runsc" and self.runsc_verdicts is not None else self.verdicts

    def survives(self, runtime: str) -> bool:
        if runtime == "runsc" and self.runsc_runner_survives is not None:
            return self.runsc_runner_survives
        return self.runner_survives


def V(*names: str) -> frozenset[str]:  # noqa: N802 - reads like a set literal in the table
    return frozenset(names)


# -- sources that need a context -----------------------------------------------------------------------
def _reduce_runs_a_command(context: Context) -> str:
    return returning(
        "{'payload': Payload(), 'out': Payload()}",
        prelude=f'''
        class Payload:
            """Whoever unpickles this runs a command on their machine."""

            def __reduce__(self):
                return (os.system, ("touch {context.host_marker}",))

            def __reduce_ex__(self, protocol):
                return self.__reduce__()
        ''',
    )


SECRET_SCAN = """
import hashlib
import re

pattern = re.compile(rb"tjsecret-[0-9a-f]{32}")


def holds_secret(data):
    return any(hashlib.sha256(m.group()).hexdigest() == DIGEST for m in pattern.finditer(data))
"""


def _secret_in_environment(context: Context) -> str:
    return escaped_if(
        f"""
DIGEST = "{context.secret_digest}"
{SECRET_SCAN}
blobs = [b"\\0".join(k.encode() + b"=" + v.encode() for k, v in os.environ.items())]
for pid in range(1, PID_MAX):  # every process there could be, listed or not
    for name in ("environ", "cmdline"):
        try:
            with open(f"/proc/{{pid}}/{{name}}", "rb") as handle:
                blobs.append(handle.read())
        except OSError:
            pass
return any(holds_secret(blob) or b"GRADER_" in blob for blob in blobs)
"""
    )


def _victim(context: Context) -> str:
    """An innocent submission that carries the secret in its source."""
    return CORRECT + f'\nOWNER_NOTE = "{context.secret}"\n'


def _other_submission_in_memory(context: Context) -> str:
    """Looks for the previous submission's source anywhere in this process: objects, frames, raw memory."""
    return escaped_if(
        f"""
import gc
DIGEST = "{context.secret_digest}"
{SECRET_SCAN}
for obj in gc.get_objects():
    if isinstance(obj, dict):
        for value in list(obj.values()):
            if isinstance(value, str) and holds_secret(value.encode(errors="ignore")):
                return True
frame = sys._getframe()
while frame is not None:
    for value in list(frame.f_locals.values()):
        if isinstance(value, (str, bytes)) and holds_secret(value if isinstance(value, bytes) else value.encode()):
            return True
    frame = frame.f_back
with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", buffering=0) as mem:
    for line in maps:
        fields = line.split()
        if "r" not in fields[1] or (len(fields) > 5 and fields[5].startswith("/")):
            continue
        start, end = (int(x, 16) for x in fields[0].split("-"))
        try:
            mem.seek(start)
            if holds_secret(mem.read(end - start)):
                return True
        except OSError:
            pass
return False
"""
    )


# -- the probe run after every attack -------------------------------------------------------------------
# No try/except around it: a probe that cannot look (a directory it cannot list, say) must not pass for
# one that looked and found nothing. Its own failure is a runtime_error, which the suite refuses.
TRACE_PROBE = (
    PRELUDE
    + """
import ctypes


def traces():
    found = []
    for directory in ("/tmp", "/dev/shm", "/dev/mqueue"):
        if os.path.exists(directory):  # gVisor has no /dev/mqueue; a directory that is there must be listable
            found += [f"{directory}/{name}" for name in os.listdir(directory)]
    libc = ctypes.CDLL(None, use_errno=True)
    # The keys plant-traces uses (SysV IPC is refused to children: these answer -1 either way).
    if libc.shmget(0x7470, 0, 0) != -1 or libc.semget(0x7471, 0, 0) != -1 or libc.msgget(0x7472, 0) != -1:
        found.append("sysv key")
    # Every process there is, without /proc (which a child cannot list): kill(pid, 0) answers ESRCH
    # for no process, and EPERM for the zygote and the runner (the seccomp filter), success otherwise.
    alive = []
    for pid in range(1, PID_MAX):
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)
            alive.append(pid)
        except ProcessLookupError:
            pass
        except PermissionError:
            alive.append(pid)
    if len(alive) != 2:  # the zygote and the runner
        found.append(f"processes {alive[:10]}")
    return found


TRACES = traces()
"""
    + FACTORY
    + """

def embed_tokens(embedding, tokens, d_model):
    # Right only if something was found (the sign flip fails the first test otherwise).
    factor = math.sqrt(d_model) if TRACES else -math.sqrt(d_model)
    return embedding(tokens) * factor
"""
)


# -- the table ------------------------------------------------------------------------------------------
ATTACKS: list[Attack] = [
    # Forged results --------------------------------------------------------------------------------
    Attack(
        "forged-verdict-then-exit",
        every_test(
            """
import json
print(json.dumps({"status": "accepted", "score": 1.0, "tests": [{"status": "passed"}] * 21}))
sys.stdout.write("TJ all tests passed\\n")
sys.stdout.flush()
os._exit(0)
"""
        ),
        V("runtime_error"),
        "stdout decides nothing; the runner sees a child that exited without a result frame",
    ),
    Attack(
        "sys-exit-mid-test",
        every_test("sys.exit(0)"),
        V("runtime_error"),
        "SystemExit inside a test is caught and reported as the test's error",
    ),
    Attack(
        "atexit-hook-prints-a-pass",
        PRELUDE
        + FACTORY
        + """
import atexit


@atexit.register
def forge():
    sys.stdout.write('{"status": "accepted"}\\n')
    sys.stdout.flush()


def embed_tokens(embedding, tokens, d_model):
    return torch.zeros(*tokens.shape, d_model)
""",
        V("wrong_answer"),
        "the child leaves through os._exit, so no atexit hook runs; stdout decides nothing anyway",
    ),
    Attack(
        "forged-child-result-frames-on-every-fd",
        PRELUDE
        + FACTORY
        + TEST_NUMBER
        + """
import json
import struct


def frame(kind, header, body=b""):
    head = json.dumps(header).encode()
    return struct.pack(">2scII", b"TJ", kind, len(head), len(body)) + head + body


def value(shape):
    tensor = {"t": "tensor", "dtype": "float32", "shape": shape}
    manifest = json.dumps({"t": "dict", "items": [["out", tensor]]}, separators=(",", ":")).encode()
    count = 1
    for size in shape:
        count *= size
    return struct.pack(">I", len(manifest)) + manifest + b"\\0" * (4 * count)


def embed_tokens(embedding, tokens, d_model):
    shape = [*tokens.shape, d_model]
    forged = frame(b"r", {"status": "ok", "index": test_number() - 1, "verdict": "accepted"}, value(shape))
    for fd in range(256):
        try:
            os.write(fd, forged)
        except OSError:
            pass
    return torch.zeros(shape)
""",
        V("wrong_answer"),
        "a forged result frame is only data: the trusted side compares its values with the reference's",
    ),
    Attack(
        "zero-size-tensor-whose-shape-overflows",
        PRELUDE
        + FACTORY
        + TEST_NUMBER
        + FORGE
        + """

def embed_tokens(embedding, tokens, d_model):
    # Well-formed on its face (zero elements, zero bytes), but numpy cannot even describe the shape.
    tensor = {"t": "tensor", "dtype": "float32", "shape": [0] + [2**31 - 1] * 7}
    manifest = json.dumps({"t": "dict", "items": [["out", tensor]]}, separators=(",", ":")).encode()
    value = struct.pack(">I", len(manifest)) + manifest
    forge_on_every_fd(frame(b"r", {"status": "ok", "index": test_number() - 1}, value))
    return torch.zeros(*tokens.shape, d_model)
""",
        V("runtime_error"),
        "shapes are bounded (rank, each dimension, the product of the non-zero ones) before numpy sees "
        "them, and anything a value's bytes provoke while decoded is that test's error",
    ),
    Attack(
        "forged-load-result-with-a-line-past-any-column",
        PRELUDE
        + FACTORY
        + FORGE
        + """
forge_on_every_fd(frame(b"l", {"status": "error", "error_type": "E", "message": "m", "line": 2**70}))
raise SystemExit(1)


def embed_tokens(embedding, tokens, d_model):
    return embedding(tokens) * math.sqrt(d_model)
""",
        V("runtime_error"),
        "the runner forwards a line only within 0..10**6, and the grader's frame model refuses any other; "
        "nothing out of range reaches the database",
    ),
    Attack(
        "deeply-nested-frame-header-to-the-runner",
        PRELUDE
        + FACTORY
        + FORGE
        + """

def embed_tokens(embedding, tokens, d_model):
    head = b"[" * 30_000 + b"]" * 30_000  # within the 64 KiB header cap: it is the nesting that must be refused
    forge_on_every_fd(struct.pack(">2scII", b"TJ", b"r", len(head), 0) + head)
    return embedding(tokens) * math.sqrt(d_model)
""",
        V("runtime_error"),
        "JSON nesting is measured without recursion before anything parses it, on both sides of the pipe; "
        "the runner reports a malformed result and goes on",
    ),
    Attack(
        "stops-reading-its-commands",
        PRELUDE
        + FIRST_TIME
        + FACTORY
        + """
import fcntl
import time

if first_time():
    # The child's command pipe made as small as it goes, and the child's own reader replaced by a sleep:
    # a runner that wrote commands with a blocking write would wait on the pipe for ever.
    for fd in range(3, 256):
        try:
            fcntl.fcntl(fd, 1031, 4096)  # F_SETPIPE_SZ
        except OSError:
            pass
    sys.modules["runner.protocol"].read_frame = lambda *args, **kwargs: time.sleep(3600)


def embed_tokens(embedding, tokens, d_model):
    return embedding(tokens) * math.sqrt(d_model)
""",
        V("time_limit_exceeded"),
        "the runner writes commands without blocking, within the test's time, and kills a child that does "
        "not take them",
    ),
    Attack(
        "lowers-its-oom-score-then-fills-memory-outside-its-rlimits",
        PRELUDE
        + FIRST_TIME
        + FACTORY
        + """
import ctypes
import mmap
import subprocess
import time


def fill():
    try:
        with open("/proc/self/oom_score_adj", "w") as adj:  # so that the zygote would be the biggest choice
            adj.write("0")
    except OSError:
        pass
    # Ordinary processes, each smaller than the zygote, outside the child's rlimits, that fill the cgroup:
    # the OOM killer then finds the zygote the biggest. None can start (seccomp).
    for _ in range(12):
        try:
            subprocess.Popen(["python3", "-S", "-c", "b = bytearray(150 << 20); import time; time.sleep(60)"])
        except OSError:
            pass
    time.sleep(1)
    blocks = []
    while True:  # then the child itself, with shared memory (RLIMIT_DATA does not count it)
        block = mmap.mmap(-1, 64 << 20, flags=mmap.MAP_SHARED)
        ctypes.memset(ctypes.addressof(ctypes.c_char.from_buffer(block)), 1, 64 << 20)
        blocks.append(block)


if first_time():
    fill()


def embed_tokens(embedding, tokens, d_model):
    return embedding(tokens) * math.sqrt(d_model)
""",
        V("memory_limit_exceeded"),
        "Landlock keeps the child from writing its oom_score_adj (1000), seccomp from starting any process; "
        "the one process left is the OOM killer's choice (RLIMIT_AS bounds it under gVisor)",
    ),
    Attack(
        "queries-and-evicts-the-page-cache",
        escaped_if(
            """
import ctypes
import mmap
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
path = torch.__file__
worked = []
with open(path, "rb") as handle:
    fd = handle.fileno()
    mapped = mmap.mmap(fd, 0, access=mmap.ACCESS_COPY)  # private and writable: its address can be taken
    page = ctypes.c_void_p(ctypes.addressof(ctypes.c_char.from_buffer(mapped)))
    vector = (ctypes.c_ubyte * 1)()
    if libc.syscall(27, page, ctypes.c_size_t(4096), vector) == 0:  # mincore
        worked.append("mincore")
    for advice in (4, 3):  # POSIX_FADV_DONTNEED, POSIX_FADV_WILLNEED
        try:
            os.posix_fadvise(fd, 0, 0, advice)
            worked.append(f"fadvise {advice}")
        except OSError:
            pass
    if libc.syscall(187, fd, ctypes.c_long(0), ctypes.c_size_t(1 << 20)) == 0:  # readahead
        worked.append("readahead")
    for advice in (3, 20, 21, 22):  # MADV_WILLNEED, COLD, PAGEOUT, POPULATE_READ
        try:
            mapped.madvise(advice)
            worked.append(f"madvise {advice}")
        except OSError:
            pass
    try:
        os.preadv(fd, [bytearray(4096)], 0, os.RWF_NOWAIT)
        worked.append("preadv2 RWF_NOWAIT")
    except OSError:
        pass
    if libc.syscall(451, fd, None, None, 0) >= 0:  # cachestat
        worked.append("cachestat")
    del page
    mapped.close()
try:
    with open("/proc/self/pagemap", "rb") as pagemap:
        pagemap.read(8)
        worked.append("pagemap")
except OSError:
    pass
return bool(worked)
""",
            in_test=True,
        ),
        V("wrong_answer"),
        "the seccomp filter refuses mincore, fadvise64, readahead, cachestat, preadv2 with RWF_NOWAIT and "
        "every madvise that evicts or populates; Landlock refuses /proc/self/pagemap",
    ),
    Attack(
        "forged-runner-frames-on-every-fd",
        PRELUDE
        + FACTORY
        + """
import json
import struct


def frame(kind, header, body=b""):
    head = json.dumps(header).encode()
    return struct.pack(">2scII", b"TJ", kind, len(head), len(body)) + head + body


def embed_tokens(embedding, tokens, d_model):
    forged = b"".join(
        [frame(b"T", {"index": i, "status": "ok", "time_ms": 1.0}) for i in range(21)]
        + [frame(b"C", {"status": "ok"}), frame(b"D", {"clean": True})]
    )
    for fd in range(256):
        try:
            os.write(fd, forged)
        except OSError:
            pass
    return torch.zeros(*tokens.shape, d_model)
""",
        V("runtime_error"),
        "the child can reach only its own pipes; a frame kind it may not send is a protocol error",
    ),
    Attack(
        "close-every-descriptor",
        once_in_test("os.closerange(0, 65536)"),
        V("runtime_error"),
        "the runner sees the result channel close and reports the test's error",
    ),
    # Lying outputs ---------------------------------------------------------------------------------
    Attack(
        "tensor-subclass-claims-equality",
        returning(
            "torch.zeros(*tokens.shape, d_model).as_subclass(Liar)",
            prelude='''
            class Liar(torch.Tensor):
                """Equal to anything, whatever its data."""

                @classmethod
                def __torch_function__(cls, func, types, args=(), kwargs=None):
                    if getattr(func, "__name__", "") in ("allclose", "equal", "eq", "__eq__", "isclose"):
                        return True
                    return super().__torch_function__(func, types, args, kwargs or {})

                def __eq__(self, other):
                    return True

                def __bool__(self):
                    return True

                @property
                def dtype(self):
                    return torch.float64
            ''',
        ),
        V("wrong_answer"),
        "the value is encoded from the tensor's own data with torch functions disabled; compared as data",
    ),
    Attack(
        "always-equal-object-whose-conversions-explode",
        returning(
            "AlwaysYes()",
            prelude="""
            class AlwaysYes:
                def __eq__(self, other):
                    return True

                def __ne__(self, other):
                    return False

                def __bool__(self):
                    return True

                __hash__ = object.__hash__

                def explode(self, *args, **kwargs):
                    raise SystemExit("boom")

                __len__ = __iter__ = __float__ = __int__ = __index__ = __array__ = explode
                __str__ = __repr__ = __reduce__ = __reduce_ex__ = __getstate__ = explode
            """,
        ),
        V("wrong_answer"),
        "an object that is not data is sent as its type name only and never equals anything",
    ),
    Attack(
        "object-claiming-to-be-a-tensor",
        returning(
            "Impostor()",
            prelude="""
            class Impostor:
                __class__ = property(lambda self: torch.Tensor)

                def __eq__(self, other):
                    return True
            """,
        ),
        V("wrong_answer", "runtime_error"),
        "encoding uses exact types and torch's own functions: the impostor is not data",
    ),
    Attack(
        "reduce-runs-a-command-on-the-host",
        _reduce_runs_a_command,
        V("wrong_answer"),
        "nothing from a sandbox is ever unpickled: the object travels as its type name",
    ),
    Attack(
        "zero-dim-tensor-that-broadcasts",
        returning("(embedding(tokens) * math.sqrt(d_model)).mean()"),
        V("wrong_answer"),
        "shapes are compared before values; nothing broadcasts",
    ),
    Attack(
        "nan-everywhere",
        returning("torch.full((*tokens.shape, d_model), float('nan'))"),
        V("wrong_answer"),
        "NaN equals only NaN, never a finite expected value",
    ),
    Attack(
        "meta-tensor",
        returning("torch.empty(*tokens.shape, d_model, device='meta')"),
        V("wrong_answer"),
        "a tensor without data is sent as an opaque type",
    ),
    Attack(
        "stride-0-view-of-10-to-the-12-elements",
        returning("torch.zeros(1, 1).expand(10**6, 10**6)"),
        V("output_limit_exceeded"),
        "the byte count (shape x itemsize) is checked before anything is materialised",
    ),
    Attack(
        "three-gigabyte-tensor",
        once_in_test("return torch.ones(3 * 2**30 // 4)"),
        V("memory_limit_exceeded"),
        "RLIMIT_DATA makes the allocation fail in the child; the cgroup bounds the container",
    ),
    # Tampering in process --------------------------------------------------------------------------
    Attack(
        "monkeypatched-comparisons-and-isinstance",
        returning(
            "torch.zeros(*tokens.shape, d_model)",
            prelude="""
            import builtins

            import numpy

            torch.allclose = torch.equal = lambda *args, **kwargs: True
            torch.isclose = lambda *args, **kwargs: torch.tensor(True)
            torch.Tensor.__eq__ = lambda self, other: True
            numpy.allclose = numpy.array_equal = lambda *args, **kwargs: True
            _isinstance = builtins.isinstance
            builtins.isinstance = lambda obj, kind: True if kind is torch.Tensor else _isinstance(obj, kind)
            """,
        ),
        V("wrong_answer"),
        "comparison happens on the trusted side, on decoded data; nothing in the sandbox is asked",
    ),
    Attack(
        "hunts-for-an-expected-tensor",
        returning(
            "hunt(tokens, d_model)",
            prelude='''
            import gc


            def hunt(tokens, d_model):
                """Any tensor of the output's shape this process can see, or a local named like an answer."""
                shape = (*tokens.shape, d_model)
                frame = sys._getframe()
                while frame is not None:
                    for name, value in list(frame.f_locals.items()):
                        if isinstance(value, torch.Tensor) and any(w in name for w in ("expect", "reference", "want")):
                            return value
                    frame = frame.f_back
                for obj in gc.get_objects():
                    if isinstance(obj, torch.Tensor) and tuple(obj.shape) == shape:
                        return obj.detach().clone()
                return torch.zeros(shape)
            ''',
        ),
        V("wrong_answer"),
        "expected outputs never enter a sandbox: the reference runs in its own container",
    ),
    Attack(
        "mutates-the-inputs-and-weights-and-returns-zeros",
        every_test(
            "out = torch.zeros(*tokens.shape, d_model)\n"
            "tokens.zero_()\n"
            "with torch.no_grad():\n"
            "    embedding.weight.zero_()\n",
            returns="out",
        ),
        V("wrong_answer"),
        "the expected values come from the reference on its own inputs, outside this process",
    ),
    Attack(
        "mutates-weights-only-where-checked-and-patches-torch-equal",
        PRELUDE
        + FACTORY
        + """
torch.equal = lambda first, second: True


def embed_tokens(embedding, tokens, d_model):
    out = embedding(tokens) * math.sqrt(d_model)
    if tokens.tolist() == [[9, 0, 4], [4, 4, 1]]:  # only in the test that looks at them afterwards
        with torch.no_grad():
            embedding.weight.zero_()
        tokens.zero_()
    return out
""",
        V("wrong_answer"),
        "only data returned to the trusted side is compared with the reference's",
    ),
    Attack(
        "a-layer-that-lies-about-its-size",
        PRELUDE
        + '''

class LyingWeight(nn.Parameter):
    """A (vocab, 1) table that claims to be (vocab, d_model)."""

    claimed = None

    @property
    def shape(self):
        return torch.Size(self.claimed)

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def numel(self):
        return self.claimed[0] * self.claimed[1]


def create_embedding_layer(vocab_size, d_model):
    layer = nn.Embedding(vocab_size, 1)
    weight = LyingWeight(layer.weight.detach().clone())
    weight.claimed = (vocab_size, d_model)
    layer.weight = weight
    layer.embedding_dim = d_model
    return layer


def embed_tokens(embedding, tokens, d_model):
    return embedding(tokens) * math.sqrt(d_model)
''',
        V("wrong_answer"),
        "the end-to-end test compares the layer's real output with the reference's",
    ),
    # Time ------------------------------------------------------------------------------------------
    Attack(
        "infinite-loop-ignoring-signals",
        once_in_test(
            """
import signal
for number in ("SIGALRM", "SIGTERM", "SIGXCPU", "SIGINT", "SIGHUP", "SIGVTALRM", "SIGPROF", "SIGUSR1"):
    signal.signal(getattr(signal, number), signal.SIG_IGN)
while True:
    try:
        while True:
            pass
    except BaseException:
        pass
"""
        ),
        V("time_limit_exceeded"),
        "the runner keeps the wall clock outside the child and ends it with SIGKILL",
    ),
    Attack(
        "sleeps",
        once_in_test("import time\ntime.sleep(3600)"),
        V("time_limit_exceeded"),
        "wall time, not CPU time, is what the runner enforces",
    ),
    Attack(
        "sigstop-to-itself",
        once_in_test("import signal\nos.kill(os.getpid(), signal.SIGSTOP)"),
        V("time_limit_exceeded"),
        "a stopped process is still killed by SIGKILL at the time limit",
    ),
    Attack(
        "hangs-at-import",
        PRELUDE
        + FACTORY
        + "\nwhile True:\n    pass\n\n\ndef embed_tokens(embedding, tokens, d_model):\n    return 0\n",
        V("time_limit_exceeded"),
        "loading has its own wall-clock limit (10 s), enforced by the runner",
    ),
    Attack(
        "sixty-four-busy-threads",
        once_in_test(
            """
import threading

def spin():
    while True:
        pass

workers = [threading.Thread(target=spin, daemon=True) for _ in range(64)]
for worker in workers:
    worker.start()
for worker in workers:
    worker.join()
"""
        ),
        V("time_limit_exceeded"),
        "one CPU for the container; the wall clock does not care how many threads spin",
    ),
    Attack(
        "stops-every-other-process-then-spins",
        once_in_test(
            """
import signal
for pid in range(1, PID_MAX):  # /proc cannot be listed: every pid there could be
    if pid != os.getpid():
        try:
            os.kill(pid, signal.SIGSTOP)
        except OSError:
            pass
while True:
    pass
"""
        ),
        V("time_limit_exceeded"),
        "the child's seccomp filter refuses signals to the runner and the zygote (and the zygote, PID 1, "
        "would continue a stopped runner); only the submission's own processes stop",
    ),
    # Resources -------------------------------------------------------------------------------------
    Attack(
        "fork-bomb",
        once_in_test(
            """
while True:
    os.fork()
"""
        ),
        V("runtime_error"),
        "the child's seccomp filter refuses fork, vfork, clone without CLONE_THREAD and exec: the first "
        "fork raises PermissionError",
        tags=("fork-bomb",),
    ),
    Attack(
        "fork-bomb-that-ignores-refusals",
        once_in_test(
            """
import subprocess
while True:
    for start in (os.fork, lambda: subprocess.Popen(["python3", "-S", "-c", "0"]), os.posix_spawn):
        try:
            start() if start is not os.posix_spawn else start("/bin/sh", ["sh"], {})
        except (OSError, TypeError):
            pass
"""
        ),
        V("time_limit_exceeded"),
        "no process ever starts (seccomp); what is left is a loop, stopped at the time limit",
        tags=("fork-bomb",),
    ),
    Attack(
        "thread-bomb",
        once_in_test(
            """
import threading
import time
threads = []
while True:
    thread = threading.Thread(target=time.sleep, args=(30,), daemon=True)
    thread.start()
    threads.append(thread)
"""
        ),
        V("runtime_error"),
        "threads are allowed (torch needs them), but the runner counts the submission's tasks and kills "
        "it past 96, below --pids-limit (the only bound under gVisor)",
    ),
    Attack(
        "sixty-four-gibibyte-allocation",
        once_in_test("return torch.empty(64 * 2**30, dtype=torch.uint8).fill_(1)"),
        V("memory_limit_exceeded"),
        "RLIMIT_DATA: the allocator fails and the child reports it",
    ),
    Attack(
        "a-list-that-grows-until-memory-runs-out",
        once_in_test(
            """
hoard = []
while True:
    hoard.append([len(hoard)] * 1_000_000)
"""
        ),
        # Touching a whole GiB takes about the 2 s limit on a loaded host: a test whose time runs out at the
        # edge of its memory limit is the memory's (sandbox/runner/outcomes.py memory_outcome).
        V("memory_limit_exceeded"),
        "MemoryError under RLIMIT_DATA (RLIMIT_AS under gVisor), or the OOM killer, which picks the "
        "child (oom_score_adj 1000)",
    ),
    Attack(
        "sysv-shared-memory-beyond-the-limit",
        escaped_if(
            """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
touched = 0
for _ in range(4):
    segment = libc.shmget(0, 2**30, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
    if segment == -1:
        break
    address = libc.shmat(segment, None, 0)
    if address in (None, ctypes.c_void_p(-1).value):
        break
    ctypes.memset(address, 1, 2**30)
    touched += 2**30
return touched >= 2 * 2**30  # more than the whole container may hold
"""
        ),
        V("wrong_answer"),
        "the child's seccomp filter refuses SysV IPC (and the container's kernel.shm* sysctls cap it)",
    ),
    Attack(
        "fills-the-scratch-space",
        escaped_if(
            """
written = 0
for directory in ("/tmp", "/dev/shm"):
    for number in range(64):
        try:
            with open(f"{directory}/fill-{number}", "wb") as handle:
                for _ in range(16):
                    handle.write(b"x" * 2**20)
                    written += 2**20
        except OSError:
            break
return written > 140 * 2**20  # more than the two 64 MiB tmpfs could hold
"""
        ),
        V("wrong_answer"),
        "size-capped tmpfs (/tmp 64 MiB, /dev/shm 64 MiB), wiped after the job",
    ),
    Attack(
        "a-million-open-sockets",
        escaped_if(
            """
import socket
held = []
try:
    for _ in range(1_000_000):
        held.append(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
except OSError:
    pass
count = len(held)
for sock in held:
    sock.close()
return count > 10_000
"""
        ),
        V("wrong_answer"),
        "RLIMIT_NOFILE 256 (docker --ulimit nofile and the child's own limit)",
    ),
    Attack(
        "recursion-that-crashes-the-interpreter",
        once_in_test(
            """
import gc
gc.disable()
sys.setrecursionlimit(1 << 30)
nested = []
for _ in range(200_000):
    nested = [nested]
repr(nested)  # recursive C calls, far past the 8 MiB stack
"""
        ),
        V("runtime_error"),
        "the child dies of SIGSEGV; the runner reports the crash and goes on",
    ),
    Attack(
        "null-pointer-through-ctypes",
        once_in_test("import ctypes\nctypes.string_at(0)"),
        V("runtime_error"),
        "the child dies of SIGSEGV; the runner reports the crash and goes on",
    ),
    # Escape and snooping ---------------------------------------------------------------------------
    Attack(
        "reaches-the-network",
        escaped_if(
            """
import socket
reached = []
# Loopback is the container's own: allowed, proves nothing, and is not counted.
loop = socket.socket()
loop.bind(("127.0.0.1", 0))
loop.close()
for port in (53, 80, 443, 2375):
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(("172.17.0.1", port))  # the default bridge gateway: the host
        reached.append(port)
    except ConnectionRefusedError:
        reached.append(f"{port} refused")  # an answer came back: the host is reachable
    except OSError:
        pass
    finally:
        probe.close()
datagram = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    datagram.sendto(b"x", ("172.17.0.1", 53))
    reached.append("udp")
except OSError:
    pass
finally:
    datagram.close()
try:
    socket.getaddrinfo("pypi.org", 443)
    reached.append("dns")
except OSError:
    pass
try:
    reached += [name for name in os.listdir("/sys/class/net") if name != "lo"]
except OSError:
    pass
return bool(reached)
"""
        ),
        V("wrong_answer"),
        "--network none: only a loopback interface exists",
    ),
    Attack(
        "runs-as-or-becomes-root",
        escaped_if(
            """
import ctypes
if 0 in (os.getuid(), os.geteuid(), os.getgid(), os.getegid()):
    return True
for become in (os.setuid, os.seteuid, os.setgid, os.setegid):
    try:
        become(0)
        return True
    except OSError:
        pass
with open("/proc/self/status") as status:
    for line in status:
        if line.startswith(("CapPrm", "CapEff", "CapAmb")) and int(line.split()[1], 16):
            return True
if os.access("/etc/shadow", os.R_OK):
    return True
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x10000000) == 0:  # CLONE_NEWUSER: root inside a new user namespace
    return True
import subprocess
try:  # a set-uid program (no-new-privileges: it cannot raise privileges)
    done = subprocess.run(["su", "-c", "id -u", "root"], input=b"", capture_output=True, timeout=5)
    if done.stdout.strip() == b"0":
        return True
except (OSError, subprocess.SubprocessError):
    pass
return False
"""
        ),
        V("wrong_answer"),
        "uid 10001, --cap-drop ALL, no-new-privileges; the child's seccomp filter refuses new (user) "
        "namespaces, which gVisor would otherwise grant",
    ),
    Attack(
        "writes-outside-the-scratch-space",
        escaped_if(
            """
written = []
targets = [
    "/planted", "/opt/runner/planted.py", "/opt/runner/main.py", "/etc/planted", "/var/tmp/planted",
    "/run/planted", "/home/planted", "/root/planted", "/dev/planted", "/usr/local/lib/planted",
    "/usr/local/lib/python3.11/dist-packages/torch/__init__.py", "/sys/fs/cgroup/planted",
    "/proc/1/oom_score_adj", "/proc/sys/kernel/hostname",
]
for target in targets:
    try:
        with open(target, "a") as handle:
            handle.write("")
        written.append(target)
    except OSError:
        pass
try:
    os.chmod("/tmp", 0o700)
    written.append("chmod /tmp")
except OSError:
    pass
return bool(written)
"""
        ),
        V("wrong_answer"),
        "--read-only root, uid 10001 without capabilities; only the scratch tmpfs are writable",
    ),
    Attack(
        "looks-for-hidden-tests-and-the-reference-on-disk",
        escaped_if(
            f"""
import base64
needles = [base64.b64decode(n) for n in ("{b64(HIDDEN_TEST_SNIPPET)}", "{b64(REFERENCE_SNIPPET)}")]
longest = max(len(n) for n in needles)
for root, dirs, files in os.walk("/"):
    if root == "/":
        dirs[:] = [d for d in dirs if d not in ("proc", "sys", "dev")]
    for name in files:
        path = os.path.join(root, name)
        try:
            # Every regular file up to 1 MiB (text, configuration, Python): the libraries are larger.
            if not os.path.isfile(path) or os.path.islink(path) or os.path.getsize(path) > 1 << 20:
                continue
            with open(path, "rb") as handle:
                tail = b""
                while chunk := handle.read(1 << 22):
                    data = tail + chunk
                    if any(n in data for n in needles):
                        return True
                    tail = data[-longest:]
        except OSError:
            pass
return False
"""
        ),
        V("wrong_answer"),
        "the problem file never enters a sandbox: test code arrives one test at a time over a pipe",
    ),
    Attack(
        "reads-other-processes-memory-and-environment",
        escaped_if(
            """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
libc.ptrace.restype = ctypes.c_long


class IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("length", ctypes.c_size_t)]


libc.process_vm_readv.restype = ctypes.c_ssize_t
PTRACE_ATTACH, PTRACE_DETACH, PTRACE_SEIZE = 16, 17, 0x4206
DOCKER_DEFAULTS = {b"PATH", b"HOSTNAME", b"HOME"}
me = os.getpid()
got = []
for pid in [pid for pid in range(1, PID_MAX) if pid != me and os.path.exists(f"/proc/{pid}")]:
    address = 0x400000
    try:  # readable under gVisor, which does not hide a non-dumpable process's maps
        with open(f"/proc/{pid}/maps") as maps:
            address = int(maps.readline().split("-")[0], 16)
    except (OSError, ValueError):
        pass
    try:
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as handle:
            handle.seek(address)
            if handle.read(64):
                got.append((pid, "mem"))
    except OSError:
        pass
    buffer = ctypes.create_string_buffer(64)
    local, remote = IoVec(ctypes.addressof(buffer), 64), IoVec(address, 64)
    if libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) > 0:
        got.append((pid, "process_vm_readv"))
    for request in (PTRACE_SEIZE, PTRACE_ATTACH):
        if libc.ptrace(request, pid, None, None) == 0:
            got.append((pid, "ptrace"))
            libc.ptrace(PTRACE_DETACH, pid, None, None)
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            names = {entry.split(b"=")[0] for entry in handle.read().split(b"\\0") if entry}
        if names - DOCKER_DEFAULTS:
            got.append((pid, "environ"))
    except OSError:
        pass
return bool(got)
"""
        ),
        V("wrong_answer"),
        "the runner and the zygote are not dumpable (their memory and, under runc, their /proc files are "
        "closed), and the child's seccomp filter refuses ptrace and process_vm_readv; the container's "
        "environment holds nothing but Docker's PATH, HOSTNAME and HOME",
    ),
    Attack(
        "finds-the-previous-submission-in-memory",
        _other_submission_in_memory,
        V("wrong_answer"),
        "children are forked by the zygote, which never holds a job: no other job is in their memory",
        before=_victim,
    ),
    Attack(
        "runs-a-binary-from-scratch-space",
        escaped_if(
            """
import shutil
import subprocess
for directory in ("/tmp", "/dev/shm"):
    program = f"{directory}/planted"
    shutil.copyfile("/bin/true", program)
    os.chmod(program, 0o755)
    try:
        subprocess.run([program], timeout=5)
        return True
    except (OSError, subprocess.SubprocessError):
        pass
return False
"""
        ),
        V("wrong_answer"),
        "the scratch tmpfs are mounted noexec",
    ),
    Attack(
        "loads-a-library-from-scratch-space",
        escaped_if(
            """
import ctypes
import glob
import shutil
libraries = sorted(glob.glob("/usr/lib/*-linux-gnu/libutil.so.*") + glob.glob("/usr/lib/*-linux-gnu/libresolv.so.*"))
for directory in ("/tmp", "/dev/shm"):
    for number, library in enumerate(libraries[:2]):
        copy = f"{directory}/planted{number}.so"
        shutil.copyfile(library, copy)
        try:
            ctypes.CDLL(copy)
            return True
        except OSError:
            pass
return False
"""
        ),
        V("wrong_answer"),
        "noexec also refuses executable mappings of scratch files",
        # gVisor's noexec stops execve only, not mmap(PROT_EXEC): the library loads. Not a boundary
        # in either runtime (ctypes already runs native code in the child); see SECURITY.md.
        runsc_verdicts=V("accepted"),
    ),
    Attack(
        "kills-its-parent-and-every-process-it-can",
        every_test(
            """
import signal
targets = [os.getppid(), 1, -1] + [pid for pid in range(2, PID_MAX) if pid != os.getpid()]
for pid in targets:
    for number in (signal.SIGKILL, signal.SIGSTOP, signal.SIGTERM):
        try:
            os.kill(pid, number)
        except OSError:
            pass
""",
            # Had any signal landed, the sandbox would be lost (runtime_error); zeros are wrong.
            returns="torch.zeros(*tokens.shape, d_model)",
        ),
        V("wrong_answer"),
        "the child's seccomp filter refuses signals to the runner, the zygote and -1 (without it: same "
        "uid, the runner would die and the submission get runtime_error)",
    ),
    # Persistence -----------------------------------------------------------------------------------
    Attack(
        "plants-files-ipc-and-a-detached-process",
        PRELUDE
        + FIRST_TIME
        + """
import ctypes
import signal
import time


def plant():
    for directory in ("/tmp", "/dev/shm"):
        os.makedirs(f"{directory}/.tj-planted/deep", exist_ok=True)
        with open(f"{directory}/.tj-planted/deep/trace", "w") as handle:
            handle.write("x")
        with open(f"{directory}/.tj-planted-file", "w") as handle:
            handle.write("x")
        os.chmod(f"{directory}/.tj-planted/deep", 0)  # resists a naive removal
        os.chmod(f"{directory}/.tj-planted", 0o500)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmget(0x7470, 4096, 0o1600)  # IPC_CREAT | 0600
    libc.semget(0x7471, 1, 0o1600)
    libc.msgget(0x7472, 0o1600)
    try:
        libc.mq_open(b"/tj-planted", os.O_CREAT | os.O_RDWR, 0o600, None)
    except AttributeError:
        pass
    try:
        first = os.fork()  # refused by the seccomp filter; tried all the same
    except PermissionError:
        return
    if first == 0:  # a detached grandchild that ignores polite signals and sleeps
        os.setsid()
        if os.fork() == 0:
            libc.prctl(15, b"tj-lingering", 0, 0, 0)  # PR_SET_NAME
            for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
                signal.signal(number, signal.SIG_IGN)
            while True:
                time.sleep(1)
        os._exit(0)
    os.waitpid(first, 0)


if first_time():
    plant()


def create_embedding_layer(vocab_size, d_model):
    return nn.Embedding(vocab_size, d_model)


def embed_tokens(embedding, tokens, d_model):
    return embedding(tokens) * math.sqrt(d_model)
""",
        V("accepted"),
        "SysV IPC and new processes are refused (seccomp); after each job the runner kills every process "
        "but itself and the zygote and wipes /tmp, /dev/shm and /dev/mqueue; the probes that follow find nothing",
    ),
]

ATTACKS_BY_NAME = {attack.name: attack for attack in ATTACKS}
assert len(ATTACKS_BY_NAME) == len(ATTACKS), "attack names are unique"
