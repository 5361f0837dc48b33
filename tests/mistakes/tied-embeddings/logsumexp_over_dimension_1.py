# pitfall: log-softmax over dimension 1
import math

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
        logits = F.linear(x, self.lut.weight)
        return logits - logits.logsumexp(dim=1, keepdim=True)


def create_tied_embeddings(vocab_size, d_model):
    return TiedEmbeddings(vocab_size, d_model)
