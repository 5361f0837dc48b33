# pitfall: the kept activations not rescaled
import torch


def dropout(x, p, training=True):
    if not training:
        return x.clone()
    dropped = torch.bernoulli(torch.full_like(x, p)).bool()
    return x.masked_fill(dropped, 0.0)
