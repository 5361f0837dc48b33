# A correct solution that flattens every leading dimension into one list of positions, applies
# the weights with einsum and a ReLU module, then restores the shape; its layers are initialised
# with Xavier's rule instead of nn.Linear's default.
import torch
import torch.nn as nn


class FeedForward(nn.Module):
    def __init__(self, d_model: int, d_ff: int) -> None:
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.activation = nn.ReLU()
        for layer in (self.linear1, self.linear2):
            nn.init.xavier_uniform_(layer.weight)
            nn.init.zeros_(layer.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        positions = x.reshape(-1, x.shape[-1])
        hidden = self.activation(torch.einsum("nd,fd->nf", positions, self.linear1.weight) + self.linear1.bias)
        out = torch.einsum("nf,df->nd", hidden, self.linear2.weight) + self.linear2.bias
        return out.reshape(*x.shape[:-1], out.shape[-1])


def create_feed_forward(d_model: int, d_ff: int) -> nn.Module:
    return FeedForward(d_model, d_ff)
