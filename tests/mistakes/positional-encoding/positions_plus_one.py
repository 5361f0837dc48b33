# pitfall: positions counted from 1

import torch
import torch.nn as nn


def positional_encoding(max_len, d_model):
    pos = torch.arange(max_len).float().unsqueeze(1) + 1
    div = torch.pow(10000.0, torch.arange(0, d_model, 2).float() / d_model)
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(pos / div)
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
