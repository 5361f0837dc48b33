# A correct solution that computes each layer normalisation in float64 and casts back to the
# input's dtype, runs the heads one by one in a Python loop over column slices, and drops with
# an inverted dropout of its own (torch.rand_like against the rate: other draws than nn.Dropout's).
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)

    def forward(self, query, key, value, mask=None):
        q, k, v = self.w_q(query), self.w_k(key), self.w_v(value)
        d_k = q.shape[-1] // self.n_heads
        heads = []
        for i in range(self.n_heads):
            cols = slice(i * d_k, (i + 1) * d_k)
            scores = q[..., cols] @ k[..., cols].transpose(-2, -1) / math.sqrt(d_k)
            if mask is not None:
                scores = scores.masked_fill(~mask, float("-inf"))
            heads.append(torch.softmax(scores, dim=-1) @ v[..., cols])
        return self.w_o(torch.cat(heads, dim=-1))


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.linear2(F.relu(self.linear1(x)))


class Norm(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.bias = nn.Parameter(torch.zeros(size))

    def forward(self, x):
        z = x.double()
        z = (z - z.mean(-1, keepdim=True)) / torch.sqrt(z.var(-1, unbiased=False, keepdim=True) + 1e-6)
        return z.to(x.dtype) * self.weight + self.bias


def dropout(t, p, training):
    if not training or p == 0:
        return t
    if p == 1:
        return torch.zeros_like(t)
    return t * (torch.rand_like(t) >= p) / (1 - p)


class EncoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout):
        super().__init__()
        self.self_attn = Attention(d_model, n_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1 = Norm(d_model)
        self.norm2 = Norm(d_model)
        self.rate = dropout

    def forward(self, x, mask):
        h = self.norm1(x + dropout(self.self_attn(x, x, x, mask), self.rate, self.training))
        return self.norm2(h + dropout(self.feed_forward(h), self.rate, self.training))


def create_encoder_layer(d_model, n_heads, d_ff, dropout):
    return EncoderLayer(d_model, n_heads, d_ff, dropout)
