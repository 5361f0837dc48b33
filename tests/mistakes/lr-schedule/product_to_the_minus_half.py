# pitfall: divides by zero at step 0

from torch.optim.lr_scheduler import LambdaLR


def noam_learning_rate(step, d_model, warmup_steps):
    return min((d_model * step) ** -0.5, step * d_model**-0.5 * warmup_steps**-1.5)


def create_noam_scheduler(optimizer, d_model, warmup_steps):
    return LambdaLR(optimizer, lambda n: noam_learning_rate(n + 1, d_model, warmup_steps))
