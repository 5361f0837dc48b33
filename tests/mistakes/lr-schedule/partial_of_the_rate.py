# pitfall: the scheduler's first update has a rate of 0

from functools import partial

from torch.optim.lr_scheduler import LambdaLR


def noam_learning_rate(step, d_model, warmup_steps):
    if step == 0:
        return 0.0
    return d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


def create_noam_scheduler(optimizer, d_model, warmup_steps):
    return LambdaLR(optimizer, partial(noam_learning_rate, d_model=d_model, warmup_steps=warmup_steps))
