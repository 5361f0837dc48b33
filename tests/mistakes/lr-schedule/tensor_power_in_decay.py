# pitfall: a 0-d tensor after warm-up
import math

import torch
from torch.optim.lr_scheduler import LambdaLR


def noam_learning_rate(step, d_model, warmup_steps):
    if step == 0:
        return 0.0
    if step > warmup_steps:
        return torch.tensor(float(step), dtype=torch.float64).pow(-0.5) / math.sqrt(d_model)
    return step / (warmup_steps**1.5 * math.sqrt(d_model))


def create_noam_scheduler(optimizer, d_model, warmup_steps):
    def rate(n):
        return float(noam_learning_rate(n + 1, d_model, warmup_steps))

    return LambdaLR(optimizer, rate)
