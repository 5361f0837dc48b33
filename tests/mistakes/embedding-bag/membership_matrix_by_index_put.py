# pitfall: repeated items counted once
import torch


def embedding_bag_mean(weight, indices, offsets):
    lengths = torch.diff(offsets, append=torch.tensor([indices.shape[0]]))
    bag = torch.arange(offsets.shape[0]).repeat_interleave(lengths)
    member = torch.zeros(offsets.shape[0], weight.shape[0], dtype=weight.dtype)
    member.index_put_((bag, indices), torch.ones(bag.shape[0], dtype=weight.dtype))
    sizes = member.sum(dim=1, keepdim=True)
    return torch.where(sizes > 0, member @ weight / sizes.clamp(min=1), torch.zeros(()))
