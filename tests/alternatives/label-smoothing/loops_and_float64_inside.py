# A correct solution written with Python loops, row by row, in float64: the distribution cast to
# float32 at the end, the loss summed over the positive entries only and cast back to the input's dtype.
import torch


def _row(token: int, vocab_size: int, smoothing: float, padding_idx: int) -> list[float]:
    if token == padding_idx:
        return [0.0] * vocab_size
    row = []
    for v in range(vocab_size):
        if v == padding_idx:
            row.append(0.0)
        elif v == token:
            row.append(1.0 - smoothing)
        else:
            row.append(smoothing / (vocab_size - 2))
    return row


def smoothed_targets(target: torch.Tensor, vocab_size: int, smoothing: float, padding_idx: int) -> torch.Tensor:
    rows = [_row(int(t), vocab_size, smoothing, padding_idx) for t in target.tolist()]
    return torch.tensor(rows, dtype=torch.float64).float()


def label_smoothing_loss(
    log_probs: torch.Tensor, target: torch.Tensor, smoothing: float, padding_idx: int
) -> torch.Tensor:
    vocab_size = log_probs.shape[1]
    total = torch.zeros((), dtype=torch.float64)
    for n, token in enumerate(target.tolist()):
        p = torch.tensor(_row(token, vocab_size, smoothing, padding_idx), dtype=torch.float64)
        keep = p > 0
        if keep.any():
            q = log_probs[n].double()[keep]
            total = total + (p[keep] * (p[keep].log() - q)).sum()
    return total.to(log_probs.dtype)
