"""A thread of the server's own work in the background: rounds until the server stops."""

from __future__ import annotations

import logging
import threading

log = logging.getLogger("fdb_leaderboard.service")


class BackgroundLoop:
    """Runs :meth:`round` on a thread of its own until ``stopping`` is set; each round says how
    long to wait before the next, and :meth:`wake` cuts a wait short.  A round that raises (the
    store gone away, say) is logged and tried again after ``retry_wait`` seconds."""

    thread_name = "background"
    failure = "a background round failed; the next one retries"

    def __init__(self, stopping: threading.Event | None, retry_wait: float) -> None:
        self.stopping = stopping or threading.Event()
        self.retry_wait = retry_wait
        self._woken = threading.Event()
        self._thread: threading.Thread | None = None

    def round(self) -> float:
        """One round of the work; returns the seconds to wait before the next."""
        raise NotImplementedError

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """Run a round now."""
        self._woken.set()

    def join(self) -> None:
        """Wait for the thread (set ``stopping`` first): a round stops at its next step."""
        self._woken.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        while not self.stopping.is_set():
            self._woken.clear()
            try:
                wait = self.round()
            except Exception:
                log.exception(self.failure)
                wait = self.retry_wait
            self._woken.wait(wait)
