# pitfall: built with numpy and returned as float64
import numpy as np
import torch
import torch.nn as nn


def positional_encoding(max_len, d_model):
    angles = np.arange(max_len)[:, None] * np.power(10000.0, -np.arange(0, d_model, 2) / d_model)
    table = np.empty((max_len, d_model))
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles)
    return torch.tensor(table)


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len):
        super().__init__()
        self.register_buffer("pe", positional_encoding(max_len, d_model))

    def forward(self, x):
        return x + self.pe[: x.size(1)]


def create_positional_encoding(d_model, max_len):
    return PositionalEncoding(d_model, max_len)
