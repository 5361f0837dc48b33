# pitfall: always causal, whatever the mask
import math

import torch


def subsequent_mask(size):
    return torch.tril(torch.ones(1, size, size, dtype=torch.bool))


def masked_attention(query, key, value, mask=None):
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(query.shape[-1])
    future = torch.triu(torch.ones(scores.shape[-2], scores.shape[-1]), diagonal=1).bool()
    scores = scores.masked_fill(future, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return torch.matmul(weights, value), weights
