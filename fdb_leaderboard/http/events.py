"""Server-Sent Events: the streams of one board share one computation of it.

A board is a route with its parameters (index, window, group, mode, n, interval).  Its first
stream starts a task that computes the answer every ``interval`` seconds and keeps the latest,
already encoded as an event; every stream of the board sends those same bytes when they change.
So a board costs one read per interval and one copy of its answer, however many streams watch
it, and the task ends, freeing both, when its last stream closes.  At most ``max_streams``
streams are open at once.

A stream sends a comment line after 15 quiet seconds (so proxies keep it open) and ends after
10 minutes (browsers reconnect by themselves) or when the server stops.

Window-end events are not a board (each stream has its own cursor in the index's event log):
:func:`window_end_stream` reads the log after the stream's cursor once a second and sends each
event with its cursor as the event's ``id``, so a browser reconnecting sends it back as
``Last-Event-ID`` and resumes after it.  They count among the ``max_streams`` too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Iterator
from typing import Any

import grpc

from ..wire import plain_message
from .transcode import UNEXPECTED, CallFailed, dumps

log = logging.getLogger("fdb_leaderboard.http")

Compute = Callable[[], Awaitable[tuple[int, Any]]]
KEEP_ALIVE_SECONDS = 15.0
STREAM_SECONDS = 600.0
STOP_CHECK_SECONDS = 0.5  # how soon a board's task sees the server stopping
WINDOW_END_SECONDS = 1.0  # how often a window-end stream reads the event log


def _event(answer: tuple[int, Any]) -> bytes:
    status, body = answer
    return (b"data: " if status == 200 else b"event: problem\ndata: ") + dumps(body) + b"\n\n"


class Board:
    """One board's latest answer, recomputed by one task while streams watch it."""

    def __init__(self, interval: float, compute: Compute, stopping: threading.Event) -> None:
        self.interval = interval
        self.compute = compute
        self.stopping = stopping
        self.answer: tuple[int, Any] | None = None
        self.event = b""
        self.version = 0
        self.changed = asyncio.Event()  # set (and replaced) at each change, and when the server stops
        self.streams = 0
        self.computations = 0
        self.ended = False  # no more answers: its streams end
        self.task: asyncio.Task | None = None

    async def run(self, on_end: Callable[[], None]) -> None:
        """Compute the answer every ``interval`` seconds until no stream watches or the server stops."""
        failed = False
        try:
            while True:
                try:
                    now = await self.compute()
                except CallFailed as exc:
                    now = (exc.http_status, exc.body())
                except Exception:  # a bug: the streams end with INTERNAL, as a call would
                    log.exception("computing an event stream's board failed")
                    now = (500, CallFailed(grpc.StatusCode.INTERNAL, UNEXPECTED).body())
                    failed = True
                self.computations += 1
                if now != self.answer:
                    self.answer, self.event = now, _event(now)
                    self.version += 1
                    self._wake()
                waited = 0.0
                while waited < self.interval and self.streams and not self.stopping.is_set():
                    step = min(STOP_CHECK_SECONDS, self.interval - waited)
                    await asyncio.sleep(step)
                    waited += step
                if not self.streams or self.stopping.is_set() or failed:
                    return
        finally:
            self.ended = True
            on_end()
            self._wake()  # streams still waiting see the server stopping

    def _wake(self) -> None:
        changed, self.changed = self.changed, asyncio.Event()
        changed.set()

    async def first(self) -> tuple[int, Any]:
        """The answer, once computed."""
        while self.answer is None:
            if self.ended:
                raise CallFailed(grpc.StatusCode.UNAVAILABLE, "the server is stopping")
            await self.changed.wait()
        return self.answer

    async def stream(self, on_close: Callable[[], None]) -> AsyncIterator[bytes]:
        """The board's event now, then each new one; a comment after 15 quiet seconds."""
        try:
            sent = self.version
            yield self.event
            quiet_since = started = time.monotonic()
            while True:
                if self.version != sent:
                    sent = self.version
                    yield self.event
                    quiet_since = time.monotonic()
                    continue
                now = time.monotonic()
                if self.ended or now - started >= STREAM_SECONDS:
                    return
                changed = self.changed
                try:
                    async with asyncio.timeout(min(quiet_since + KEEP_ALIVE_SECONDS, started + STREAM_SECONDS) - now):
                        await changed.wait()
                except TimeoutError:
                    if time.monotonic() - quiet_since >= KEEP_ALIVE_SECONDS:
                        yield b": unchanged\n\n"
                        quiet_since = time.monotonic()
        finally:
            on_close()


class EventBoards:
    """The boards being watched, and a cap on the streams watching them."""

    def __init__(self, max_streams: int, stopping: threading.Event) -> None:
        self.max_streams = max_streams
        self.stopping = stopping
        self.boards: dict[Hashable, Board] = {}
        self.streams = 0

    async def open(
        self, key: Hashable, interval: float, compute: Compute
    ) -> tuple[tuple[int, Any], AsyncIterator[bytes], Callable[[], None]]:
        """The board's first answer, a stream of it and the stream's ``close`` (safe to call
        twice; the stream calls it when it ends).  ``compute`` is used if no stream of the
        board is open yet (the caller checked its own access).  A first answer other than 200
        is the caller's to send: the stream is then closed already."""
        if self.streams >= self.max_streams:
            raise CallFailed(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"{self.max_streams} event streams are open on this server: try again later",
            )
        board = self.boards.get(key)
        if board is None:
            board = self.boards[key] = Board(interval, compute, self.stopping)
            # (held by the board: the loop keeps only a weak reference to a task)
            board.task = asyncio.get_running_loop().create_task(board.run(lambda: self._ended(key, board)))
        board.streams += 1
        self.streams += 1
        closed = False

        def close() -> None:
            nonlocal closed
            if not closed:
                closed = True
                board.streams -= 1
                self.streams -= 1

        try:
            first = await board.first()
        except BaseException:
            close()
            raise
        if first[0] != 200:
            close()
        return first, board.stream(close), close

    @contextlib.contextmanager
    def stream_slot(self) -> Iterator[None]:
        """One of the ``max_streams``, held by a stream that is not a board's (window ends)."""
        if self.streams >= self.max_streams:
            raise CallFailed(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"{self.max_streams} event streams are open on this server: try again later",
            )
        self.streams += 1
        try:
            yield
        finally:
            self.streams -= 1

    def _ended(self, key: Hashable, board: Board) -> None:
        if self.boards.get(key) is board:
            del self.boards[key]


async def window_end_stream(
    after: int, following: Callable[[int], Awaitable[list[Any]]], stopping: threading.Event
) -> AsyncIterator[bytes]:
    """Window-end events after cursor ``after`` (``following(cursor)`` reads the next ones), each
    with its cursor as its ``id``; a comment after 15 quiet seconds; STREAM_SECONDS at most."""
    started = quiet_since = time.monotonic()
    while not stopping.is_set() and time.monotonic() - started < STREAM_SECONDS:
        try:
            found = await following(after)
        except CallFailed as exc:
            yield _event((exc.http_status, exc.body()))
            return
        for event in found:
            after = event.cursor
            yield f"id: {after}\n".encode() + _event((200, plain_message(event)))
            quiet_since = time.monotonic()
        if found:
            continue
        if time.monotonic() - quiet_since >= KEEP_ALIVE_SECONDS:
            yield b": quiet\n\n"
            quiet_since = time.monotonic()
        await asyncio.sleep(WINDOW_END_SECONDS)
