# pitfall: dropout inside the module
import torch.nn as nn
import torch.nn.functional as F


class PositionwiseFeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.1):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.p = dropout

    def forward(self, x):
        hidden = F.dropout(F.relu(self.linear1(x)), p=self.p, training=self.training)
        return self.linear2(hidden)


def create_feed_forward(d_model, d_ff):
    return PositionwiseFeedForward(d_model, d_ff)
