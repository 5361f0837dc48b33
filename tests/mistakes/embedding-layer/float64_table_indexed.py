# pitfall: one-hot matrix product in float64
import math

import torch
import torch.nn as nn


def create_embedding_layer(vocab_size, d_model):
    return nn.Embedding(vocab_size, d_model)


def embed_tokens(embedding, tokens, d_model):
    return embedding.weight.to(torch.float64)[tokens] * math.sqrt(d_model)
