# A correct solution in the Annotated Transformer's words: the mask from numpy's triu, ys grown with
# fill_ and type_as(src), the token from torch.max(prob, dim=1) and .item().
import numpy as np
import torch


def subsequent_mask(size):
    attn_shape = (1, size, size)
    future = np.triu(np.ones(attn_shape), k=1).astype("uint8")
    return torch.from_numpy(future) == 0


def greedy_decode(model, src, src_mask, max_len, start_symbol):
    memory = model.encode(src, src_mask)
    ys = torch.zeros(1, 1).fill_(start_symbol).type_as(src.data)
    for _ in range(max_len - 1):
        out = model.decode(memory, src_mask, ys, subsequent_mask(ys.size(1)))
        prob = model.generator(out[:, -1])
        _, next_word = torch.max(prob, dim=1)
        next_word = next_word.data[0]
        ys = torch.cat([ys, torch.zeros(1, 1).type_as(src.data).fill_(next_word)], dim=1)
    return ys
