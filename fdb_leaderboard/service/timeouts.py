"""A served call's time limits: its deadline as its handler sees it, and the sweep that fires timeouts.

A call's request must arrive within ``receive_timeout``, and its answer within its deadline (the
client's or ``default_deadline``, whichever is sooner); one sweep on the event loop every
SWEEP_SECONDS fires the timeouts that passed, so a waiting call holds no timer of its own.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from grpc import aio

from .. import access
from .handlers.calling import CallContext

# A call whose deadline passed has this long to report its progress (a Fill's answer says how far it got).
REPORT_SECONDS = 1.0
# How often receive timeouts and deadlines are checked: one may fire this much late.
SWEEP_SECONDS = 0.1


class Timeouts:
    """The receive timeouts and deadlines of the calls in progress, checked together every
    SWEEP_SECONDS on the event loop, while there are any.  (An ``asyncio.timeout`` around each
    read, with its timer, cost a quarter as much as everything else the dispatcher does for a
    point read.)"""

    def __init__(self) -> None:
        self._pending: dict[object, tuple[float, Callable[..., None], tuple]] = {}
        self._timed_out: set[asyncio.Task] = set()
        self._sweeping = False

    def add(self, key: object, when: float, expire: Callable[..., None], *args: object) -> None:
        """Call ``expire(*args)`` (on the event loop) once ``when`` has passed, unless ``key`` is
        discarded before."""
        self._pending[key] = (when, expire, args)
        if not self._sweeping:
            self._sweeping = True
            asyncio.get_running_loop().call_later(SWEEP_SECONDS, self._sweep)

    def discard(self, key: object) -> None:
        self._pending.pop(key, None)

    def _sweep(self) -> None:
        now = time.monotonic()
        for key in [key for key, (when, _, _) in self._pending.items() if when <= now]:
            _, expire, args = self._pending.pop(key)
            expire(*args)
        self._sweeping = bool(self._pending)
        if self._sweeping:
            asyncio.get_running_loop().call_later(SWEEP_SECONDS, self._sweep)

    async def read(self, context: aio.ServicerContext, timeout: float) -> Any:
        """The call's next message (or EOF); TimeoutError if it has not arrived within ``timeout``."""
        task = asyncio.current_task()
        assert task is not None
        self.add(task, time.monotonic() + timeout, self._stop_reading, task)
        try:
            return await context.read()
        except asyncio.CancelledError:
            if task not in self._timed_out:
                raise  # the client went away
            self._timed_out.discard(task)
            task.uncancel()
            raise TimeoutError from None
        finally:
            self._pending.pop(task, None)

    def _stop_reading(self, task: asyncio.Task) -> None:
        self._timed_out.add(task)
        task.cancel()


class ServedCall(CallContext):
    """A call as its handler sees it: still wanted?  how long is left?"""

    __slots__ = ("_context", "_tokens", "cancelled", "deadline", "max_staleness_ms", "min_version", "read_since")

    def __init__(
        self, deadline: float, context: aio.ServicerContext | None = None, tokens: access.Tokens | None = None
    ) -> None:
        self.deadline = deadline
        self.max_staleness_ms = 0  # how stale the call's reads may be (see wire.STALENESS_HEADER)
        self.min_version = 0  # a commit version they must see
        self.read_since: float | None = None  # when the state a stale read saw was current
        self.cancelled = False  # set from the event loop (client gone, deadline) or by shutdown
        self._context = context  # for the caller's name, looked up only when a handler asks
        self._tokens = tokens

    @property
    def actor(self) -> str:
        """The caller's token's name (who hid a record), ``anonymous[:user]`` without tokens."""
        if self._context is None:
            return access.ANONYMOUS
        found: dict[str, str] = {}
        for key, value in self._context.invocation_metadata() or ():
            if key in ("authorization", access.USER_HEADER):
                found[key] = value if isinstance(value, str) else value.decode("latin-1")
        return access.actor_name(self._tokens, found.get("authorization"), found.get(access.USER_HEADER))

    def is_active(self) -> bool:
        return not self.cancelled and time.monotonic() < self.deadline

    def time_remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())
