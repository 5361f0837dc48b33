# pitfall: sines and cosines concatenated instead of interleaved

import torch
import torch.nn as nn


def positional_encoding(max_len, d_model):
    pos = torch.arange(max_len).float()[:, None]
    inv_freq = 1.0 / 10000 ** (torch.arange(0, d_model, 2).float() / d_model)
    angles = pos * inv_freq
    return torch.cat((angles.sin(), angles.cos()), dim=-1)


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len):
        super().__init__()
        self.register_buffer("pe", positional_encoding(max_len, d_model))

    def forward(self, x):
        return x + self.pe[: x.size(1)]


def create_positional_encoding(d_model, max_len):
    return PositionalEncoding(d_model, max_len)
