# pitfall: the table scaled in place
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class TiedEmbeddings(nn.Module):
    def __init__(self, vocab_size, d_model):
        super().__init__()
        self.d_model = d_model
        self.weight = nn.Parameter(torch.randn(vocab_size, d_model))

    def embed(self, tokens):
        with torch.no_grad():
            self.weight *= math.sqrt(self.d_model)
        return F.embedding(tokens, self.weight)

    def generator(self, x):
        return F.log_softmax(x @ self.weight.T, dim=-1)


def create_tied_embeddings(vocab_size, d_model):
    return TiedEmbeddings(vocab_size, d_model)
