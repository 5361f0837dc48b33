# pitfall: quartiles as medians of the two halves
import math


def _median(values):
    n = len(values)
    middle = n // 2
    if n % 2:
        return values[middle]
    return (values[middle - 1] + values[middle]) / 2


def describe(x):
    values = sorted(float(v) for v in x)
    n = len(values)
    half = n // 2
    q1 = _median(values[:half])
    q3 = _median(values[n - half :])
    mean = sum(values) / n
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return {
        "count": n,
        "mean": mean,
        "std": std,
        "min": values[0],
        "q1": q1,
        "median": _median(values),
        "q3": q3,
        "max": values[-1],
        "iqr": q3 - q1,
        "range": values[-1] - values[0],
    }
