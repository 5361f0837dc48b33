# A correct solution written differently from the reference: the rate as a product of powers,
# and a scheduler class of its own instead of LambdaLR.
from torch.optim.lr_scheduler import LRScheduler


def noam_learning_rate(step, d_model, warmup_steps):
    if step < 1:
        return 0.0
    warm = step / warmup_steps**1.5
    decay = 1 / step**0.5
    return (warm if warm < decay else decay) / d_model**0.5


class NoamScheduler(LRScheduler):
    def __init__(self, optimizer, d_model, warmup_steps):
        self.d_model = d_model
        self.warmup_steps = warmup_steps
        super().__init__(optimizer)

    def get_lr(self):
        rate = noam_learning_rate(self.last_epoch + 1, self.d_model, self.warmup_steps)
        return [base * rate for base in self.base_lrs]


def create_noam_scheduler(optimizer, d_model, warmup_steps):
    return NoamScheduler(optimizer, d_model, warmup_steps)
