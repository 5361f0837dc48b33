"""A daemon thread that repeats one piece of work until stopped, woken early by kick(): the seed pool's
refill and the webhooks' deliveries are each one. Standard library only, so that every layer may use it."""

from __future__ import annotations

import threading


class BackgroundLoop:
    """Subclasses define `run_once()` (one round of work; what it raises is theirs to handle; True when
    there is more to do at once) and `interval_s`; after a round with nothing more to do, the loop waits
    up to interval_s or until kicked."""

    thread_name = "background"
    interval_s = 1.0

    def __init__(self) -> None:
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def run_once(self) -> bool:
        raise NotImplementedError

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name=self.thread_name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def kick(self) -> None:
        self._wake.set()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def _loop(self) -> None:
        while not self._stopping.is_set():
            if not self.run_once():
                self._wake.wait(self.interval_s)
                self._wake.clear()
