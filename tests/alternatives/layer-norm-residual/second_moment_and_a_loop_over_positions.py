# A correct solution written with a loop: every position's statistics computed one at a time, the
# variance as the mean of squares minus the squared mean, the scale applied with einsum.
import torch
import torch.nn as nn


class LayerNorm(nn.Module):
    def __init__(self, features, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.register_parameter("weight", nn.Parameter(torch.ones(features)))
        self.register_parameter("bias", nn.Parameter(torch.zeros(features)))

    def forward(self, x):
        rows = x.reshape(-1, x.shape[-1])
        out = []
        for row in rows:
            mean = row.sum() / row.numel()
            var = (row * row).sum() / row.numel() - mean * mean
            out.append((row - mean) / torch.sqrt(var.clamp(min=0) + self.eps))
        normalised = torch.stack(out).reshape(x.shape) if out else x.clone()
        return torch.einsum("...d,d->...d", normalised, self.weight) + self.bias


class SublayerConnection(nn.Module):
    def __init__(self, size, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.norm = create_layer_norm(size)

    def forward(self, x, sublayer):
        return self.norm(x + self.dropout(sublayer(x)))


def create_layer_norm(features, eps=1e-6):
    return LayerNorm(features, eps)


def create_sublayer_connection(size, dropout):
    return SublayerConnection(size, dropout)
