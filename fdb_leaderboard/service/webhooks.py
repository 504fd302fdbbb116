"""Webhook delivery: the outbox's events POSTed, signed, retried until acknowledged.

Each server process runs one :class:`WebhookDelivery` thread, an event loop on which every POST
is a task of its own.  It takes a lease on due events (one transaction: ``WindowEvents.claim``),
at most ``PER_WEBHOOK`` of any one webhook at a time and ``MAX_SENDING`` in all, and sends each
as soon as it is claimed; as each POST ends it clears its event (a 2xx answer) or moves it to a
later try (anything else: a redirect, an error, a malformed answer, or no answer within
``timeout`` for the whole request, connection to status line), and claims what is due next.
So a receiver that hangs, fails or drips its answer a byte at a time delays its own events
only: the others' go on.  A lease lasts ``2 * timeout + 1`` seconds: another process takes an
event over only once a killed one's lease ran out.

The POST (HTTP/1.1, one connection each, with ``h11``: uvicorn's parser): ``Content-Type:
application/json``, the event as JSON (the REST listings' shape), and

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

import asyncio
import base64
import collections
import concurrent.futures
import contextlib
import hashlib
import hmac
import logging
import os
import secrets
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable

import h11

from .metrics import Metrics
from .window_events import Pending, WindowEvents

log = logging.getLogger("fdb_leaderboard.service")

PER_WEBHOOK = 2  # POSTs of one webhook at once (a bad receiver holds no more than these)
MAX_SENDING = 200  # POSTs at once per process (each holds a connection: a file descriptor)
CLAIM_BATCH = 32  # events leased by one claim at most
IDLE_SECONDS = 2.0  # how often an idle process looks at the outbox (events noticed elsewhere)
SCAN_SECONDS = 0.1  # the pause before a claim that reads on through a large outbox
DEFAULT_TIMEOUT = 10.0
DEFAULT_FIRST_RETRY = 1.0
USER_AGENT = "fdb-leaderboard-webhooks"
READ_BYTES = 16384
STORE_THREADS = 4  # the outcomes recorded at once (a transaction each)


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """The ``X-Leaderboard-Signature`` of ``body`` sent at ``timestamp``."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def _tls() -> ssl.SSLContext:
    return ssl.create_default_context()


async def post(event: Pending, tls: Callable[[], ssl.SSLContext] = _tls) -> str | None:
    """Send ``event`` once; None when acknowledged (2xx), else why not.  No time limit of its own:
    the caller bounds the whole request.  Errors of the connection or of the answer raise."""
    url = urllib.parse.urlsplit(event.url)
    https = url.scheme == "https"
    host = url.hostname or ""
    reader, writer = await asyncio.open_connection(
        host, url.port or (443 if https else 80), ssl=tls() if https else None, server_hostname=host if https else None
    )
    try:
        connection = h11.Connection(h11.CLIENT)
        timestamp = str(int(time.time()))
        headers = [
            ("Host", url.netloc.rpartition("@")[2]),
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(event.body))),
            ("User-Agent", USER_AGENT),
            ("Connection", "close"),
            ("X-Leaderboard-Event", event.id),
            ("X-Leaderboard-Timestamp", timestamp),
            ("X-Leaderboard-Signature", signature(event.secret, timestamp, event.body)),
        ]
        if url.username is not None:  # credentials in the URL: HTTP basic authentication
            user = f"{urllib.parse.unquote(url.username)}:{urllib.parse.unquote(url.password or '')}"
            headers.append(("Authorization", "Basic " + base64.b64encode(user.encode()).decode()))
        target = (url.path or "/") + (f"?{url.query}" if url.query else "")
        writer.write(connection.send(h11.Request(method="POST", target=target, headers=headers)))
        writer.write(connection.send(h11.Data(data=event.body)))
        writer.write(connection.send(h11.EndOfMessage()))
        await writer.drain()
        while True:
            answer = connection.next_event()
            if answer is h11.NEED_DATA:
                connection.receive_data(await reader.read(READ_BYTES))  # b"": the receiver closed
            elif isinstance(answer, h11.Response):  # the status is the answer: its body is not read
                return None if 200 <= answer.status_code < 300 else f"HTTP {answer.status_code}"
            elif isinstance(answer, h11.ConnectionClosed):
                return "the receiver closed the connection without answering"
            # else an informational answer (1xx): the real one follows
    finally:
        writer.close()


class WebhookDelivery:
    """The outbox's events delivered from this process, on a thread, until ``stopping`` is set."""

    def __init__(
        self,
        events: WindowEvents,
        stopping: threading.Event,
        metrics: Metrics | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        first_retry: float = DEFAULT_FIRST_RETRY,
    ) -> None:
        self.events = events
        self.stopping = stopping
        self.metrics = metrics
        self.timeout = timeout
        self.first_retry = first_retry
        self.lease = 2 * timeout + 1
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self.tls: Callable[[], ssl.SSLContext] = _tls  # how HTTPS receivers are checked (tests: their CA)
        self.sending: collections.Counter[str] = collections.Counter()  # POSTs under way, by webhook
        self._tasks: set[asyncio.Task] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._woken: asyncio.Event | None = None
        self._started = threading.Event()
        self._thread: threading.Thread | None = None
        self._store = concurrent.futures.ThreadPoolExecutor(STORE_THREADS, thread_name_prefix="webhook-store")

    def start(self) -> None:
        self._thread = threading.Thread(target=asyncio.run, args=(self._deliver(),), name="webhooks", daemon=True)
        self._thread.start()
        self._started.wait()

    def wake(self) -> None:
        """Look at the outbox now (events were noticed here)."""
        if self._loop is not None and self._woken is not None:
            with contextlib.suppress(RuntimeError):  # the loop ended: the server is stopping
                self._loop.call_soon_threadsafe(self._woken.set)

    def join(self) -> None:
        """Wait for the thread (set ``stopping`` first); POSTs under way finish or time out."""
        self.wake()
        if self._thread is not None:
            self._thread.join()
        self._store.shutdown(wait=True)

    async def _deliver(self) -> None:
        self._loop, self._woken = asyncio.get_running_loop(), asyncio.Event()
        self._started.set()
        while not self.stopping.is_set():
            self._woken.clear()
            try:
                wait = await self._claim()
            except Exception:  # the store did not answer, say: the next round tries again
                log.exception("webhook delivery failed; retrying")
                wait = IDLE_SECONDS
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await self._woken.wait()
        await asyncio.gather(*self._tasks)  # each ends within its deadline

    async def _claim(self) -> float:
        """Lease what is due (for webhooks with room) and start its POSTs; the seconds to wait
        before the next claim (0: more may be due now), if no POST ends before."""
        room = MAX_SENDING - len(self._tasks)
        if room <= 0:
            return IDLE_SECONDS  # a POST that ends wakes the next claim
        busy = dict(self.sending)
        claim = self.events.claim
        loop = asyncio.get_running_loop()
        claimed, covered = await loop.run_in_executor(
            self._store, lambda: claim(self.owner, self.lease, min(room, CLAIM_BATCH), None, busy, PER_WEBHOOK)
        )
        for event in claimed:
            self.sending[event.webhook] += 1
            task = asyncio.create_task(self._send(event))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        if claimed:
            return 0.0
        return IDLE_SECONDS if covered else SCAN_SECONDS

    async def _send(self, event: Pending) -> None:
        """POST ``event`` within the deadline and record how it went (any failure is a failed try)."""
        try:
            try:
                async with asyncio.timeout(self.timeout):
                    error = await post(event, self.tls)
            except TimeoutError:
                error = f"no answer within {self.timeout:g} s"
            except Exception as exc:  # refused, reset, TLS, a malformed answer...: a failed try
                error = f"{type(exc).__name__}: {exc}"
            await asyncio.get_running_loop().run_in_executor(self._store, self._record, event, error)
        except Exception:  # the store did not take the outcome: the lease runs out and it is sent again
            log.exception("webhook %s: the outcome of event %s could not be recorded", event.webhook, event.id)
        finally:
            self.sending[event.webhook] -= 1
            if not self.sending[event.webhook]:
                del self.sending[event.webhook]
            if self._woken is not None:
                self._woken.set()  # its webhook has room again

    def _record(self, event: Pending, error: str | None) -> None:
        if error is None:
            self.events.delivered(event.id)
            self._count("delivered")
            return
        outcome = self.events.failed(event.id, error, self.first_retry)
        if outcome == "delivered":  # by another process, after this one's lease ran out
            return
        self._count(outcome)
        if outcome == "dropped":
            log.warning("webhook %s: event %s dropped, failing for too long (%s)", event.webhook, event.id, error)

    def _count(self, result: str) -> None:
        if self.metrics is not None:
            self.metrics.webhook_deliveries.labels(result).inc()
