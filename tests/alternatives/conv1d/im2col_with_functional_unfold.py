import torch.nn.functional as F


def conv1d(x, weight, bias=None, padding=0):
    out_channels, in_channels, k = weight.shape
    columns = F.unfold(x.unsqueeze(2), kernel_size=(1, k), padding=(0, padding))  # (N, C_in * k, L_out)
    out = weight.reshape(out_channels, in_channels * k) @ columns
    return out if bias is None else out + bias.view(1, -1, 1)
