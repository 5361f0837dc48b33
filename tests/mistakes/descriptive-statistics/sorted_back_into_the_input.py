# pitfall: the input sorted in place
import numpy as np


def describe(x):
    x[:] = np.sort(x)
    n = x.size
    q1, median, q3 = np.percentile(x, [25, 50, 75])
    return {
        "count": n,
        "mean": np.mean(x),
        "std": np.std(x, ddof=1),
        "min": x[0],
        "q1": q1,
        "median": median,
        "q3": q3,
        "max": x[n - 1],
        "iqr": q3 - q1,
        "range": x[n - 1] - x[0],
    }
