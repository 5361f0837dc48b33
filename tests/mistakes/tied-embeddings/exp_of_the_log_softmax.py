# pitfall: softmax instead of log-softmax
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class TiedEmbeddings(nn.Module):
    def __init__(self, vocab_size, d_model):
        super().__init__()
        self.d_model = d_model
        self.lut = nn.Embedding(vocab_size, d_model)

    def embed(self, tokens):
        return self.lut(tokens) * math.sqrt(self.d_model)

    def generator(self, x):
        return torch.exp(F.log_softmax(F.linear(x, self.lut.weight), dim=-1))


def create_tied_embeddings(vocab_size, d_model):
    return TiedEmbeddings(vocab_size, d_model)
