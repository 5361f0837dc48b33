# pitfall: dropout inside the feed-forward, at the layer's rate
import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h, self.d_k = num_heads, d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)

    def forward(self, query, key, value, mask=None):
        b = query.size(0)
        q = self.w_q(query).view(b, -1, self.h, self.d_k).transpose(1, 2)
        k = self.w_k(key).view(b, -1, self.h, self.d_k).transpose(1, 2)
        v = self.w_v(value).view(b, -1, self.h, self.d_k).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        heads = torch.matmul(scores.softmax(dim=-1), v)
        return self.w_o(heads.transpose(1, 2).reshape(b, -1, self.h * self.d_k))


class PositionwiseFeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.1):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.hidden = nn.Sequential(nn.ReLU(), nn.Dropout(dropout))

    def forward(self, x):
        return self.linear2(self.hidden(self.linear1(x)))


class LayerNorm(nn.Module):
    def __init__(self, features, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(features))
        self.bias = nn.Parameter(torch.zeros(features))

    def forward(self, x):
        var, mean = torch.var_mean(x, dim=-1, keepdim=True, unbiased=False)
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias


class DecoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, n_heads)
        self.src_attn = MultiHeadAttention(d_model, n_heads)
        self.feed_forward = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)
        self.norm3 = LayerNorm(d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, memory, src_mask, tgt_mask):
        h = self.norm1(x + self.drop(self.self_attn(x, x, x, tgt_mask)))
        h = self.norm2(h + self.drop(self.src_attn(h, memory, memory, src_mask)))
        return self.norm3(h + self.drop(self.feed_forward(h)))


def create_decoder_layer(d_model, n_heads, d_ff, dropout):
    return DecoderLayer(d_model, n_heads, d_ff, dropout)
