"""The `grader` command: run the service, check problem files."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from grader.api.app import create_app
    from grader.config import get_settings

    settings = get_settings()
    uvicorn.run(
        create_app(settings), host=args.host or settings.host, port=args.port or settings.port, log_level="info"
    )
    return 0


def _check(args: argparse.Namespace) -> int:
    from grader.problems.registry import ProblemError, parse_problem

    failed = 0
    for name in args.paths:
        path = Path(name)
        try:
            problem = parse_problem(path.read_text(encoding="utf-8"), str(path))
        except (ProblemError, UnicodeDecodeError, OSError) as exc:
            failed += 1
            print(exc, file=sys.stderr)
            continue
        print(f"{path}: ok ({problem.id}, {len(problem.tests)} tests, {len(problem.pitfalls)} pitfalls)")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    parser = argparse.ArgumentParser(prog="grader", description="torchjudge: a judge for PyTorch challenges")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the HTTP service")
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.set_defaults(run=_serve)
    problems = commands.add_parser("problems", help="problem files")
    problem_commands = problems.add_subparsers(dest="problems_command", required=True)
    check = problem_commands.add_parser("check", help="validate problem files")
    check.add_argument("paths", nargs="+")
    check.set_defaults(run=_check)
    args = parser.parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
