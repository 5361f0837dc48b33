# pitfall: the generator scaled by sqrt(d_model) too
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class TiedEmbeddings(nn.Module):
    def __init__(self, vocab_size, d_model):
        super().__init__()
        self.scale = math.sqrt(d_model)
        self.weight = nn.Parameter(torch.randn(vocab_size, d_model))

    def embed(self, tokens):
        return self.weight[tokens] * self.scale

    def generator(self, x):
        return F.log_softmax(F.linear(x * self.scale, self.weight), dim=-1)


def create_tied_embeddings(vocab_size, d_model):
    return TiedEmbeddings(vocab_size, d_model)
