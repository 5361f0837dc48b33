# A correct solution where the output projection owns the table and the embedding borrows it; the
# lookup and the logits are computed in float64 with index_select and einsum, then cast back.
import math

import torch
import torch.nn as nn


class TiedEmbeddings(nn.Module):
    def __init__(self, vocab_size: int, d_model: int) -> None:
        super().__init__()
        self.d_model = d_model
        self.lut = nn.Embedding(vocab_size, d_model)
        self.out = nn.Linear(d_model, vocab_size, bias=False)
        self.lut.weight = self.out.weight

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        table = self.out.weight
        rows = table.double().index_select(0, tokens.reshape(-1)) * math.sqrt(self.d_model)
        return rows.reshape(*tokens.shape, self.d_model).to(table.dtype)

    def generator(self, x: torch.Tensor) -> torch.Tensor:
        table = self.out.weight
        logits = torch.einsum("...d,vd->...v", x.double(), table.double())
        return torch.log_softmax(logits, dim=-1).to(torch.promote_types(x.dtype, table.dtype))


def create_tied_embeddings(vocab_size: int, d_model: int) -> nn.Module:
    return TiedEmbeddings(vocab_size, d_model)
