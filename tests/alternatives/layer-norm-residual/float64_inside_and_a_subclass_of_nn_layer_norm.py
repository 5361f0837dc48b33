# A correct solution that subclasses nn.LayerNorm (eps 1e-6 by default) and computes in float64 with
# F.layer_norm before casting back; the connection applies a dropout module and adds with torch.add.
import torch
import torch.nn as nn
import torch.nn.functional as F


class Norm(nn.LayerNorm):
    def __init__(self, features, eps=1e-6):
        super().__init__(features, eps=eps)

    def forward(self, x):
        out = F.layer_norm(x.double(), self.normalized_shape, self.weight.double(), self.bias.double(), self.eps)
        return out.to(x.dtype)


class Connection(nn.Module):
    def __init__(self, size, dropout):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.norm = Norm(size)

    def forward(self, x, sublayer):
        return self.norm(torch.add(x, self.drop(sublayer(x))))


def create_layer_norm(features, eps=1e-6):
    return Norm(features, eps)


def create_sublayer_connection(size, dropout):
    return Connection(size, dropout)
