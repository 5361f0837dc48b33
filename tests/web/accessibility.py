"""An accessibility audit of the page a browser test is on, with axe-core (pinned in tests/web/axe/,
installed by scripts/ensure-axe.sh): WCAG 2.0 and 2.1, levels A and AA, and axe's best practices.

axe is injected through the DevTools protocol (page.evaluate), which the pages' Content-Security-Policy
does not govern, so the pages keep their policy as served."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

AXE = Path(__file__).resolve().parent / "axe" / "node_modules" / "axe-core" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]


@lru_cache(maxsize=1)
def _axe_source() -> str:
    if not AXE.is_file():
        raise AssertionError(f"{AXE} is missing: run scripts/ensure-axe.sh (scripts/setup-test.sh does)")
    return AXE.read_text(encoding="utf-8")


def audit(page: Any) -> list[dict[str, Any]]:
    """axe's violations on the page as it is now (an empty list when there are none)."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(_axe_source())
    result = page.evaluate(
        "tags => axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']})",
        TAGS,
    )
    return list(result["violations"])


def describe(violations: list[dict[str, Any]]) -> str:
    """The violations as a person reads them: the rule, its impact and help, then each element."""
    lines = []
    for violation in violations:
        lines.append(f"{violation['id']} ({violation.get('impact')}): {violation['help']} <{violation['helpUrl']}>")
        for node in violation["nodes"][:10]:
            lines.append(f"  at {' '.join(node['target'])}: {node['html'][:200]}")
            summary = (node.get("failureSummary") or "").replace("\n", "\n      ")
            if summary:
                lines.append(f"      {summary}")
        if len(violation["nodes"]) > 10:
            lines.append(f"  … and {len(violation['nodes']) - 10} more elements")
    return "\n".join(lines)


def assert_accessible(page: Any, where: str) -> None:
    violations = audit(page)
    assert not violations, f"axe found {len(violations)} kinds of violation on {where}:\n{describe(violations)}"
