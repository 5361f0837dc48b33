# pitfall: the Annotated Transformer's generator bias kept
import math

import torch.nn as nn
import torch.nn.functional as F


class Embeddings(nn.Module):
    def __init__(self, d_model, vocab):
        super().__init__()
        self.lut = nn.Embedding(vocab, d_model)
        self.d_model = d_model

    def forward(self, x):
        return self.lut(x) * math.sqrt(self.d_model)


class Generator(nn.Module):
    def __init__(self, d_model, vocab):
        super().__init__()
        self.proj = nn.Linear(d_model, vocab)

    def forward(self, x):
        return F.log_softmax(self.proj(x), dim=-1)


class TiedEmbeddings(nn.Module):
    def __init__(self, vocab_size, d_model):
        super().__init__()
        self.embed = Embeddings(d_model, vocab_size)
        self.generator = Generator(d_model, vocab_size)
        self.generator.proj.weight = self.embed.lut.weight


def create_tied_embeddings(vocab_size, d_model):
    return TiedEmbeddings(vocab_size, d_model)
