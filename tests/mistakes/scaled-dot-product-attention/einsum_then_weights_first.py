# pitfall: returns (weights, output) in the wrong order
import math

import torch
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.einsum("...qd,...kd->...qk", q, k) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask.logical_not(), -math.inf)
    weights = F.softmax(scores, dim=-1)
    if mask is not None:
        weights = torch.where(mask, weights, torch.zeros_like(weights))
    return (weights, torch.einsum("...qk,...kd->...qd", weights, v))
