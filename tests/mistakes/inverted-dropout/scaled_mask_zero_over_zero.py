# pitfall: p = 1 divides by zero
import torch


def dropout(x, p, training=True):
    if not training:
        return x.clone()
    mask = torch.bernoulli(torch.full_like(x, 1 - p))
    return x * (mask / (1 - p))
