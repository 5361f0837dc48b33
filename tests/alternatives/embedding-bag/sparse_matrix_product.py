import torch


def embedding_bag_mean(weight, indices, offsets):
    n, num_bags = indices.shape[0], offsets.shape[0]
    lengths = torch.diff(offsets, append=torch.tensor([n]))
    bag = torch.repeat_interleave(torch.arange(num_bags), lengths)
    scale = 1.0 / lengths.clamp(min=1).to(weight.dtype)
    averaging = torch.sparse_coo_tensor(
        torch.stack([bag, indices]), scale[bag], (num_bags, weight.shape[0]), dtype=weight.dtype
    )
    return torch.sparse.mm(averaging, weight)
