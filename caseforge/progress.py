"""Progress lines for long work, to stderr and the Prefect run log alike."""
from __future__ import annotations

import logging
import time

log = logging.getLogger("caseforge.progress")


class Progress:
    def __init__(self, label: str, total: int | None = None, every_s: float = 5.0):
        self.label = label
        self.total = total
        self.every_s = every_s
        self.done = 0
        self.started = time.monotonic()
        self._last = self.started

    def step(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if now - self._last >= self.every_s:
            self._last = now
            self._emit(now)

    def close(self) -> None:
        self._emit(time.monotonic(), final=True)

    def _emit(self, now: float, final: bool = False) -> None:
        elapsed = max(now - self.started, 1e-9)
        rate = self.done / elapsed
        if self.total:
            pct = 100.0 * self.done / self.total
            eta = (self.total - self.done) / rate if rate > 0 else float("inf")
            tail = "" if final else f", about {eta:,.0f}s left"
            log.info("%s: %d/%d (%.0f%%) at %.1f/s%s", self.label, self.done, self.total, pct, rate, tail)
        else:
            log.info("%s: %d done at %.1f/s", self.label, self.done, rate)
