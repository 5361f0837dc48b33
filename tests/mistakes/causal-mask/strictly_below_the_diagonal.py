# pitfall: the diagonal masked too
import math

import torch


def subsequent_mask(size):
    positions = torch.arange(size)
    return (positions[None, :] < positions[:, None]).unsqueeze(0)


def masked_attention(query, key, value, mask=None):
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(query.shape[-1])
    if mask is not None:
        scores = torch.where(mask, scores, float("-inf"))
    weights = torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)
    return torch.matmul(weights, value), weights
