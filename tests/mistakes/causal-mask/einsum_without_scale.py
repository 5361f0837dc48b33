# pitfall: no scaling
import torch


def subsequent_mask(size):
    return torch.tril(torch.ones(1, size, size, dtype=torch.bool))


def masked_attention(query, key, value, mask=None):
    scores = torch.einsum("...qd,...kd->...qk", query, key)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return torch.einsum("...qk,...kd->...qd", weights, value), weights
