# Right values, but after warm-up the rate is a 0-d tensor, which the statement forbids.
import math

import torch
from torch.optim.lr_scheduler import LambdaLR


def noam_learning_rate(step, d_model, warmup_steps):
    if step == 0:
        return 0.0
    if step <= warmup_steps:
        return step * warmup_steps**-1.5 / math.sqrt(d_model)
    return torch.tensor(d_model * step, dtype=torch.float64) ** -0.5


def create_noam_scheduler(optimizer, d_model, warmup_steps):
    return LambdaLR(optimizer, lambda n: float(noam_learning_rate(n + 1, d_model, warmup_steps)))
