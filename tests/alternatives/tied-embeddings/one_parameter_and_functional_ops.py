# A correct solution that keeps the table as a single nn.Parameter (initialised with standard
# deviation 1/sqrt(d_model)) and uses it through F.embedding and a matmul, the log-softmax written as
# the logits minus their logsumexp.
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class SharedTable(nn.Module):
    def __init__(self, vocab_size: int, d_model: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(vocab_size, d_model) / math.sqrt(d_model))
        self.scale = math.sqrt(d_model)

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        return F.embedding(tokens, self.weight) * self.scale

    def generator(self, x: torch.Tensor) -> torch.Tensor:
        logits = x @ self.weight.t()
        return logits - torch.logsumexp(logits, dim=-1, keepdim=True)


def create_tied_embeddings(vocab_size: int, d_model: int) -> nn.Module:
    return SharedTable(vocab_size, d_model)
