# pitfall: vocabulary size and model dimension swapped

import torch.nn as nn


def create_embedding_layer(vocab_size, d_model):
    return nn.Embedding(num_embeddings=d_model, embedding_dim=vocab_size)


def embed_tokens(embedding, tokens, d_model):
    return embedding(tokens) * d_model**0.5
