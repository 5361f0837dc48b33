# A correct solution built from the Annotated Transformer's two classes, as sub-modules named embed
# and generator, tied by assigning the embedding's weight to the generator's bias-free projection.
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Embeddings(nn.Module):
    def __init__(self, d_model: int, vocab: int) -> None:
        super().__init__()
        self.lut = nn.Embedding(vocab, d_model)
        self.d_model = d_model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lut(x) * math.sqrt(self.d_model)


class Generator(nn.Module):
    def __init__(self, d_model: int, vocab: int) -> None:
        super().__init__()
        self.proj = nn.Linear(d_model, vocab, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.log_softmax(self.proj(x), dim=-1)


class TiedEmbeddings(nn.Module):
    def __init__(self, vocab_size: int, d_model: int) -> None:
        super().__init__()
        self.embed = Embeddings(d_model, vocab_size)
        self.generator = Generator(d_model, vocab_size)
        self.generator.proj.weight = self.embed.lut.weight


def create_tied_embeddings(vocab_size: int, d_model: int) -> nn.Module:
    return TiedEmbeddings(vocab_size, d_model)
