"""One typed settings object, read once from GRADER_* environment variables; bad values stop start-up.

It is the groups of grader/config_groups.py and grader/config_grading.py, each declared once there; each part
of the service is given its group (`settings.sandbox`, `settings.webhooks`, ...). A setting's variable keeps its
flat name (GRADER_SANDBOX_IMAGE is `settings.sandbox.image`), and so does its keyword when Settings is built in
code (`Settings(sandbox_image=...)`); an unknown keyword is an error.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any

from pydantic import Field, ValidationError, model_validator
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from grader.config_grading import JudgeSettings, LimitsSettings, SandboxSettings, SeedSettings
from grader.config_groups import (
    REPO_ROOT,
    AccessSettings,
    Group,
    HttpSettings,
    LogSettings,
    ProblemsSettings,
    QueueSettings,
    RunSettings,
    StorageSettings,
    WebhookSettings,
)

__all__ = ["REPO_ROOT", "Settings", "get_settings"]

PREFIX = "GRADER_"
# Settings whose values an error never repeats (a start-up error is logged).
SECRET = {"admin_token", "api_keys", "webhook_secret", "broker_url", "database_url"}
# Variables read under an older name too, when the new one is not set.
OLD_NAMES = {"max_attempts": "max_grading_starts"}


class Settings(BaseSettings):
    model_config = SettingsConfigDict(extra="forbid", frozen=True)

    http: HttpSettings = Field(default_factory=HttpSettings)
    access: AccessSettings = Field(default_factory=AccessSettings)
    storage: StorageSettings = Field(default_factory=StorageSettings)
    problems: ProblemsSettings = Field(default_factory=ProblemsSettings)
    queueing: QueueSettings = Field(default_factory=QueueSettings)
    runs: RunSettings = Field(default_factory=RunSettings)
    webhooks: WebhookSettings = Field(default_factory=WebhookSettings)
    logs: LogSettings = Field(default_factory=LogSettings)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    judge: JudgeSettings = Field(default_factory=JudgeSettings)
    seeding: SeedSettings = Field(default_factory=SeedSettings)
    limits: LimitsSettings = Field(default_factory=LimitsSettings)

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as error:
            raise _named(error) from None

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, Environment(settings_cls)

    @model_validator(mode="before")
    @classmethod
    def _fold(cls, data: Any) -> Any:
        """Flat names (the variables', or keywords) into their groups; a group given whole wins over them."""
        if not isinstance(data, dict):
            return data
        folded: dict[str, Any] = {name: {} for name in GROUPS}
        rest = {}
        for key, value in data.items():
            if key in FLAT:
                group, field = FLAT[key]
                folded[group][field] = value
            elif key not in GROUPS:
                rest[key] = value
        for key in GROUPS.keys() & data.keys():
            given = data[key].model_dump() if isinstance(data[key], Group) else data[key]
            if isinstance(given, dict):
                folded[key].update(given)
            else:
                folded[key] = given  # not a group: refused when validated
        return {**rest, **folded}

    @model_validator(mode="after")
    def _check(self) -> Settings:
        """What no group can check alone."""
        if self.queueing.visibility_timeout_s <= self.sandbox.acquire_timeout_s + self.queueing.lease_s:
            raise ValueError(
                "GRADER_CELERY_VISIBILITY_TIMEOUT_S must outlast a grading: raise it above"
                f" {self.sandbox.acquire_timeout_s + self.queueing.lease_s:.0f} s"
            )
        return self

    def replace(self, **changes: Any) -> Settings:
        """These settings with some changed (by their flat names), checked again; nothing read from the
        environment."""
        data = {name: getattr(self, name).model_dump() for name in GROUPS}
        for key, value in changes.items():
            if key not in FLAT:
                raise ValueError(f"no setting named {key!r}")
            group, field = FLAT[key]
            data[group][field] = value
        return type(self).model_validate(data)

    @property
    def judge_process_cap(self) -> int:
        return self.judge.processes or self.sandbox.pool_size + 2


def _groups() -> dict[str, type[Group]]:
    groups = {}
    for name, field in Settings.model_fields.items():
        assert isinstance(field.annotation, type) and issubclass(field.annotation, Group), name
        groups[name] = field.annotation
    return groups


GROUPS = _groups()
# Each setting's flat name (its variable's, without GRADER_, in lower case) -> its group and field.
FLAT = {flat: (group, name) for group, kind in GROUPS.items() for name, flat in kind.flat_names().items()}


class Environment(PydanticBaseSettingsSource):
    """Each setting from its GRADER_ variable (in any case), by its flat name."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        environ = {name.upper(): value for name, value in os.environ.items() if name.upper().startswith(PREFIX)}
        values = {flat: environ[key] for flat in FLAT if (key := PREFIX + flat.upper()) in environ}
        for old, new in OLD_NAMES.items():
            if new not in values and PREFIX + old.upper() in environ:
                values[new] = environ[PREFIX + old.upper()]
        return values


def _named(error: ValidationError) -> ValidationError:
    """The error, each field named by its variable (GRADER_SANDBOX_CPUS, not sandbox.cpus), repeating the value
    only of a field that is not a secret."""
    details: list[Any] = []
    for item in error.errors():
        loc, flat = item["loc"], None
        if len(loc) >= 2 and loc[0] in GROUPS and isinstance(loc[1], str):
            flat = GROUPS[str(loc[0])].flat_names().get(loc[1])
            loc = (PREFIX + flat.upper(), *loc[2:]) if flat else loc
        shown = item["input"] if flat and flat not in SECRET else "(not shown)"
        details.append(_rebuilt(item, loc, shown))
    return ValidationError.from_exception_data(error.title, details)


def _rebuilt(item: Any, loc: tuple[Any, ...], shown: Any) -> Any:
    """One error's details as from_exception_data takes them; an error type only pydantic itself raises (such as
    path_type) as a custom error of that type and message, never the original error with every input in it."""
    detail = {key: item[key] for key in ("type", "ctx") if key in item} | {"loc": loc, "input": shown}
    try:
        ValidationError.from_exception_data("", [detail])
    except (TypeError, ValueError, KeyError):
        return {"type": PydanticCustomError(str(item["type"]), str(item["msg"])), "loc": loc, "input": shown}
    return detail


@lru_cache
def get_settings() -> Settings:
    return Settings()
