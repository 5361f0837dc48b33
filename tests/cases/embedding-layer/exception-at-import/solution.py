import torch.nn as nn

SCALE = 1 / 0


def create_embedding_layer(vocab_size, d_model):
    return nn.Embedding(vocab_size, d_model)


def embed_tokens(embedding, tokens, d_model):
    return embedding(tokens)
