"""Torch's and NumPy's process-wide settings, put back before every test.

A test's inputs are made by the test's own code (`torch.tensor([...])` without a dtype, `torch.randn`), so a
submission that sets a default dtype at import, turns grad mode off in one test, or asks for deterministic
algorithms would change what the reference and the submission are asked, and what the next test does. Each
setting is read once, when the child starts (the judge's own state), and put back before each test; the
names of those a test left changed are reported with its result, so that the problem check can name a
reference or a test that leaks them.
"""

from __future__ import annotations

import functools
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
    (`judge`, put back before each test). Whose code runs is decided frame by frame by a profile function while a
    test runs: a frame compiled from the submission's source (`filename`) is the submission's, one of the test's or
    the helpers' code (`judge_files`) the judge's, any other (torch's own) belongs to the nearest such frame below
    it. At each change of owner the settings change: into the submission's code, the import's settings (what the
    test's side had is kept, and put back on the way out: a test's own `torch.no_grad()` block holds across a
    call); back out, or into a function the test handed it, the test's side's. What a call changes lasts until it
    returns: every call starts from the import's settings. Entry points are wrapped too: a builtin the module names
    runs under its settings, and after every call the profile function is put back should it be gone (CPython
    drops one that a RecursionError reached) with the test's side's settings. Installed only where the import
    changed a setting: other submissions run without a profile function."""

    def __init__(
        self,
        judge: dict[str, Any],
        learner: dict[str, Any],
        filename: str,
        judge_files: tuple[str, ...] = ("<test ", "<helpers>"),
    ) -> None:
        self.judge, self.filename, self.judge_files = judge, filename, judge_files
        self.learner = {
            name: value for name, value in learner.items() if name not in JUDGE_ONLY and value != judge.get(name)
        }
        self.mine = "judge"  # whose settings are in force
        self.saved: dict[str, Any] | None = None  # the test's side's, while the submission's code runs

    def __bool__(self) -> bool:
        return bool(self.learner)

    def _owner(self, frame: Any) -> str | None:
        name = frame.f_code.co_filename
        if name == self.filename:
            return "learner"
        return "judge" if name.startswith(self.judge_files) else None

    def _owner_below(self, frame: Any) -> str:
        while frame is not None:
            who = self._owner(frame)
            if who is not None:
                return who
            frame = frame.f_back
        return "judge"

    def _switch(self, who: str) -> None:
        if who == self.mine:
            return
        self.mine = who
        if who == "learner":
            self.saved = snapshot()
            for name, value in self.learner.items():
                read, write = SETTINGS[name]
                try:
                    if read() != value:
                        write(value)
                except BaseException:  # noqa: BLE001 - a setter the submission broke: its call finds it as it is
                    pass
        else:
            restore(self.saved if self.saved is not None else self.judge)
            self.saved = None

    def _profile(self, frame: Any, event: str, _: Any) -> None:
        if event != "call" and event != "return":
            return
        try:
            who = self._owner(frame)
            if who is None:
                return
            self._switch(who if event == "call" else self._owner_below(frame.f_back))
        except BaseException:  # noqa: BLE001 - a setter the submission broke: the test finds the setting as it is
            pass

    def begin(self) -> None:
        """Before a test's code runs (the judge's settings put back): the submission's calls are watched."""
        self.mine, self.saved = "judge", None
        sys.setprofile(self._profile)

    def end(self) -> None:
        """After it: nothing is watched."""
        sys.setprofile(None)
        self.mine, self.saved = "judge", None

    def wrapped(self, entry_point: Any) -> Any:
        """An entry point (not a class: a class's methods are its own frames) called under the module's settings,
        and the profile function checked after it."""
        if not self or isinstance(entry_point, type):
            return entry_point
        try:
            own = entry_point.__code__.co_filename == self.filename
        except BaseException:  # noqa: BLE001 - no code of its own (a builtin), or a hostile attribute
            own = False

        def call(*args: Any, **kwargs: Any) -> Any:
            if not own:
                self._switch("learner")
            try:
                return entry_point(*args, **kwargs)
            finally:
                try:
                    if sys.getprofile() is not self._profile:  # dropped: by a RecursionError, or by the module
                        sys.setprofile(self._profile)
                    self._switch(self._owner_below(sys._getframe(1)))
                except BaseException:  # noqa: BLE001 - as in _profile
                    pass

        try:
            functools.update_wrapper(call, entry_point)
        except BaseException:  # noqa: BLE001 - an object whose attributes cannot be read: the bare wrapper
            pass
        return call
