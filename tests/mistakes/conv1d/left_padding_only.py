# pitfall: the padding on one side
import torch
import torch.nn.functional as F


def conv1d(x, weight, bias=None, padding=0):
    zeros = torch.zeros(x.shape[0], x.shape[1], 2 * padding, dtype=x.dtype)
    return F.conv1d(torch.cat([zeros, x], dim=2), weight, bias)
