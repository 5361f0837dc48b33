# pitfall: the sum, not the mean
import torch


def embedding_bag_mean(weight, indices, offsets):
    ends = torch.cat([offsets[1:], torch.tensor([len(indices)])])
    bag = torch.repeat_interleave(torch.arange(len(offsets)), ends - offsets)
    out = torch.zeros(len(offsets), weight.shape[1], dtype=weight.dtype)
    return out.index_add(0, bag, weight[indices])
