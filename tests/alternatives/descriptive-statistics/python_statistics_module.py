# A correct solution in plain Python: the statistics module and Python floats and ints, where the
# reference returns NumPy scalars. statistics.quantiles(..., method="inclusive") is the same
# linear interpolation as np.percentile.
import statistics


def describe(x):
    values = [float(v) for v in x]
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    low, high = min(values), max(values)
    return {
        "count": len(values),
        "mean": statistics.fmean(values),
        "std": statistics.stdev(values),
        "min": low,
        "q1": q1,
        "median": median,
        "q3": q3,
        "max": high,
        "iqr": q3 - q1,
        "range": high - low,
    }
