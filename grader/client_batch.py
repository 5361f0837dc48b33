"""`grader submit --batch PATH`: grades many solutions through POST /api/submissions/batch and writes one
JSON line per solution (its verdict, or why it was refused) to --out (default: standard output).

PATH is a folder (every `*.py` in it, sorted by name, is a solution of --problem, with the metadata
`{"file": NAME}`) or a JSON Lines file (each line an object: `source` or `file`, a path relative to the
JSONL file; optionally `problem_id` (default --problem), `metadata` and `submitter`, the name a
speed-graded problem's leaderboard shows). A speed-graded verdict's line carries its `speed`. Solutions go in
batches of at most --chunk items and about CHUNK_BYTES; a batch answered 429 is sent again after its Retry-After, under
the same per-item idempotency keys, so that nothing is graded twice. Progress goes to standard error,
as a bar on a terminal. Exit status: 0 when every solution is accepted, 1 when any is not (or was
refused), 2 on a usage or connection error."""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from grader.client import DEFAULT_URL, TIMEOUT_S, Client, ClientError, _safe

CHUNK_ITEMS = 1000
CHUNK_BYTES = 24 * 1024 * 1024  # under the server's default GRADER_MAX_BATCH_BYTES (32 MiB)
POLL_S = 1.0
MAX_RETRIES = 120  # batches answered 429 in a row before giving up


@dataclass
class Solution:
    label: str  # the file, or "line N" of a JSONL file
    item: dict[str, Any]
    id: str | None = None
    refused: dict[str, Any] | None = None


def load_solutions(path: Path, problem_id: str | None) -> list[Solution]:
    """The solutions of a folder or a JSON Lines file; ValueError saying what is wrong."""
    if path.is_dir():
        if not problem_id:
            raise ValueError("a folder of solutions needs --problem")
        files = sorted(p for p in path.iterdir() if p.suffix == ".py" and p.is_file())
        if not files:
            raise ValueError(f"no *.py file in {path}")
        return [
            Solution(
                f.name,
                {"problem_id": problem_id, "source": f.read_text(encoding="utf-8-sig"), "metadata": {"file": f.name}},
            )
            for f in files
        ]
    solutions = []
    for number, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError as exc:
            raise ValueError(f"{path}:{number}: not JSON: {exc}") from None
        if not isinstance(entry, dict):
            raise ValueError(f"{path}:{number}: each line is a JSON object")
        item = {key: value for key, value in entry.items() if key != "file"}
        if "file" in entry and "source" not in entry:
            item["source"] = (path.parent / str(entry["file"])).read_text(encoding="utf-8-sig")
        item.setdefault("problem_id", problem_id)
        if not item.get("problem_id"):
            raise ValueError(f"{path}:{number}: no problem_id (and no --problem)")
        solutions.append(Solution(str(entry.get("file") or f"line {number}"), item))
    if not solutions:
        raise ValueError(f"{path} holds no solution")
    return solutions


def _chunks(solutions: list[Solution], items: int) -> list[list[Solution]]:
    chunks: list[list[Solution]] = [[]]
    size = 0
    for solution in solutions:
        length = len(json.dumps(solution.item)) + 64
        if chunks[-1] and (len(chunks[-1]) >= items or size + length > CHUNK_BYTES):
            chunks.append([])
            size = 0
        chunks[-1].append(solution)
        size += length
    return chunks


def _post_batch(client: Client, items: list[dict[str, Any]]) -> tuple[int, dict[str, Any], float]:
    """(status, body, Retry-After) of one POST; ClientError when the service cannot be reached."""
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if client.api_key:
        headers["Authorization"] = f"Bearer {client.api_key}"
    elif client.owner_token:
        headers["X-Owner-Token"] = client.owner_token
    data = json.dumps({"items": items}).encode()
    request = urllib.request.Request(f"{client.url}/api/submissions/batch", data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:  # noqa: S310 - the user's own URL
            return response.status, json.loads(response.read()), 0.0
    except urllib.error.HTTPError as exc:
        raw = exc.read(1024 * 1024)
        try:
            body = json.loads(raw)
        except ValueError:
            body = {"detail": raw.decode("utf-8", "replace")}
        retry = exc.headers.get("Retry-After", "")
        return exc.code, body if isinstance(body, dict) else {"detail": body}, float(retry) if retry.isdigit() else 5.0
    except (urllib.error.URLError, OSError) as exc:
        raise ClientError(f"cannot reach {client.url}: {getattr(exc, 'reason', exc)}") from None


class Progress:
    """`graded N of M` on standard error: a bar redrawn in place on a terminal, a line now and then elsewhere."""

    def __init__(self, total: int, err: TextIO) -> None:
        self.total, self.err, self.tty = total, err, err.isatty()
        self.shown = -1
        self.last = 0.0

    def show(self, done: int, note: str = "") -> None:
        if done == self.shown and not note:
            return
        now = time.monotonic()
        if self.tty:
            width = 30
            filled = width * done // max(self.total, 1)
            print(
                f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{self.total} graded {note}", end="", file=self.err
            )
            self.err.flush()
        elif done == self.total or now - self.last >= 10 or note:
            print(f"{done}/{self.total} graded {note}".rstrip(), file=self.err)
            self.last = now
        self.shown = done

    def end(self) -> None:
        if self.tty:
            print(file=self.err)


def send(client: Client, solutions: list[Solution], chunk: int, progress: Progress) -> list[str]:
    """Sends every solution; the batches' ids. Each solution gets its id or its refusal."""
    run = uuid.uuid4().hex[:12]
    batch_ids = []
    for position, part in enumerate(_chunks(solutions, chunk)):
        items = [dict(s.item, idempotency_key=f"{run}-{position}-{n}") for n, s in enumerate(part)]
        for _retry in range(MAX_RETRIES):
            status, body, retry_after = _post_batch(client, items)
            if status != 429:
                break
            progress.show(progress.shown, f"(the service is busy: sending again in {retry_after:g} s)")
            time.sleep(retry_after)
        if status not in (202, 422) or "items" not in body:
            raise ClientError(f"POST /api/submissions/batch: {status} {_safe(body.get('detail'), 500)}")
        batch_ids.append(str(body["batch_id"]))
        for answer in body["items"]:
            solution = part[int(answer["index"])]
            if "id" in answer:
                solution.id = str(answer["id"])
            else:
                solution.refused = {"status": answer.get("status"), "detail": answer.get("detail")}
    return batch_ids


def follow(client: Client, batch_ids: list[str], solutions: list[Solution], progress: Progress) -> None:
    """Waits until every batch is graded, showing progress."""
    refused = sum(1 for solution in solutions if solution.refused is not None)
    while True:
        final = sum(int(client.get(f"/api/batches/{batch_id}?include=false")["final"]) for batch_id in batch_ids)
        progress.show(final + refused)
        if final + refused >= len(solutions):
            return
        time.sleep(POLL_S)


def _fast_p(client: Client, batch_ids: list[str]) -> str:
    """KernelBench's fast_p over the batches' items of speed-graded problems (their summaries', added up), or ""."""
    items = fast_1 = fast_threshold = judge_errors = 0.0
    for batch_id in batch_ids:
        try:
            found = client.get(f"/api/batches/{batch_id}?include=false").get("fast_p")
        except ClientError:
            return ""
        if isinstance(found, dict) and all(
            type(found.get(k)) in (int, float) for k in ("items", "fast_1", "fast_threshold")
        ):
            items += found["items"]
            judge_errors += found.get("judge_errors") if type(found.get("judge_errors")) is int else 0
            fast_1 += found["fast_1"] * found["items"]
            fast_threshold += found["fast_threshold"] * found["items"]
    if not items:
        return ""
    return (
        f"; of {items:.0f} items of speed-graded problems, fast_1 {fast_1 / items:.3f} (correct and faster than the "
        f"baseline), fast at the threshold {fast_threshold / items:.3f}"
        + (f" ({judge_errors:.0f} the judge failed on, counted as not fast: submit them again)" if judge_errors else "")
    )


def main_batch(
    path: str, problem_id: str | None, url: str | None, out_path: str | None, chunk: int = CHUNK_ITEMS
) -> int:
    try:
        solutions = load_solutions(Path(path), problem_id)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    client = Client(url or os.environ.get("GRADER_URL", DEFAULT_URL), os.environ.get("GRADER_API_KEY"))
    progress = Progress(len(solutions), sys.stderr)
    started = time.monotonic()
    try:
        out: TextIO = open(out_path, "w", encoding="utf-8") if out_path else sys.stdout  # noqa: SIM115
    except OSError as exc:
        print(f"error: cannot write {out_path}: {exc}", file=sys.stderr)
        return 2
    counts: dict[str, int] = {}
    try:
        batch_ids = send(client, solutions, max(1, min(chunk, CHUNK_ITEMS)), progress)
        follow(client, batch_ids, solutions, progress)
        progress.end()
        for index, solution in enumerate(solutions):
            if solution.id is None:
                line: dict[str, Any] = {"index": index, "file": solution.label, "refused": solution.refused}
                status = "refused"
            else:
                verdict = client.get(f"/api/submissions/{solution.id}")
                line = {"index": index, "file": solution.label, **verdict}
                status = str(verdict.get("status"))
            counts[status] = counts.get(status, 0) + 1
            print(json.dumps(line), file=out)
    except ClientError as exc:
        progress.end()
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        if out is not sys.stdout:
            out.close()
    took = time.monotonic() - started
    summary = ", ".join(f"{count} {status}" for status, count in sorted(counts.items()))
    print(f"{len(solutions)} solutions in {took:.1f} s: {summary}{_fast_p(client, batch_ids)}", file=sys.stderr)
    return 0 if counts.get("accepted", 0) == len(solutions) else 1
