# pitfall: a fully masked query left as nan
import math

import torch


def subsequent_mask(size):
    return torch.tril(torch.ones(1, size, size, dtype=torch.bool))


def masked_attention(query, key, value, mask=None):
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(query.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    exp = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    weights = exp / exp.sum(dim=-1, keepdim=True)
    return torch.matmul(weights, value), weights
