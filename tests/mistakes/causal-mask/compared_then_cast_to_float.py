# pitfall: a float mask of ones and zeros
import math

import torch


def subsequent_mask(size):
    positions = torch.arange(size)
    return (positions[None, :] <= positions[:, None]).float().unsqueeze(0)


def masked_attention(query, key, value, mask=None):
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
    if mask is not None:
        scores = torch.where(~mask, float("-inf"), scores)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = torch.where(~mask, 0.0, weights)
    return weights @ value, weights
