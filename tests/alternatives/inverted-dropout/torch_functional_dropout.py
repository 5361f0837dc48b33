# A correct solution that calls PyTorch's own inverted dropout.
import torch
import torch.nn.functional as F


def dropout(x: torch.Tensor, p: float, training: bool = True) -> torch.Tensor:
    return F.dropout(x, p=p, training=training)
