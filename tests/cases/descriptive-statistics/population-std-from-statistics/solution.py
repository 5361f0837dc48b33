# The population standard deviation again, spelled with Python's statistics module (pstdev)
# instead of np.std: the same mistake, the same hint.
import statistics


def describe(x):
    values = sorted(float(v) for v in x)
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return {
        "count": len(values),
        "mean": statistics.fmean(values),
        "std": statistics.pstdev(values),
        "min": values[0],
        "q1": q1,
        "median": median,
        "q3": q3,
        "max": values[-1],
        "iqr": q3 - q1,
        "range": values[-1] - values[0],
    }
