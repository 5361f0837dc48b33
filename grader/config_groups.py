"""The settings in groups: each part of the service is given the group it reads, not the whole configuration.

`Settings` (grader/config.py) reads every GRADER_* variable, one flat model, and checks it; each of its group
properties (`settings.sandbox`, `settings.webhooks`, ...) builds one of these frozen models from its fields.
Within a group a field may drop its group's prefix: its alias is then the field's name in Settings
(`SandboxSettings.image` is `Settings.sandbox_image`, GRADER_SANDBOX_IMAGE). Every field of Settings is in
exactly one group (tests/unit/test_config_groups.py).
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field

# The values a few settings may take, here and in Settings alike.
QueueBackend = Literal["local", "celery"]
LogFormat = Literal["text", "json"]
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]
SeedMode = Literal["pool", "fresh", "fixed"]


class Group(BaseModel):
    """A frozen part of Settings, checked there already."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_by_name=True, validate_by_alias=True)

    @classmethod
    def flat_names(cls) -> dict[str, str]:
        """Each field's name here -> its name in Settings."""
        return {name: field.alias or name for name, field in cls.model_fields.items()}

    @classmethod
    def of(cls, settings: Any) -> Self:
        """The group, from a Settings' fields as they are now."""
        return cls.model_validate({name: getattr(settings, flat) for name, flat in cls.flat_names().items()})


class HttpSettings(Group):
    """The HTTP server of an API process: where it listens, its bounds on slow requests, connections,
    waiters and streams, and who may say who the client is and which origins are its own."""

    host: str
    port: int
    header_timeout_s: float
    body_timeout_s: float
    max_connections: int
    max_waiters: int
    max_streams: int
    trusted_proxies: str
    public_url: str
    cors_origins: str
    allowed_hosts: str


class AccessSettings(Group):
    """Who may do what: the admin's token, submitters' API keys, and their rate of submissions."""

    admin_token: str
    api_keys: str
    rate_limit_per_minute: int

    @property
    def submitter_keys(self) -> list[str]:
        return [key.strip() for key in self.api_keys.split(",") if key.strip()]


class StorageSettings(Group):
    """Where the service keeps its state."""

    data_dir: Path
    database_url: str
    expected_cache_mb: int

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

    dir: Path = Field(alias="problems_dir")
    poll_s: float = Field(alias="problems_poll_s")
    check_seeds: int
    upload_check_budget_s: float
    upload_check_timeout_s: float


class QueueSettings(Group):
    """How a stored submission reaches a grader (this process's threads, or Celery workers), its leases,
    and the workers'."""

    backend: QueueBackend = Field(alias="queue")
    max_queue: int
    max_grading_starts: int
    broker_url: str
    celery_queue: str
    visibility_timeout_s: int = Field(alias="celery_visibility_timeout_s")
    lease_s: float
    redispatch_after_s: float
    worker_http_port: int
    worker_name: str


class RunSettings(Group):
    """POST /api/runs: its pools, its limits per client and overall, and how long a run may take."""

    timeout_s: float = Field(alias="run_timeout_s")
    pool_size: int = Field(alias="runs_pool_size")
    rate_per_minute: int = Field(alias="run_rate_per_minute")
    concurrency_per_client: int = Field(alias="run_concurrency_per_client")
    concurrency: int = Field(alias="run_concurrency")
    wait_s: float = Field(alias="run_wait_s")


class WebhookSettings(Group):
    """Webhooks: their secret, the hosts allowed although internal, and their retries, deadline and senders."""

    secret: str = Field(alias="webhook_secret")
    allowed_hosts: str = Field(alias="webhook_allowed_hosts")
    retry_s: float = Field(alias="webhook_retry_s")
    timeout_s: float = Field(alias="webhook_timeout_s")
    concurrency: int = Field(alias="webhook_concurrency")

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

    format: LogFormat = Field(alias="log_format")
    level: LogLevel = Field(alias="log_level")


class SandboxSettings(Group):
    """The sandboxes: their image, runtime and resources, the warm pool, and what a job in one may take
    to load and send back."""

    image: str = Field(alias="sandbox_image")
    runtime: str = Field(alias="sandbox_runtime")
    pool_size: int
    reuse: int = Field(alias="sandbox_reuse")
    cpus: float = Field(alias="sandbox_cpus")
    pids_limit: int = Field(alias="sandbox_pids_limit")
    tmpfs_mb: int = Field(alias="sandbox_tmpfs_mb")
    memory_overhead_mb: int = Field(alias="sandbox_memory_overhead_mb")
    start_timeout_s: float = Field(alias="sandbox_start_timeout_s")
    prewarm: bool = Field(alias="sandbox_prewarm")
    pin_image: bool = Field(alias="sandbox_pin_image")
    acquire_timeout_s: float = Field(alias="sandbox_acquire_timeout_s")
    max_result_bytes: int
    load_time_s: float


class JudgeSettings(Group):
    """The processes where what sandboxes return is judged (grader/grading/isolated.py)."""

    memory_mb: int = Field(alias="judge_memory_mb")
    cpu_s: float = Field(alias="judge_cpu_s")
    processes: int = Field(alias="judge_processes")


class SeedSettings(Group):
    """Hidden tests' inputs per submission (grader/grading/seeds.py)."""

    mode: SeedMode = Field(alias="seeds")
    pool_size: int = Field(alias="seed_pool_size")
    uses: int = Field(alias="seed_uses")


class LimitsSettings(Group):
    """What a problem's tests get unless they say otherwise, the most they may ask, and how large a
    submission and a batch may be."""

    default_time_s: float
    default_memory_mb: int
    default_output_kb: int
    max_memory_mb: int
    max_source_bytes: int
    max_batch_items: int
    max_batch_bytes: int
    batch_concurrency: int
    devices: str

    @property
    def device_list(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(name.strip() for name in self.devices.split(",") if name.strip()))
