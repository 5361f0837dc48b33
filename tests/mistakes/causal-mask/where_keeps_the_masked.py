# pitfall: the mask read the wrong way round
import math

import torch


def subsequent_mask(size):
    return torch.tril(torch.ones(1, size, size, dtype=torch.bool))


def masked_attention(query, key, value, mask=None):
    scores = torch.einsum("...qd,...kd->...qk", query, key) / math.sqrt(query.shape[-1])
    if mask is None:
        weights = torch.softmax(scores, dim=-1)
    else:
        scores = torch.where(mask, torch.full_like(scores, float("-inf")), scores)
        weights = torch.where(mask, 0.0, torch.softmax(scores, dim=-1))
    return torch.einsum("...qk,...kd->...qd", weights, value), weights
