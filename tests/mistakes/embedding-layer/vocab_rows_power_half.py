# pitfall: scaled by sqrt(vocab_size) instead of sqrt(d_model)

import torch.nn as nn


def create_embedding_layer(vocab_size, d_model):
    return nn.Embedding(vocab_size, d_model)


def embed_tokens(embedding, tokens, d_model):
    return embedding(tokens) * embedding.weight.shape[0] ** 0.5
