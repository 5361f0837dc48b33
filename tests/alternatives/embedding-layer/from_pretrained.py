# A correct solution that builds the layer from a table of its own with from_pretrained
# (freeze=False, so that the weight is trained), and scales by a tensor square root.
import torch
import torch.nn as nn


def create_embedding_layer(vocab_size: int, d_model: int) -> nn.Embedding:
    table = torch.randn(vocab_size, d_model)
    return nn.Embedding.from_pretrained(table, freeze=False)


def embed_tokens(embedding: nn.Embedding, tokens: torch.Tensor, d_model: int) -> torch.Tensor:
    return embedding(tokens) * torch.tensor(float(d_model)).sqrt()
