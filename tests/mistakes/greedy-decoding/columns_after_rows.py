# pitfall: the subsequent mask inverted
import torch


def future_mask(size):
    rows = torch.arange(size)[:, None]
    cols = torch.arange(size)[None, :]
    return (cols > rows).unsqueeze(0)


def greedy_decode(model, src, src_mask, max_len, start_symbol):
    memory = model.encode(src, src_mask)
    ys = torch.full((1, 1), start_symbol, dtype=torch.long)
    for _ in range(max_len - 1):
        out = model.decode(memory, src_mask, ys, future_mask(ys.size(1)))
        ys = torch.cat([ys, model.generator(out[:, -1]).argmax(dim=1, keepdim=True)], dim=1)
    return ys
