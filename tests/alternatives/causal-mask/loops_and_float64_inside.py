# A correct solution written with loops: the mask filled entry by entry, the attention computed in
# float64 with einsum and a softmax written out (maximum subtracted), then cast back to the input's dtype.
import torch


def subsequent_mask(size):
    mask = torch.zeros(1, size, size, dtype=torch.bool)
    for i in range(size):
        for j in range(i + 1):
            mask[0, i, j] = True
    return mask


def masked_attention(query, key, value, mask=None):
    dtype = query.dtype
    q, k, v = query.double(), key.double(), value.double()
    scores = torch.einsum("...qd,...kd->...qk", q, k) / q.shape[-1] ** 0.5
    if mask is None:
        mask = torch.ones(1, dtype=torch.bool)
    allowed = mask.expand(scores.shape)
    scores = torch.where(allowed, scores, torch.full_like(scores, float("-inf")))
    top = scores.amax(dim=-1, keepdim=True)
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
    exp = torch.exp(scores - top) * allowed
    total = exp.sum(dim=-1, keepdim=True)
    weights = exp / torch.where(total == 0, torch.ones_like(total), total)
    output = torch.einsum("...qk,...kd->...qd", weights, v)
    return output.to(dtype), weights.to(dtype)
