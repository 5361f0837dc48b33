# pitfall: the input overwritten in place
import torch


def softmax(x):
    m = x.max(dim=-1, keepdim=True).values
    torch.exp(x - m, out=x)
    x /= x.sum(dim=-1, keepdim=True)
    return x
