# A correct solution whose layer is a subclass of nn.Embedding (with a helper method of its own);
# the scaling stays in embed_tokens.
import math

import torch
import torch.nn as nn


class TokenEmbedding(nn.Embedding):
    def scale(self) -> float:
        return math.sqrt(self.embedding_dim)


def create_embedding_layer(vocab_size: int, d_model: int) -> nn.Embedding:
    return TokenEmbedding(vocab_size, d_model)


def embed_tokens(embedding: nn.Embedding, tokens: torch.Tensor, d_model: int) -> torch.Tensor:
    return embedding(tokens) * math.sqrt(d_model)
