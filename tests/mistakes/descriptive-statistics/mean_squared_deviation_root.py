# pitfall: the population standard deviation
import numpy as np


def describe(x):
    mean = np.mean(x)
    std = np.sqrt(np.mean((x - mean) ** 2))
    q1, median, q3 = np.quantile(x, [0.25, 0.5, 0.75])
    low, high = np.min(x), np.max(x)
    return {
        "count": len(x),
        "mean": mean,
        "std": std,
        "min": low,
        "q1": q1,
        "median": median,
        "q3": q3,
        "max": high,
        "iqr": q3 - q1,
        "range": high - low,
    }
