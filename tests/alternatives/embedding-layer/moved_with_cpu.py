# A correct solution that moves the new layer to the CPU explicitly (a habit from GPU code),
# and scales with d_model ** 0.5.
import torch
import torch.nn as nn


def create_embedding_layer(vocab_size: int, d_model: int) -> nn.Embedding:
    return nn.Embedding(vocab_size, d_model).cpu()


def embed_tokens(embedding: nn.Embedding, tokens: torch.Tensor, d_model: int) -> torch.Tensor:
    return embedding(tokens) * d_model**0.5
