"""Round 4 attacks on a timed module's shared area (sandbox/runner/shared.py), in real sandboxes, both runtimes.

Each test asserts the safe behaviour: a failing test shows a hole. On problems/pairwise-distances.yaml."""

from __future__ import annotations

import pytest

from tests.security.conftest import Submit
from tests.security.test_attack_speed_shared_area import FAST, FIND, PROBLEM
from tests.speed_verdicts import speed_seen, timed

pytestmark = [pytest.mark.docker, pytest.mark.timeout(900)]

# The null module is told by the subject's result frames how many bytes each of its values is to have
# (timing.py _region: `lengths`), and returns that many (Ballast: a buffer made anew whenever a length is larger
# than any before). The subject's own length is believed as long as a kept value decodes: a manifest padded with
# JSON whitespace decodes to the same value. So the subject writes its padding once, and each call writes only
# its manifest and its data (as an honest module does), while claiming a value about twice as large, one byte
# larger each call: the null module copies twice the bytes and makes its ballast anew at every call, and that
# harness is taken off the subject's time.
INFLATES_THE_NULL = (
    FIND
    + """_state = {"calls": 0, "clean": 4}


def _install(area):
    cls = type(area)
    if getattr(cls, "_inflating", False):
        return
    shared = sys.modules["runner.shared"]
    start, length = shared.INPUTS_BYTES, shared.LENGTH

    def put_value(self, parts):
        views = [memoryview(part).cast("B") for part in parts]
        head = bytes(views[0])
        manifest = head[4:]
        honest = len(head) + sum(view.nbytes for view in views[1:])
        _state["calls"] += 1
        pad = max(0, honest - 65536) + _state["calls"]
        view = self.view
        if 4 + pad > _state["clean"]:
            view[start + _state["clean"] : start + 4 + pad] = b" " * (4 + pad - _state["clean"])
        at = start
        view[at : at + 4] = struct.pack(">I", pad + len(manifest))
        at += 4 + pad
        view[at : at + len(manifest)] = manifest
        at += len(manifest)
        for part in views[1:]:
            view[at : at + part.nbytes] = part
            at += part.nbytes
        _state["clean"] = 4 + pad
        return length.pack(at - start)

    cls.put_value = put_value
    cls._inflating = True


def pairwise_distances(x, y):
    judge = _judge()
    if judge is not None:
        _install(judge["area"])
    return torch.cdist(x, y)
"""
)


def test_a_value_length_padded_with_whitespace_is_refused_not_charged_to_the_null_module(submit: Submit) -> None:
    """Before the trusted side took a manifest only in the judge's own form, the padded values decoded and the
    module was accepted, its null module copying twice its values' bytes at every call."""
    attack = submit(INFLATES_THE_NULL, PROBLEM)
    assert attack["status"] in ("wrong_answer", "runtime_error"), speed_seen(attack)
    assert attack["speed"] is not None and attack["speed"]["passed"] is False
    assert "the benchmark, call" in attack["message"], attack["message"]


# Tries every way to the area's backing file and to another child's area: its own through /proc/self/map_files
# (then to shrink or grow it: the runner's read of a value would fault), any other process's bench-area through
# /proc/<pid>/map_files and /proc/<pid>/mem; and punches a hole (MADV_REMOVE: no descriptor needed) in its own
# value after writing it, so that the runner reads zeros. A way found is said in its error (REACHED).
TAMPERS = (
    FIND
    + """_said = []


def _mapping(pid):
    found = []
    try:
        with open(f"/proc/{pid}/maps") as maps:
            for line in maps:
                if "bench-area" in line:
                    found.append(line.split()[0])
    except OSError:
        pass
    return found


def _probe():
    reached = []
    mine = _mapping("self")
    if len(mine) != 1:
        reached.append(f"own mappings {mine}")
    for rng in mine:
        try:
            fd = os.open(f"/proc/self/map_files/{rng}", os.O_RDWR)
        except OSError:
            continue
        try:
            os.ftruncate(fd, 4096)
            reached.append("shrank own area")
        except OSError:
            pass
        try:
            os.ftruncate(fd, 1 << 34)
            reached.append("grew own area")
        except OSError:
            pass
        os.close(fd)
    me = os.getpid()
    try:
        pids = os.listdir("/proc")
    except OSError:
        pids = [str(pid) for pid in range(1, 400)]
    for name in pids:
        if not name.isdigit() or int(name) == me:
            continue
        for rng in _mapping(name):
            try:
                fd = os.open(f"/proc/{name}/map_files/{rng}", os.O_RDWR)
                os.close(fd)
                reached.append(f"map_files of {name}")
            except OSError:
                pass
            try:
                start = int(rng.split("-")[0], 16)
                fd = os.open(f"/proc/{name}/mem", os.O_RDWR)
                try:
                    os.pread(fd, 16, start)
                    reached.append(f"mem of {name}")
                finally:
                    os.close(fd)
            except OSError:
                pass
    return reached


def _install(area):
    cls = type(area)
    if getattr(cls, "_punching", False):
        return
    original = cls.put_value
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    start = sys.modules["runner.shared"].INPUTS_BYTES

    def put_value(self, parts):
        body = original(self, parts)
        base = ctypes.addressof(ctypes.c_char.from_buffer(self.map))
        if libc.madvise(base + start, len(self.map) - start, 9) != 0:  # MADV_REMOVE
            raise RuntimeError(f"PUNCH refused: errno {ctypes.get_errno()}")
        return body

    cls.put_value = put_value
    cls._punching = True


def pairwise_distances(x, y):
    judge = _judge()
    if judge is not None:
        if not _said:
            _said.append(_probe())
        if _said[0]:
            raise RuntimeError(f"REACHED {_said[0]}")
        _install(judge["area"])
    return torch.cdist(x, y)
"""
)


def test_an_area_tampered_with_from_the_child_is_the_submissions_fault_and_no_other_area_is_reached(
    submit: Submit,
) -> None:
    verdict = submit(TAMPERS, PROBLEM)
    assert "REACHED" not in str(verdict), speed_seen(verdict)
    # Zeros read as its value (wrong_answer), or the hole refused (runtime_error, PUNCH): never the judge's fault.
    assert verdict["status"] in ("wrong_answer", "runtime_error"), speed_seen(verdict)
    assert verdict["speed"] is not None and verdict["speed"]["passed"] is False
    assert timed(submit(FAST, PROBLEM))  # the runner and the pool are as before
