"""The settings' groups (grader/config_groups.py): every field of the flat Settings in exactly one group, read
from the same GRADER_* variable, and each group built afresh from the fields as they are."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from grader.config import Settings
from grader.config_groups import Group, SandboxSettings

GROUPS = [name for name, value in vars(Settings).items() if isinstance(value, property)]


def _groups(settings: Settings) -> dict[str, Group]:
    return {name: value for name in GROUPS if isinstance(value := getattr(settings, name), Group)}


def test_every_field_is_in_exactly_one_group() -> None:
    owners: dict[str, list[str]] = {}
    for name, group in _groups(Settings()).items():
        for flat in type(group).flat_names().values():
            owners.setdefault(flat, []).append(name)
    assert set(owners) == set(Settings.model_fields), set(owners) ^ set(Settings.model_fields)
    assert {flat: groups for flat, groups in owners.items() if len(groups) > 1} == {}


def test_a_group_holds_the_values_of_its_fields(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRADER_SANDBOX_IMAGE", "judge-image:7")
    monkeypatch.setenv("GRADER_RUN_WAIT_S", "12.5")
    monkeypatch.setenv("GRADER_QUEUE", "celery")
    settings = Settings(data_dir=tmp_path, webhook_secret="whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
    for group in _groups(settings).values():
        for name, flat in type(group).flat_names().items():
            assert getattr(group, name) == getattr(settings, flat), (type(group).__name__, name)
    assert (settings.sandbox.image, settings.runs.wait_s, settings.queueing.backend) == (
        "judge-image:7",
        12.5,
        "celery",
    )
    assert settings.webhooks.signing_key == settings.webhook_signing_key and len(settings.webhook_signing_key) >= 16
    assert settings.storage.sqlalchemy_url == settings.sqlalchemy_url == f"sqlite:///{tmp_path / 'torchjudge.db'}"


def test_a_group_is_frozen_and_built_from_the_fields_as_they_are_now() -> None:
    settings = Settings(sandbox_reuse=5)
    with pytest.raises(ValidationError):
        settings.sandbox.reuse = 1  # type: ignore[misc]
    changed = settings.model_copy(update={"sandbox_reuse": 1, "api_keys": "k" * 16})
    assert (changed.sandbox.reuse, changed.access.submitter_keys) == (1, ["k" * 16])
    assert (settings.sandbox.reuse, settings.access.submitter_keys) == (5, [])


def test_a_group_may_be_made_by_its_own_names_or_by_the_settings_names() -> None:
    values = SandboxSettings.flat_names()
    built = SandboxSettings.of(Settings())
    assert SandboxSettings(**{name: getattr(built, name) for name in values}) == built
    assert SandboxSettings(**{flat: getattr(built, name) for name, flat in values.items()}) == built
    with pytest.raises(ValidationError):
        SandboxSettings(**built.model_dump(), unknown=1)


def test_the_cap_on_grading_starts_is_read_by_its_name_and_by_its_older_one(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("GRADER_MAX_ATTEMPTS", "5")
    assert Settings().max_grading_starts == 5
    assert Settings().queueing.max_grading_starts == 5
    monkeypatch.setenv("GRADER_MAX_GRADING_STARTS", "7")  # the new name wins
    assert Settings().max_grading_starts == 7
    assert Settings(max_grading_starts=2).max_grading_starts == 2
    monkeypatch.setenv("GRADER_MAX_GRADING_STARTS", "70")
    with pytest.raises(ValidationError, match="GRADER_MAX_GRADING_STARTS"):
        Settings()
