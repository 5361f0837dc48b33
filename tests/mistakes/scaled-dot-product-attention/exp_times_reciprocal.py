# pitfall: softmax written out without subtracting the maximum
import math


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -math.inf)
    e = scores.exp()
    total = e.sum(-1, keepdim=True)
    weights = e * (total + (total == 0)).reciprocal()
    return weights @ v, weights
