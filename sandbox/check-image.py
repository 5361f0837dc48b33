"""Run at build time inside the image (and by hand): what solutions use must still work after the
pruning in scripts/build-sandbox-image.sh and sandbox/Dockerfile. Exits non-zero on any failure."""

import math
import sys

import numpy as np
import torch
import torch.distributions as D
import torch.nn as nn
import torch.nn.functional as F
import torch.optim
import torch.optim.lr_scheduler

assert torch.__version__.startswith("2.13"), torch.__version__

# nn and functional, autograd, the embedding problem's own example.
layer = nn.Embedding(11, 8)
out = layer(torch.tensor([[1, 2, 3]])) * math.sqrt(8)
out.sum().backward()
assert layer.weight.grad is not None and layer.weight.grad.shape == (11, 8)
x = torch.randn(4, 16, requires_grad=True)
y = F.layer_norm(F.gelu(nn.Linear(16, 16)(x)), (16,))
attn = F.scaled_dot_product_attention(torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8))
(y.sum() + attn.sum()).backward()
assert x.grad is not None
assert torch.autograd.grad((x**2).sum(), x)[0].shape == x.shape
conv = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten())
assert conv(torch.randn(2, 3, 8, 8)).shape == (2, 36)
lstm = nn.LSTM(8, 8, batch_first=True)
assert lstm(torch.randn(2, 3, 8))[0].shape == (2, 3, 8)
transformer = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 32, batch_first=True), 1)
assert transformer(torch.randn(2, 5, 16)).shape == (2, 5, 16)

# The meta device.
meta = nn.Linear(1024, 1024, device="meta")
assert meta.weight.is_meta and meta(torch.empty(3, 1024, device="meta")).shape == (3, 1024)

# torch.testing.
torch.testing.assert_close(torch.ones(3), torch.ones(3) + 1e-9)
try:
    torch.testing.assert_close(torch.ones(3), torch.zeros(3))
except AssertionError:
    pass
else:
    sys.exit("torch.testing.assert_close accepted different tensors")

# Distributions.
normal = D.Normal(torch.zeros(3), torch.ones(3))
assert normal.log_prob(normal.sample()).shape == (3,)
assert D.Categorical(logits=torch.zeros(4)).entropy().item() > 0
assert D.kl_divergence(normal, D.Normal(torch.ones(3), torch.ones(3))).shape == (3,)

# Optimisers and schedulers.
model = nn.Linear(4, 1)
for make in (torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW):
    optimizer = make(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    for _ in range(2):
        optimizer.zero_grad()
        model(torch.randn(8, 4)).pow(2).mean().backward()
        optimizer.step()
        scheduler.step()
sgd = torch.optim.SGD(model.parameters(), lr=0.1)
cosine = torch.optim.lr_scheduler.CosineAnnealingLR(sgd, T_max=10)
sgd.step()
cosine.step()

# numpy, and both ways between numpy and torch.
a = np.linspace(0, 1, 12, dtype=np.float32).reshape(3, 4)
assert np.allclose(torch.from_numpy(a).numpy(), a)
assert np.linalg.norm(np.eye(3)) > 0 and np.fft.fft(np.ones(4))[0] == 4
assert np.random.default_rng(0).normal(size=3).shape == (3,)
assert torch.linalg.svd(torch.randn(4, 4)).S.shape == (4,)
print("image check: ok")
