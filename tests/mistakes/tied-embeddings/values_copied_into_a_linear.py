# pitfall: two tables copied at initialisation
import math

import torch
import torch.nn as nn


class TiedEmbeddings(nn.Module):
    def __init__(self, vocab_size, d_model):
        super().__init__()
        self.d_model = d_model
        self.lut = nn.Embedding(vocab_size, d_model)
        self.proj = nn.Linear(d_model, vocab_size, bias=False)
        with torch.no_grad():
            self.proj.weight.copy_(self.lut.weight)

    def embed(self, tokens):
        return self.lut(tokens) * math.sqrt(self.d_model)

    def generator(self, x):
        return torch.log_softmax(self.proj(x), dim=-1)


def create_tied_embeddings(vocab_size, d_model):
    return TiedEmbeddings(vocab_size, d_model)
