"""Every setting, declared once, in the group of the part that reads it: its type, default and bounds here,
its checks in its group. `Settings` (grader/config.py) is these groups, read from GRADER_* variables.

A field's variable is GRADER_ + its group's prefix + its name (`SandboxSettings.image`: GRADER_SANDBOX_IMAGE);
a field whose variable is named otherwise says so as its alias (`SandboxSettings.pool_size`: GRADER_POOL_SIZE).
"""

from __future__ import annotations

import base64
import binascii
from pathlib import Path
from typing import ClassVar, Literal, Self
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, model_validator

from grader.origins import HOST_NAME, parse_origin

REPO_ROOT = Path(__file__).resolve().parent.parent

# The values a few settings may take.
QueueBackend = Literal["local", "celery"]
LogFormat = Literal["text", "json"]
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]
SeedMode = Literal["pool", "fresh", "fixed"]


class Group(BaseModel):
    """A frozen group of settings, checked when it is built."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_by_name=True, validate_by_alias=True)
    prefix: ClassVar[str] = ""

    @classmethod
    def flat_names(cls) -> dict[str, str]:
        """Each field's name -> its variable's name without GRADER_, in lower case."""
        return {name: field.alias or cls.prefix + name for name, field in cls.model_fields.items()}


class HttpSettings(Group):
    """The HTTP server of an API process: where it listens, its bounds on slow requests, connections,
    waiters and streams, and who may say who the client is and which origins are its own."""

    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)
    # A request's headers must be complete this long after its connection opens (or after its first byte, on a
    # kept-alive connection), and its body this long after its headers; a slower request is cut (a body with
    # 408). uvicorn has no such bound of its own.
    header_timeout_s: float = Field(5.0, gt=0, le=300)
    body_timeout_s: float = Field(30.0, gt=0, le=3600)
    # Open connections beyond which uvicorn answers 503.
    max_connections: int = Field(1000, ge=3, le=1_000_000)
    # Requests waiting for a verdict (POST /api/submissions?wait=) and open event streams; beyond either cap a
    # new one is answered 429 with Retry-After.
    max_waiters: int = Field(256, ge=1)
    max_streams: int = Field(256, ge=1)
    # Who may say who the client is: peers (IP addresses, networks such as 10.0.0.0/8, or host names, looked up
    # again every 30 s) whose X-Forwarded-For is believed. Empty: the peer is the client.
    trusted_proxies: str = ""
    # Browsers (grader/api/edge.py): the service's own origin, as its users' browsers name it (its scheme, host
    # and port; a path is ignored). Empty: taken from each request (scheme and Host, or a trusted proxy's
    # X-Forwarded-Proto/-Host). Set it behind a proxy that rewrites Host or terminates TLS unseen.
    public_url: str = ""
    # Other origins (comma-separated, `https://host[:port]`) whose pages may call the API: CORS allows them and
    # their state-changing requests are not refused as cross-site. Empty: none, and no CORS at all.
    cors_origins: str = ""
    # Host names (comma-separated) the service answers for beyond its own (grader/api/hosts.py): its
    # GRADER_PUBLIC_URL's host, localhost, the compose stack's service names and any IP address always are; a
    # request naming another host in Host is answered 400 (a DNS-rebinding page names its own). `*`: any.
    allowed_hosts: str = ""

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.public_url.strip() and self.public_origin is None:
            raise ValueError("GRADER_PUBLIC_URL must be an http:// or https:// URL with a host (or empty)")
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
        if self.max_waiters + self.max_streams >= self.max_connections:
            raise ValueError(
                "GRADER_MAX_WAITERS + GRADER_MAX_STREAMS must stay below GRADER_MAX_CONNECTIONS, so that requests"
                " waiting for verdicts and event streams cannot take every connection"
            )
        return self

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


class AccessSettings(Group):
    """Who may do what: the admin's token, submitters' API keys, and their rate of submissions."""

    admin_token: str = ""
    # Submitter API keys, comma-separated. Empty: anyone may submit. Set: POST /api/submissions needs
    # `Authorization: Bearer <key>` or `X-API-Key: <key>`, and only a hash of the key is stored.
    api_keys: str = ""
    # Submissions per API key per minute, and per client address for anonymous submitters (a sliding window
    # over the stored submissions); 0: no limit.
    rate_limit_per_minute: int = Field(0, ge=0)

    @model_validator(mode="after")
    def _check(self) -> Self:
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
        return self

    @property
    def submitter_keys(self) -> list[str]:
        return [key.strip() for key in self.api_keys.split(",") if key.strip()]


class StorageSettings(Group):
    """Where the service keeps its state."""

    data_dir: Path = REPO_ROOT / "data"
    database_url: str = ""  # empty: a SQLite file in data_dir
    # The reference's outputs kept in the database, in MB: past it the least recently used are evicted (every
    # seed a submission may draw has its own, so without a budget the cache only grows).
    expected_cache_mb: int = Field(256, ge=1, le=1_000_000)

    @property
    def sqlalchemy_url(self) -> str:
        url = self.database_url or f"sqlite:///{self.data_dir / 'torchjudge.db'}"
        # A plain postgres:// URL means the pinned driver, psycopg 3 (SQLAlchemy would pick psycopg2).
        for plain in ("postgres://", "postgresql://"):
            if url.startswith(plain):
                return "postgresql+psycopg://" + url.removeprefix(plain)
        return url


class ProblemsSettings(Group):
    """Where problems come from (the directory, polled), and how an uploaded one is checked."""

    prefix = "problems_"
    dir: Path = REPO_ROOT / "problems"
    # How often the directory is polled for added, edited or removed files; 0 turns it off.
    poll_s: float = Field(2.0, ge=0, le=3600)
    # An upload's check runs every step under this many seeds (when a test draws fresh inputs), as many of them
    # as fit in upload_check_budget_s: a round that would end later is not started, and the report says so.
    check_seeds: int = Field(8, ge=1, le=1000, alias="check_seeds")
    upload_check_budget_s: float = Field(240.0, ge=5, le=3600, alias="upload_check_budget_s")
    # With GRADER_QUEUE=celery, an upload's check and a run (POST /api/runs) are tasks on a worker; the API
    # waits this long for the answer, then answers 504 (nothing stored).
    upload_check_timeout_s: float = Field(300.0, ge=5, le=3600, alias="upload_check_timeout_s")


class QueueSettings(Group):
    """How a stored submission reaches a grader (this process's threads, or Celery workers), its leases,
    and the workers'."""

    # "local": graded in this process. "celery": this process stores and enqueues; `grader worker` processes
    # (on any number of machines, each with its own Docker engine) grade.
    backend: QueueBackend = Field("local", alias="queue")
    max_queue: int = Field(1000, ge=1)
    # A submission whose grading was started this many times without a verdict is given up. Its old name,
    # GRADER_MAX_ATTEMPTS, is still read (an attempt is the fencing counter of a grading, not this cap).
    max_grading_starts: int = Field(3, ge=1, le=10)
    broker_url: str = "redis://127.0.0.1:6379/0"
    # The Celery queue's name, also the prefix of every Redis key and channel the deployment uses, so that
    # several deployments (or test runs) can share one Redis.
    celery_queue: str = Field("torchjudge", pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    # Redis hands an unacknowledged message to another worker after this long: it must outlast any grading, or
    # a slow submission would be delivered twice (the second delivery would find it leased).
    visibility_timeout_s: int = Field(3600, ge=60, alias="celery_visibility_timeout_s")
    # A running submission is leased to its worker, which renews the lease every lease_s / 3; when a worker dies
    # (kill -9, machine lost) its submissions are queued again once the lease runs out.
    lease_s: float = Field(30.0, ge=1, le=3600)
    # A queued submission still waiting after this long has its message sent again, in case the broker lost it
    # (a Redis restart without persistence, an API killed between storing and sending).
    redispatch_after_s: float = Field(600.0, ge=5)
    # A worker's own HTTP endpoint: /metrics for Prometheus and /healthz; 0 turns it off.
    worker_http_port: int = Field(9100, ge=0, le=65535)
    # Names the worker (Celery node name, its sandbox containers' owner); empty: the host name.
    worker_name: str = Field("", pattern=r"^[A-Za-z0-9_.-]{0,64}$")

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.backend == "celery" and not self.broker_url.startswith(("redis://", "rediss://")):
            raise ValueError("GRADER_BROKER_URL must be a redis:// or rediss:// URL with GRADER_QUEUE=celery")
        return self


class RunSettings(Group):
    """POST /api/runs (grader/submissions/runs.py): learner code runs in a pool of pool_size containers of its
    own, the reference (on a learner's custom input) in another of that size; neither is ever a grading or
    reference container. Per client (API key, else address): rate_per_minute runs started in any minute (0: no
    limit) and concurrency_per_client at once, beyond which 429; overall `concurrency` at once (0: twice
    pool_size), beyond which 503. A run waits at most wait_s for a container (then 503), and on one machine
    one past timeout_s answers 503."""

    prefix = "run_"
    timeout_s: float = Field(120.0, ge=5, le=3600)
    pool_size: int = Field(1, ge=1, le=64, alias="runs_pool_size")
    rate_per_minute: int = Field(30, ge=0)
    concurrency_per_client: int = Field(1, ge=1, le=64)
    concurrency: int = Field(0, ge=0, le=256)
    wait_s: float = Field(30.0, gt=0, le=600)


class WebhookSettings(Group):
    """Webhooks (callback_url): the HMAC key of their signature (empty: callback URLs are refused; a
    `whsec_<base64>` secret signs the Standard Webhooks header with the decoded bytes), hosts allowed although
    they resolve to internal addresses (comma-separated), how long a delivery is retried after the verdict,
    each attempt's whole deadline (lookup, connect, send, the answer's headers and body), and how many attempts
    run at once per process (one slow receiver holds one of them)."""

    prefix = "webhook_"
    secret: str = ""
    allowed_hosts: str = ""
    retry_s: float = Field(3600.0, ge=0, le=7 * 24 * 3600)
    timeout_s: float = Field(10.0, gt=0, le=120)
    concurrency: int = Field(8, ge=1, le=256)

    @model_validator(mode="after")
    def _check(self) -> Self:
        try:
            short = len(self.signing_key) < 16
        except binascii.Error:
            short = True
        if self.secret.startswith("whsec_") and short:
            raise ValueError("GRADER_WEBHOOK_SECRET: after whsec_, at least 16 bytes in base64")
        if self.secret and len(self.secret) < 16:
            raise ValueError("GRADER_WEBHOOK_SECRET must be at least 16 characters (or empty to turn webhooks off)")
        return self

    @property
    def hosts(self) -> set[str]:
        return {host.strip().lower().rstrip(".") for host in self.allowed_hosts.split(",") if host.strip()}

    @property
    def signing_key(self) -> bytes:
        """The Standard Webhooks signature's HMAC key: a `whsec_` secret's base64-decoded bytes (as their
        libraries read it), any other secret's UTF-8 bytes (`X-Torchjudge-Signature`'s key, always)."""
        if self.secret.startswith("whsec_"):
            return base64.b64decode(self.secret.removeprefix("whsec_"), validate=True)
        return self.secret.encode()


class LogSettings(Group):
    """What is logged, and how."""

    prefix = "log_"
    format: LogFormat = "text"
    level: LogLevel = "INFO"
