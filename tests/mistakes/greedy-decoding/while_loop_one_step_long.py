# pitfall: one token too many
import torch


def greedy_decode(model, src, src_mask, max_len, start_symbol):
    memory = model.encode(src, src_mask)
    tokens = [start_symbol]
    while len(tokens) <= max_len:
        n = len(tokens)
        mask = torch.tril(torch.ones(1, n, n)).bool()
        out = model.decode(memory, src_mask, torch.tensor([tokens]), mask)
        tokens.append(model.generator(out[0, -1]).argmax().item())
    return torch.tensor([tokens])
