# A correct solution in the Annotated Transformer's style: the mask from triu(diagonal=1) compared with
# 0, the scores filled with -1e9 where the mask is 0, and the masked weights zeroed after the softmax
# (which also clears a fully masked query's uniform weights).
import math

import torch


def subsequent_mask(size):
    attn_shape = (1, size, size)
    future = torch.triu(torch.ones(attn_shape), diagonal=1).type(torch.uint8)
    return future == 0


def masked_attention(query, key, value, mask=None):
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    if mask is not None:
        p_attn = p_attn.masked_fill(mask == 0, 0)
    return torch.matmul(p_attn, value), p_attn
