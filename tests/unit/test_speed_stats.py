"""The statistics of a speed-graded verdict (grader/grading/speed_stats.py), from raw times alone."""

from __future__ import annotations

import math
import random

import pytest

from grader.grading.speed_stats import (
    SETUP_GRACE_NS,
    geometric_mean,
    ratio_interval,
    score,
    setup_charge_ns,
    size_speed,
)

MS = 1_000_000


def test_a_size_is_the_baselines_total_over_the_submissions() -> None:
    # The first call, one warm-up call, then three timed calls each; the baseline is 4x slower throughout.
    subject = [9 * MS, 5 * MS, 1 * MS, 2 * MS, 1 * MS]
    baseline = [9 * MS, 5 * MS, 4 * MS, 8 * MS, 4 * MS]
    size = size_speed("n=64", subject, baseline, warmup=1, charge_ns=0.0)
    assert size.speedup == 4 and size.interval == (4, 4)
    assert size.repeats == 3
    assert size.submission_ms == pytest.approx(4 / 3, rel=1e-3) and size.baseline_ms == pytest.approx(16 / 3, rel=1e-3)
    assert size.submission_first_ms == 9 and size.baseline_first_ms == 9


def test_making_half_the_calls_cheap_by_doing_their_work_in_the_others_gains_nothing() -> None:
    """A median of per-call ratios would give 10x here; the totals say what was done: 1x."""
    baseline = [1] + [10 * MS] * 9
    honest = [1] + [10 * MS] * 9
    shifted = [1] + [1 * MS] * 5 + [21.25 * MS] * 4  # 5 cheap, their work done in the 4 others
    assert size_speed("n", honest, baseline, 0, 0.0).speedup == 1
    assert size_speed("n", shifted, baseline, 0, 0.0).speedup == 1


def test_a_drift_that_slows_both_alike_leaves_the_speedup_alone() -> None:
    subject = [1] + [1 * MS] * 5 + [3 * MS] * 5
    baseline = [1] + [2 * MS] * 5 + [6 * MS] * 5
    assert size_speed("n", subject, baseline, warmup=0, charge_ns=0.0).speedup == 2


def test_the_interval_holds_the_true_ratio_about_95_percent_of_the_time_and_is_repeatable() -> None:
    draws = random.Random(11)
    held = 0
    for _ in range(300):
        subject = [draws.lognormvariate(0, 0.3) for _ in range(15)]
        baseline = [2 * draws.lognormvariate(0, 0.3) for _ in range(15)]  # truly 2x, in expectation
        low, high = ratio_interval(subject, baseline)
        held += low <= 2.0 * math.exp(0) <= high
        assert ratio_interval(subject, baseline) == (low, high)  # seeded: the same numbers, the same interval
    assert 0.85 <= held / 300 <= 1.0


def test_work_before_the_timed_calls_is_charged_against_the_submissions_own_calls() -> None:
    """Its import beyond the baseline's, and each first and warm-up call beyond its own timed calls' mean: a slow
    baseline's first calls are no credit."""
    fast = [1 * MS, 1 * MS, 1 * MS, 1 * MS, 1 * MS, 1 * MS]  # first, warm-up, four timed: all 1 ms
    assert setup_charge_ns(1 * MS, 1 * MS, [fast, fast], warmup=1) == 0
    at_import = setup_charge_ns(1 * MS + 1000 * MS, 1 * MS, [fast, fast], warmup=1)
    assert at_import == pytest.approx((1000 * MS - SETUP_GRACE_NS) / 8)
    ahead = [1 * MS, 500 * MS, 0.1 * MS, 0.1 * MS, 0.1 * MS, 0.1 * MS]  # the timed calls' work done in the warm-up
    charge = setup_charge_ns(1 * MS, 1 * MS, [ahead], warmup=1)
    assert charge == pytest.approx((500 * MS + 0.9 * MS - 0.1 * MS - SETUP_GRACE_NS) / 4, rel=1e-6)
    assert setup_charge_ns(1 * MS, 900 * MS, [fast], warmup=1) == 0  # a slow baseline's import credits nothing
    assert setup_charge_ns(2 * MS, 1 * MS, [fast], warmup=1) == 0  # a millisecond of a load's noise: the grace
    # A timed region of 10 calls: the work done ahead is spread over every call the regions held, 40 here.
    in_regions = setup_charge_ns(1 * MS, 1 * MS, [ahead], warmup=1, batches=[10])
    assert in_regions == pytest.approx(charge / 10, rel=1e-6)


def test_a_charge_lowers_the_speedup_as_if_the_work_were_done_in_the_calls() -> None:
    subject = [1 * MS] * 6
    baseline = [10 * MS] * 6
    free = size_speed("n", subject, baseline, warmup=0, charge_ns=0.0)
    charged = size_speed("n", subject, baseline, warmup=0, charge_ns=9 * MS)
    assert free.speedup == 10 and charged.speedup == 1
    assert charged.submission_ms == 10


def test_the_score_is_the_geometric_mean_or_the_smallest() -> None:
    sizes = [
        size_speed("a", [1, 1 * MS, 1 * MS, 1 * MS], [1, 2 * MS, 2 * MS, 2 * MS], 0, 0.0),
        size_speed("b", [1, 1 * MS, 1 * MS, 1 * MS], [1, 8 * MS, 8 * MS, 8 * MS], 0, 0.0),
    ]
    value, interval = score(sizes, "geomean")
    assert value == 4 and interval == (4, 4)
    assert score(sizes, "min") == (2, (2, 2))
    assert math.isclose(geometric_mean([2, 8]), 4)
