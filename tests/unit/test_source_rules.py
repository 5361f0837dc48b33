"""A problem's forbid/require read from a submission's source (grader/grading/source_rules.py): every alias an
import can make, the line of the first use, and what the source does not name left to the sandbox."""

from __future__ import annotations

import pytest

from grader.grading.source_rules import violations

RULE = "torch.nn.functional.scaled_dot_product_attention"


@pytest.mark.parametrize(
    ("source", "line"),
    [
        ("import torch\n\ndef f(q, k, v):\n    return torch.nn.functional.scaled_dot_product_attention(q, k, v)\n", 4),
        ("import torch.nn.functional as F\n\ndef f(q, k, v):\n    return F.scaled_dot_product_attention(q, k, v)\n", 4),
        ("from torch.nn import functional as G\nx = 1\ny = G.scaled_dot_product_attention\n", 3),
        ("from torch.nn.functional import scaled_dot_product_attention as attend\n", 1),
        (
            "def f(q, k, v):\n    import torch.nn.functional as F\n"
            "    return F.scaled_dot_product_attention(q, k, v).sum()\n",
            3,
        ),
        ("import torch.nn.functional\n", None),  # the module itself is not the function
    ],
)
def test_a_forbidden_name_is_found_under_any_alias_at_its_line(source: str, line: int | None) -> None:
    found = violations(source, [RULE], [])
    if line is None:
        assert found == []
    else:
        [violation] = found
        assert violation.line == line and RULE in violation.message and f"line {line}" in violation.message


def test_a_forbidden_module_covers_everything_in_it() -> None:
    [violation] = violations("import torch\n\ny = torch.linalg.norm\n", ["torch.linalg"], [])
    assert violation.line == 3


def test_what_the_source_does_not_name_is_left_to_the_sandbox() -> None:
    source = "import torch.nn.functional as F\nattend = getattr(F, 'scaled_dot' + '_product_attention')\n"
    assert violations(source, [RULE], []) == []


def test_a_required_name_the_source_never_uses_is_refused() -> None:
    [violation] = violations("def f(x):\n    return x\n", [], ["torch.einsum"])
    assert "torch.einsum" in violation.message and violation.line is None
    used = "from torch import einsum\n\ndef f(x):\n    return einsum('ij->ji', x)\n"
    assert violations(used, [], ["torch.einsum"]) == []


def test_no_rules_and_a_source_that_does_not_parse_are_left_alone() -> None:
    assert violations("import torch.nn.functional as F\nF.scaled_dot_product_attention\n", [], []) == []
    assert violations("def (:\n", [RULE], []) == []
