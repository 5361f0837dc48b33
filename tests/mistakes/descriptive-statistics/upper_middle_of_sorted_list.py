# pitfall: the median as the middle element without averaging
import statistics

import numpy as np


def describe(x):
    values = sorted(float(v) for v in x)
    n = len(values)
    q1 = float(np.percentile(x, 25))
    q3 = float(np.percentile(x, 75))
    return {
        "count": n,
        "mean": statistics.fmean(values),
        "std": statistics.stdev(values),
        "min": values[0],
        "q1": q1,
        "median": values[n // 2],
        "q3": q3,
        "max": values[-1],
        "iqr": q3 - q1,
        "range": values[-1] - values[0],
    }
