# pitfall: sampling instead of the argmax
import torch


def greedy_decode(model, src, src_mask, max_len, start_symbol):
    memory = model.encode(src, src_mask)
    ys = torch.full((1, 1), start_symbol, dtype=torch.long)
    for _ in range(max_len - 1):
        size = ys.size(1)
        mask = torch.ones(1, size, size, dtype=torch.bool).tril()
        log_probs = model.generator(model.decode(memory, src_mask, ys, mask)[:, -1])
        next_token = torch.softmax(log_probs, dim=-1).multinomial(num_samples=1)
        ys = torch.cat([ys, next_token], dim=1)
    return ys
