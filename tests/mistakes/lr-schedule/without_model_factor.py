# pitfall: the d_model ** -0.5 factor left out
import math

from torch.optim.lr_scheduler import LambdaLR


def noam_learning_rate(step, d_model, warmup_steps):
    if step == 0:
        return 0.0
    return min(1 / math.sqrt(step), step / warmup_steps**1.5)


def create_noam_scheduler(optimizer, d_model, warmup_steps):
    return LambdaLR(optimizer, lambda n: noam_learning_rate(n + 1, d_model, warmup_steps))
