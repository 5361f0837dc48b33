# pitfall: warmup_steps ** -0.5 instead of warmup_steps ** -1.5
import math

from torch.optim.lr_scheduler import LambdaLR


def noam_learning_rate(step, d_model, warmup_steps):
    if step == 0:
        return 0.0
    return min(1 / math.sqrt(step), step / math.sqrt(warmup_steps)) / math.sqrt(d_model)


def create_noam_scheduler(optimizer, d_model, warmup_steps):
    return LambdaLR(optimizer, lambda n: noam_learning_rate(n + 1, d_model, warmup_steps))
