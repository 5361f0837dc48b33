# A correct solution with other library calls: nn.Transformer's square subsequent mask (float, -inf
# above the diagonal) turned into an (L, L) bool mask without the batch dimension, the prefix grown
# from src.new_full (the dtype of src), the token by argmax of the probabilities, under inference_mode.
import torch
import torch.nn as nn
import torch.nn.functional as F


def greedy_decode(model, src, src_mask, max_len, start_symbol):
    with torch.inference_mode():
        memory = model.encode(src, src_mask)
        ys = src.new_full((1, 1), start_symbol)
        for length in range(1, max_len):
            mask = nn.Transformer.generate_square_subsequent_mask(length) == 0
            hidden = model.decode(memory, src_mask, ys, mask)
            probs = F.softmax(model.generator(hidden[0, length - 1]), dim=-1)
            ys = torch.cat((ys, torch.argmax(probs).reshape(1, 1).to(src.dtype)), dim=1)
    return ys
