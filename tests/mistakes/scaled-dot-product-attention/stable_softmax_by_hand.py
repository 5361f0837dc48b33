# pitfall: a fully masked query left as nan
import math


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -math.inf)
    shifted = scores - scores.amax(dim=-1, keepdim=True)
    e = shifted.exp()
    weights = e / e.sum(dim=-1, keepdim=True)
    return weights @ v, weights
