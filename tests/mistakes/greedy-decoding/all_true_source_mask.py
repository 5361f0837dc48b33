# pitfall: no source mask in decode
import torch


def greedy_decode(model, src, src_mask, max_len, start_symbol):
    memory = model.encode(src, src_mask)
    every_source_token = torch.ones_like(src_mask)
    ys = torch.full((1, 1), start_symbol, dtype=torch.long)
    for _ in range(max_len - 1):
        n = ys.size(1)
        out = model.decode(memory, every_source_token, ys, torch.tril(torch.ones(1, n, n, dtype=torch.bool)))
        ys = torch.cat([ys, model.generator(out[:, -1]).argmax(dim=-1, keepdim=True)], dim=1)
    return ys
