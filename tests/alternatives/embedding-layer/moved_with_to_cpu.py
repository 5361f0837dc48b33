# A correct solution that picks a device the way GPU code does, which is the CPU here, and
# looks the rows up with F.embedding on the layer's weight.
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def create_embedding_layer(vocab_size: int, d_model: int) -> nn.Embedding:
    return nn.Embedding(vocab_size, d_model).to(DEVICE)


def embed_tokens(embedding: nn.Embedding, tokens: torch.Tensor, d_model: int) -> torch.Tensor:
    return F.embedding(tokens, embedding.weight) * math.sqrt(d_model)
