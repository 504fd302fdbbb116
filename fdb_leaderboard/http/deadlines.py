"""Time limits kept by one timer: :class:`Deadlines`.

A timer per request (``asyncio.timeout``, ``loop.call_later``) costs every request a timer
handle in the event loop's heap, its cancellation and the heap's upkeep: about 40,000
instructions per request, measured, some 4% of a point read over HTTP.  Time limits that are
all the same length are kept instead in an insertion-ordered dict, each entry's deadline later
than the one before, and one timer, running while any is pending, finds the late ones from the
oldest: a dict insertion and a removal per request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable


class Deadlines:
    """Things that must happen within ``seconds`` of being added; ``on_late(key)`` is called
    for each that has not been discarded by then (within another ``seconds / 4``)."""

    def __init__(self, seconds: float, on_late: Callable[[Hashable], None]) -> None:
        self.seconds = seconds
        self.on_late = on_late
        self.pending: dict[Hashable, float] = {}  # insertion order: the oldest (the soonest due) first
        self._sweeping = False

    def add(self, key: Hashable, loop: asyncio.AbstractEventLoop) -> None:
        """``key`` is due ``seconds`` from now (added again: from now, the newest)."""
        self.pending.pop(key, None)
        self.pending[key] = loop.time() + self.seconds
        if not self._sweeping:
            self._sweeping = True
            loop.call_later(self.seconds / 4, self._sweep, loop)

    def discard(self, key: Hashable) -> None:
        self.pending.pop(key, None)

    def _sweep(self, loop: asyncio.AbstractEventLoop) -> None:
        now = loop.time()
        late = []
        for key, deadline in self.pending.items():
            if deadline > now:
                break
            late.append(key)
        for key in late:
            del self.pending[key]
            self.on_late(key)
        self._sweeping = bool(self.pending)
        if self._sweeping:
            loop.call_later(self.seconds / 4, self._sweep, loop)
