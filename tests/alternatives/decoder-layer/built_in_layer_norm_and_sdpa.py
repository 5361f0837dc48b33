# A correct solution written with torch's own pieces: nn.LayerNorm(eps=1e-6) for the norms, the
# attentions by F.scaled_dot_product_attention, one nn.Dropout per sublayer, the feed-forward's
# ReLU as a module.
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


def create_decoder_layer(d_model, n_heads, d_ff, dropout):
    return DecoderLayer(d_model, n_heads, d_ff, dropout)
