# pitfall: the scaling factor truncated to an integer
import math

import torch.nn as nn


def create_embedding_layer(vocab_size, d_model):
    return nn.Embedding(vocab_size, d_model)


def embed_tokens(embedding, tokens, d_model):
    return embedding(tokens) * math.isqrt(d_model)
