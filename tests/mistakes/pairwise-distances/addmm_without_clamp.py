# pitfall: the expansion without the clamp
import torch


def pairwise_distances(x, y):
    norms = (x * x).sum(dim=1, keepdim=True) + (y * y).sum(dim=1)
    return torch.sqrt(torch.addmm(norms, x, y.T, alpha=-2))
