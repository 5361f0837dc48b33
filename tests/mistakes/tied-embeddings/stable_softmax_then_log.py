# pitfall: log of softmax
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
        return F.embedding(tokens, self.weight) * math.sqrt(self.d_model)

    def generator(self, x):
        logits = x @ self.weight.T
        shifted = (logits - logits.max(dim=-1, keepdim=True).values).exp()
        return (shifted / shifted.sum(dim=-1, keepdim=True)).log()


def create_tied_embeddings(vocab_size, d_model):
    return TiedEmbeddings(vocab_size, d_model)
