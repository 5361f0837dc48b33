# pitfall: masked with -1e9 instead of -inf
import math

import torch


def subsequent_mask(size):
    return torch.tril(torch.ones(1, size, size, dtype=torch.bool))


def masked_attention(query, key, value, mask=None):
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(query.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask == 0, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return torch.matmul(weights, value), weights
