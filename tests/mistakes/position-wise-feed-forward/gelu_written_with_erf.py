# pitfall: GELU instead of ReLU
import math

import torch
import torch.nn as nn


class PositionwiseFeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        h = self.linear1(x)
        h = 0.5 * h * (1.0 + torch.erf(h / math.sqrt(2.0)))
        return self.linear2(h)


def create_feed_forward(d_model, d_ff):
    return PositionwiseFeedForward(d_model, d_ff)
