"""The `grader` command: run the service or a Celery worker, check problem files, migrate the database."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from grader.problems.check import CheckStep


def _serve(args: argparse.Namespace) -> int:
    from grader.api.server import build_server
    from grader.app import create_app
    from grader.config import get_settings
    from grader.logs import configure_logging

    settings = get_settings()
    configure_logging(settings.logs.format, settings.logs.level)
    server = build_server(create_app(settings), settings, host=args.host, port=args.port)
    try:
        server.run()
    except KeyboardInterrupt:  # uvicorn re-raises the SIGINT it caught once it has shut down
        pass
    return 0 if server.started else 3  # 3: uvicorn's own exit status for a failed start-up


def _worker(args: argparse.Namespace) -> int:
    from grader.config import get_settings
    from grader.logs import configure_logging

    settings = get_settings()
    configure_logging(settings.logs.format, settings.logs.level)
    from grader.queue.backends import grades_where_taken

    if grades_where_taken(settings.queueing):
        print("error: `grader worker` grades what Celery delivers: set GRADER_QUEUE=celery", file=sys.stderr)
        return 2
    from grader.worker import run_worker

    return run_worker(settings, name=args.name or "", pool=args.pool, concurrency=args.concurrency)


def _db(args: argparse.Namespace) -> int:
    from grader.config import get_settings
    from grader.storage import migrate
    from grader.storage.db import make_engine

    engine = make_engine(get_settings().storage.sqlalchemy_url)
    try:
        if args.db_command == "upgrade":
            migrate.upgrade_to_head(engine)
        elif args.db_command == "stamp":
            migrate.stamp_head(engine)
        with engine.connect() as connection:
            current = migrate.current_revision(connection)
        print(f"database at revision {current or 'none'} (this build's head: {migrate.head_revision()})")
        return 0 if current == migrate.head_revision() or args.db_command == "current" else 1
    finally:
        engine.dispose()


def _health(args: argparse.Namespace) -> int:
    """For container health checks: exit 0 when the URL answers 200 within the timeout."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(args.url, timeout=args.timeout) as response:
            return 0 if response.status == 200 else 1
    except (urllib.error.URLError, OSError) as exc:
        print(f"{args.url}: {exc}", file=sys.stderr)
        return 1


STEP_MARKS = {"ok": "ok", "failed": "FAIL", "skipped": "skip"}


def _print_step(step: CheckStep) -> None:
    """One line per step as soon as it is known, then what it found, indented under it."""
    took = f"  ({step.seconds:.1f} s)" if step.seconds >= 0.05 else ""
    print(f"  {STEP_MARKS[step.status.value]:<4}  {step.name:<13} {step.summary}{took}", flush=True)
    for line in step.details:
        print(f"          {line}")
    for line in step.warnings:
        print(f"          warning: {line}")
    for line in step.errors:
        print(f"          {line}")
    sys.stdout.flush()


def _seed_count(text: str) -> int:
    from grader.problems.check.report import MAX_SEEDS

    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 1 <= count <= MAX_SEEDS:
        raise argparse.ArgumentTypeError(f"{count} is not between 1 and {MAX_SEEDS}")
    return count


def _check(args: argparse.Namespace) -> int:
    from grader.config import get_settings
    from grader.problems.check import ProblemChecker, SandboxUnavailable

    failed: list[str] = []
    started = time.monotonic()
    from grader.problems.check.report import SEEDS_CHECKED

    settings = get_settings()
    with ProblemChecker(settings.sandbox, settings.limits, seeds=args.seeds or SEEDS_CHECKED) as checker:
        for name in args.paths:
            path = Path(name)
            print(path, flush=True)
            try:
                text = path.read_text(encoding="utf-8-sig")
            except UnicodeDecodeError:
                print(f"  FAIL  read          {path}: the file is not UTF-8 text", flush=True)
                failed.append(name)
                continue
            except OSError as exc:
                print(f"  FAIL  read          {path}: {exc.strerror or exc}", flush=True)
                failed.append(name)
                continue
            file_started = time.monotonic()
            try:
                report = checker.check_text(text, str(path), on_step=_print_step, schema_only=args.schema_only)
            except SandboxUnavailable as exc:
                print(f"error: the problems cannot be checked: {exc}", file=sys.stderr)
                return 2
            verdict = "ok" if report.ok else f"FAILED ({len(report.errors)} errors)"
            print(f"  {verdict}  {time.monotonic() - file_started:.1f} s", flush=True)
            if not report.ok:
                failed.append(name)
    total = len(args.paths)
    if failed:
        print(f"{len(failed)} of {total} problem files failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    print(f"{total} problem files ok ({time.monotonic() - started:.1f} s)")
    return 0


def _schema(_args: argparse.Namespace) -> int:
    from grader.problems.schema import Problem

    print(json.dumps(Problem.model_json_schema(), indent=2))
    return 0


def _submit(args: argparse.Namespace) -> int:
    if args.batch is not None:
        if args.file is not None or args.run_only or args.json or args.name is not None:
            print("error: --batch takes no FILE, --run, --json or --name (its output is JSON Lines)", file=sys.stderr)
            return 2
        from grader.client_batch import main_batch

        return main_batch(args.batch, args.problem, args.url, args.out, args.chunk)
    if args.file is None or args.problem is None:
        print("error: grader submit FILE --problem ID (or --batch PATH)", file=sys.stderr)
        return 2
    from grader.client import main_submit

    return main_submit(args.file, args.problem, args.url, args.run_only, args.json, args.name)


def _remote(args: argparse.Namespace) -> int:
    import os

    from grader.client import DEFAULT_URL, Client, ClientError, list_problems, show_leaderboard, show_problem

    client = Client(args.url or os.environ.get("GRADER_URL", DEFAULT_URL), os.environ.get("GRADER_API_KEY"))
    try:
        out = sys.stdout  # looked up now, not when the client module was imported
        if args.command == "leaderboard":
            return show_leaderboard(client, args.problem_id, as_json=args.json, limit=args.limit, out=out)
        if args.problems_command == "list":
            return list_problems(client, out)
        return show_problem(client, args.problem_id, out)
    except ClientError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _entry_count(text: str) -> int:
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 1 <= count <= 1000:
        raise argparse.ArgumentTypeError(f"{count} is not between 1 and 1000")
    return count


def _client_commands(commands: argparse._SubParsersAction, problem_commands: argparse._SubParsersAction) -> None:
    url_help = "the service (default: GRADER_URL, else http://127.0.0.1:8000); GRADER_API_KEY is its API key"
    submit = commands.add_parser(
        "submit",
        help="submit a file and follow its grading (exit 0 when accepted, 1 if not, 2 on an error)",
        description="Submits FILE for PROBLEM, prints each test as it finishes, then the verdict and the first "
        "failing visible test's expected against got. With --run, runs it on the visible tests instead (not a "
        "submission). With --batch PATH (a folder of *.py files, or a JSON Lines file of items), grades them all "
        "through the batch endpoint and writes one JSON line per solution.",
    )
    submit.add_argument("file", metavar="FILE", nargs="?")
    submit.add_argument("--problem", metavar="ID")
    submit.add_argument("--batch", metavar="PATH", help="a folder of solutions (*.py) or a JSON Lines file of items")
    submit.add_argument("--out", metavar="FILE", help="with --batch: where the JSON Lines go (default: stdout)")
    submit.add_argument("--chunk", type=int, default=1000, metavar="N", help="with --batch: items per request")
    submit.add_argument("--url", help=url_help)
    submit.add_argument(
        "--run", dest="run_only", action="store_true", help="run on the visible tests; nothing is submitted"
    )
    submit.add_argument("--json", action="store_true", help="print the verdict as JSON")
    submit.add_argument(
        "--name", help="the name a speed-graded problem's leaderboard shows (vouched for by GRADER_API_KEY, if set)"
    )
    submit.set_defaults(run=_submit)
    listing = problem_commands.add_parser("list", help="the service's problems")
    listing.add_argument("--url", help=url_help)
    listing.set_defaults(run=_remote)
    show = problem_commands.add_parser("show", help="a problem's statement, starter code and limits")
    show.add_argument("problem_id", metavar="ID")
    show.add_argument("--url", help=url_help)
    show.set_defaults(run=_remote)
    board = commands.add_parser(
        "leaderboard",
        help="a speed-graded problem's leaderboard (exit 0; 2 on an error, or for a problem without one)",
        description="Prints each entrant's best accepted speed-up over the problem's baseline, best first.",
    )
    board.add_argument("problem_id", metavar="PROBLEM_ID")
    board.add_argument("--limit", type=_entry_count, metavar="N", help="at most N entries (1 to 1000)")
    board.add_argument("--json", action="store_true", help="print the board as JSON")
    board.add_argument("--url", help=url_help)
    board.set_defaults(run=_remote)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    parser = argparse.ArgumentParser(prog="grader", description="torchjudge: a judge for PyTorch challenges")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the HTTP service")
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.set_defaults(run=_serve)
    worker = commands.add_parser(
        "worker",
        help="run a Celery worker that grades (GRADER_QUEUE=celery)",
        description="Grades what the API enqueues, with a warm sandbox pool on this machine's Docker engine. "
        "Runs until SIGTERM or SIGINT, which finish the gradings in progress first.",
    )
    worker.add_argument("--name", help="the worker's name (default: GRADER_WORKER_NAME, else the host name)")
    worker.add_argument(
        "--pool",
        choices=["threads", "solo"],
        default="threads",
        help="threads: one grading thread per warm sandbox (default); solo: one grading at a time",
    )
    worker.add_argument("--concurrency", type=int, help="grading threads (default: GRADER_POOL_SIZE)")
    worker.set_defaults(run=_worker)
    db = commands.add_parser("db", help="the database schema (migrations run by themselves at start)")
    db_commands = db.add_subparsers(dest="db_command", required=True)
    for name, text in (
        ("upgrade", "migrate the database to this build's schema"),
        ("current", "print the database's revision"),
        ("stamp", "mark the database as current without changing it (after migrating it by hand)"),
    ):
        db_commands.add_parser(name, help=text).set_defaults(run=_db)
    health = commands.add_parser("health", help="exit 0 when a URL answers 200 (container health checks)")
    health.add_argument("url", nargs="?", default="http://127.0.0.1:8000/healthz")
    health.add_argument("--timeout", type=float, default=5.0)
    health.set_defaults(run=_health)
    problems = commands.add_parser("problems", help="problem files")
    problem_commands = problems.add_subparsers(dest="problems_command", required=True)
    check = problem_commands.add_parser(
        "check",
        help="check problem files in real sandboxes",
        # A description is printed as written (only `help` strings are %-formatted): one '%' here.
        description="Checks each file: schema; the reference is accepted and deterministic; the starter code "
        "is not accepted; every pitfall fails a test; every alternative is accepted; the tolerances reject zeros "
        "and 1% noise.",
    )
    check.add_argument("paths", nargs="+", metavar="PATH")
    check.add_argument("--schema-only", action="store_true", help="validate the files only; run no sandbox")
    check.add_argument(
        "--seeds",
        type=_seed_count,
        default=None,
        metavar="N",
        help="draws of the fresh tests' inputs every step runs under (default 8; 1 to 1000)",
    )
    check.set_defaults(run=_check)
    schema = problem_commands.add_parser("schema", help="print the JSON Schema of a problem file")
    schema.set_defaults(run=_schema)
    _client_commands(commands, problem_commands)
    args = parser.parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
