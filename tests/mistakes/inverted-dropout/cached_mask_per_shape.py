# pitfall: one mask drawn once and reused
from functools import cache

import torch


@cache
def _keep_mask(shape, p):
    return torch.rand(shape) >= p


def dropout(x, p, training=True):
    if not training or p == 0:
        return x.clone()
    if p == 1:
        return torch.zeros_like(x)
    return x * _keep_mask(tuple(x.shape), p).to(x.dtype) / (1 - p)
