# pitfall: PyTorch's cross-entropy label smoothing
import torch
import torch.nn.functional as F


def smoothed_targets(target, vocab_size, smoothing, padding_idx):
    dist = torch.full((len(target), vocab_size), smoothing / vocab_size)
    dist[torch.arange(len(target)), target] += 1.0 - smoothing
    dist[target == padding_idx] = 0.0
    return dist


def label_smoothing_loss(log_probs, target, smoothing, padding_idx):
    q = smoothed_targets(target, log_probs.shape[1], smoothing, padding_idx).to(log_probs.dtype)
    return -(q * F.log_softmax(log_probs, dim=-1)).sum()
