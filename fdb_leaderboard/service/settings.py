"""What a server allows each call, who may call, and how it listens: :class:`ServerSettings`."""

from __future__ import annotations

import dataclasses
import logging
import os

from ..access import Tokens, is_loopback
from ..wire import MAX_STALENESS_MS

log = logging.getLogger("fdb_leaderboard.service")

DEFAULT_MAX_PAGE = 2000
IDLE = "idle"  # a reader priority: Linux's idle scheduling policy
MESSAGE_LIMIT = 4 * 1024 * 1024  # gRPC's default for received messages, kept for sent ones too


@dataclasses.dataclass(frozen=True)
class TlsFiles:
    """PEM files: the server's certificate chain and key; with ``client_ca``, clients must present
    a certificate it signed (mutual TLS)."""

    cert: str
    key: str
    client_ca: str | None = None

    def read(self) -> tuple[bytes, bytes, bytes | None]:
        def load(path: str, what: str) -> bytes:
            try:
                with open(path, "rb") as file:
                    return file.read()
            except OSError as exc:
                raise StartupError(f"cannot read the TLS {what} {path}: {exc.strerror}") from None

        ca = load(self.client_ca, "client CA") if self.client_ca else None
        return load(self.cert, "certificate"), load(self.key, "key"), ca


class StartupError(Exception):
    """The server cannot start as configured; the message is one line for the operator."""


@dataclasses.dataclass(frozen=True)
class ServerSettings:
    """Limits and access of a server (every field has a safe default).

    - ``max_page``: most rows one Top, AroundMe or Scan returns; larger requests are refused
      with INVALID_ARGUMENT naming it, and scans page through the rest with continuations.
    - ``max_concurrent_calls``: calls in progress at once (receiving, queued or running);
      beyond it, RESOURCE_EXHAUSTED.  A call waiting for its request holds no thread.
    - ``receive_timeout``: seconds a call's request message may take to arrive;
      ``stream_idle_timeout``: seconds a stream (BulkLoad) may go without a message.
    - ``default_deadline``: the most seconds of server work a call gets when the client sets no
      shorter deadline (Fill stops and reports progress; others answer DEADLINE_EXCEEDED).
    - ``max_staleness``: milliseconds a read may lag behind the latest writes when its call names
      no bound (``max-staleness-ms`` metadata; 0: exact, the default).  See docs/foundationdb.md,
      "Fresh reads and stale ones".
    - ``heavy_workers``: threads for heavy calls (reads of more than ``heavy_rows`` rows, verify,
      fill, trim, expire, window updates, write batches): they queue for these, so a flood of them
      cannot take the workers of point reads and score writes.
    - ``read_processes``: processes that serve the heavy reads (Top, AroundMe, Scan, GetPage,
      GetRanks, FriendsBoard, GetRankHistory of more than ``heavy_rows`` rows), at CPU priority
      ``read_priority`` (``idle``: Linux's idle scheduling policy, or a nice level), so they never
      hold the interpreter, nor the CPU, that serves everyone else (see ``readers.py``); 0, or a
      store only one process may open: the heavy workers serve them.
    - ``max_bulk_loads``: concurrent BulkLoad streams (each has its own thread, so a stalled one
      never holds a worker of the other calls).
    - ``max_rank_watchers``: records' ranks watched at once (WatchRank streams and their
      Server-Sent Events, together); beyond it, RESOURCE_EXHAUSTED (HTTP 429).
    - ``max_window_end_streams``: window-end event streams open at once (WatchWindowEnds and
      their Server-Sent Events); beyond it, RESOURCE_EXHAUSTED (HTTP 429).
    - ``webhooks``: deliver the store's window-end events to their webhooks from this process
      (several processes share the work: each event is leased by one at a time).
    - ``webhook_timeout``: seconds a webhook has to answer a POST, the whole request (connecting,
      sending, the answer's status line); a process's lease on an event is twice that and a
      second, so another takes over a dead process's events that soon.
    - ``webhook_first_retry``: seconds before an event's second try; each later wait doubles, up
      to 10 minutes, for 3 days (then the event is dropped; see ``window_events.py``).
    - ``tokens``: bearer tokens and roles (None: no authentication, everyone is admin, allowed
      on a loopback address only unless ``allow_unauthenticated``).
    - ``tls``: certificate and key (and optionally a client CA for mutual TLS).
    - ``health`` / ``reflection``: serve the standard health and reflection services (health
      needs no token, reflection needs the read role when tokens are configured).
    - ``maintain_every``: seconds between the server's background maintenance passes (keep
      windows ahead, fill, expire, forget old idempotency keys; see ``housekeeping.py``); 0: none
      (then ``fdb-leaderboard maintain`` and ``fill`` do it).
    - ``raise_formats``: the maintenance raises the store's and the indexes' stored formats once
      every process that may be running reads the newer one (see ``upgrades.py``); off, only
      ``store upgrade`` and ``index upgrade`` do (keeping a return to the older release possible).
    """

    max_page: int = DEFAULT_MAX_PAGE
    max_concurrent_calls: int = 4096
    receive_timeout: float = 10.0
    stream_idle_timeout: float = 60.0
    default_deadline: float = 60.0
    max_staleness: int = 0
    max_bulk_loads: int = 2
    max_rank_watchers: int = 1000
    max_window_end_streams: int = 1000
    heavy_workers: int = 1
    heavy_rows: int = 100
    read_processes: int = 1
    read_priority: str = IDLE
    max_message_bytes: int = MESSAGE_LIMIT
    tokens: Tokens | None = None
    tls: TlsFiles | None = None
    allow_unauthenticated: bool = False
    health: bool = True
    reflection: bool = True
    maintain_every: float = 60.0
    raise_formats: bool = True
    webhooks: bool = True
    webhook_timeout: float = 10.0
    webhook_first_retry: float = 1.0

    def __post_init__(self) -> None:
        for name in (
            "max_page",
            "max_concurrent_calls",
            "max_bulk_loads",
            "max_rank_watchers",
            "max_window_end_streams",
            "max_message_bytes",
            "heavy_workers",
        ):
            if getattr(self, name) < 1:
                raise StartupError(f"{name} must be at least 1")
        if not 0 <= self.read_processes <= 64:
            raise StartupError("read_processes must be from 0 to 64")
        try:
            check_priority(self.read_priority)
        except ValueError as exc:
            raise StartupError(str(exc)) from None
        timeouts = ("receive_timeout", "stream_idle_timeout", "default_deadline")
        for name in (*timeouts, "webhook_timeout", "webhook_first_retry"):
            if not getattr(self, name) > 0:
                raise StartupError(f"{name} must be a positive number of seconds")
        if not 0 <= self.max_staleness <= MAX_STALENESS_MS:
            raise StartupError(f"max_staleness must be from 0 to {MAX_STALENESS_MS} milliseconds")
        if not self.maintain_every >= 0:
            raise StartupError("maintain_every must be a number of seconds, 0 for none")

    def check_address(self, address: str) -> None:
        """Refuse to listen beyond this machine without authentication, unless allowed explicitly;
        warn when tokens would cross the network in plaintext."""
        if self.tokens is not None and self.tls is None and not is_loopback(address):
            log.warning(
                "listening on %s with tokens but without TLS: callers' tokens cross the network in plaintext "
                "(serve TLS with --tls-cert and --tls-key)",
                address,
            )
        if self.tokens is None and not self.allow_unauthenticated and not is_loopback(address):
            raise StartupError(
                f"refusing to listen on {address} without authentication: configure tokens (serve --tokens FILE "
                "or $FDB_LEADERBOARD_TOKENS), listen on 127.0.0.1, or pass --allow-unauthenticated"
            )


def check_priority(priority: str) -> str:
    """``priority`` if it names a reader priority: ``idle``, or a nice level from 0 to 19."""
    if priority == IDLE or (priority.isdigit() and 0 <= int(priority) <= 19):
        return priority
    raise ValueError(f"reader priority {priority!r} is neither 'idle' nor a nice level from 0 to 19")


def load_tokens(path: str | os.PathLike[str] | None) -> Tokens | None:
    """Tokens from ``path`` or the environment (see :meth:`Tokens.load`), refusals as StartupError."""
    try:
        return Tokens.load(path)
    except ValueError as exc:
        raise StartupError(str(exc)) from None
