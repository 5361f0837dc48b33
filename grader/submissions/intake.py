"""Taking a submission in: its source checked, the submitter's limits, idempotent retries, storing it,
queueing it (taking it back out if the queue is full), and waiting for its verdict. Plain functions of
a class that tests call without HTTP; the route only translates (grader/api/submissions.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator, Field
from sqlalchemy.orm import Session

from grader.config_grading import LimitsSettings
from grader.config_groups import AccessSettings, QueueSettings, WebhookSettings
from grader.grading.seeds import SeedPool
from grader.grading.verdict import FINAL
from grader.metrics import Metrics
from grader.origins import client_identity
from grader.problems.registry import LoadedProblem, Registry
from grader.queue import Dispatcher, QueueFull
from grader.storage import crud
from grader.storage.db import Database
from grader.submissions.notifier import Notifier, Watch
from grader.submissions.public import SubmissionPublic, read_submission, view_of
from grader.submissions.submitters import Refused, Submitter, check_rate

# A waiting request reads the database when woken, and also after WAIT_POLL_S, then twice as long each
# time up to WAIT_POLL_MAX_S: a wake-up lost (a relay reconnecting) costs seconds, never the verdict, and
# many waiting clients do not read the database twice a second each.
WAIT_POLL_S = 1.0
WAIT_POLL_MAX_S = 5.0
QUEUE_FULL = "the grading queue is full"


@dataclass(frozen=True)
class Stored:
    submission_id: str
    replayed: bool  # an earlier request with the same Idempotency-Key made it
    taken: Any = None  # its row, when stored already taken for a grader of this process that waits
    owner: str = ""  # its submitter, for the queue's turns (owner_of)


def owner_of(submitter: Submitter, client_address: str | None) -> str:
    """Whose a submission is, for the queue's turns (origins.client_identity)."""
    return client_identity(submitter.key_hash, client_address)


BOM = "\ufeff"


def without_bom(source: str) -> str:
    """The source without the byte-order mark some editors (Windows Notepad among them) save at the start of
    a UTF-8 file: Python ignores it in a file, but not in a string given to compile()."""
    return source[1:] if source.startswith(BOM) else source


SourceText = Annotated[str, AfterValidator(without_bom)]


def plain_name(name: str) -> str:
    """A submitter's name as a leaderboard shows it: printable, no surrounding space, not empty."""
    name = name.strip()
    if not name or not name.isprintable():
        raise ValueError("a name is printable text, not empty")
    return name


SubmitterName = Annotated[str, Field(max_length=64), AfterValidator(plain_name)]


def check_source(source: str, max_bytes: int) -> None:
    """Refused (413, 422) unless the source is non-empty UTF-8 text within the size limit."""
    try:
        encoded = source.encode("utf-8")
    except UnicodeEncodeError:
        raise Refused(422, "source is not valid UTF-8 text") from None
    if len(encoded) > max_bytes:
        raise Refused(413, f"source is {len(encoded)} bytes; the limit is {max_bytes}")
    if not source.strip():
        raise Refused(422, "source is empty")


class Intake:
    def __init__(
        self,
        *,
        queueing: QueueSettings,
        access: AccessSettings,
        limits: LimitsSettings,
        webhooks: WebhookSettings,
        db: Database,
        registry: Registry,
        dispatcher: Dispatcher,
        notifier: Notifier,
        metrics: Metrics,
        seeds: SeedPool,
    ) -> None:
        self.queueing = queueing  # the queue's bound, and the lease of a submission stored already taken
        self.access = access  # the submitters' rate limit
        # What a batch's items are checked against (submissions/batches.py): the source's size, callback URLs.
        self.limits = limits
        self.webhooks = webhooks
        self.seeds = seeds
        self.db = db
        self.registry = registry
        self.dispatcher = dispatcher
        self.notifier = notifier
        self.metrics = metrics

    def problem(self, problem_id: str) -> LoadedProblem:
        problem = self.registry.get(problem_id)
        if problem is None:
            raise Refused(404, f"no problem {problem_id!r}")
        return problem

    def store(
        self,
        problem: LoadedProblem,
        source: str,
        submitter: Submitter,
        idempotency: str | None,
        *,
        seed: int | None = None,
        callback_url: str | None = None,
        client_address: str | None = None,
        metadata: dict[str, Any] | None = None,
        batch_id: str | None = None,
        check_limits: bool = True,
        name: str | None = None,
    ) -> Stored:
        """Stores a queued submission, or finds the one an earlier try with the same idempotency key made.
        Its seed (grading/seeds.py) is drawn here, unless given (an admin reproducing a verdict).
        Synchronous on purpose: within one process, two requests cannot interleave between the rate check
        and the insert. An anonymous submission records its client address, which its rate limit counts.
        `metadata` is the client's own object, `batch_id` the batch it came in, `name` the submitter's name
        (a leaderboard's); a batch checks the limits once for all of its items (`check_limits=False` for each).
        Raises Refused (rate limit, queue full, a key reused with another body)."""
        address = client_address[:64] if client_address and submitter.key_hash is None else None
        with self.db.session() as session:
            replayed = (
                crud.get_submission_by_idempotency_key(session, idempotency_key=idempotency)
                if idempotency is not None
                else None
            )
            if replayed is None:
                if check_limits:
                    self._check_limits(session, submitter, address)
                fields = {
                    "seed": seed if seed is not None else self.seeds.draw(problem),
                    "callback_url": callback_url,
                    "client_address": address,
                    "client_metadata": metadata,
                    "batch_id": batch_id,
                    "owner_hash": submitter.owner_hash if submitter.key_hash is None else None,
                    "submitter": name,
                    # A grader of this process waits: the submission is stored as it takes it (no second write).
                    "taken_for_s": self.queueing.lease_s if self.dispatcher.idle > 0 else None,
                }
                if idempotency is None:
                    submission = crud.create_submission(
                        session,
                        problem_id=problem.id,
                        problem_version=problem.version,
                        source=source,
                        api_key_hash=submitter.key_hash,
                        **fields,  # type: ignore[arg-type]
                    )
                else:
                    try:
                        submission, created = crud.create_submission_once(
                            session,
                            problem_id=problem.id,
                            problem_version=problem.version,
                            source=source,
                            api_key_hash=submitter.key_hash,
                            idempotency_key=idempotency,
                            **fields,
                        )
                    except LookupError:
                        raise Refused(409, "a request with this Idempotency-Key was refused; retry") from None
                    if not created:
                        replayed = submission
            else:
                submission = replayed
            if replayed is not None and (replayed.problem_id, replayed.source, replayed.client_metadata) != (
                problem.id,
                source,
                metadata,
            ):
                raise Refused(422, "this Idempotency-Key was already used with a different request body")
            if replayed is not None:
                return Stored(submission.id, True)
            taken = submission if fields["taken_for_s"] is not None else None
            return Stored(submission.id, False, taken, owner_of(submitter, address))

    def _check_limits(self, session: Session, submitter: Submitter, client_address: str | None) -> None:
        try:
            check_rate(session, submitter, self.access.rate_limit_per_minute, client_address)
        except Refused:
            self.metrics.refused.labels("rate_limited").inc()
            raise
        if self.dispatcher.depth >= self.queueing.max_queue:
            self.metrics.refused.labels("queue_full").inc()
            raise Refused(429, QUEUE_FULL, reason="queue_full", headers={"Retry-After": "5"})

    def dispatch(self, stored: Stored) -> None:
        """Hands a new submission to the graders; if the queue is full, it is deleted again and Refused (429).
        Blocking with Celery (it writes a lease and talks to the broker): then call it off the event loop."""
        if stored.replayed:
            return
        try:
            if stored.taken is not None:
                self.dispatcher.submit_taken(stored.submission_id, stored.taken, stored.owner)
            else:
                self.dispatcher.submit(stored.submission_id, stored.owner)
        except QueueFull:
            with self.db.session() as session:
                crud.delete_submission(session, submission_id=stored.submission_id)
            self.metrics.refused.labels("queue_full").inc()
            raise Refused(429, QUEUE_FULL, reason="queue_full", headers={"Retry-After": "5"}) from None
        self.metrics.submissions_created.inc()

    def read(self, submission_id: str, *, admin: bool = False) -> SubmissionPublic | None:
        """The public view; with `admin`, the admin's (every test whole, and the seed)."""
        view = read_submission(self.db, self.registry, submission_id, admin=admin)
        return view.public if view is not None else None

    def _latest(self, submission_id: str, event: Watch) -> SubmissionPublic | None:
        if event.row is not None:
            public = view_of(event.row, self.registry).public
            if public.status in FINAL:
                return public
        return self.read(submission_id)

    async def wait(
        self,
        submission_id: str,
        seconds: float,
        watch: Watch | None = None,
        gone: Callable[[], Awaitable[bool]] | None = None,
        pending: bool = False,
    ) -> SubmissionPublic | None:
        """The submission once final, within `seconds`; else its current view. `watch`, when given, is a
        Notifier event taken before the submission could change (so that no wake-up is missed); `gone`
        says whether whoever waits has left (then waiting stops at once). `pending`: the caller knows it is
        not final yet (it was just stored), so the database is first read when the Notifier says it is.
        A verdict stored by a grader of this process comes with the wake-up: it is not read back."""
        deadline = time.monotonic() + seconds
        event = watch or self.notifier.watch(submission_id, final_only=True)
        public: SubmissionPublic | None = None
        read = not pending
        poll = WAIT_POLL_S
        try:
            while True:
                if read:
                    public = self._latest(submission_id, event)
                    if public is None or public.status in FINAL:
                        return public
                read = True
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return public if public is not None else self.read(submission_id)
                if gone is not None and await gone():
                    return public
                try:
                    # Woken by the Notifier (relayed from the workers under Celery); the timeout is the
                    # database poll that covers a missed wake-up.
                    await asyncio.wait_for(event.wait(), timeout=min(remaining, poll))
                except TimeoutError:
                    poll = min(poll * 2, WAIT_POLL_MAX_S)
                event.clear()
        finally:
            if watch is None:
                self.notifier.unwatch(submission_id, event)
