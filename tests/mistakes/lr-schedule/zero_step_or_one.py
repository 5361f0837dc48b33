# pitfall: the scheduler's first two updates share step 1

from torch.optim.lr_scheduler import LambdaLR


def noam_learning_rate(step, d_model, warmup_steps):
    if step == 0:
        return 0.0
    return d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


def create_noam_scheduler(optimizer, d_model, warmup_steps):
    return LambdaLR(optimizer, lambda n: noam_learning_rate(n or 1, d_model, warmup_steps))
