# pitfall: Manhattan distances
import torch


def pairwise_distances(x, y):
    return torch.cdist(x, y, p=1)
