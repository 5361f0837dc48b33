# pitfall: masked with -1e9 instead of -inf

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
    if mask is not None:
        scores = scores.masked_fill(mask == 0, torch.finfo(scores.dtype).min)
    weights = scores.softmax(-1)
    return weights @ v, weights
