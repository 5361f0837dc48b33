# pitfall: epsilon outside the square root
import torch


def layer_norm(x, weight, bias, eps=1e-5):
    var, mean = torch.var_mean(x, dim=-1, keepdim=True, correction=0)
    return (x - mean) / (torch.sqrt(var) + eps) * weight + bias
