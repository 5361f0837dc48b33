"""How a sandbox is lost (grader/containers/container.py, pool.py): the exceptions every part that hands out
or runs a container catches, and what each says of whose fault it was."""

from __future__ import annotations


class SandboxLost(Exception):
    """The container or the engine failed: the judge's problem, unless it keeps happening to one submission."""

    def __init__(self, message: str, *, during_test: int | None = None, judges: bool = False) -> None:
        super().__init__(message)
        self.during_test = during_test
        # Shown to be the judge's: the engine held the container paused (nothing in it could run), so the
        # submission cannot have done it, whatever the container number or the test.
        self.judges = judges


class NoSandboxFree(SandboxLost):
    """No warm sandbox came free in time (pool.py acquire): nothing was lost. A kind of SandboxLost so that
    whoever handles a failed hand-out handles both alike; its own name for logs and for those who tell them apart."""


class SandboxProtocolError(SandboxLost):
    """The sandbox sent bytes that break the frame format."""


__all__ = ["NoSandboxFree", "SandboxLost", "SandboxProtocolError"]
