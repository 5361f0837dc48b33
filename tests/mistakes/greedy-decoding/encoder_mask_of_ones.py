# pitfall: the source mask left out of encode
import torch


def greedy_decode(model, src, src_mask, max_len, start_symbol):
    memory = model.encode(src, torch.ones_like(src_mask))
    tokens = [start_symbol]
    for n in range(1, max_len):
        mask = torch.ones(n, n, dtype=torch.bool).tril()[None]
        out = model.decode(memory, src_mask, torch.tensor([tokens]), mask)
        tokens.append(int(model.generator(out)[0, -1].argmax()))
    return torch.tensor([tokens])
