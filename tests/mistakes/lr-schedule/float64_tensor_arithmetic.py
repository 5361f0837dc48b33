# pitfall: the rate computed with torch and returned as a tensor

import torch
from torch.optim.lr_scheduler import LambdaLR


def noam_learning_rate(step, d_model, warmup_steps):
    t = torch.tensor(step, dtype=torch.float64)
    if step == 0:
        return t * 0
    return torch.pow(torch.tensor(d_model, dtype=torch.float64), -0.5) * torch.min(t.pow(-0.5), t / warmup_steps**1.5)


def create_noam_scheduler(optimizer, d_model, warmup_steps):
    return LambdaLR(optimizer, lambda n: noam_learning_rate(n + 1, d_model, warmup_steps).item())
