# pitfall: the log-probabilities detached
import torch
import torch.nn.functional as F


def smoothed_targets(target, vocab_size, smoothing, padding_idx):
    dist = torch.full((target.shape[0], vocab_size), smoothing / (vocab_size - 2))
    dist.scatter_(1, target.unsqueeze(1), 1.0 - smoothing)
    dist[:, padding_idx] = 0.0
    dist[target == padding_idx] = 0.0
    return dist


def label_smoothing_loss(log_probs, target, smoothing, padding_idx):
    p = smoothed_targets(target, log_probs.shape[1], smoothing, padding_idx).to(log_probs.dtype)
    value = F.kl_div(log_probs, p, reduction="sum").item()
    return torch.tensor(value, dtype=log_probs.dtype)
