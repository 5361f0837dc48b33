# pitfall: True marks the future
import math

import numpy as np
import torch


def subsequent_mask(size):
    return torch.from_numpy(np.triu(np.ones((1, size, size)), k=1).astype(bool))


def masked_attention(query, key, value, mask=None):
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(query.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(mask == 0, 0.0)
    return torch.matmul(weights, value), weights
