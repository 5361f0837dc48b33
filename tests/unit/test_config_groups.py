"""The settings (grader/config.py): each declared once, in one group; read from its own GRADER_* variable;
checked at start-up with the variable named and no secret repeated; a copy with changes checked again."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from pydantic import ValidationError

from grader.config import FLAT, GROUPS, REPO_ROOT, Settings
from grader.config_grading import SandboxSettings
from grader.config_groups import Group


def test_every_setting_is_declared_once_in_one_group() -> None:
    flats = [flat for kind in GROUPS.values() for flat in kind.flat_names().values()]
    assert len(flats) == len(set(flats)) == len(FLAT)
    assert not set(FLAT) & set(GROUPS), "a setting named as a group could not be told from it"
    assert all(issubclass(kind, Group) for kind in GROUPS.values())
    # No field of its own on Settings, and no second declaration of a group's fields anywhere in grader/.
    declared: dict[str, list[str]] = {}
    for path in (REPO_ROOT / "grader").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and node.name.endswith("Settings"):
                fields = [item.target.id for item in node.body if isinstance(item, ast.AnnAssign)]
                fields = [field for field in fields if isinstance(field, str)]
                declared.setdefault(node.name, []).extend(fields)
    assert sorted(declared.pop("Settings")) == sorted(GROUPS)
    assert sorted(declared) == sorted(kind.__name__ for kind in GROUPS.values())


def test_each_setting_is_read_from_its_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GRADER_SANDBOX_IMAGE", "judge-image:7")
    monkeypatch.setenv("grader_run_wait_s", "12.5")  # any case, as the variables were read before
    monkeypatch.setenv("GRADER_QUEUE", "celery")
    monkeypatch.setenv("GRADER_POOL_SIZE", "3")
    monkeypatch.setenv("GRADER_SANDBOX", '{"image": "not read"}')  # a group is not a variable
    settings = Settings(data_dir=tmp_path, webhook_secret="whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
    assert (settings.sandbox.image, settings.runs.wait_s, settings.queueing.backend, settings.sandbox.pool_size) == (
        "judge-image:7",
        12.5,
        "celery",
        3,
    )
    assert len(settings.webhooks.signing_key) >= 16
    assert settings.storage.sqlalchemy_url == f"sqlite:///{tmp_path / 'torchjudge.db'}"
    # A keyword wins over the variable, as it did.
    assert Settings(sandbox_image="other").sandbox.image == "other"


def test_every_variable_reaches_its_field(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each setting set through its variable to a value other than its default, all at once."""
    defaults = Settings()
    changed = {}
    for flat, (group, field) in FLAT.items():
        value = getattr(getattr(defaults, group), field)
        if isinstance(value, bool):
            changed[flat] = not value
        elif isinstance(value, int | float) and flat not in ("max_waiters", "max_streams"):
            changed[flat] = value + 1 if flat != "celery_visibility_timeout_s" else 7200
    for flat, value in changed.items():
        monkeypatch.setenv("GRADER_" + flat.upper(), str(value).lower() if isinstance(value, bool) else str(value))
    settings = Settings()
    for flat, value in changed.items():
        group, field = FLAT[flat]
        assert getattr(getattr(settings, group), field) == value, flat


def test_an_error_names_the_variable_and_not_a_secret() -> None:
    with pytest.raises(ValidationError, match="GRADER_SANDBOX_CPUS") as error:
        Settings(sandbox_cpus=-1)
    assert "input_value=-1" in str(error.value)
    with pytest.raises(ValidationError, match="GRADER_ADMIN_TOKEN must be at least 16") as error:
        Settings(admin_token="short-secret")
    assert "short-secret" not in str(error.value)
    with pytest.raises(ValidationError, match="GRADER_BROKER_URL") as error:
        Settings(queue="celery", broker_url="amqp://user:hunter2@broker/")
    assert "hunter2" not in str(error.value)
    with pytest.raises(ValidationError, match="GRADER_CELERY_VISIBILITY_TIMEOUT_S must outlast"):
        Settings(celery_visibility_timeout_s=100)
    with pytest.raises(ValidationError, match="Extra inputs"):
        Settings(sandbox_imgae="a typo")


def test_a_group_is_frozen_and_a_changed_copy_is_checked_again() -> None:
    settings = Settings(sandbox_reuse=5)
    with pytest.raises(ValidationError):
        settings.sandbox.reuse = 1  # type: ignore[misc]
    with pytest.raises(ValidationError):
        settings.sandbox = SandboxSettings()  # type: ignore[misc]
    changed = settings.replace(sandbox_reuse=1, api_keys="k" * 16)
    assert (changed.sandbox.reuse, changed.access.submitter_keys) == (1, ["k" * 16])
    assert (settings.sandbox.reuse, settings.access.submitter_keys) == (5, [])
    with pytest.raises(ValidationError, match="GRADER_API_KEYS"):
        settings.replace(api_keys="short")
    with pytest.raises(ValueError, match="no setting named"):
        settings.replace(sandbox_imgae="a typo")


def test_a_group_may_be_built_alone_or_given_whole() -> None:
    assert SandboxSettings() == Settings().sandbox
    assert SandboxSettings(pool_size=2, reuse=3) == SandboxSettings(**{"pool_size": 2, "reuse": 3})
    with pytest.raises(ValidationError):
        SandboxSettings(unknown=1)  # type: ignore[call-arg]
    given = Settings(sandbox=SandboxSettings(image="whole"), sandbox_image="flat")
    assert given.sandbox.image == "whole"
    for junk in (None, "junk", 5):
        with pytest.raises(ValidationError):
            Settings(access=junk)


def test_gvisor_doubles_the_pool_unless_it_is_set() -> None:
    runc, runsc = Settings(), Settings(sandbox_runtime="runsc")
    assert runsc.sandbox.pool_size == min(64, 2 * runc.sandbox.pool_size)
    assert Settings(sandbox_runtime="runsc", pool_size=3).sandbox.pool_size == 3


def test_the_cap_on_grading_starts_is_read_by_its_name_and_by_its_older_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRADER_MAX_ATTEMPTS", "5")
    assert Settings().queueing.max_grading_starts == 5
    monkeypatch.setenv("GRADER_MAX_GRADING_STARTS", "7")  # the new name wins
    assert Settings().queueing.max_grading_starts == 7
    assert Settings(max_grading_starts=2).queueing.max_grading_starts == 2
    monkeypatch.setenv("GRADER_MAX_GRADING_STARTS", "70")
    with pytest.raises(ValidationError, match="GRADER_MAX_GRADING_STARTS"):
        Settings()
