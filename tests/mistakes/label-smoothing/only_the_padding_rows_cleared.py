# pitfall: the padding column not zeroed
import torch
import torch.nn.functional as F


def smoothed_targets(target, vocab_size, smoothing, padding_idx):
    is_target = F.one_hot(target, vocab_size) == 1
    dist = torch.where(is_target, 1.0 - smoothing, smoothing / (vocab_size - 2)).float()
    return dist * (target != padding_idx).unsqueeze(1)


def label_smoothing_loss(log_probs, target, smoothing, padding_idx):
    p = smoothed_targets(target, log_probs.shape[1], smoothing, padding_idx).to(log_probs.dtype)
    return F.kl_div(log_probs, p, reduction="sum")
