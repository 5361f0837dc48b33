# A correct solution that computes each layer normalisation in float64 and casts back, runs the heads
# one by one over column slices, drops with an inverted dropout of its own (torch.rand_like against
# the rate: other draws than nn.Dropout's), keeps each table as a bare nn.Parameter read by
# F.embedding, computes the positional table in float64 before storing it as float32, writes the
# generator as logits minus their logsumexp, and draws the Xavier bounds by hand with uniform_.
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def dropout(t, p, training):
    if not training or p == 0:
        return t
    if p == 1:
        return torch.zeros_like(t)
    return t * (torch.rand_like(t) >= p) / (1 - p)


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


class EncoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, rate):
        super().__init__()
        self.self_attn = Attention(d_model, n_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1 = Norm(d_model)
        self.norm2 = Norm(d_model)
        self.rate = rate

    def forward(self, x, mask):
        p, training = self.rate, self.training
        h = self.norm1(x + dropout(self.self_attn(x, x, x, mask), p, training))
        return self.norm2(h + dropout(self.feed_forward(h), p, training))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, rate):
        super().__init__()
        self.self_attn = Attention(d_model, n_heads)
        self.src_attn = Attention(d_model, n_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1 = Norm(d_model)
        self.norm2 = Norm(d_model)
        self.norm3 = Norm(d_model)
        self.rate = rate

    def forward(self, x, memory, src_mask, tgt_mask):
        p, training = self.rate, self.training
        h = self.norm1(x + dropout(self.self_attn(x, x, x, tgt_mask), p, training))
        h = self.norm2(h + dropout(self.src_attn(h, memory, memory, src_mask), p, training))
        return self.norm3(h + dropout(self.feed_forward(h), p, training))


class Stack(nn.Module):
    def __init__(self, layers, d_model):
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.norm = Norm(d_model)

    def forward(self, x, *args):
        for layer in self.layers:
            x = layer(x, *args)
        return self.norm(x)


class TokenEmbedding(nn.Module):
    def __init__(self, vocab, d_model, rate, max_len=5000):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(vocab, d_model))
        position = torch.arange(max_len, dtype=torch.float64)[:, None]
        frequency = 1.0 / 10000.0 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
        pe = torch.empty(max_len, d_model, dtype=torch.float64)
        pe[:, 0::2] = torch.sin(position * frequency)
        pe[:, 1::2] = torch.cos(position * frequency)
        self.register_buffer("positions", pe.float())
        self.rate = rate

    def forward(self, tokens):
        x = F.embedding(tokens, self.weight) * self.weight.shape[1] ** 0.5
        return dropout(x + self.positions[: tokens.shape[-1]], self.rate, self.training)


class Generator(nn.Module):
    def __init__(self, d_model, vocab):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(vocab, d_model))
        bound = 1 / math.sqrt(d_model)
        self.bias = nn.Parameter(torch.empty(vocab).uniform_(-bound, bound))

    def forward(self, x):
        logits = x @ self.weight.T + self.bias
        return logits - torch.logsumexp(logits, dim=-1, keepdim=True)


class Transformer(nn.Module):
    def encode(self, src, src_mask):
        return self.encoder(self.src_embed(src), src_mask)

    def decode(self, memory, src_mask, tgt, tgt_mask):
        return self.decoder(self.tgt_embed(tgt), memory, src_mask, tgt_mask)

    def forward(self, src, tgt, src_mask, tgt_mask):
        return self.decode(self.encode(src, src_mask), src_mask, tgt, tgt_mask)


def make_model(src_vocab, tgt_vocab, n_layers=6, d_model=512, d_ff=2048, n_heads=8, dropout=0.1):
    model = Transformer()
    model.src_embed = TokenEmbedding(src_vocab, d_model, dropout)
    model.tgt_embed = TokenEmbedding(tgt_vocab, d_model, dropout)
    model.encoder = Stack([EncoderLayer(d_model, n_heads, d_ff, dropout) for _ in range(n_layers)], d_model)
    model.decoder = Stack([DecoderLayer(d_model, n_heads, d_ff, dropout) for _ in range(n_layers)], d_model)
    model.generator = Generator(d_model, tgt_vocab)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                bound = math.sqrt(6.0 / (p.shape[0] + p.shape[1]))
                p.uniform_(-bound, bound)
    return model
