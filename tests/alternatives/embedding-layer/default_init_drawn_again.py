# A correct solution that re-draws the weights from N(0, 1), PyTorch's own default: the same
# distribution, but a second draw from the random generator, so other weights.
import math

import torch
import torch.nn as nn


def create_embedding_layer(vocab_size: int, d_model: int) -> nn.Embedding:
    layer = nn.Embedding(vocab_size, d_model)
    nn.init.normal_(layer.weight, 0, 1)
    return layer


def embed_tokens(embedding: nn.Embedding, tokens: torch.Tensor, d_model: int) -> torch.Tensor:
    return embedding(tokens).mul(math.sqrt(d_model))
