# A correct solution written with torch's own pieces: nn.LayerNorm(eps=1e-6) for every norm, the
# attentions by F.scaled_dot_product_attention, one module per embedding holding its nn.Embedding and a
# (1, 5000, d_model) positional buffer computed with torch.pow, the layers built one by one in a loop,
# F.log_softmax in the generator, and the Xavier loop over named_parameters.
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, d_model, heads):
        super().__init__()
        self.heads = heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)

    def forward(self, query, key, value, mask=None):
        def split(t):
            return t.unflatten(-1, (self.heads, -1)).transpose(1, 2)

        attn_mask = None if mask is None else mask.unsqueeze(1)
        out = F.scaled_dot_product_attention(
            split(self.w_q(query)), split(self.w_k(key)), split(self.w_v(value)), attn_mask=attn_mask
        )
        return self.w_o(out.transpose(1, 2).flatten(-2))


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.activation = nn.ReLU()
        self.linear2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.linear2(self.activation(self.linear1(x)))


class EncoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout):
        super().__init__()
        self.self_attn = Attention(d_model, n_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1 = nn.LayerNorm(d_model, eps=1e-6)
        self.norm2 = nn.LayerNorm(d_model, eps=1e-6)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, x, mask):
        x = self.norm1(x + self.dropout1(self.self_attn(x, x, x, mask)))
        return self.norm2(x + self.dropout2(self.feed_forward(x)))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout):
        super().__init__()
        self.self_attn = Attention(d_model, n_heads)
        self.src_attn = Attention(d_model, n_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1 = nn.LayerNorm(d_model, eps=1e-6)
        self.norm2 = nn.LayerNorm(d_model, eps=1e-6)
        self.norm3 = nn.LayerNorm(d_model, eps=1e-6)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)

    def forward(self, x, memory, src_mask, tgt_mask):
        x = self.norm1(x + self.dropout1(self.self_attn(x, x, x, tgt_mask)))
        x = self.norm2(x + self.dropout2(self.src_attn(x, memory, memory, src_mask)))
        return self.norm3(x + self.dropout3(self.feed_forward(x)))


class Encoder(nn.Module):
    def __init__(self, n_layers, d_model, n_heads, d_ff, dropout):
        super().__init__()
        self.layers = nn.ModuleList()
        for _ in range(n_layers):
            self.layers.append(EncoderLayer(d_model, n_heads, d_ff, dropout))
        self.norm = nn.LayerNorm(d_model, eps=1e-6)

    def forward(self, x, mask):
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x)


class Decoder(nn.Module):
    def __init__(self, n_layers, d_model, n_heads, d_ff, dropout):
        super().__init__()
        self.layers = nn.ModuleList()
        for _ in range(n_layers):
            self.layers.append(DecoderLayer(d_model, n_heads, d_ff, dropout))
        self.norm = nn.LayerNorm(d_model, eps=1e-6)

    def forward(self, x, memory, src_mask, tgt_mask):
        for layer in self.layers:
            x = layer(x, memory, src_mask, tgt_mask)
        return self.norm(x)


class Embedding(nn.Module):
    """Token table, scale, positional encoding and dropout in one module."""

    def __init__(self, vocab, d_model, dropout, max_len=5000):
        super().__init__()
        self.table = nn.Embedding(vocab, d_model)
        self.scale = math.sqrt(d_model)
        columns = torch.arange(d_model)
        angle = torch.arange(max_len).float()[:, None] * torch.pow(10000.0, -(columns - columns % 2) / d_model)
        pe = torch.where(columns % 2 == 0, torch.sin(angle), torch.cos(angle))
        self.register_buffer("pe", pe.unsqueeze(0))
        self.dropout = nn.Dropout(dropout)

    def forward(self, tokens):
        return self.dropout(self.table(tokens) * self.scale + self.pe[:, : tokens.shape[1]])


class Generator(nn.Module):
    def __init__(self, d_model, vocab):
        super().__init__()
        self.proj = nn.Linear(d_model, vocab)

    def forward(self, x):
        return F.log_softmax(self.proj(x), dim=-1)


class Transformer(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, n_layers, d_model, d_ff, n_heads, dropout):
        super().__init__()
        self.src_embed = Embedding(src_vocab, d_model, dropout)
        self.tgt_embed = Embedding(tgt_vocab, d_model, dropout)
        self.encoder = Encoder(n_layers, d_model, n_heads, d_ff, dropout)
        self.decoder = Decoder(n_layers, d_model, n_heads, d_ff, dropout)
        self.generator = Generator(d_model, tgt_vocab)

    def encode(self, src, src_mask):
        return self.encoder(self.src_embed(src), src_mask)

    def decode(self, memory, src_mask, tgt, tgt_mask):
        return self.decoder(self.tgt_embed(tgt), memory, src_mask, tgt_mask)

    def forward(self, src, tgt, src_mask, tgt_mask):
        memory = self.encode(src, src_mask)
        return self.decode(memory, src_mask, tgt, tgt_mask)


def make_model(src_vocab, tgt_vocab, n_layers=6, d_model=512, d_ff=2048, n_heads=8, dropout=0.1):
    model = Transformer(src_vocab, tgt_vocab, n_layers, d_model, d_ff, n_heads, dropout)
    for _, parameter in model.named_parameters():
        if parameter.dim() > 1:
            nn.init.xavier_uniform_(parameter)
    return model
