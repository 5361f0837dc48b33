"""The statistics of a speed-graded verdict (grader/grading/speed_stats.py), from raw times alone."""

from __future__ import annotations

import math
import random

import pytest

from grader.grading.speed_stats import (
    SETUP_GRACE_NS,
    geometric_mean,
    median,
    median_interval,
    score,
    setup_charge_ns,
    size_speed,
    work_ns,
)


def test_the_median() -> None:
    assert median([3, 1, 2]) == 2
    assert median([4, 1, 3, 2]) == 2.5


@pytest.mark.parametrize(("n", "k"), [(5, 1), (6, 1), (10, 2), (15, 4), (20, 6), (50, 18)])
def test_the_interval_for_the_median_is_made_of_the_binomial_order_statistics(n: int, k: int) -> None:
    """The tabled ranks of the distribution-free 95 % interval: x(k) and x(n + 1 - k)."""
    values = list(range(1, n + 1))
    assert median_interval(values) == (k, n + 1 - k)


def test_the_interval_holds_the_true_median_about_95_percent_of_the_time() -> None:
    draws = random.Random(7)
    held = 0
    for _ in range(2000):
        sample = [draws.lognormvariate(0, 0.3) for _ in range(15)]  # true median: 1
        low, high = median_interval(sample)
        held += low <= 1.0 <= high
    assert 0.93 <= held / 2000 <= 0.995


def test_a_size_pairs_each_call_with_the_baselines_next_to_it() -> None:
    # The first call, one warm-up call, then three timed calls each; the baseline is 4x slower throughout.
    subject = [9_000_000, 5_000_000, 1_000_000, 2_000_000, 1_000_000]
    baseline = [9_000_000, 5_000_000, 4_000_000, 8_000_000, 4_000_000]
    size = size_speed("n=64", subject, baseline, warmup=1, charge_ns=0.0)
    assert size.speedup == 4 and size.interval == (4, 4)
    assert size.repeats == 3
    assert size.submission_ms == 1 and size.baseline_ms == 4
    assert size.submission_first_ms == 9 and size.baseline_first_ms == 9


def test_a_drift_that_slows_both_alike_leaves_the_speedup_alone() -> None:
    """Paired ratios: a machine that slows down half-way slows the call next to it too."""
    subject = [1] + [1_000_000] * 5 + [3_000_000] * 5
    baseline = [1] + [2_000_000] * 5 + [6_000_000] * 5
    assert size_speed("n", subject, baseline, warmup=0, charge_ns=0.0).speedup == 2


def test_the_setup_charge_is_the_excess_over_the_baseline_and_the_grace_spread_over_the_calls() -> None:
    assert setup_charge_ns(1e6, 1e6, 5e6, 5e6, calls=10) == 0  # the same as the baseline's: nothing
    excess = 1e9  # a second of work at import
    charge = setup_charge_ns(1e6 + excess, 1e6, 5e6, 5e6, calls=40)
    assert charge == pytest.approx((excess - SETUP_GRACE_NS) / 40)
    assert setup_charge_ns(2e6, 1e6, 5e6, 5e6, calls=10) == 0  # a millisecond of a load's noise: the grace
    assert setup_charge_ns(1e6, 9e9, 1e6, 9e9, calls=10) == 0  # a slower baseline never credits the submission


def test_a_charge_lowers_the_speedup_as_if_the_work_were_done_in_the_calls() -> None:
    subject = [1_000_000] * 6
    baseline = [10_000_000] * 6
    free = size_speed("n", subject, baseline, warmup=0, charge_ns=0.0)
    charged = size_speed("n", subject, baseline, warmup=0, charge_ns=9_000_000.0)
    assert free.speedup == 10 and charged.speedup == 1
    assert charged.submission_ms == 10


def test_the_score_is_the_geometric_mean_or_the_smallest() -> None:
    sizes = [
        size_speed("a", [1, 1_000_000, 1_000_000, 1_000_000], [1, 2_000_000, 2_000_000, 2_000_000], 0, 0.0),
        size_speed("b", [1, 1_000_000, 1_000_000, 1_000_000], [1, 8_000_000, 8_000_000, 8_000_000], 0, 0.0),
    ]
    value, interval = score(sizes, "geomean")
    assert value == 4 and interval == (4, 4)
    assert score(sizes, "min") == (2, (2, 2))
    assert math.isclose(geometric_mean([2, 8]), 4)


def test_a_calls_work_is_until_it_returned_plus_any_unusual_sending() -> None:
    """Encoding and sending a value is the judge's, the same for both modules: not counted. A child that says
    it returned before its work is done moves that work into its sending, where the excess is counted."""
    ms = 1_000_000
    # First call, then three timed: each returns after 1 ms (subject) or 4 ms (baseline); sending takes 2 ms.
    subject, subject_done = [3 * ms] * 4, [1 * ms] * 4
    baseline, baseline_done = [6 * ms] * 4, [4 * ms] * 4
    honest, base = work_ns(subject, subject_done, baseline, baseline_done, warmup=0)
    assert honest == [1 * ms] * 4 and base == [4 * ms] * 4
    # A forger says "done" at once and does its 1 ms of work while "sending": counted all the same.
    forger_done = [0] * 4
    forged, _ = work_ns(subject, forger_done, baseline, baseline_done, warmup=0)
    assert min(forged) >= 1 * ms - 1
    # A child that never said DONE (its value came at once): its whole time.
    whole, _ = work_ns(subject, subject, baseline, baseline_done, warmup=0)
    assert whole == [3 * ms] * 4
