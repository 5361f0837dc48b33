# A correct solution that allocates the whole result at once and fills it in place, slicing the prefix
# and one subsequent mask built for max_len; the generator runs on every position, under no_grad.
import torch


@torch.no_grad()
def greedy_decode(model, src, src_mask, max_len, start_symbol):
    tokens = torch.full((1, max_len), start_symbol, dtype=torch.long)
    causal = torch.ones(max_len, max_len, dtype=torch.bool).tril().unsqueeze(0)
    memory = model.encode(src, src_mask)
    for length in range(1, max_len):
        out = model.decode(memory, src_mask, tokens[:, :length].clone(), causal[:, :length, :length].clone())
        tokens[0, length] = model.generator(out)[0, -1].argmax()
    return tokens
