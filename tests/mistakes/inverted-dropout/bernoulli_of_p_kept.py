# pitfall: p used as the probability of keeping
import torch


def dropout(x, p, training=True):
    if not training:
        return x.clone()
    if p == 0:
        return x.clone()
    if p == 1:
        return torch.zeros_like(x)
    keep = torch.bernoulli(torch.full_like(x, p)).bool()
    return torch.where(keep, x / (1 - p), torch.zeros_like(x))
