# pitfall: padding positions not zeroed
import torch


def smoothed_targets(target, vocab_size, smoothing, padding_idx):
    rows = []
    for token in target.tolist():
        row = [smoothing / (vocab_size - 2)] * vocab_size
        row[token] = 1.0 - smoothing
        row[padding_idx] = 0.0
        rows.append(row)
    return torch.tensor(rows, dtype=torch.float32)


def label_smoothing_loss(log_probs, target, smoothing, padding_idx):
    p = smoothed_targets(target, log_probs.shape[1], smoothing, padding_idx).to(log_probs.dtype)
    return (torch.xlogy(p, p) - p * log_probs).sum()
