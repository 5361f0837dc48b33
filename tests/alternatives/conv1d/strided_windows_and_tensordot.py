import torch
import torch.nn.functional as F


def conv1d(x, weight, bias=None, padding=0):
    x = F.pad(x, (padding, padding)).contiguous()
    n, c, length = x.shape
    k = weight.shape[2]
    s = x.stride()
    windows = x.as_strided((n, length - k + 1, c, k), (s[0], s[2], s[1], s[2]))
    out = torch.tensordot(windows, weight, dims=([2, 3], [1, 2])).transpose(1, 2)
    if bias is not None:
        out = out + bias[:, None]
    return out
