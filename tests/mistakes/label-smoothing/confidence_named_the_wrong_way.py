# pitfall: confidence and smoothing swapped
import torch
import torch.nn as nn


class LabelSmoothing(nn.Module):
    def __init__(self, size, padding_idx, smoothing):
        super().__init__()
        self.size, self.padding_idx = size, padding_idx
        self.confidence = smoothing
        self.smoothing = 1.0 - smoothing

    def distribution(self, target):
        dist = torch.zeros(len(target), self.size)
        dist.fill_(self.smoothing / (self.size - 2))
        dist.scatter_(1, target.unsqueeze(1), self.confidence)
        dist[:, self.padding_idx] = 0.0
        dist.index_fill_(0, (target == self.padding_idx).nonzero().flatten(), 0.0)
        return dist

    def forward(self, x, target):
        return nn.KLDivLoss(reduction="sum")(x, self.distribution(target).to(x.dtype))


def smoothed_targets(target, vocab_size, smoothing, padding_idx):
    return LabelSmoothing(vocab_size, padding_idx, smoothing).distribution(target)


def label_smoothing_loss(log_probs, target, smoothing, padding_idx):
    return LabelSmoothing(log_probs.shape[1], padding_idx, smoothing)(log_probs, target)
