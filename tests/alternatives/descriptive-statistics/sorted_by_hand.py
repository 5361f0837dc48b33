# A correct solution that sorts a copy and interpolates the percentiles by hand, returning 0-d
# NumPy arrays and NumPy scalars mixed with Python numbers.
import math

import numpy as np


def _percentile(ordered, q):
    h = (len(ordered) - 1) * q / 100
    low = math.floor(h)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (h - low) * (ordered[high] - ordered[low])


def describe(x):
    ordered = np.sort(x)
    n = ordered.size
    mean = ordered.sum() / n
    std = math.sqrt(float(((ordered - mean) ** 2).sum()) / (n - 1))
    q1, median, q3 = (_percentile(ordered, q) for q in (25, 50, 75))
    return {
        "count": n,
        "mean": np.asarray(mean),
        "std": std,
        "min": ordered[0],
        "q1": q1,
        "median": median,
        "q3": q3,
        "max": ordered[-1],
        "iqr": q3 - q1,
        "range": float(ordered[-1] - ordered[0]),
    }
