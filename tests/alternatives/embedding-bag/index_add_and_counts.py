import torch


def embedding_bag_mean(weight, indices, offsets):
    num_bags = offsets.shape[0]
    lengths = torch.diff(offsets, append=torch.tensor([indices.shape[0]]))
    bag = torch.repeat_interleave(torch.arange(num_bags), lengths)
    sums = torch.zeros(num_bags, weight.shape[1], dtype=weight.dtype)
    sums.index_add_(0, bag, weight[indices])
    return sums / lengths.clamp(min=1).unsqueeze(1).to(weight.dtype)
