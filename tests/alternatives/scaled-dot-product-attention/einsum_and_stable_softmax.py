# A correct solution written differently from the reference: q scaled first, einsum, a softmax
# written out with the maximum subtracted, and fully masked rows handled by a zero denominator.
import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    q = q / q.size(-1) ** 0.5
    scores = torch.einsum("...qd,...kd->...qk", q, k)
    if mask is not None:
        scores = torch.where(mask, scores, torch.tensor(float("-inf"), dtype=scores.dtype))
    top = scores.amax(dim=-1, keepdim=True)
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
    exp = torch.exp(scores - top)
    total = exp.sum(dim=-1, keepdim=True)
    weights = exp / torch.where(total == 0, torch.ones_like(total), total)
    return torch.einsum("...qk,...kd->...qd", weights, v), weights
