"""The page-cache channel between sandboxes, as an attack: a sender and a receiver in two containers.

Every container of the sandbox image shares the image's files, so the same pages of the host's page
cache. The SENDER, a submission like any other, reads (1 byte of) the pages of some big image files
at the slots where a bit pattern has a 1, and leaves the others alone; then it holds its container
busy for a while. The RECEIVER, submitted meanwhile, gets the pool's other container and times a
1-byte read of every slot: a resident page reads in 2-3 µs, one from disk in 50-80 µs (under gVisor
40-60 µs against 160). It splits the times into two classes (Otsu's threshold on their logarithms: no pattern, no
calibration) and reports the bits it recovered in its first test's message, which a visible test
shows in the verdict. A bit may be carried by several pages (`copies`): the receiver averages the
logarithms of their times.

The files are Python sources (`.py`) of modules nobody reads at run time (the byte code is read, not
the source), so that nothing but the sender and the receiver touches their pages. Slots are `stride`
pages apart: one `pread` of a page whose predecessor is not resident reads that page alone (the
kernel's readahead starts only on a sequential pattern), so neighbours stay as they were.

The host side (bench/page_cache_channel.py, tests/security/test_page_cache.py) uses a helper: a
one-off container of the image, under runc and without our seccomp filter, that evicts the channel
files from the page cache (posix_fadvise DONTNEED, what a sandbox may no longer do) so that every
measurement starts from the same cold state, and reads the residency of their pages (mincore).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

PAGE = 4096
SITE_PACKAGES = "/usr/local/lib/python3.11/dist-packages"
# A fixed pattern: the bits of a SHA-256 (128 ones and 128 zeros would do as well).
PATTERN = [int(bit) for byte in hashlib.sha256(b"torchjudge page-cache channel").digest() for bit in f"{byte:08b}"]

# -- the helper container ---------------------------------------------------------------------------

HELPER = r"""
import ctypes, json, os, sys
request = json.loads(sys.argv[1])
out = {}
if request["op"] == "list":
    for top, dirs, files in os.walk(request["root"]):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(top, name)
            if name.endswith(".py") and not os.path.islink(path):
                size = os.stat(path).st_size
                if size >= request["min_size"]:
                    out[path] = size
else:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    for path in request["files"]:
        fd = os.open(path, os.O_RDONLY)
        try:
            if request["op"] == "evict":
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            size = os.fstat(fd).st_size
            pages = (size + 4095) // 4096
            addr = libc.mmap(None, size, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED: maps, reads nothing
            vec = ctypes.create_string_buffer(pages)
            libc.mincore(ctypes.c_void_p(addr), size, vec)
            libc.munmap(ctypes.c_void_p(addr), size)
            out[path] = "".join("1" if b & 1 else "0" for b in vec.raw[:pages])
        finally:
            os.close(fd)
print(json.dumps(out))
"""


def run_script(client, image: str, script: str, args: list[str], user: str) -> dict:  # type: ignore[no-untyped-def]
    """Runs a Python script in a one-off container of the image (runc, no network, read-only, no
    capabilities); the JSON object its last line of standard output prints."""
    output = client.containers.run(
        image,
        entrypoint=["python3", "-I", "-B", "-c", script],
        command=args,
        user=user,
        environment={"OMP_NUM_THREADS": "1"},
        network_disabled=True,
        network_mode="none",
        read_only=True,
        cap_drop=["ALL"],
        security_opt=["no-new-privileges"],
        runtime="runc",
        remove=True,
        stdout=True,
        stderr=False,
    )
    return json.loads(output.decode().strip().splitlines()[-1])  # type: ignore[no-any-return]


def helper(client, image: str, request: dict) -> dict:  # type: ignore[no-untyped-def]
    """Runs HELPER in a one-off container of the image. As root, the files' owner: mincore tells the truth
    only to a process that owns or may write the file (Linux 5.2); to anyone else every page looks
    resident, so it tells a sandbox (uid 10001) nothing."""
    return run_script(client, image, HELPER, [json.dumps(request)], user="0:0")


@dataclass(frozen=True)
class Slot:
    path: str
    page: int


def channel_slots(client, image: str, stride: int, min_size: int = 64 * 1024) -> list[Slot]:  # type: ignore[no-untyped-def]
    """Every slot of the channel, in a fixed order: pages stride, 2*stride, ... of each big .py file."""
    sizes = helper(client, image, {"op": "list", "root": SITE_PACKAGES, "min_size": min_size})
    slots = []
    for path in sorted(sizes):
        pages = sizes[path] // PAGE  # whole pages only
        slots += [Slot(path, page) for page in range(stride, pages, stride)]
    return slots


def evict(client, image: str, paths: list[str]) -> float:  # type: ignore[no-untyped-def]
    """Evicts the files from the host's page cache; returns the fraction of their pages still resident."""
    residency = helper(client, image, {"op": "evict", "files": sorted(set(paths))})
    flags = "".join(residency.values())
    return flags.count("1") / max(1, len(flags))


def resident(client, image: str, slots: list[Slot]) -> list[bool]:  # type: ignore[no-untyped-def]
    """Which slots' pages are resident in the host's page cache now (mincore: reads nothing)."""
    residency = helper(client, image, {"op": "residency", "files": sorted({slot.path for slot in slots})})
    return [residency[slot.path][slot.page] == "1" for slot in slots]


# -- the two submissions ----------------------------------------------------------------------------
# Each bit is carried by `copies` pages (slots); the receiver averages the logarithms of their read
# times, which makes it robust to a few reads slowed by something else (gVisor, a busy host).

_COMMON = """
import math
import os
import time

import torch.nn as nn

FILES = {files!r}
# (file index, page, bit index), grouped by file, pages ascending within a file
SLOTS = {slots!r}
NBITS = {nbits!r}


def create_embedding_layer(vocab_size, d_model):
    return nn.Embedding(vocab_size, d_model)


FIRST = [True]


def embed_tokens(embedding, tokens, d_model):
    if FIRST[0]:
        FIRST[0] = False
        channel()
    return embedding(tokens) * math.sqrt(d_model)
"""

SENDER = """
BITS = {bits!r}
HOLD_S = {hold_s!r}


def channel():
    started = time.perf_counter_ns()
    fd, current = -1, None
    for index, page, bit in SLOTS:
        if index != current:
            if fd >= 0:
                os.close(fd)
            fd, current = os.open(FILES[index], os.O_RDONLY), index
        if BITS[bit]:
            os.pread(fd, 1, page * 4096)
    if fd >= 0:
        os.close(fd)
    spent = time.perf_counter_ns() - started
    time.sleep(HOLD_S)  # keeps this container busy: the receiver gets the other one
    raise RuntimeError(f"sent send_us={{spent // 1000}} host={{os.uname().nodename}}")
"""

RECEIVER = '''
DELAY_S = {delay_s!r}


def otsu(values):
    """The threshold between two classes that maximises the between-class variance."""
    values = sorted(values)
    total, left, best, threshold = sum(values), 0.0, -1.0, values[-1] + 1
    for i in range(1, len(values)):
        left += values[i - 1]
        w = i / len(values)
        gap = left / i - (total - left) / (len(values) - i)
        score = w * (1 - w) * gap * gap
        if score > best:
            best, threshold = score, (values[i - 1] + values[i]) / 2
    return threshold


def b36(n):
    digits = ""
    while True:
        n, r = divmod(n, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[r] + digits
        if not n:
            return digits


def channel():
    time.sleep(DELAY_S)  # the sender has read its pages by now
    logs = [0.0] * NBITS
    copies = [0] * NBITS
    started = time.perf_counter_ns()
    fd, current = -1, None
    for index, page, bit in SLOTS:
        if index != current:
            if fd >= 0:
                os.close(fd)
            fd, current = os.open(FILES[index], os.O_RDONLY), index
        t0 = time.perf_counter_ns()
        os.pread(fd, 1, page * 4096)
        logs[bit] += math.log(max(time.perf_counter_ns() - t0, 1))
        copies[bit] += 1
    if fd >= 0:
        os.close(fd)
    spent = time.perf_counter_ns() - started
    scores = [total / max(count, 1) for total, count in zip(logs, copies)]  # log of the geometric mean
    threshold = otsu(scores)
    bits = "".join("1" if score < threshold else "0" for score in scores)
    times = ",".join(b36(int(math.exp(score)) // 100) for score in scores)
    raise RuntimeError(
        f"received bits={{bits}} recv_us={{spent // 1000}} threshold_ns={{int(math.exp(threshold))}} "
        f"host={{os.uname().nodename}} t100ns={{times}}"
    )
'''


def _layout(slots: list[Slot], copies: int) -> tuple[list[str], list[tuple[int, int, int]]]:
    """The files, and (file index, page, bit) for every slot, grouped by file; bit i is carried by
    slots i * copies to i * copies + copies - 1."""
    files = sorted({slot.path for slot in slots})
    layout = [(files.index(slot.path), slot.page, k // copies) for k, slot in enumerate(slots)]
    return files, sorted(layout)


def sender_source(slots: list[Slot], bits: list[int], hold_s: float, copies: int = 1) -> str:
    files, layout = _layout(slots, copies)
    common = _COMMON.format(files=files, slots=layout, nbits=len(bits))
    return common + SENDER.format(bits=list(bits), hold_s=hold_s)


def receiver_source(slots: list[Slot], nbits: int, delay_s: float, copies: int = 1) -> str:
    files, layout = _layout(slots, copies)
    return _COMMON.format(files=files, slots=layout, nbits=nbits) + RECEIVER.format(delay_s=delay_s)


# -- one round --------------------------------------------------------------------------------------


def binary_entropy(p: float) -> float:
    return 0.0 if p <= 0 or p >= 1 else -p * math.log2(p) - (1 - p) * math.log2(1 - p)


@dataclass
class Round:
    bits: list[int]
    received: list[int]
    times_ns: list[int]
    send_s: float
    recv_s: float
    wall_s: float
    hosts: tuple[str, str]
    threshold_ns: int

    @property
    def accuracy(self) -> float:
        return sum(a == b for a, b in zip(self.bits, self.received, strict=True)) / len(self.bits)

    def capacity(self) -> float:
        """Bits per second: (1 - H(error rate)) * bits / (sender's time + receiver's time)."""
        return (1 - binary_entropy(1 - self.accuracy)) * len(self.bits) / max(self.send_s + self.recv_s, 1e-9)

    def median_us(self, bit: int) -> float:
        chosen = sorted(t for t, b in zip(self.times_ns, self.bits, strict=True) if b == bit)
        return chosen[len(chosen) // 2] / 1000 if chosen else float("nan")


class ChannelError(AssertionError):
    pass


def _field(message: str, name: str) -> str:
    match = re.search(rf"\b{name}=(\S+)", message or "")
    if not match:
        raise ChannelError(f"no {name}= in {message!r}")
    return match.group(1)


def run_round(
    service,  # type: ignore[no-untyped-def]
    post: Callable[[str], dict],
    slots: list[Slot],
    bits: list[int],
    copies: int = 1,
    hold_s: float = 1.0,
    delay_s: float = 0.8,
) -> Round:
    """The sender, then (while it holds its container) the receiver in the pool's other container.
    `slots` holds len(bits) * copies slots. The receiver waits delay_s before it probes: under gVisor
    the sender's reads take up to half a second (each open is a round trip to the gofer), and a page
    probed before the sender read it reads as a 0. Both stay within a test's 2 s."""
    if len(slots) != len(bits) * copies:
        raise ValueError(f"{len(slots)} slots for {len(bits)} bits of {copies} pages")
    pool = service.pool
    deadline = time.monotonic() + 120
    while pool.status()["idle"] < 2:  # both containers idle (a pool of 2)
        if time.monotonic() > deadline:
            raise ChannelError(f"the pool did not have two idle containers: {pool.status()}")
        time.sleep(0.05)
    results: dict[str, dict] = {}
    started = time.monotonic()

    def send() -> None:
        results["sender"] = post(sender_source(slots, bits, hold_s, copies))

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    while pool.status()["busy"] < 1:
        if time.monotonic() > deadline or not thread.is_alive():
            raise ChannelError(f"the sender never got a container: {results}")
        time.sleep(0.005)
    time.sleep(0.05)
    receiver = post(receiver_source(slots, len(bits), delay_s, copies))
    thread.join(timeout=90)
    wall = time.monotonic() - started
    sender = results.get("sender")
    if not sender:
        raise ChannelError("the sender's verdict never came")
    if not sender.get("tests") or not receiver.get("tests"):
        raise ChannelError(f"no test ran: sender {sender.get('message')!r}, receiver {receiver.get('message')!r}")
    send_message = sender["tests"][0].get("message") or ""
    recv_message = receiver["tests"][0].get("message") or ""
    received = [int(bit) for bit in _field(recv_message, "bits")]
    times = [int(value, 36) * 100 for value in _field(recv_message, "t100ns").split(",")]
    if len(received) != len(bits) or len(times) != len(bits):
        raise ChannelError(f"the receiver reported {len(received)} bits for {len(bits)}: {recv_message!r}")
    hosts = (_field(send_message, "host"), _field(recv_message, "host"))
    if hosts[0] == hosts[1]:
        raise ChannelError(f"sender and receiver ran in the same container {hosts[0]}")
    return Round(
        bits=list(bits),
        received=received,
        times_ns=times,
        send_s=int(_field(send_message, "send_us")) / 1e6,
        recv_s=int(_field(recv_message, "recv_us")) / 1e6,
        wall_s=wall,
        hosts=hosts,
        threshold_ns=int(_field(recv_message, "threshold_ns")),
    )
