"""Reads that tolerate staleness: their freshness bounds, and one answer shared by identical reads.

A read's caller may bound how stale it may be (``max-staleness-ms``) and a commit version it must
see (``min-version``); on a store with versions, identical reads (the same method and request
bytes) arriving while an answer is young enough for them take that answer instead of reading.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable

import grpc
from grpc import aio

from .. import wire
from ..errors import InvalidArgument
from .status import Answer
from .timeouts import ServedCall


class StaleReads:
    """The dispatcher's reads that tolerate staleness (a mixin of :class:`calls.Dispatcher`: it
    uses its ``settings``, ``versioned``, ``servicer``, ``stale_answers`` and ``_stale_pruned``)."""

    def read_bounds(self, call: ServedCall, context: aio.ServicerContext) -> None:
        """The read's freshness: the caller's ``max-staleness-ms`` (else the server's default) and
        ``min-version`` metadata; checked on every store, kept only where the store has versions
        (the embedded store's reads always see the latest commit, which meets any bound)."""
        staleness, version = self.settings.max_staleness, 0
        for key, value in context.invocation_metadata() or ():
            try:
                if key == wire.STALENESS_HEADER:
                    staleness = wire.check_staleness(value, wire.STALENESS_HEADER)
                elif key == wire.MIN_VERSION_HEADER:
                    version = wire.check_version(value, wire.MIN_VERSION_HEADER)
            except InvalidArgument as exc:
                raise Answer(grpc.StatusCode.INVALID_ARGUMENT, str(exc)) from None
        if self.versioned:
            call.max_staleness_ms, call.min_version = staleness, version

    async def shared_stale(
        self, method: str, data: bytes, call: ServedCall, compute: Callable[[], Awaitable[bytes]]
    ) -> bytes:
        """The answer to a read that may be ``call.max_staleness_ms`` stale: an identical read's, if
        it holds every write acknowledged that long ago (done, or under way), else computed now
        and shared with the identical reads that arrive while it is young enough for them."""
        now = time.monotonic()
        key = (method, data)
        staleness = call.max_staleness_ms / 1000
        shared = self.stale_answers.get(key)
        if shared is not None and shared.as_of >= now - staleness and shared.floor >= call.min_version:
            return await asyncio.shield(shared.answer)
        # Its own task: a caller that goes away leaves the answer to the others.  Its read is at
        # least at the newest version seen now (or a fresh one, current from now on), and at the
        # call's min_version: so identical reads arriving while it runs may take it too.
        seen = self.servicer.catalog.db.newest_seen() or (0, now)
        floor = max(seen[0], call.min_version)
        answer = asyncio.ensure_future(compute())
        shared = self.stale_answers[key] = StaleAnswer(max(now - staleness, min(now, seen[1])), floor, answer)
        answer.add_done_callback(functools.partial(self._settled, key, shared, call))
        if now - self._stale_pruned > 1.0:
            self._prune_stale(now)
        return await asyncio.shield(answer)

    def _settled(self, key: tuple[str, bytes], shared: StaleAnswer, call: ServedCall, answer: asyncio.Future) -> None:
        """A shared read is done: it holds from when the state it read was current (known now); one
        that failed is not shared any longer (the next one reads again)."""
        if answer.cancelled() or answer.exception() is not None:
            if self.stale_answers.get(key) is shared:
                del self.stale_answers[key]
        elif call.read_since is not None:
            shared.as_of = max(shared.as_of, call.read_since)

    def _prune_stale(self, now: float) -> None:
        """Forget the shared answers no read may take any longer."""
        self._stale_pruned = now
        oldest = now - wire.MAX_STALENESS_MS / 1000
        for key in [key for key, shared in self.stale_answers.items() if shared.as_of < oldest]:
            del self.stale_answers[key]


class StaleAnswer:
    """An answer to a read that tolerates staleness, shared by identical reads (the same method and
    request bytes) while it is young enough for them: it holds every write acknowledged before
    ``as_of`` (from its computation's start: when the newest version seen then was current, or
    the start itself if its read takes a new one; later, when the state it read was current), and
    every commit up to version ``floor``."""

    __slots__ = ("as_of", "floor", "answer")

    def __init__(self, as_of: float, floor: int, answer: asyncio.Future) -> None:
        self.as_of = as_of
        self.floor = floor
        self.answer = answer
