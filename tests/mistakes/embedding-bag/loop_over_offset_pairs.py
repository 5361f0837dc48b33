# pitfall: the last bag left out
import torch


def embedding_bag_mean(weight, indices, offsets):
    out = torch.zeros(len(offsets), weight.shape[1], dtype=weight.dtype)
    bounds = offsets.tolist()
    for b in range(len(bounds) - 1):
        start, end = bounds[b], bounds[b + 1]
        if end > start:
            out[b] = weight[indices[start:end]].mean(0)
    return out
