# pitfall: normalised over the first dimension
import torch


def layer_norm(x, weight, bias, eps=1e-5):
    var, mean = torch.var_mean(x, dim=0, keepdim=True, correction=0)
    return (x - mean) * torch.rsqrt(var + eps) * weight + bias
