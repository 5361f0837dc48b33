# pitfall: the eps argument ignored
import torch.nn as nn


class SublayerConnection(nn.Module):
    def __init__(self, size, dropout):
        super().__init__()
        self.norm = create_layer_norm(size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, sublayer):
        return self.norm(x + self.dropout(sublayer(x)))


def create_layer_norm(features, eps=1e-6):
    return nn.LayerNorm(features, eps=1e-6)


def create_sublayer_connection(size, dropout):
    return SublayerConnection(size, dropout)
