# pitfall: the softmax over the first dimension
import torch


def softmax(x):
    exps = torch.exp(x - x.amax(dim=0, keepdim=True))
    return exps / exps.sum(dim=0, keepdim=True)
