"""Webhook delivery: the outbox's events POSTed, signed, retried until acknowledged.

Each server process runs one :class:`WebhookDelivery` thread.  It takes a lease on up to
``BATCH`` due events at a time (one transaction: ``WindowEvents.claim``), POSTs them on a few
threads, and then, for each, clears it (a 2xx answer) or moves it to a later try (anything else,
a redirect included, or no answer within ``timeout``).  Its lease lasts ``2 * timeout + 1``
seconds: another process takes an event over only once a killed one's lease ran out.

The POST: ``Content-Type: application/json``, the event as JSON (the REST listings' shape), and

- ``X-Leaderboard-Event``: the event id, the same on every try (a receiver drops repeats by it);
- ``X-Leaderboard-Timestamp``: Unix seconds when this try was signed;
- ``X-Leaderboard-Signature``: ``sha256=`` and the hex HMAC-SHA256, keyed by the webhook's
  secret, of the timestamp, a ``.``, and the body's bytes (so a receiver also refuses old
  signatures replayed).

Guarantee: at least once, with a stable id.  An event is cleared only after a 2xx answer; if a
process dies between the receiver's 2xx and that clear (or its lease runs out while the
receiver is slow), the event is sent again with the same id.  Two processes never send one
event at the same time while its lease holds.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import hmac
import logging
import os
import secrets
import socket
import threading
import time
import urllib.error
import urllib.request

from .background import BackgroundLoop
from .metrics import Metrics
from .window_events import Pending, WindowEvents

log = logging.getLogger("fdb_leaderboard.service")

BATCH = 16  # events leased at once by one process
SENDERS = 4  # POSTs at once per process
IDLE_SECONDS = 2.0  # how often an idle process looks at the outbox (events noticed elsewhere)
DEFAULT_TIMEOUT = 10.0
DEFAULT_FIRST_RETRY = 1.0
USER_AGENT = "fdb-leaderboard-webhooks"


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """The ``X-Leaderboard-Signature`` of ``body`` sent at ``timestamp``."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is not an acknowledgement: it fails the try (a POST is never re-sent elsewhere)."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)


def post(event: Pending, timeout: float) -> str | None:
    """Send ``event`` once; None when acknowledged (2xx), else why not."""
    timestamp = str(int(time.time()))
    request = urllib.request.Request(
        event.url,
        data=event.body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            "X-Leaderboard-Event": event.id,
            "X-Leaderboard-Timestamp": timestamp,
            "X-Leaderboard-Signature": signature(event.secret, timestamp, event.body),
        },
    )
    try:
        with _OPENER.open(request, timeout=timeout) as answer:
            answer.read(65536)
            status = answer.status
    except urllib.error.HTTPError as exc:
        return f"HTTP {exc.code}"
    except OSError as exc:  # URLError, timeouts, refused connections
        return f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"
    return None if 200 <= status < 300 else f"HTTP {status}"


class WebhookDelivery(BackgroundLoop):
    """The outbox's events delivered from this process, on a thread, until ``stopping`` is set."""

    thread_name = "webhooks"
    failure = "webhook delivery failed; retrying"

    def __init__(
        self,
        events: WindowEvents,
        stopping: threading.Event,
        metrics: Metrics | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        first_retry: float = DEFAULT_FIRST_RETRY,
    ) -> None:
        super().__init__(stopping, IDLE_SECONDS)
        self.events = events
        self.metrics = metrics
        self.timeout = timeout
        self.first_retry = first_retry
        self.lease = 2 * timeout + 1
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self._senders = concurrent.futures.ThreadPoolExecutor(SENDERS, thread_name_prefix="webhook")

    def join(self) -> None:
        """Wait for the thread (set ``stopping`` first); POSTs under way finish or time out."""
        super().join()
        self._senders.shutdown(wait=True, cancel_futures=True)

    def round(self) -> float:
        """Deliver what is due; look again at once if there was any, else after IDLE_SECONDS
        (or when woken: events noticed here)."""
        return 0.0 if self.deliver_once() else IDLE_SECONDS

    def deliver_once(self) -> int:
        """Lease the due events (at most BATCH), send them, note each outcome as it comes (an
        acknowledged event is cleared at once, not after the slowest of its batch); how many
        were tried."""
        claimed = self.events.claim(self.owner, self.lease, BATCH)
        sending = {self._senders.submit(self._send, event): event for event in claimed}
        for done in concurrent.futures.as_completed(sending):
            event, error = sending[done], done.result()
            if error is None:
                self.events.delivered(event.id)
                self._count("delivered")
                continue
            outcome = self.events.failed(event.id, error, self.first_retry)
            if outcome == "delivered":  # by another process, after this one's lease ran out
                continue
            self._count(outcome)
            if outcome == "dropped":
                log.warning("webhook %s: event %s dropped, failing for too long (%s)", event.webhook, event.id, error)
        return len(claimed)

    def _send(self, event: Pending) -> str | None:
        return post(event, self.timeout)

    def _count(self, result: str) -> None:
        if self.metrics is not None:
            self.metrics.webhook_deliveries.labels(result).inc()
