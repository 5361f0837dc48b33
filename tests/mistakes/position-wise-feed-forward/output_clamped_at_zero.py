# pitfall: a ReLU after the second linear layer too
import torch.nn as nn
import torch.nn.functional as F


class PositionwiseFeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.activation = nn.ReLU()

    def forward(self, x):
        hidden = self.activation(self.linear1(x))
        return F.linear(hidden, self.linear2.weight, self.linear2.bias).clamp(min=0)


def create_feed_forward(d_model, d_ff):
    return PositionwiseFeedForward(d_model, d_ff)
