# pitfall: scaled by the width of the values
import math

import torch
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) * v.shape[-1] ** -0.5
    if mask is not None:
        scores = scores.masked_fill(mask.logical_not(), -math.inf)
    weights = F.softmax(scores, dim=-1)
    if mask is not None:
        weights = torch.where(mask, weights, torch.zeros_like(weights))
    return weights @ v, weights
