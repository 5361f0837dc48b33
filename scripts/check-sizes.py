"""Keeps the code base easy to read: no module in grader/ or sandbox/ over 400 lines, no function over
80. `make lint` runs it (and `make test` runs `make lint`)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80


def main() -> int:
    problems = []
    for package in ("grader", "sandbox"):
        for path in sorted((ROOT / package).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            where = path.relative_to(ROOT)
            lines = len(text.splitlines())
            if lines > MAX_MODULE_LINES:
                problems.append(f"{where}: {lines} lines (at most {MAX_MODULE_LINES})")
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    length = (node.end_lineno or node.lineno) - node.lineno + 1
                    if length > MAX_FUNCTION_LINES:
                        problems.append(
                            f"{where}:{node.lineno}: {node.name} is {length} lines (at most {MAX_FUNCTION_LINES})"
                        )
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
