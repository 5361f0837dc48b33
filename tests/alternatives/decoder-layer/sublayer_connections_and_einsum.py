# A correct solution in the Annotated Transformer's shape, made post-norm: three SublayerConnection
# modules hold the norms (exposed again as norm1, norm2, norm3) and call their sublayers through
# lambdas; the attention is written with einsum and a -1e9 fill, the norm with
# torch.var_mean(unbiased=False) and rsqrt, the parts built by factory functions as in the earlier
# problems.
import copy
import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h, self.d_k = num_heads, d_model // num_heads
        self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d_model, d_model) for _ in range(4))

    def forward(self, query, key, value, mask=None):
        b, lq, d = query.shape
        q = self.w_q(query).view(b, lq, self.h, self.d_k)
        k = self.w_k(key).view(b, key.shape[1], self.h, self.d_k)
        v = self.w_v(value).view(b, value.shape[1], self.h, self.d_k)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask.unsqueeze(1) == 0, -1e9)
        weights = scores.softmax(dim=-1)
        return self.w_o(torch.einsum("bhqk,bkhd->bqhd", weights, v).reshape(b, lq, d))


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.linear2(self.linear1(x).relu())


class LayerNorm(nn.Module):
    def __init__(self, features, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(features))
        self.bias = nn.Parameter(torch.zeros(features))
        self.eps = eps

    def forward(self, x):
        var, mean = torch.var_mean(x, dim=-1, keepdim=True, unbiased=False)
        return (x - mean) * torch.rsqrt(var + self.eps) * self.weight + self.bias


class SublayerConnection(nn.Module):
    def __init__(self, size, dropout):
        super().__init__()
        self.norm = LayerNorm(size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, sublayer):
        return self.norm(x + self.dropout(sublayer(x)))


def create_multi_head_attention(d_model, num_heads):
    return MultiHeadAttention(d_model, num_heads)


def create_feed_forward(d_model, d_ff):
    return FeedForward(d_model, d_ff)


class DecoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout):
        super().__init__()
        attention = create_multi_head_attention(d_model, n_heads)
        self.self_attn = attention
        self.src_attn = copy.deepcopy(attention)  # a clone, as the Annotated Transformer builds its layers
        self.feed_forward = create_feed_forward(d_model, d_ff)
        self.sublayer = nn.ModuleList([SublayerConnection(d_model, dropout) for _ in range(3)])
        self.norm1, self.norm2, self.norm3 = (s.norm for s in self.sublayer)

    def forward(self, x, memory, src_mask, tgt_mask):
        m = memory
        x = self.sublayer[0](x, lambda t: self.self_attn(t, t, t, tgt_mask))
        x = self.sublayer[1](x, lambda t: self.src_attn(t, m, m, src_mask))
        return self.sublayer[2](x, self.feed_forward)


def create_decoder_layer(d_model, n_heads, d_ff, dropout):
    return DecoderLayer(d_model, n_heads, d_ff, dropout)
