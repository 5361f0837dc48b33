def pairwise_distances(x, y):
    squared = (x * x).sum(dim=1, keepdim=True) + (y * y).sum(dim=1) - 2 * x @ y.T
    return squared.clamp_min(0).sqrt()
