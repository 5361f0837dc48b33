"""Webhook deliveries are shared fairly between submitters and receiving hosts (grader/submissions/webhooks.py,
grader/storage/webhook_data.py): each holds at most a quarter of the senders at once, so that one client's many
deliveries to receivers that answer slowly (legally, within the timeout) delay only its own. Before, 40
submissions whose receivers answered after 9 s held a victim's webhook 44 s after its verdict (issue 41, point 2):
every sender was claimed by the flood, in the order the verdicts came. A real SQLite database; the claims as the
delivery loop makes them (no sender started, so the claims are what is looked at)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from grader.config import Settings
from grader.grading.verdict import Status, Verdict
from grader.problems.registry import Registry
from grader.storage import crud, migrate
from grader.storage.db import Database
from grader.storage.webhook_data import delivery_shares
from grader.submissions.webhooks import Deliverer


def _store(database: Database, count: int, *, address: str, url: str, key: str | None = None) -> list[str]:
    ids = []
    for _ in range(count):
        with database.session() as session:
            row = crud.create_submission(
                session,
                problem_id="p",
                problem_version="1",
                source="x = 1\n",
                client_address=address,
                api_key_hash=key,
                callback_url=url,
            )
            crud.finish_submission(session, submission_id=row.id, verdict=Verdict(status=Status.ACCEPTED, score=1.0))
        ids.append(row.id)
    return ids


def _claimed(deliverer: Deliverer) -> list[tuple[str, tuple[str, str]]]:
    found = []
    while not deliverer._ready.empty():
        item = deliverer._ready.get()
        assert item is not None
        found.append(item)
    return found


def test_a_flood_of_one_submitters_deliveries_leaves_senders_for_the_others(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'hooks.db'}")
    migrate.upgrade_to_head(database.engine)
    settings = Settings(data_dir=tmp_path, webhook_secret="s" * 32, webhook_concurrency=8)  # type: ignore[call-arg]
    deliverer = Deliverer(settings.webhooks, database, Registry(settings.limits))
    flood = _store(database, 40, address="203.0.113.7", url="https://slow.attacker.example/hook")
    victim = _store(database, 1, address="198.51.100.2", url="https://course.example/hook")
    other_host = _store(database, 3, address="203.0.113.7", url="https://other.attacker.example/hook")
    assert deliverer.share == 2
    deliverer._claim()
    claimed = _claimed(deliverer)
    ids = [submission_id for submission_id, _ in claimed]
    assert victim[0] in ids, "the victim's first attempt waits behind the flood"
    per_key = Counter(key for _, shares in claimed for key in shares)
    assert max(per_key.values()) <= deliverer.share, per_key
    assert sum(1 for i in ids if i in flood) <= deliverer.share
    assert sum(1 for i in ids if i in other_host) == 0  # the flooding submitter's share is spent already
    # The senders held stay counted until each delivery ends: a second claim takes nothing more of theirs.
    deliverer._claim()
    assert _claimed(deliverer) == []
    # One of the flood's deliveries ends (what a sender does after its attempt): the flood gets one more.
    slow = delivery_shares(None, "203.0.113.7", "https://slow.attacker.example/hook")
    ended = next(shares for submission_id, shares in claimed if shares == slow)
    with deliverer._lock:
        deliverer._busy -= 1
        deliverer._held.subtract(ended)
    deliverer._claim()
    again = _claimed(deliverer)
    assert len(again) == 1 and again[0][0] in flood and again[0][0] not in ids
