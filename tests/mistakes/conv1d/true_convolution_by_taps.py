# pitfall: the kernel flipped
import torch.nn.functional as F


def conv1d(x, weight, bias=None, padding=0):
    x = F.pad(x, (padding, padding))
    k = weight.shape[2]
    length = x.shape[2] - k + 1
    out = sum(weight[:, :, k - 1 - j] @ x[:, :, j : j + length] for j in range(k))
    return out if bias is None else out + bias[:, None]
