"""A child's warm-up (sandbox/runner/execute.py) runs in the real image: it must succeed, or every
submission's first test silently pays for it again, and it must leave the random states as it found them."""

from __future__ import annotations

import pytest

from grader.config import Settings
from grader.containers.container import docker_client
from tests.security.page_cache import run_script

pytestmark = pytest.mark.docker

PROBE = """
import json, random, sys
sys.path.insert(0, "/opt")
import numpy as np, torch
from runner import execute
torch.manual_seed(7); random.seed(7); np.random.seed(7)
outcome, body = execute.run_test(0, 0, execute.WARM_UP_TEST, {}, 1 << 20)
torch.manual_seed(7); random.seed(7); np.random.seed(7)
execute.warm_up()
draws = [torch.rand(1).item(), random.random(), float(np.random.rand())]
torch.manual_seed(7); random.seed(7); np.random.seed(7)
print(json.dumps({"outcome": outcome.header(), "body": len(body), "draws": draws,
                  "fresh": [torch.rand(1).item(), random.random(), float(np.random.rand())]}))
"""


def test_the_childs_warm_up_succeeds_and_leaves_the_random_states_alone() -> None:
    report = run_script(docker_client(), Settings().sandbox.image, PROBE, [], user="10001:10001")
    assert report["outcome"] == {"status": "ok"}, report
    assert report["body"] > 0
    assert report["draws"] == report["fresh"]
