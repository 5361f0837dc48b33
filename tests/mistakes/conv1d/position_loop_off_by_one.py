# pitfall: one position too few
import torch
import torch.nn.functional as F


def conv1d(x, weight, bias=None, padding=0):
    x = F.pad(x, (padding, padding))
    k = weight.shape[2]
    out = torch.zeros(x.shape[0], weight.shape[0], x.shape[2] - k, dtype=x.dtype)
    for t in range(x.shape[2] - k):
        out[:, :, t] = torch.einsum("nck,ock->no", x[:, :, t : t + k], weight)
    if bias is not None:
        out += bias[:, None]
    return out
