# pitfall: the source encoded again at every step
import torch


def next_token(model, src, src_mask, ys):
    memory = model.encode(src, src_mask)
    n = ys.size(1)
    mask = torch.ones(1, n, n, dtype=torch.bool).tril()
    return model.generator(model.decode(memory, src_mask, ys, mask)[:, -1]).argmax(dim=-1, keepdim=True)


def greedy_decode(model, src, src_mask, max_len, start_symbol):
    ys = torch.full((1, 1), start_symbol, dtype=torch.long)
    for _ in range(max_len - 1):
        ys = torch.cat([ys, next_token(model, src, src_mask, ys)], dim=1)
    return ys
