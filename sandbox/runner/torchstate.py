"""Torch's and NumPy's process-wide settings, put back before every test.

A test's inputs are made by the test's own code (`torch.tensor([...])` without a dtype, `torch.randn`), so a
submission that sets a default dtype at import, turns grad mode off in one test, or asks for deterministic
algorithms would change what the reference and the submission are asked, and what the next test does. Each
setting is read once, when the child starts (the judge's own state), and put back before each test; the
names of those a test left changed are reported with its result, so that the problem check can name a
reference or a test that leaks them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch._tensor_str


def _printoptions() -> dict[str, Any]:
    return dict(vars(torch._tensor_str.PRINT_OPTS))


def _set_printoptions(options: dict[str, Any]) -> None:
    torch.set_printoptions(**options)


def _deterministic() -> tuple[bool, bool]:
    return torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()


def _set_deterministic(state: tuple[bool, bool]) -> None:
    torch.use_deterministic_algorithms(state[0], warn_only=state[1])


def _anomaly() -> tuple[bool, bool]:
    return torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()


def _set_anomaly(state: tuple[bool, bool]) -> None:
    torch.autograd.set_detect_anomaly(state[0], check_nan=state[1])


def _numpy_errors() -> dict[str, str]:
    return dict(np.geterr())


def _set_numpy_errors(state: dict[str, str]) -> None:
    np.seterr(**state)


# name -> (read it, set it)
SETTINGS: dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]] = {
    "default dtype": (torch.get_default_dtype, torch.set_default_dtype),
    "default device": (lambda: str(torch.get_default_device()), torch.set_default_device),
    "grad mode": (torch.is_grad_enabled, torch.set_grad_enabled),
    "deterministic algorithms": (_deterministic, _set_deterministic),
    "anomaly mode": (_anomaly, _set_anomaly),
    "number of threads": (torch.get_num_threads, torch.set_num_threads),
    "float32 matmul precision": (torch.get_float32_matmul_precision, torch.set_float32_matmul_precision),
    "print options": (_printoptions, _set_printoptions),
    "autocast": (lambda: torch.is_autocast_enabled("cpu"), lambda on: torch.set_autocast_enabled("cpu", on)),
    "mkldnn": (lambda: torch.backends.mkldnn.enabled, lambda on: setattr(torch.backends.mkldnn, "enabled", on)),
    "numpy error handling": (_numpy_errors, _set_numpy_errors),
}


def snapshot() -> dict[str, Any]:
    """Every setting as it is now."""
    return {name: read() for name, (read, _) in SETTINGS.items()}


def changed(saved: dict[str, Any]) -> list[str]:
    """The names of the settings that differ from `saved` (none is put back)."""
    try:
        return [name for name, (read, _) in SETTINGS.items() if read() != saved[name]]
    except BaseException:  # noqa: BLE001 - a submission may have broken a getter: the test that uses it says so
        return []


def restore(saved: dict[str, Any]) -> list[str]:
    """Each setting that differs from `saved` put back; the names of those that differed."""
    changed = []
    for name, (read, write) in SETTINGS.items():
        if read() != saved[name]:
            changed.append(name)
            write(saved[name])
    return changed


# The sandbox has one CPU: a module's thread count is never applied to its calls (a pool it asked for at import
# would only start threads the confinement refuses).
JUDGE_ONLY = frozenset({"number of threads"})


class LearnerSettings:
    """The settings a submission's import left, in force while its own code runs and never outside it.

    A module that sets `torch.set_default_dtype(torch.float64)` at import and relies on it in its arithmetic must
    find it in every call into its code, while the test around the call makes its inputs under the judge's settings
    (`judge`, put back before each test). Its code is every frame compiled from its source (`filename`), found by a
    profile function while a test runs: at the way in from the test's side the import's settings are put in force,
    at the way out the judge's are put back; a generator's resumption and yield count as ways in and out. What a
    call changes lasts until it returns to the test: every call starts from the import's settings. Entry points that
    are not the module's own functions (a builtin it names, a functools.partial) are wrapped to do the same.
    Installed only where the import changed a setting: other submissions run without a profile function."""

    def __init__(self, judge: dict[str, Any], learner: dict[str, Any], filename: str) -> None:
        self.judge, self.filename, self.depth = judge, filename, 0
        self.learner = {
            name: value for name, value in learner.items() if name not in JUDGE_ONLY and value != judge.get(name)
        }

    def __bool__(self) -> bool:
        return bool(self.learner)

    def enter(self) -> None:
        self.depth += 1
        if self.depth == 1:
            for name, value in self.learner.items():
                read, write = SETTINGS[name]
                try:
                    if read() != value:
                        write(value)
                except BaseException:  # noqa: BLE001 - a setter the submission broke: its call finds it as it is
                    pass

    def leave(self) -> None:
        self.depth = max(0, self.depth - 1)
        if self.depth == 0:
            restore(self.judge)

    def _profile(self, frame: Any, event: str, _: Any) -> None:
        if event == "call" or event == "return":
            try:
                if frame.f_code.co_filename == self.filename:
                    self.enter() if event == "call" else self.leave()
            except BaseException:  # noqa: BLE001 - a setter the submission broke: the test finds the setting as it is
                pass

    def begin(self) -> None:
        """Before a test's code runs (the judge's settings put back): the submission's calls are watched."""
        self.depth = 0
        sys.setprofile(self._profile)

    def end(self) -> None:
        """After it: nothing is watched."""
        sys.setprofile(None)
        self.depth = 0

    def wrapped(self, entry_point: Any) -> Any:
        """An entry point that is not one of the module's own functions (or classes), called under its settings."""
        try:
            own = isinstance(entry_point, type) or entry_point.__code__.co_filename == self.filename
        except BaseException:  # noqa: BLE001 - no code of its own (a builtin), or a hostile attribute
            own = False
        if own or not self:
            return entry_point

        def call(*args: Any, **kwargs: Any) -> Any:
            self.enter()
            try:
                return entry_point(*args, **kwargs)
            finally:
                try:
                    self.leave()
                except BaseException:  # noqa: BLE001 - as in _profile
                    pass

        return call
