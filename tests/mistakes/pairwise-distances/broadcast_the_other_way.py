# pitfall: y against x


def pairwise_distances(x, y):
    return ((y[:, None, :] - x[None, :, :]) ** 2).sum(dim=-1).sqrt()
