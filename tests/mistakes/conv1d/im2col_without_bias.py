# pitfall: the bias left out
import torch.nn.functional as F


def conv1d(x, weight, bias=None, padding=0):
    c_out, c_in, k = weight.shape
    cols = F.unfold(x[:, :, None, :], (1, k), padding=(0, padding))
    return weight.view(c_out, c_in * k) @ cols
