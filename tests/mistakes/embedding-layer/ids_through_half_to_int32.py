# pitfall: token IDs passed through a floating-point type before the lookup

import torch
import torch.nn as nn


def create_embedding_layer(vocab_size, d_model):
    return nn.Embedding(vocab_size, d_model)


def embed_tokens(embedding, tokens, d_model):
    ids = tokens.to(torch.float16).to(torch.int32)
    return embedding(ids) * d_model**0.5
