# Dropout without the 1 / (1 - p) rescaling, sampled with torch.where on uniform numbers: the
# statistical tests refuse it whatever mask it draws.
import torch


def dropout(x, p, training=True):
    if not training:
        return x.clone()
    return torch.where(torch.rand_like(x) < p, torch.zeros_like(x), x)
