# pitfall: the maximum of the whole tensor
import torch


def softmax(x):
    shifted = x - torch.max(x)
    return torch.exp(shifted) / torch.exp(shifted).sum(-1, keepdim=True)
