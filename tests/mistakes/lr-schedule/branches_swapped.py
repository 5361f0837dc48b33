# pitfall: max instead of min

from torch.optim.lr_scheduler import LambdaLR


def noam_learning_rate(step, d_model, warmup_steps):
    if step == 0:
        return 0.0
    if step < warmup_steps:
        return d_model**-0.5 * step**-0.5
    return d_model**-0.5 * step * warmup_steps**-1.5


def create_noam_scheduler(optimizer, d_model, warmup_steps):
    return LambdaLR(optimizer, lambda n: noam_learning_rate(n + 1, d_model, warmup_steps))
