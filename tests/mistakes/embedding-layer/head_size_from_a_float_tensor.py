# pitfall: scaled by sqrt(d_k), the attention head size, instead of sqrt(d_model)

import torch
import torch.nn as nn


def create_embedding_layer(vocab_size, d_model):
    return nn.Embedding(vocab_size, d_model)


def embed_tokens(embedding, tokens, d_model):
    heads = 8
    d_k = torch.tensor(float(max(d_model // heads, 1)))
    return embedding(tokens) * torch.sqrt(d_k)
