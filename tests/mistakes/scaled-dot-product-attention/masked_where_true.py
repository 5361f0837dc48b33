# pitfall: the mask read the wrong way round
import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
    if mask is not None:
        scores = torch.where(mask, torch.full_like(scores, -math.inf), scores)
    weights = scores.softmax(-1)
    if mask is not None:
        weights = torch.where(mask, torch.zeros_like(weights), weights)
    return weights @ v, weights
