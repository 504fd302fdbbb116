"""Log lines of floods: at most one line in so long, the next saying how many were left out."""

from __future__ import annotations

import logging
import threading
import time

log = logging.getLogger("fdb_leaderboard.service")


class RateLimitedLog:
    """At most one line per ``interval`` seconds; the next line says how many were left out."""

    def __init__(self, interval: float = 10.0) -> None:
        self.interval = interval
        self._next = 0.0
        self._skipped = 0
        self._lock = threading.Lock()

    def warning(self, message: str) -> None:
        with self._lock:
            now = time.monotonic()
            if now < self._next:
                self._skipped += 1
                return
            skipped, self._skipped, self._next = self._skipped, 0, now + self.interval
        log.warning("%s%s", message, f" ({skipped} more like it not logged)" if skipped else "")
