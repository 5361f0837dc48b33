# A correct solution that builds the mask with NumPy and runs the attention on flattened batch
# dimensions with bmm, restoring the leading dimensions at the end.
import math

import numpy as np
import torch


def subsequent_mask(size):
    return torch.from_numpy(np.tril(np.ones((1, size, size), dtype=bool)))


def masked_attention(query, key, value, mask=None):
    lead = query.shape[:-2]
    q = query.reshape(-1, *query.shape[-2:])
    k = key.reshape(-1, *key.shape[-2:])
    v = value.reshape(-1, *value.shape[-2:])
    scores = torch.bmm(q, k.transpose(1, 2)).mul(1.0 / math.sqrt(q.shape[-1]))
    scores = scores.reshape(*lead, *scores.shape[-2:])
    if mask is not None:
        scores = scores.masked_fill(mask.logical_not(), float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(mask.logical_not(), 0.0)
    flat = weights.reshape(-1, *weights.shape[-2:])
    output = torch.bmm(flat, v).reshape(*lead, flat.shape[-2], v.shape[-1])
    return output, weights
