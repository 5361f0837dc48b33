# pitfall: the mask not given a head dimension
import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h, self.d_k, self.d_model = num_heads, d_model // num_heads, d_model
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)

    def split(self, x):
        return x.view(x.size(0), x.size(1), self.h, self.d_k).transpose(1, 2)

    def forward(self, query, key, value, mask=None):
        b, lq = query.size(0), query.size(1)
        q, k, v = self.split(self.w_q(query)), self.split(self.w_k(key)), self.split(self.w_v(value))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask[None], float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        if mask is not None:
            weights = weights.masked_fill(~mask[None], 0.0)
        heads = weights @ v
        merged = heads.transpose(1, 2).reshape(b, lq, self.d_model)
        return self.w_o(merged)


def create_multi_head_attention(d_model, num_heads):
    return MultiHeadAttention(d_model, num_heads)
