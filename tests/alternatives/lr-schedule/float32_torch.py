# A correct solution that computes the rate in float32 with torch (relative error about 1e-7,
# within the statement's 1e-5) and returns it as a Python float; the scheduler is a LambdaLR
# whose lambda counts from 1.
import torch
from torch.optim.lr_scheduler import LambdaLR


def noam_learning_rate(step, d_model, warmup_steps):
    if step == 0:
        return 0.0
    s = torch.tensor(step, dtype=torch.float32)
    warm = s * torch.tensor(warmup_steps, dtype=torch.float32).pow(-1.5)
    rate = torch.tensor(d_model, dtype=torch.float32).rsqrt() * torch.minimum(s.rsqrt(), warm)
    return rate.item()


def create_noam_scheduler(optimizer, d_model, warmup_steps):
    return LambdaLR(optimizer, lambda n: noam_learning_rate(n + 1, d_model, warmup_steps))
