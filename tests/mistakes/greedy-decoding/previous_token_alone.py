# pitfall: only the last token fed back
import torch


def greedy_decode(model, src, src_mask, max_len, start_symbol):
    memory = model.encode(src, src_mask)
    tokens = [start_symbol]
    one = torch.ones(1, 1, 1, dtype=torch.bool)
    for _ in range(max_len - 1):
        last = torch.tensor([[tokens[-1]]])
        out = model.decode(memory, src_mask, last, one)
        tokens.append(int(model.generator(out[:, -1]).argmax()))
    return torch.tensor([tokens])
