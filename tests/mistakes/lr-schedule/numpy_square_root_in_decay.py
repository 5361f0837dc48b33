# pitfall: a NumPy float after warm-up
import math

import numpy as np
from torch.optim.lr_scheduler import LambdaLR


def noam_learning_rate(step, d_model, warmup_steps):
    if step == 0:
        return 0.0
    if step > warmup_steps:
        return 1 / np.sqrt(d_model * step)
    return step / (warmup_steps**1.5 * math.sqrt(d_model))


def create_noam_scheduler(optimizer, d_model, warmup_steps):
    return LambdaLR(optimizer, lambda n: float(noam_learning_rate(n + 1, d_model, warmup_steps)))
