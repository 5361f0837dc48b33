# pitfall: multiplied by (1 - p) instead of divided
import torch


def dropout(x, p, training=True):
    if not training:
        return x.clone()
    keep_prob = 1.0 - p
    keep = torch.rand_like(x) >= p
    return torch.where(keep, x * keep_prob, torch.zeros_like(x))
