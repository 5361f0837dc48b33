import torch


def pairwise_distances(x, y):
    return torch.cdist(x, y, p=2, compute_mode="use_mm_for_euclid_dist")
