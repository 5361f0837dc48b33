# pitfall: the encoding registered as a non-persistent buffer

import torch
import torch.nn as nn


def positional_encoding(max_len, d_model):
    pos = torch.arange(max_len, dtype=torch.float64)
    inv_freq = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    angles = torch.outer(pos, inv_freq)
    return torch.stack((angles.sin(), angles.cos()), dim=2).flatten(1).float()


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len):
        super().__init__()
        self.register_buffer("pe", None, persistent=False)
        self.pe = positional_encoding(max_len, d_model)

    def forward(self, x):
        return x + self.pe[: x.shape[1]]


def create_positional_encoding(d_model, max_len):
    return PositionalEncoding(d_model, max_len)
