# pitfall: wrote d_model ** 1/2, which is d_model / 2

import torch.nn as nn


def create_embedding_layer(vocab_size, d_model):
    return nn.Embedding(vocab_size, d_model)


def embed_tokens(embedding, tokens, d_model):
    return embedding(tokens) * (d_model / 2)
