import torch


def pairwise_distances(x, y):
    return torch.linalg.vector_norm(x.unsqueeze(1) - y.unsqueeze(0), dim=-1)
