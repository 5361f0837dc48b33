"""Attack on speed grading's score across sizes (grader/grading/speed_stats.py `score`: the geometric mean of the
sizes' speed-ups, each the ratio of the two modules' totals at that size), in real sandboxes.

Within a size the ratio of totals is fair: work moved between that size's calls changes nothing. Across sizes it is
not. Every call's inputs, of every size, are in the child's memory from the start (execute_bench.py `bench_main`'s
`inputs`, reachable through the caller's frames), so in the smallest size's timed calls the module also computes the
results of every checked call of the other sizes (their first calls and timed calls), and returns those when they
come; their warm-up calls, never checked, return at once. No work leaves the timed calls and no first or warm-up
call costs more than its size's timed mean, so there is no setup charge. The smallest size's speed-up falls by the
work it took on (about 14 times), the other two rise by the whole of their work over a bare round trip (the
baseline's 24 ms and 34-55 ms calls against 0.2-0.3 ms): the geometric mean, a product, rises by far more than the
smallest size lost. Its values are right, so every checked call passes.

Measured on problems/pairwise-distances.yaml at commit 2a09fca (the CPU clock, ratios of totals; through SpeedGrader,
/tmp/sp/run.py): a loop over every pair with one torch.dist each, honestly 1.652x (time_limit_exceeded); the same
loop with its work moved (`MOVED`): accepted at 11.4x (16 x 16: 0.146x, 32 x 32: 67.6x, 48 x 48: 150.7x; setup
charge 0); through the service, 1.729x against accepted at 11.64x. With the baseline's own loop (1x), moving only the
largest size's work into the middle size's calls: 3.53x (a move into the smallest size's calls is stopped by the
give-up rule there).

Hiding the inputs does not stop it. With the work in progress after 2a09fca (each call's inputs made in a child of
their own and sent with its command), the module's child is still given the benchmark (its ChildJob's `bench`: the
seed and the inputs' code, in bench_main's locals), and the judge's own `execute_bench.build_call` makes any call's
inputs again, the same values: accepted at 8.51x against the honest 1.69x through the service (7.98x against 1.72x
through SpeedGrader). With `seed: fixed` the seed is 0 and the inputs' code is public (GET /api/problems/{id}): a
module needs nothing from the judge to make them. Fixed (a score that moving work between sizes cannot raise, such
as the ratio of the totals over all sizes), the move earns nothing: the score stays near the honest loop's, below
the threshold."""

from __future__ import annotations

import pytest

from tests.security.conftest import Submit

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

PROBLEM = "pairwise-distances"

LOOP = """def _loop(x, y):  # one Python iteration per pair, one torch.dist each: about 1.7x the baseline honestly
    out = torch.empty(x.shape[0], y.shape[0], dtype=x.dtype)
    for i in range(x.shape[0]):
        xi = x[i]
        for j in range(y.shape[0]):
            out[i, j] = torch.dist(xi, y[j])
    return out
"""
HONEST = "import torch\n\n\n" + LOOP + "\n\ndef pairwise_distances(x, y):\n    return _loop(x, y)\n"
MOVED = (
    "import sys\n\nimport torch\n\n"
    "WARMUP, TIMED = 2, 15\n"
    "INTO, FROM = 0, (1, 2)  # the other sizes' checked calls are made in the smallest size's timed calls\n"
    "_kept = {}\n"
    "_pending = [(size, call) for size in FROM for call in [0, *range(1 + WARMUP, 1 + WARMUP + TIMED)]]\n\n\n"
    + LOOP
    + """

_eb = sys.modules.get("runner.execute_bench")
_code = []


def _bench():
    \"\"\"(inputs_of(size, call) -> (args, kwargs), this call's command); (None, None) in a test. Every call's inputs
    are in the child's memory (bench_main's `inputs`); or, where each call's come with its command, they are made again
    with the judge's own code (execute_bench.build_call) from the benchmark's seed and inputs' code, which the child
    is given (its ChildJob's bench).\"\"\"
    frame = sys._getframe(2)
    while frame is not None:
        local = frame.f_locals
        if "command" in local and isinstance(local.get("inputs"), list):
            every = local["inputs"]
            return (lambda size, call: every[size][call]), local["command"]
        if "command" in local and "bench" in local and hasattr(_eb, "build_call"):
            bench = local["bench"]
            if not _code:
                _code.append(_eb.compile_test(bench.inputs, _eb.INPUTS_FILE))

            def made(size, call):
                built = _eb.build_call(bench, _code[0], size, call)
                return built["args"], built["kwargs"]

            return made, local["command"]
        frame = frame.f_back
    return None, None


def _attack(x, y):
    inputs_of, command = _bench()
    if command is None:  # a test, not the benchmark
        return _loop(x, y)
    kept = _kept.pop((command.size, command.call), None)
    if kept is not None:
        return kept
    if command.size in FROM and 1 <= command.call <= WARMUP:  # a warm-up: never checked, as cheap as a timed call
        return torch.empty(x.shape[0], y.shape[0])
    if command.size == INTO and command.call > WARMUP:  # a timed call of the smallest size: a share of the others'
        share = -(-len(_pending) // (1 + WARMUP + TIMED - command.call))
        for size, call in _pending[:share]:
            args, kwargs = inputs_of(size, call)
            _kept[(size, call)] = _loop(*args, **kwargs)
        del _pending[:share]
    return _loop(x, y)


# Where the inputs of later calls cannot be had at all, the attack has nothing to work with, and the module
# computes honestly: it must gain nothing either way.
def pairwise_distances(x, y):
    try:
        return _attack(x, y)
    except Exception:
        return _loop(x, y)
"""
)


def test_work_moved_between_sizes_earns_nothing(submit: Submit, sandbox_runtime: str) -> None:
    honest = submit(HONEST, PROBLEM)
    assert honest["status"] == "time_limit_exceeded", (honest["message"], honest["speed"])  # under the 5x threshold
    verdict = submit(MOVED, PROBLEM)
    speed, fair = verdict["speed"], honest["speed"]
    failed = [(t["name"], t["status"], t["message"]) for t in verdict["tests"] if t["status"] not in ("passed", None)]
    assert speed is not None and speed["speedup"] is not None, (verdict["message"], failed)
    seen = (
        verdict["status"],
        speed["speedup"],
        fair["speedup"],
        speed["setup_charge_ms"],
        [(s["name"], s["speedup"], f["speedup"]) for s, f in zip(speed["sizes"], fair["sizes"], strict=True)],
    )
    assert verdict["status"] != "accepted", seen
    # Under gVisor calls are timed on the wall clock (SECURITY.md, residual risks, speed grading (a) and (b)): one run
    # of the suite on a busy 2-core host saw the move score 2.0x the honest module's (1.588 against 0.796), still
    # refused. There the bound is looser; the verdict above holds under both runtimes.
    bound = 1.5 if sandbox_runtime == "runc" else 2.5
    assert speed["speedup"] <= bound * fair["speedup"], seen
