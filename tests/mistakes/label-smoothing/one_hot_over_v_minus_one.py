# pitfall: smoothing spread over V - 1 tokens
import torch
import torch.nn.functional as F


def smoothed_targets(target, vocab_size, smoothing, padding_idx):
    rest = smoothing / (vocab_size - 1)
    dist = F.one_hot(target, vocab_size).float() * (1.0 - smoothing - rest) + rest
    dist = dist * (torch.arange(vocab_size) != padding_idx).float()
    return torch.where((target == padding_idx).unsqueeze(1), torch.zeros_like(dist), dist)


def label_smoothing_loss(log_probs, target, smoothing, padding_idx):
    p = smoothed_targets(target, log_probs.shape[1], smoothing, padding_idx).to(log_probs.dtype)
    return (torch.xlogy(p, p) - p * log_probs).sum()
