import torch
import torch.nn as nn


def conv1d(x, weight, bias=None, padding=0):
    out_channels, in_channels, k = weight.shape
    conv = nn.Conv1d(in_channels, out_channels, k, padding=padding, bias=bias is not None)
    conv = conv.to(x.dtype)
    with torch.no_grad():
        conv.weight.copy_(weight)
        if bias is not None:
            conv.bias.copy_(bias)
        return conv(x)
