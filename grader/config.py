"""One typed settings object, read once from GRADER_* environment variables; bad values stop start-up.
Each part of the service is given its group of them (grader/config_groups.py), built by a property here."""

from __future__ import annotations

import binascii
import os
from functools import lru_cache
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import AliasChoices, Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from grader.config_groups import (
    AccessSettings,
    HttpSettings,
    JudgeSettings,
    LimitsSettings,
    LogFormat,
    LogLevel,
    LogSettings,
    ProblemsSettings,
    QueueBackend,
    QueueSettings,
    RunSettings,
    SandboxSettings,
    SeedMode,
    SeedSettings,
    StorageSettings,
    WebhookSettings,
)
from grader.origins import HOST_NAME, parse_origin

REPO_ROOT = Path(__file__).resolve().parent.parent


def _default_pool_size() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="GRADER_", extra="ignore", validate_by_name=True)

    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)
    data_dir: Path = REPO_ROOT / "data"
    database_url: str = ""  # empty: a SQLite file in data_dir
    # The reference's outputs kept in the database, in MB: past it the least recently used are evicted
    # (every seed a submission may draw has its own, so without a budget the cache only grows).
    expected_cache_mb: int = Field(256, ge=1, le=1_000_000)
    problems_dir: Path = REPO_ROOT / "problems"
    # How often the problems directory is polled for added, edited or removed files; 0 turns it off.
    problems_poll_s: float = Field(2.0, ge=0, le=3600)
    admin_token: str = ""

    # "local": graded in this process. "celery": this process stores and enqueues; `grader worker`
    # processes (on any number of machines, each with its own Docker engine) grade.
    queue: QueueBackend = "local"
    max_queue: int = Field(1000, ge=1)
    # A submission whose grading was started this many times without a verdict is given up. Its old name,
    # GRADER_MAX_ATTEMPTS, is still read (an attempt is the fencing counter of a grading, not this cap).
    max_grading_starts: int = Field(
        3, ge=1, le=10, validation_alias=AliasChoices("GRADER_MAX_GRADING_STARTS", "GRADER_MAX_ATTEMPTS")
    )
    broker_url: str = "redis://127.0.0.1:6379/0"
    # The Celery queue's name, also the prefix of every Redis key and channel the deployment uses, so that
    # several deployments (or test runs) can share one Redis.
    celery_queue: str = Field("torchjudge", pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    # Redis hands an unacknowledged message to another worker after this long: it must outlast any
    # grading, or a slow submission would be delivered twice (the second delivery would find it leased).
    celery_visibility_timeout_s: int = Field(3600, ge=60)
    # A running submission is leased to its worker, which renews the lease every lease_s / 3; when a
    # worker dies (kill -9, machine lost) its submissions are queued again once the lease runs out.
    lease_s: float = Field(30.0, ge=1, le=3600)
    # A queued submission still waiting after this long has its message sent again, in case the broker
    # lost it (a Redis restart without persistence, an API killed between storing and sending).
    redispatch_after_s: float = Field(600.0, ge=5)
    # With GRADER_QUEUE=celery, an upload's check and a run (POST /api/runs) are tasks on a worker; the API
    # waits this long for the answer, then answers 504 (nothing stored). On one machine a run past
    # run_timeout_s answers 503.
    upload_check_timeout_s: float = Field(300.0, ge=5, le=3600)
    # An upload's check runs every step under this many seeds (when a test draws fresh inputs), as many of
    # them as fit in upload_check_budget_s: a round that would end later is not started, and the report says so.
    check_seeds: int = Field(8, ge=1, le=1000)
    upload_check_budget_s: float = Field(240.0, ge=5, le=3600)
    run_timeout_s: float = Field(120.0, ge=5, le=3600)
    # Runs (POST /api/runs, grader/submissions/runs.py): learner code runs in a pool of runs_pool_size
    # containers of its own, the reference (on a learner's custom input) in another of that size; neither
    # is ever a grading or reference container. Per client (API key, else address): run_rate_per_minute
    # runs started in any minute (0: no limit) and run_concurrency_per_client at once, beyond which 429;
    # overall run_concurrency at once (0: twice runs_pool_size), beyond which 503. A run waits at most
    # run_wait_s for a container (then 503).
    runs_pool_size: int = Field(1, ge=1, le=64)
    run_rate_per_minute: int = Field(30, ge=0)
    run_concurrency_per_client: int = Field(1, ge=1, le=64)
    run_concurrency: int = Field(0, ge=0, le=256)
    run_wait_s: float = Field(30.0, gt=0, le=600)
    # A worker's own HTTP endpoint: /metrics for Prometheus and /healthz; 0 turns it off.
    worker_http_port: int = Field(9100, ge=0, le=65535)
    # Names the worker (Celery node name, its sandbox containers' owner); empty: the host name.
    worker_name: str = Field("", pattern=r"^[A-Za-z0-9_.-]{0,64}$")

    # Submitter API keys, comma-separated. Empty: anyone may submit. Set: POST /api/submissions needs
    # `Authorization: Bearer <key>` or `X-API-Key: <key>`, and only a hash of the key is stored.
    api_keys: str = ""
    # Submissions per API key per minute, and per client address for anonymous submitters (a sliding
    # window over the stored submissions); 0: no limit.
    rate_limit_per_minute: int = Field(0, ge=0)
    # Who may say who the client is: peers (IP addresses, networks such as 10.0.0.0/8, or host names,
    # looked up again every 30 s) whose X-Forwarded-For is believed. Empty: the peer is the client.
    trusted_proxies: str = ""
    # Browsers (grader/api/edge.py): the service's own origin, as its users' browsers name it (its scheme,
    # host and port; a path is ignored). Empty: taken from each request (scheme and Host, or a trusted
    # proxy's X-Forwarded-Proto/-Host). Set it behind a proxy that rewrites Host or terminates TLS unseen.
    public_url: str = ""
    # Other origins (comma-separated, `https://host[:port]`) whose pages may call the API: CORS allows them
    # and their state-changing requests are not refused as cross-site. Empty: none, and no CORS at all.
    cors_origins: str = ""
    # Host names (comma-separated) the service answers for beyond its own (grader/api/hosts.py): its
    # GRADER_PUBLIC_URL's host, localhost, the compose stack's service names and any IP address always are;
    # a request naming another host in Host is answered 400 (a DNS-rebinding page names its own). `*`: any.
    allowed_hosts: str = ""

    # HTTP, per API process. A request's headers must be complete this long after its connection opens
    # (or after its first byte, on a kept-alive connection), and its body this long after its headers;
    # a slower request is cut (a body with 408). uvicorn has no such bound of its own.
    header_timeout_s: float = Field(5.0, gt=0, le=300)
    body_timeout_s: float = Field(30.0, gt=0, le=3600)
    # Open connections beyond which uvicorn answers 503.
    max_connections: int = Field(1000, ge=3, le=1_000_000)
    # Requests waiting for a verdict (POST /api/submissions?wait=) and open event streams; beyond either
    # cap a new one is answered 429 with Retry-After.
    max_waiters: int = Field(256, ge=1)
    max_streams: int = Field(256, ge=1)

    # Webhooks (callback_url): the HMAC key of their signature (empty: callback URLs are refused; a
    # `whsec_<base64>` secret signs the Standard Webhooks header with the decoded bytes), hosts allowed
    # although they resolve to internal addresses (comma-separated), how long a delivery is retried
    # after the verdict, each attempt's whole deadline (lookup, connect, send, the answer's headers and
    # body), and how many attempts run at once per process (one slow receiver holds one of them).
    webhook_secret: str = ""
    webhook_allowed_hosts: str = ""
    webhook_retry_s: float = Field(3600.0, ge=0, le=7 * 24 * 3600)
    webhook_timeout_s: float = Field(10.0, gt=0, le=120)
    webhook_concurrency: int = Field(8, ge=1, le=256)

    log_format: LogFormat = "text"
    log_level: LogLevel = "INFO"

    sandbox_image: str = "torchjudge-sandbox"
    sandbox_runtime: str = "runc"
    pool_size: int = Field(default_factory=_default_pool_size, ge=1, le=64)
    # Jobs a warm container serves before it is replaced; 1 gives a fresh container per submission
    # (still started ahead of time, in the background). Between two jobs the runner kills every process
    # of the last one and wipes what it could write, so replacing is hygiene, not isolation; and a start
    # (torch imported, the image's files read, warmed up) costs seconds of CPU, spread over the jobs it
    # serves (docs/BENCHMARKS.md, "Costs behind the code").
    sandbox_reuse: int = Field(1000, ge=1)
    sandbox_cpus: float = Field(1.0, gt=0, le=64)
    sandbox_pids_limit: int = Field(128, ge=16, le=4096)
    sandbox_tmpfs_mb: int = Field(64, ge=1, le=4096)
    # What the runner itself (python + torch, warmed up) needs on top of a problem's memory limit.
    sandbox_memory_overhead_mb: int = Field(768, ge=128)
    sandbox_start_timeout_s: float = Field(60.0, gt=0)
    # Every file of the image read into the host's page cache: by the pool at start, and by each
    # container's runner before it serves (not under gVisor). Closes the "make resident" direction of
    # the page-cache channel between sandboxes (SECURITY.md); off only to measure that channel
    # (bench/page_cache_channel.py).
    sandbox_prewarm: bool = True
    # With sandbox_prewarm: the pool keeps a container that holds every page of the image locked in
    # the host's memory (the image's size, about 820 MB, once per host), so that no reclaim evicts
    # them later (grader/containers/prewarm.py). Off: the image is read once at start, and may be evicted.
    sandbox_pin_image: bool = True
    # How long a submission waits for a free warm sandbox before the judge gives up (internal_error).
    sandbox_acquire_timeout_s: float = Field(120.0, gt=0)
    max_result_bytes: int = Field(16 * 1024 * 1024, ge=1024)
    # What a sandbox returned is judged (decoded, compared, the check's expressions evaluated) in judge
    # processes of the service's own (grader/grading/isolated.py): each gets this much memory on top of
    # what it starts with and this much CPU per request, enforced by the kernel; a test whose values need
    # more is that test's error. At most judge_processes of them at once (0: one per sandbox, plus two).
    judge_memory_mb: int = Field(1024, ge=64, le=65536)
    judge_cpu_s: float = Field(10.0, gt=0, le=600)
    judge_processes: int = Field(0, ge=0, le=256)
    # Hidden tests' inputs per submission (grader/grading/seeds.py): "pool" draws from a few seeds per
    # problem version whose expected outputs are ready (each used seed_uses times, replaced in the
    # background); "fresh" a new seed every time (a reference run per submission); "fixed" one for all.
    seeds: SeedMode = "pool"
    seed_pool_size: int = Field(8, ge=1, le=1024)
    seed_uses: int = Field(16, ge=1, le=1_000_000)
    load_time_s: float = Field(10.0, gt=0, le=120)

    default_time_s: float = Field(2.0, gt=0, le=60)
    default_memory_mb: int = Field(1024, ge=64, le=16384)
    # The most memory a problem's tests may be given (its `limits.memory_mb`): every sandbox is sized for it
    # (plus the runner's overhead), each test's process is held to its own problem's limit by the kernel
    # (sandbox/runner/confine.py); a problem asking for more is refused at load, saying so.
    max_memory_mb: int = Field(4096, ge=64, le=16384)
    default_output_kb: int = Field(256, ge=1, le=65536)
    max_source_bytes: int = Field(64 * 1024, ge=1)
    # POST /api/submissions/batch: at most this many items and bytes per batch, and batches taken in at once
    # per API process (another is answered 429 with Retry-After; its body is not read).
    max_batch_items: int = Field(1000, ge=1, le=10_000)
    max_batch_bytes: int = Field(32 * 1024 * 1024, ge=1024, le=1024 * 1024 * 1024)
    batch_concurrency: int = Field(2, ge=1, le=64)
    # Where speed-graded problems may be timed (comma-separated: cpu, cuda): a problem timed on a device not
    # listed is refused at load, saying so (grader/problems/speed.py).
    devices: str = Field("cpu", pattern=r"^(cpu|cuda)(,(cpu|cuda))*$")

    def _size_pool_for_the_runtime(self) -> None:
        """Under gVisor a container's next child (its fork, and every page it first touches, each a trap into the
        runtime) takes longer to prepare than a submission takes to run: with only as many containers as cores,
        the next submission would wait for one (docs/BENCHMARKS.md, "Costs behind the code"). Unless
        GRADER_POOL_SIZE is set."""
        gvisor = "runsc" in self.sandbox_runtime or "gvisor" in self.sandbox_runtime
        if gvisor and "pool_size" not in self.model_fields_set:
            self.pool_size = min(64, 2 * self.pool_size)

    @model_validator(mode="after")
    def _check(self) -> Settings:
        if self.webhook_secret and len(self.webhook_secret) < 16:
            raise ValueError("GRADER_WEBHOOK_SECRET must be at least 16 characters (or empty to turn webhooks off)")
        try:
            short = len(self.webhook_signing_key) < 16
        except binascii.Error:
            short = True
        if self.webhook_secret.startswith("whsec_") and short:
            raise ValueError("GRADER_WEBHOOK_SECRET: after whsec_, at least 16 bytes in base64")
        if self.max_memory_mb < self.default_memory_mb:
            raise ValueError("GRADER_MAX_MEMORY_MB must be at least GRADER_DEFAULT_MEMORY_MB")
        if self.admin_token and len(self.admin_token) < 16:
            raise ValueError("GRADER_ADMIN_TOKEN must be at least 16 characters (or empty to turn uploads off)")
        keys = self.submitter_keys
        for key in keys:
            if len(key) < 16 or not key.isascii() or not key.isprintable() or " " in key:
                raise ValueError(
                    "each of GRADER_API_KEYS must be at least 16 printable ASCII characters without spaces"
                )
        if len(set(keys)) != len(keys):
            raise ValueError("GRADER_API_KEYS lists the same key twice")
        if self.queue == "celery" and not self.broker_url.startswith(("redis://", "rediss://")):
            raise ValueError("GRADER_BROKER_URL must be a redis:// or rediss:// URL with GRADER_QUEUE=celery")
        if self.celery_visibility_timeout_s <= self.sandbox_acquire_timeout_s + self.lease_s:
            raise ValueError(
                "GRADER_CELERY_VISIBILITY_TIMEOUT_S must outlast a grading: raise it above"
                f" {self.sandbox_acquire_timeout_s + self.lease_s:.0f} s"
            )
        if self.public_url.strip() and self.public_origin is None:
            raise ValueError("GRADER_PUBLIC_URL must be an http:// or https:// URL with a host (or empty)")
        self._size_pool_for_the_runtime()
        self._check_names()
        if self.max_waiters + self.max_streams >= self.max_connections:
            raise ValueError(
                "GRADER_MAX_WAITERS + GRADER_MAX_STREAMS must stay below GRADER_MAX_CONNECTIONS, so that requests"
                " waiting for verdicts and event streams cannot take every connection"
            )
        return self

    def _check_names(self) -> None:
        """GRADER_CORS_ORIGINS are origins, GRADER_ALLOWED_HOSTS host names."""
        for entry in self.cors_origins.split(","):
            if entry.strip() and parse_origin(entry) is None:
                raise ValueError(
                    f"GRADER_CORS_ORIGINS: {entry.strip()[:100]!r} is not an origin (http(s)://host[:port], no path;"
                    " `*` and `null` are not allowed)"
                )
        for entry in self.allowed_hosts.split(","):
            name = entry.strip()
            if name and name != "*" and (not HOST_NAME.fullmatch(name) or len(name) > 253):
                raise ValueError(
                    f"GRADER_ALLOWED_HOSTS: {name[:100]!r} is not a host name (letters, digits, '-' and '.', no port"
                    " or scheme), nor `*`"
                )

    # -- the groups (grader/config_groups.py): built from the fields as they are, so a model_copy has its own --
    @property
    def http(self) -> HttpSettings:
        return HttpSettings.of(self)

    @property
    def access(self) -> AccessSettings:
        return AccessSettings.of(self)

    @property
    def storage(self) -> StorageSettings:
        return StorageSettings.of(self)

    @property
    def problems(self) -> ProblemsSettings:
        return ProblemsSettings.of(self)

    @property
    def queueing(self) -> QueueSettings:
        return QueueSettings.of(self)

    @property
    def runs(self) -> RunSettings:
        return RunSettings.of(self)

    @property
    def webhooks(self) -> WebhookSettings:
        return WebhookSettings.of(self)

    @property
    def logs(self) -> LogSettings:
        return LogSettings.of(self)

    @property
    def sandbox(self) -> SandboxSettings:
        return SandboxSettings.of(self)

    @property
    def judge(self) -> JudgeSettings:
        return JudgeSettings.of(self)

    @property
    def seeding(self) -> SeedSettings:
        return SeedSettings.of(self)

    @property
    def limits(self) -> LimitsSettings:
        return LimitsSettings.of(self)

    # -- values derived from the fields --------------------------------------------------------------------
    @property
    def judge_process_cap(self) -> int:
        return self.judge_processes or self.pool_size + 2

    @property
    def proxies(self) -> list[str]:
        return [entry.strip() for entry in self.trusted_proxies.split(",") if entry.strip()]

    @property
    def public_origin(self) -> str | None:
        """GRADER_PUBLIC_URL's origin, or None when the origin is taken from each request."""
        if not self.public_url.strip():
            return None
        try:
            return parse_origin(urlsplit(self.public_url.strip())._replace(path="", query="", fragment="").geturl())
        except ValueError:  # an unbalanced [ in the host
            return None

    @property
    def served_hosts(self) -> frozenset[str] | None:
        """The names the service answers for beyond localhost, its compose names and IP addresses
        (grader/api/hosts.py): GRADER_PUBLIC_URL's host and GRADER_ALLOWED_HOSTS; None: any (`*`)."""
        names = {entry.strip().lower().rstrip(".") for entry in self.allowed_hosts.split(",") if entry.strip()}
        if "*" in names:
            return None
        public = urlsplit(self.public_origin).hostname if self.public_origin else None
        if public:  # as browsers send it: an international name in its ASCII (IDNA) form
            try:
                public = public.encode("idna").decode("ascii")
            except UnicodeError:
                pass
        return frozenset(names | ({public.lower().rstrip(".")} if public else set()))

    @property
    def cors_allowed(self) -> list[str]:
        """GRADER_CORS_ORIGINS, each normalised as browsers send it."""
        return [origin for entry in self.cors_origins.split(",") if (origin := parse_origin(entry))]

    @property
    def webhook_hosts(self) -> set[str]:
        return self.webhooks.hosts

    @property
    def webhook_signing_key(self) -> bytes:
        """WebhookSettings.signing_key."""
        return self.webhooks.signing_key

    @property
    def submitter_keys(self) -> list[str]:
        return self.access.submitter_keys

    @property
    def sqlalchemy_url(self) -> str:
        return self.storage.sqlalchemy_url


@lru_cache
def get_settings() -> Settings:
    return Settings()
