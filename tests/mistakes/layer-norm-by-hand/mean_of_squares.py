# pitfall: the variance as the mean of squares less the squared mean
import torch


def layer_norm(x, weight, bias, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    var = x.pow(2).mean(-1, keepdim=True) - mean.pow(2)
    return (x - mean) * torch.rsqrt(var + eps) * weight + bias
