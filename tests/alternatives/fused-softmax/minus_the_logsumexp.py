import torch


def softmax(x):
    return torch.exp(x - torch.logsumexp(x, dim=-1, keepdim=True))
