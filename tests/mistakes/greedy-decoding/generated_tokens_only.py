# pitfall: the start symbol left out of the result
import torch


def greedy_decode(model, src, src_mask, max_len, start_symbol):
    memory = model.encode(src, src_mask)
    prefix = torch.tensor([[start_symbol]])
    generated = []
    for _ in range(max_len - 1):
        n = prefix.shape[1]
        mask = torch.tril(torch.ones(1, n, n, dtype=torch.bool))
        token = model.generator(model.decode(memory, src_mask, prefix, mask)[:, -1]).argmax(dim=-1)
        generated.append(token)
        prefix = torch.cat([prefix, token[:, None]], dim=1)
    if not generated:
        return torch.zeros(1, 0, dtype=torch.long)
    return torch.stack(generated, dim=1)
