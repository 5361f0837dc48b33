def pairwise_distances(x, y):
    return ((x[:, None, :] - y[None, :, :]) ** 2).sum(dim=-1).sqrt()
