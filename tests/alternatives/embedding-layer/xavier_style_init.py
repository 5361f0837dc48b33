# A correct solution that re-initialises the table with the N(0, 1/d_model) the statement's
# background recommends, so that the scaled embeddings have a standard deviation of about 1.
import math

import torch
import torch.nn as nn


def create_embedding_layer(vocab_size: int, d_model: int) -> nn.Embedding:
    layer = nn.Embedding(vocab_size, d_model)
    nn.init.normal_(layer.weight, mean=0.0, std=d_model**-0.5)
    return layer


def embed_tokens(embedding: nn.Embedding, tokens: torch.Tensor, d_model: int) -> torch.Tensor:
    return embedding(tokens) * math.sqrt(d_model)
