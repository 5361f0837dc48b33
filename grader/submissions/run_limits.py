"""What one client, and everyone together, may ask of runs (POST /api/runs) in this process: runs are
not stored, so their limits are counted here, in memory.

  per client   at most `per_minute` runs started in any minute, and `per_client` at once: 429
  overall      at most `overall` runs at once: 503 (the runs' containers are busy, not the client's fault)

Each refusal says when to try again (Retry-After). A run holds its places from admission until its work
has ended, not until its HTTP answer has gone: a run whose answer gave up waiting still holds them, so
the caps bound the work itself (threads, containers) and not only the requests."""

from __future__ import annotations

import math
import threading
import time
from collections import deque

from grader.submissions.submitters import Refused

WINDOW_S = 60.0
SWEEP_AT = 4096  # clients remembered before those with nothing in the window are forgotten
BUSY_RETRY_S = 5


class Admission:
    """One admitted run's places; release() gives them back (once, however often it is called)."""

    def __init__(self, limits: RunLimits, who: str) -> None:
        self._limits = limits
        self.who = who
        self._released = False

    def release(self) -> None:
        with self._limits.lock:
            if self._released:
                return
            self._released = True
            self._limits.leave(self.who)


class RunLimits:
    def __init__(self, per_minute: int, per_client: int, overall: int) -> None:
        self.per_minute = per_minute  # 0: no rate limit
        self.per_client = per_client
        self.overall = overall
        self.lock = threading.Lock()
        self._started: dict[str, deque[float]] = {}
        self._running: dict[str, int] = {}
        self._total = 0

    @property
    def running(self) -> int:
        with self.lock:
            return self._total

    def admit(self, who: str) -> Admission:
        """A place for one run of `who`, or Refused (429 for the client's own limits, 503 when every place is
        taken). A refused request takes nothing."""
        now = time.monotonic()
        with self.lock:
            mine = self._running.get(who, 0)
            if mine >= self.per_client:
                raise Refused(
                    429,
                    f"too many runs at once: at most {self.per_client} per client; wait for yours to finish",
                    reason="runs_at_once",
                    headers={"Retry-After": "2"},
                )
            started = self._started.get(who)
            if started is not None:
                while started and started[0] <= now - WINDOW_S:
                    started.popleft()
            if self.per_minute and started is not None and len(started) >= self.per_minute:
                wait = max(1, math.ceil(started[0] + WINDOW_S - now))
                raise Refused(
                    429,
                    f"rate limit: at most {self.per_minute} runs per minute",
                    reason="runs_rate_limited",
                    headers={"Retry-After": str(wait)},
                )
            if self._total >= self.overall:
                raise Refused(
                    503,
                    f"every place for runs is taken ({self.overall} at once); try again shortly",
                    reason="runs_busy",
                    headers={"Retry-After": str(BUSY_RETRY_S)},
                )
            if self.per_minute:
                if started is None:
                    self._sweep(now)
                    started = self._started.setdefault(who, deque())
                started.append(now)
            self._running[who] = mine + 1
            self._total += 1
        return Admission(self, who)

    def leave(self, who: str) -> None:
        """A run of `who` has ended (lock held)."""
        self._total -= 1
        left = self._running.get(who, 1) - 1
        if left > 0:
            self._running[who] = left
        else:
            self._running.pop(who, None)

    def _sweep(self, now: float) -> None:
        """Forgets the clients with no run in the window, once many are remembered (lock held)."""
        if len(self._started) < SWEEP_AT:
            return
        for who in [who for who, times in self._started.items() if not times or times[-1] <= now - WINDOW_S]:
            del self._started[who]
