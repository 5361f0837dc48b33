import torch


def embedding_bag_mean(weight, indices, offsets):
    rows = weight[indices]
    running = torch.cat([rows.new_zeros(1, weight.shape[1]), rows.cumsum(dim=0)])
    ends = torch.cat([offsets[1:], offsets.new_tensor([indices.shape[0]])])
    lengths = (ends - offsets).clamp(min=1).unsqueeze(1)
    return (running[ends] - running[offsets]) / lengths
