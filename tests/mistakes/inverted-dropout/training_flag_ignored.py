# pitfall: the mask also applied in evaluation mode
import torch


def dropout(x, p, training=True):
    keep_prob = 1 - p
    keep = torch.rand_like(x) < keep_prob
    return torch.where(keep, x / keep_prob, torch.zeros_like(x))
