# pitfall: the first position's prediction
import torch


def greedy_decode(model, src, src_mask, max_len, start_symbol):
    memory = model.encode(src, src_mask)
    tokens = [start_symbol]
    for _ in range(max_len - 1):
        ys = torch.tensor([tokens], dtype=torch.long)
        n = len(tokens)
        mask = torch.tril(torch.ones(n, n, dtype=torch.bool))[None]
        log_probs = model.generator(model.decode(memory, src_mask, ys, mask))
        tokens.append(int(log_probs[0, 0].argmax()))
    return torch.tensor([tokens], dtype=torch.long)
