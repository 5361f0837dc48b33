# pitfall: the generator returns logits
import math

import torch
import torch.nn as nn


class TiedEmbeddings(nn.Module):
    def __init__(self, vocab_size, d_model):
        super().__init__()
        self.d_model = d_model
        self.weight = nn.Parameter(torch.randn(vocab_size, d_model))

    def embed(self, tokens):
        return nn.functional.embedding(tokens, self.weight) * math.sqrt(self.d_model)

    def generator(self, x):
        return torch.matmul(x, self.weight.transpose(0, 1))


def create_tied_embeddings(vocab_size, d_model):
    return TiedEmbeddings(vocab_size, d_model)
