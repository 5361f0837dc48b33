# A correct solution with torch's own layer: nn.LayerNorm with the eps passed on, and the dropout as
# F.dropout with training=self.training in a connection that keeps the rate itself.
import torch.nn as nn
import torch.nn.functional as F


def create_layer_norm(features, eps=1e-6):
    return nn.LayerNorm(features, eps=eps)


class Residual(nn.Module):
    def __init__(self, size, dropout):
        super().__init__()
        self.norm = nn.LayerNorm(size, eps=1e-6)
        self.p = dropout

    def forward(self, x, sublayer):
        return self.norm(x + F.dropout(sublayer(x), p=self.p, training=self.training))


def create_sublayer_connection(size, dropout):
    return Residual(size, dropout)
