# pitfall: no subsequent mask
import torch


def greedy_decode(model, src, src_mask, max_len, start_symbol):
    memory = model.encode(src, src_mask)
    ys = torch.tensor([[start_symbol]])
    while ys.shape[1] < max_len:
        length = ys.shape[1]
        everything = torch.ones(1, length, length, dtype=torch.bool)
        log_probs = model.generator(model.decode(memory, src_mask, ys, everything)[:, -1])
        ys = torch.cat([ys, log_probs.argmax(-1).view(1, 1)], dim=1)
    return ys
