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
from collections.abc import Hashable
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from ..service.calls import RateLimitedLog
from .deadlines import Deadlines


class ConnectionBudget:
    """The open connections of one HTTP server, and those waiting for a request head (oldest
    first), each closed if it has none within ``head_timeout``."""

    def __init__(self, limit: int, head_timeout: float) -> None:
        self.limit = limit
        self.open: set[H11Protocol] = set()
        self.waiting = Deadlines(head_timeout, _close)
        self.refusals = RateLimitedLog()
        self.refused = 0  # connections closed at the limit (new ones, or waiting ones for them)

    def admit(self, protocol: H11Protocol) -> bool:
        """Whether a new connection may stay open, closing the oldest waiting one if need be."""
        if len(self.open) >= self.limit:
            self.refused += 1
            if not self.waiting.pending:
                self.refusals.warning(f"{self.limit} HTTP connections are open, all busy: refusing new connections")
                return False
            oldest = next(iter(self.waiting.pending))
            self.forget(oldest)  # type: ignore[arg-type]
            _close(oldest)
            self.refusals.warning(
                f"{self.limit} HTTP connections are open: closing the oldest waiting for a request for new ones"
            )
        self.open.add(protocol)
        return True

    def wait(self, protocol: H11Protocol) -> None:
        """``protocol`` waits for a request head, from now (the newest waiting)."""
        self.waiting.add(protocol, protocol.loop)

    def forget(self, protocol: H11Protocol) -> None:
        self.open.discard(protocol)
        self.waiting.discard(protocol)


def _close(protocol: Hashable) -> None:
    transport = protocol.transport  # type: ignore[attr-defined]
    if not transport.is_closing():
        transport.close()


def guarded_protocol(budget: ConnectionBudget) -> type[H11Protocol]:
    """uvicorn's h11 protocol, held to ``budget``."""

    class GuardedH11Protocol(H11Protocol):
        _awaited_after: Any = None  # the request cycle before the awaited head

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if not budget.admit(self):
                transport.abort()  # refused: its descriptor is freed at once
                return
            budget.wait(self)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.cycle is not self._awaited_after:  # a new request began
                self._awaited_after = self.cycle
                budget.waiting.discard(self)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self.cycle is not None and self.cycle.response_complete:
                self._awaited_after = self.cycle  # (unless a pipelined request already began)
                budget.wait(self)

        def connection_lost(self, exc: Exception | None) -> None:
            budget.forget(self)
            super().connection_lost(exc)

    return GuardedH11Protocol
