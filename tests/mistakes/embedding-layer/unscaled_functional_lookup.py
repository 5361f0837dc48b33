# pitfall: forgot the sqrt(d_model) scaling

import torch.nn as nn
import torch.nn.functional as F


def create_embedding_layer(vocab_size, d_model):
    return nn.Embedding(vocab_size, d_model)


def embed_tokens(embedding, tokens, d_model):
    return F.embedding(tokens, embedding.weight)
