"""Prometheus metrics: GET /metrics on the API, and on each worker's own small HTTP endpoint.

Counted where things happen (grading latency and verdicts in the process that grades; submissions
created and refused in the API), and read at scrape time for state (submissions by status, from the
database; queue depth; this process's sandbox containers by state). Each service has its own registry,
so that several services in one process (the tests) never share series.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from grader.grading.verdict import Status
from grader.storage import crud
from grader.storage.db import Database

log = logging.getLogger(__name__)

# No `*_created` timestamp series next to every counter and histogram: they double the output for nothing.
disable_created_metrics()

# Grading of one submission: a compile error takes milliseconds, a submission whose every test times
# out takes tests x time limit.
LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
# One phase of one submission: most take milliseconds.
PHASE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 10.0)
# One webhook attempt: milliseconds to a receiver nearby, up to GRADER_WEBHOOK_TIMEOUT_S (at most 120 s).
WEBHOOK_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 120.0)


class Metrics:
    """Counters and histograms, plus what is read at each scrape: the database's submissions by status,
    the queue's depth and the sandbox pool's containers (callables, asked at scrape time)."""

    def __init__(self, db: Database, queue_depth: Callable[[], int], pool_status: Callable[[], dict[str, int]]) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.grading_seconds = Histogram(
            "torchjudge_grading_seconds",
            "Time from a worker taking a submission to its stored verdict, by verdict",
            ["status"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.queue_wait_seconds = Histogram(
            "torchjudge_queue_wait_seconds",
            "Time from a submission being stored (or queued again) to a worker taking it",
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.verdicts = Counter(
            "torchjudge_verdicts", "Verdicts stored by this process, by status", ["status"], registry=self.registry
        )
        self.submissions_created = Counter(
            "torchjudge_submissions_created", "Submissions accepted by this API process", registry=self.registry
        )
        self.refused = Counter(
            "torchjudge_submissions_refused",
            "POST /api/submissions refused before storing: queue_full, rate_limited, unauthorized, too_many_waiters",
            ["reason"],
            registry=self.registry,
        )
        self.requeued = Counter(
            "torchjudge_submissions_requeued",
            "Submissions queued again because their worker's lease ran out (a worker lost mid-grading)",
            registry=self.registry,
        )
        self.given_up = Counter(
            "torchjudge_submissions_given_up",
            "Submissions ended as internal_error because their grading was started GRADER_MAX_GRADING_STARTS times"
            " without finishing (their grader lost each time)",
            registry=self.registry,
        )
        self.phase_seconds = Histogram(
            "torchjudge_phase_seconds",
            "Where a graded submission's time went, by phase (grader/phases.py); `make bench` prints the means",
            ["phase"],
            buckets=PHASE_BUCKETS,
            registry=self.registry,
        )
        self.phase_samples = Counter(
            "torchjudge_phase_samples", "Submissions whose phases were recorded", registry=self.registry
        )
        self.webhook_attempts = Counter(
            "torchjudge_webhook_attempts",
            "Webhook attempts made by this process, by outcome: delivered (2xx), rejected (another status, 3xx"
            " included: redirects are not followed), timeout (cut at GRADER_WEBHOOK_TIMEOUT_S), error (no HTTP"
            " answer), refused (the address is no longer acceptable)",
            ["outcome"],
            registry=self.registry,
        )
        self.webhook_deliveries = Counter(
            "torchjudge_webhook_deliveries",
            "Webhook deliveries ended by this process: delivered, or failed (retried for GRADER_WEBHOOK_RETRY_S)",
            ["result"],
            registry=self.registry,
        )
        self.webhook_seconds = Histogram(
            "torchjudge_webhook_attempt_seconds",
            "Time one webhook attempt took, from its lookup to the receiver's answer (or the deadline)",
            buckets=WEBHOOK_BUCKETS,
            registry=self.registry,
        )
        self.registry.register(_StateCollector(db, queue_depth, pool_status))

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _StateCollector(Collector):
    """Read at each scrape: what is true now rather than what happened."""

    def __init__(self, db: Database, queue_depth: Callable[[], int], pool_status: Callable[[], dict[str, int]]) -> None:
        self.db = db
        self.queue_depth = queue_depth
        self.pool_status = pool_status

    def describe(self) -> list[GaugeMetricFamily]:
        # Without describe() the registry would collect (query the database) on registration.
        return []

    def collect(self) -> Iterator[GaugeMetricFamily]:
        database_up = 1
        by_status: dict[str, int] = {}
        try:
            with self.db.session() as session:
                by_status = crud.count_by_status(session)
        except Exception as exc:  # a scrape must answer even while the database does not
            log.warning("metrics: the database did not answer: %s", exc)
            database_up = 0
        up = GaugeMetricFamily("torchjudge_database_up", "Whether the database answered this scrape")
        up.add_metric([], database_up)
        yield up
        if database_up:
            submissions = GaugeMetricFamily(
                "torchjudge_submissions", "Stored submissions by status (the whole database)", labels=["status"]
            )
            for status in Status:
                submissions.add_metric([status.value], by_status.get(status.value, 0))
            yield submissions
        try:
            depth = self.queue_depth()
        except Exception:  # celery mode counts in the database: same reason as above
            depth = None
        if depth is not None:
            queue = GaugeMetricFamily("torchjudge_queue_depth", "Submissions waiting for a grader")
            queue.add_metric([], depth)
            yield queue
        pool = self.pool_status()
        containers = GaugeMetricFamily(
            "torchjudge_sandbox_containers", "This process's warm sandbox containers by state", labels=["state"]
        )
        for state in ("idle", "busy", "starting"):
            containers.add_metric([state], pool[state])
        yield containers
        size = GaugeMetricFamily("torchjudge_sandbox_pool_size", "Warm sandbox containers this process keeps")
        size.add_metric([], pool["size"])
        yield size
        cold = CounterMetricFamily(
            "torchjudge_sandbox_cold_handbacks",
            "Containers taken back after a job without their next job's child prepared and warm",
        )
        cold.add_metric([], pool["cold_handbacks"])
        yield cold


def serve_worker_http(
    render: Callable[[], bytes], health: Callable[[], tuple[bool, dict[str, object]]], host: str, port: int
) -> ThreadingHTTPServer:
    """A worker's own endpoint: /metrics, and /healthz (200 once its sandbox pool is warm, else 503)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the name http.server dispatches to)
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                body, status, content_type = render(), 200, CONTENT_TYPE_LATEST
            elif path == "/healthz":
                ready, state = health()
                body, status, content_type = json.dumps(state).encode(), 200 if ready else 503, "application/json"
            else:
                body, status, content_type = b"not found\n", 404, "text/plain"
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class's name)
            pass  # scrapes every few seconds would drown the worker's log

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="worker-http", daemon=True).start()
    return server
