# pitfall: the scaling applied to the weights in place

import torch
import torch.nn as nn


def create_embedding_layer(vocab_size, d_model):
    return nn.Embedding(vocab_size, d_model)


def embed_tokens(embedding, tokens, d_model):
    with torch.no_grad():
        embedding.weight *= d_model**0.5
    return embedding(tokens)
