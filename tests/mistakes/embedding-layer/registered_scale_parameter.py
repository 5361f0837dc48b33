# pitfall: the scaling factor registered as a learnable parameter

import torch
import torch.nn as nn


def create_embedding_layer(vocab_size, d_model):
    layer = nn.Embedding(vocab_size, d_model)
    layer.register_parameter("scale", nn.Parameter(torch.tensor(d_model**0.5)))
    return layer


def embed_tokens(embedding, tokens, d_model):
    scale = embedding.scale if hasattr(embedding, "scale") else d_model**0.5
    return embedding(tokens) * scale
