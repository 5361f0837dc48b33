# A correct solution that keeps the tokens in a Python list, builds the tensor again at every step,
# compares aranges for the mask and picks the token with topk.
import torch


def causal_mask(length):
    rows = torch.arange(length).view(1, length, 1)
    cols = torch.arange(length).view(1, 1, length)
    return cols <= rows


def greedy_decode(model, src, src_mask, max_len, start_symbol):
    memory = model.encode(src, src_mask)
    tokens = [start_symbol]
    while len(tokens) < max_len:
        tgt = torch.tensor([tokens])
        out = model.decode(memory, src_mask, tgt, causal_mask(len(tokens)))
        scores = model.generator(out[:, len(tokens) - 1, :])
        tokens.append(int(scores.topk(1, dim=-1).indices[0, 0]))
    return torch.tensor([tokens], dtype=torch.int64)
