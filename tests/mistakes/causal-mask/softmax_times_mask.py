# pitfall: masked after the softmax only
import math

import torch


def subsequent_mask(size):
    return torch.tril(torch.ones(1, size, size, dtype=torch.bool))


def masked_attention(query, key, value, mask=None):
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(query.shape[-1])
    weights = scores.softmax(dim=-1)
    if mask is not None:
        weights = weights * mask
    return torch.matmul(weights, value), weights
