# pitfall: cross-entropy instead of KL divergence
import torch


def smoothed_targets(target, vocab_size, smoothing, padding_idx):
    dist = torch.full((target.shape[0], vocab_size), smoothing / (vocab_size - 2))
    dist.scatter_(1, target.unsqueeze(1), 1.0 - smoothing)
    dist[:, padding_idx] = 0.0
    dist[target == padding_idx] = 0.0
    return dist


def label_smoothing_loss(log_probs, target, smoothing, padding_idx):
    # The confidence times the target's negative log-likelihood, plus the smoothing share of the others.
    real = target != padding_idx
    lp, t = log_probs[real], target[real]
    on_target = lp.gather(1, t.unsqueeze(1)).squeeze(1)
    others = lp.sum(dim=1) - lp[:, padding_idx] - on_target
    rest = smoothing / (log_probs.shape[1] - 2)
    return -((1.0 - smoothing) * on_target + rest * others).sum()
