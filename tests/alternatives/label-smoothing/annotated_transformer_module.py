# A correct solution in the Annotated Transformer's own style: a LabelSmoothing module with
# nn.KLDivLoss(reduction="sum"), fill_, scatter_ and index_fill_ on the rows found by nonzero.
import torch
import torch.nn as nn


class LabelSmoothing(nn.Module):
    def __init__(self, size: int, padding_idx: int, smoothing: float = 0.0) -> None:
        super().__init__()
        self.criterion = nn.KLDivLoss(reduction="sum")
        self.padding_idx = padding_idx
        self.confidence = 1.0 - smoothing
        self.smoothing = smoothing
        self.size = size
        self.true_dist = None

    def distribution(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        true_dist = x.data.clone()
        true_dist.fill_(self.smoothing / (self.size - 2))
        true_dist.scatter_(1, target.data.unsqueeze(1), self.confidence)
        true_dist[:, self.padding_idx] = 0
        mask = torch.nonzero(target.data == self.padding_idx)
        if mask.dim() > 0:
            true_dist.index_fill_(0, mask.squeeze(1), 0.0)
        return true_dist

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        assert x.size(1) == self.size
        self.true_dist = self.distribution(x, target)
        return self.criterion(x, self.true_dist.clone().detach())


def smoothed_targets(target: torch.Tensor, vocab_size: int, smoothing: float, padding_idx: int) -> torch.Tensor:
    criterion = LabelSmoothing(vocab_size, padding_idx, smoothing)
    return criterion.distribution(torch.zeros(target.shape[0], vocab_size), target)


def label_smoothing_loss(
    log_probs: torch.Tensor, target: torch.Tensor, smoothing: float, padding_idx: int
) -> torch.Tensor:
    return LabelSmoothing(log_probs.size(1), padding_idx, smoothing)(log_probs, target)
