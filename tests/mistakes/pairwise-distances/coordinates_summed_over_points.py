# pitfall: the sum over the wrong dimension
import torch


def pairwise_distances(x, y):
    difference = x.unsqueeze(1) - y.unsqueeze(0)
    return torch.sqrt(torch.sum(difference**2, dim=1))
