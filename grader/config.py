"""One typed settings object, read once from GRADER_* environment variables; bad values stop start-up."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

REPO_ROOT = Path(__file__).resolve().parent.parent


def _default_pool_size() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="GRADER_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)
    data_dir: Path = REPO_ROOT / "data"
    database_url: str = ""  # empty: a SQLite file in data_dir
    problems_dir: Path = REPO_ROOT / "problems"
    # How often the problems directory is polled for added, edited or removed files; 0 turns it off.
    problems_poll_s: float = Field(2.0, ge=0, le=3600)
    admin_token: str = ""

    queue: Literal["local"] = "local"
    max_queue: int = Field(1000, ge=1)
    max_attempts: int = Field(3, ge=1, le=10)

    sandbox_image: str = "torchjudge-sandbox"
    sandbox_runtime: str = "runc"
    pool_size: int = Field(default_factory=_default_pool_size, ge=1, le=64)
    # Jobs a warm container serves before it is replaced; 1 gives a fresh container per submission
    # (still started ahead of time, in the background).
    sandbox_reuse: int = Field(100, ge=1)
    sandbox_cpus: float = Field(1.0, gt=0, le=64)
    sandbox_pids_limit: int = Field(128, ge=16, le=4096)
    sandbox_tmpfs_mb: int = Field(64, ge=1, le=4096)
    # What the runner itself (python + torch, warmed up) needs on top of a problem's memory limit.
    sandbox_memory_overhead_mb: int = Field(512, ge=128)
    sandbox_start_timeout_s: float = Field(60.0, gt=0)
    # How long a submission waits for a free warm sandbox before the judge gives up (internal_error).
    sandbox_acquire_timeout_s: float = Field(120.0, gt=0)
    max_result_bytes: int = Field(16 * 1024 * 1024, ge=1024)
    compile_time_s: float = Field(10.0, gt=0, le=120)

    default_time_s: float = Field(2.0, gt=0, le=60)
    default_memory_mb: int = Field(1024, ge=64, le=16384)
    default_output_kb: int = Field(256, ge=1, le=65536)
    max_source_bytes: int = Field(64 * 1024, ge=1)

    @model_validator(mode="after")
    def _check(self) -> Settings:
        if self.admin_token and len(self.admin_token) < 16:
            raise ValueError("GRADER_ADMIN_TOKEN must be at least 16 characters (or empty to turn uploads off)")
        return self

    @property
    def sqlalchemy_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'torchjudge.db'}"


@lru_cache
def get_settings() -> Settings:
    return Settings()
