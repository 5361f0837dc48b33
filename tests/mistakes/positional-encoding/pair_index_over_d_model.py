# pitfall: exponent i / d_model instead of 2i / d_model

import torch
import torch.nn as nn


def positional_encoding(max_len, d_model):
    pos = torch.arange(max_len).float()[:, None]
    div = torch.pow(10000.0, torch.arange(d_model // 2).float() / d_model)
    table = torch.empty(max_len, d_model)
    table[:, ::2] = torch.sin(pos / div)
    table[:, 1::2] = torch.cos(pos / div)
    return table


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len):
        super().__init__()
        self.register_buffer("pe", positional_encoding(max_len, d_model))

    def forward(self, x):
        return x + self.pe[: x.size(1)]


def create_positional_encoding(d_model, max_len):
    return PositionalEncoding(d_model, max_len)
