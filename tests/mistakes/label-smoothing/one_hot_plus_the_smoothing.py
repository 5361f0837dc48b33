# pitfall: the confidence added to the smoothing value
import torch.nn.functional as F


def smoothed_targets(target, vocab_size, smoothing, padding_idx):
    dist = smoothing / (vocab_size - 2) + (1.0 - smoothing) * F.one_hot(target, vocab_size).float()
    dist[:, padding_idx] = 0.0
    dist[target == padding_idx] = 0.0
    return dist


def label_smoothing_loss(log_probs, target, smoothing, padding_idx):
    p = smoothed_targets(target, log_probs.shape[1], smoothing, padding_idx).to(log_probs.dtype)
    return F.kl_div(log_probs, p, reduction="sum")
