"""Attacks on the surface added last, without Docker: the runner's watch on the command pipe's error while it awaits
a frame (sandbox/runner/child.py Child._let_go), the trusted side's static forbid:/require: check
(grader/grading/source_rules.py) and the problem check's float64 oracle on the trusted side (oracle.py).

What holds (these pass): a child that lets go of its commands half-way through writing a result is charged with that
test alone, the runner does not spin while it decides, and the next test runs in a fresh child; a hostile source's
static check is bounded.
Holes (these fail until fixed): the static check does not take torch.ops.aten's overload of a forbidden function for
it; the oracle's measure of one capped result takes many times that result's size on the trusted side (the upload
check runs in the API process, not a bounded one)."""

from __future__ import annotations

import os
import time
import tracemalloc

import numpy as np
import pytest

from grader.containers.values import Tensor
from grader.grading.source_rules import violations
from grader.problems.check.oracle import Finding, narrowed
from tests.unit.runner_harness import HostRunner, job

SDPA = "torch.nn.functional.scaled_dot_product_attention"


def cpu_ticks(pid: int) -> int:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


# -- the command pipe's error, half-way through a result ------------------------------------------------------------

HALF_WRITTEN = (
    "from sandbox.runner import protocol as P\n"
    "from sandbox.runner.messages import Report as R\n"
    "frame = P.encode(P.CHILD_RESULT, R(P.Outcome.OK, index=INDEX).header(), b'x' * (900 << 10))\n"
    "P.write_all(RES, frame[:300000])\n"  # the runner holds a third of a frame
    "os.closerange(0, RES)\n"  # its command pipe among them
    "os.closerange(RES + 1, 1024)\n"
    "time.sleep(0.2)\n"
    "P.write_all(RES, frame[300000:])\n"  # the rest, once the runner has decided
    "time.sleep(30)\n"
)


@pytest.mark.timeout(60)
def test_a_child_that_lets_go_mid_result_is_charged_with_that_test_alone_and_the_runner_does_not_spin(
    host: HostRunner,
) -> None:
    source = "def f(x):\n    return x\n"
    before, started = cpu_ticks(host.pid), time.monotonic()
    done = host.run(job(source, "result = 1", HALF_WRITTEN, "result = 3", skip_after_timeout=True))
    spent, ticks = time.monotonic() - started, cpu_ticks(host.pid) - before
    assert done.statuses() == ["ok", "error", "ok"], [frame.header for frame in done.tests]
    assert "command channel" in (done.tests[1].header.message or ""), done.tests[1].header  # type: ignore[union-attr]
    assert done.tests[2].body == b"3"
    assert done.done is not None and done.done.header.clean  # type: ignore[union-attr]
    # The runner waited for the zygote's word (EXIT_REPORT_GRACE_S) and a fresh child, sleeping: no busy loop.
    assert ticks / os.sysconf("SC_CLK_TCK") < 0.5 * spent, (ticks, spent)


# -- the static check -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "x = " + ".".join(["a"] * 30000),  # deeper than the parser goes: the sandbox's compile_error
        "\n".join(f"a{i}.b.c" for i in range(6000)),
        ";".join(["a"] * 30000),  # as many names as 64 KiB holds, against 32 rules of each kind
        "\n".join(f"import torch.nn.functional as F{i}" for i in range(3000)),
        "x = a" + "[0]" * 20000,
        "x = " + "lambda: " * 5000 + "1",
    ],
    ids=["chain", "chains", "names", "imports", "subscripts", "lambdas"],
)
def test_the_static_check_of_a_hostile_source_is_bounded(source: str) -> None:
    rules = [f"torch.nn.functional.f{i}" for i in range(32)]
    started = time.monotonic()
    violations(source[: 64 * 1024], rules, rules)  # never raises
    assert time.monotonic() - started < 5.0


@pytest.mark.parametrize(
    "source",
    [
        "import torch\ntorch.ops.aten.scaled_dot_product_attention(q, k, v)\n",
        "from torch.ops import aten\naten.scaled_dot_product_attention(q, k, v)\n",
    ],
    ids=["torch.ops.aten", "from-torch.ops"],
)
def test_the_static_check_takes_the_aten_overload_of_a_forbidden_function_for_it(source: str) -> None:
    assert violations(source, [SDPA], []), "named plainly, and the sandbox does not replace it either"


def test_a_name_only_imported_satisfies_require_which_is_the_documented_rule() -> None:
    # Residual (docs/problems.md: "Checked on the source only"): naming is using, even on a line that never runs.
    source = "import torch\n\ndef f(x):\n    return x\n    torch.einsum\n"
    assert violations(source, [], ["torch.einsum"]) == []


# -- the oracle's measure on the trusted side -----------------------------------------------------------------------


def test_the_oracles_measure_of_a_result_takes_a_bounded_multiple_of_its_size() -> None:
    # 16 MiB (the default max_result_bytes) of float16 from the sandbox: its measure in float64 (oracle.narrowed).
    size = 16 << 20
    array = np.random.default_rng(0).random(size // 2).astype(np.float16)
    reference, oracle = Tensor("float16", array), Tensor("float16", array.copy())
    tracemalloc.start()
    try:
        narrowed(reference, oracle, Finding(0))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * size, f"{peak / size:.0f} times the result's size"
