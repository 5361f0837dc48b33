# pitfall: the unbiased variance
import torch


def layer_norm(x, weight, bias, eps=1e-5):
    centred = x - x.mean(-1, keepdim=True)
    var = centred.pow(2).sum(-1, keepdim=True) / (x.shape[-1] - 1)
    return weight * centred * torch.rsqrt(var + eps) + bias
