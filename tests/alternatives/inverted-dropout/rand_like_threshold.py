# A correct solution that draws the mask by comparing uniform numbers with p (the reference uses
# torch.bernoulli): the same distribution, other random numbers, so other zeros.
import torch


def dropout(x: torch.Tensor, p: float, training: bool = True) -> torch.Tensor:
    if not training:
        return x.clone()
    if p >= 1:
        return torch.zeros_like(x)
    mask = torch.rand_like(x) >= p
    return torch.where(mask, x / (1 - p), torch.zeros_like(x))
