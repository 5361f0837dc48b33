# pitfall: the embedding not scaled
import torch
import torch.nn as nn
import torch.nn.functional as F


class TiedEmbeddings(nn.Module):
    def __init__(self, vocab_size, d_model):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(vocab_size, d_model) / d_model**0.5)

    def embed(self, tokens):
        return F.embedding(tokens, self.weight)

    def generator(self, x):
        return F.linear(x, self.weight).log_softmax(dim=-1)


def create_tied_embeddings(vocab_size, d_model):
    return TiedEmbeddings(vocab_size, d_model)
