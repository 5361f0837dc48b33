# pitfall: float tokens
import torch


def greedy_decode(model, src, src_mask, max_len, start_symbol):
    memory = model.encode(src, src_mask)
    ys = torch.ones(1, 1) * start_symbol
    for _ in range(max_len - 1):
        n = ys.shape[1]
        mask = torch.tril(torch.ones(1, n, n, dtype=torch.bool))
        best = model.generator(model.decode(memory, src_mask, ys, mask)[:, -1]).argmax(dim=-1, keepdim=True)
        ys = torch.cat([ys, best], dim=1)
    return ys
