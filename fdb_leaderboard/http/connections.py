"""HTTP connections: a cap on how many are open, and a time limit on each request's head.

uvicorn times out idle kept-alive connections (``timeout_keep_alive``) and h11 bounds a
request head's size, but neither times out a connection that sends nothing, or its head a byte
at a time, nor caps open connections without holding their descriptors (its
``limit_concurrency`` answers 503 on connections it keeps open).  :func:`guarded_protocol`
makes uvicorn's own h11 protocol (passed as ``http=``, uvicorn's option for a protocol class)
do both:

- a connection must send a complete request head within ``head_timeout`` of being opened or
  of its previous answer, else it is closed (the body's own time limit is the application's);
- at most ``limit`` connections are open; at the limit, a new connection closes the oldest
  one waiting for a request head, or, with none waiting, is closed itself.  Refusals are
  logged at most once per ten seconds.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from ..service.calls import RateLimitedLog


class ConnectionBudget:
    """The open connections of one HTTP server, and those waiting for a request head (oldest first)."""

    def __init__(self, limit: int, head_timeout: float) -> None:
        self.limit = limit
        self.head_timeout = head_timeout
        self.open: set[H11Protocol] = set()
        self.waiting: dict[H11Protocol, None] = {}  # insertion order: the oldest first
        self.refusals = RateLimitedLog()
        self.refused = 0  # connections closed at the limit (new ones, or waiting ones for them)

    def admit(self, protocol: H11Protocol) -> bool:
        """Whether a new connection may stay open, closing the oldest waiting one if need be."""
        if len(self.open) >= self.limit:
            self.refused += 1
            if not self.waiting:
                self.refusals.warning(f"{self.limit} HTTP connections are open, all busy: refusing new connections")
                return False
            oldest = next(iter(self.waiting))
            self.forget(oldest)
            oldest.transport.close()
            self.refusals.warning(
                f"{self.limit} HTTP connections are open: closing the oldest waiting for a request for new ones"
            )
        self.open.add(protocol)
        return True

    def forget(self, protocol: H11Protocol) -> None:
        self.open.discard(protocol)
        self.waiting.pop(protocol, None)


def guarded_protocol(budget: ConnectionBudget) -> type[H11Protocol]:
    """uvicorn's h11 protocol, held to ``budget``."""

    class GuardedH11Protocol(H11Protocol):
        _head_timer: asyncio.TimerHandle | None = None
        _awaited_after: Any = None  # the request cycle before the awaited head

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if not budget.admit(self):
                transport.abort()  # refused: its descriptor is freed at once
                return
            self._await_head()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self._head_timer is not None and self.cycle is not self._awaited_after:  # a new request began
                self._stop_waiting()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self.cycle is not None and self.cycle.response_complete:
                self._await_head()  # (unless a pipelined request already began)

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_waiting()
            budget.forget(self)
            super().connection_lost(exc)

        def _await_head(self) -> None:
            self._stop_waiting()
            self._awaited_after = self.cycle
            self._head_timer = self.loop.call_later(budget.head_timeout, self._head_too_late)
            budget.waiting[self] = None

        def _stop_waiting(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None
            budget.waiting.pop(self, None)

        def _head_too_late(self) -> None:
            self._head_timer = None
            budget.waiting.pop(self, None)
            if not self.transport.is_closing():
                self.transport.close()

    return GuardedH11Protocol
