"""Embedding-layer solutions the web tests submit, written so that the browser tests can type them into
the editor as they are (its auto-indent keeps their layout)."""

FORGOT_SCALING = """\
import torch.nn as nn

def create_embedding_layer(vocab_size, d_model):
    return nn.Embedding(vocab_size, d_model)

def embed_tokens(embedding, tokens, d_model):
    return embedding(tokens)
"""

CORRECT = """\
import math
import torch.nn as nn

def create_embedding_layer(vocab_size, d_model):
    return nn.Embedding(vocab_size, d_model)

def embed_tokens(embedding, tokens, d_model):
    return embedding(tokens) * math.sqrt(d_model)
"""

SCRIPT_IN_MESSAGE = """\
import torch.nn as nn

def create_embedding_layer(vocab_size, d_model):
    return nn.Embedding(vocab_size, d_model)

def embed_tokens(embedding, tokens, d_model):
    raise ValueError("<script>alert(1)</script><img src=x onerror=alert(2)>")
"""

# Three hidden tests hang into their 2 s limit: the run takes over 6 s and its results land in steps.
SLOW = """\
import math
import torch.nn as nn

def create_embedding_layer(vocab_size, d_model):
    return nn.Embedding(vocab_size, d_model)

def embed_tokens(embedding, tokens, d_model):
    if d_model in (1, 7, 64):
        while True:
            pass
    return embedding(tokens) * math.sqrt(d_model)
"""

# As SLOW, and each of the first three calls (visible tests) takes 0.7 s: the visible tests' results land
# one by one after the report has loaded, the hidden ones only with the verdict.
SLOW_THROUGHOUT = """\
import math
import time
import torch.nn as nn

CALLS = [0]

def create_embedding_layer(vocab_size, d_model):
    return nn.Embedding(vocab_size, d_model)

def embed_tokens(embedding, tokens, d_model):
    CALLS[0] += 1
    if CALLS[0] <= 3:
        time.sleep(0.7)
    if d_model in (1, 7, 64):
        while True:
            pass
    return embedding(tokens) * math.sqrt(d_model)
"""

# Correct, and prints: at import (which goes to the first test's output) and in every call, markup included.
PRINTS = """\
import math
import torch.nn as nn

print("<img src=x onerror=alert(3)> loaded")

def create_embedding_layer(vocab_size, d_model):
    return nn.Embedding(vocab_size, d_model)

def embed_tokens(embedding, tokens, d_model):
    print("embedding tokens of shape", tuple(tokens.shape))
    return embedding(tokens) * math.sqrt(d_model)
"""

# Prints in every test; three hidden tests hang into their limit, so the visible tests' results (and what
# they printed) land while the submission is still running.
PRINTS_SLOWLY = PRINTS.replace(
    '    print("embedding tokens',
    '    if d_model in (1, 7, 64):\n        while True:\n            pass\n    print("embedding tokens',
)
