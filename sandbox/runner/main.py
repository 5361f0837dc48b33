"""The sandbox container's first process: imports torch once, warms it up, and becomes the zygote.

The zygote (zygote.py) is PID 1 and never sees a job: it forks the runner (runner.py), which serves
jobs on stdin/stdout, and then every child on the runner's request, so no child ever holds a copy of
a job that is not its own. What runs in a child is child_main.py.
"""

from __future__ import annotations

import gc
import math
import os
import sys

# The runner is the package `runner` (/opt/runner): its folder's parent on the path, and nothing else new.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.clear()
os.environ["OMP_NUM_THREADS"] = "1"
# Tensors of 2 MiB and more on transparent huge pages (torch's CPU allocator madvises them): a large fresh
# tensor costs a page fault per 2 MiB, not per 4 KiB (docs/BENCHMARKS.md, "Costs behind the code").
os.environ["THP_MEM_ALLOC_ENABLE"] = "1"

import torch  # noqa: E402

# One intra-op thread, set before any parallel work: an OpenMP pool must not exist when forking.
torch.set_num_threads(1)
torch.set_num_interop_threads(1)

# Every module a child may use, imported here: a child reads no file of the runner's once Landlock holds it
# (child_main.py is every child's entry, a test job's and a benchmark's).
from runner import child_main, confine, hugepages, prewarm, values, zygote  # noqa: E402
from runner.runner import Runner, protect_runner  # noqa: E402


def _warm_up() -> None:
    layer = torch.nn.Embedding(11, 8)
    out = layer(torch.tensor([[1, 2, 3]])) * math.sqrt(8)
    out.sum().backward()
    values.encode_value({"out": out.detach(), "n": 1, "x": 0.5}, 1 << 20)
    with torch.device("meta"):  # the meta device initialises lazily, and slowly, on first use
        torch.nn.Embedding(11, 8)
    torch.nn.Embedding.from_pretrained(torch.zeros(3, 2))
    # Objects that exist now are never collected: a child's garbage collector does not touch
    # (and so copy) the runner's pages after the fork.
    gc.collect()
    gc.freeze()


def _serve(forker: zygote.ZygoteClient) -> None:
    Runner(forker, torch_version=torch.__version__).serve()


if __name__ == "__main__":
    # Every page of the image's files into the host's page cache before anything is forked (prewarm.py).
    if prewarm.NO_PREWARM not in sys.argv[1:]:
        prewarm.read_image_files()
    # This process becomes the zygote (PID 1 of the container); it forks the runner after warming up.
    protect_runner()
    _warm_up()
    hugepages.collapse()  # forks, and children's ends, cost a quarter of what they did (hugepages.py)
    zygote.run(_serve, child_main.child_main, confine.prebuild)
