"""The service's streams: watched ranks, window-end events, and client streams (BulkLoad, Load, Dump, Restore).

A WatchRank stream holds no thread: once a second it reads the record's rank on a worker (one
read for every watch of the same record), and writes it when it changed (``max_rank_watchers``
at once); a WatchWindowEnds stream likewise reads the store's event log
(``max_window_end_streams``).  A client stream runs its handler on a loader thread
(``max_bulk_loads`` at once), each message within ``stream_idle_timeout``, and a handler that
answers with a stream has each of its messages written as it yields it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc
from google.protobuf.message import Message

from ..proto import service_pb2 as pb
from ..rpcs import RPCS
from .handlers.calling import ClientGone, answer_for
from .status import Answer
from .timeouts import REPORT_SECONDS, ServedCall

REPLIES_AHEAD = 4  # a streamed answer's messages produced ahead of the client
# A watched rank is read this often: its changes are coalesced to at most one message a second.
WATCH_SECONDS = 1.0


class Watchers:
    """The server's slots for one kind of stream (watched ranks, window-end events), shared by
    gRPC streams and HTTP events, counted in ``gauge``."""

    def __init__(self, limit: int, gauge: Any, what: str, setting: str) -> None:
        self.limit = limit
        self.gauge = gauge
        self.what = what
        self.setting = setting
        self._slots = threading.BoundedSemaphore(limit)

    @contextlib.contextmanager
    def slot(self) -> Iterator[None]:
        """Hold a slot while streaming (RESOURCE_EXHAUSTED when every slot is taken)."""
        if not self._slots.acquire(blocking=False):
            raise Answer(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"{self.limit} {self.what} on this server ({self.setting}): try again when one ends",
            )
        if self.gauge is not None:
            self.gauge.inc()
        try:
            yield
        finally:
            self._slots.release()
            if self.gauge is not None:
                self.gauge.dec()


class SharedRead:
    """One watched record's latest read, repeated for every stream watching it (on the event loop)."""

    def __init__(self) -> None:
        self.response: Any = None
        self.error: Answer | None = None
        self.version = 0  # reads done
        self.changed = asyncio.Event()  # set (and replaced) after each read
        self.watchers = 0
        self.task: asyncio.Task | None = None


class StreamedCalls:
    """The dispatcher's streamed methods (a mixin of :class:`calls.Dispatcher`, whose workers,
    slots, settings and servicer they use)."""

    # -- WatchRank --------------------------------------------------------------------------

    async def _only_request(self, context: Any, method: str, request_type: type[Message]) -> Message:
        """A server stream's request (its one message), within the receive timeout."""
        data = await self._read(context, self.settings.receive_timeout, "the request")
        if data is None:
            raise Answer(grpc.StatusCode.INVALID_ARGUMENT, f"{method} needs a request message")
        return self._parse(request_type, data, method, context)

    async def _watch(self, method: str, request_type: type[Message], _requests: Any, context: Any) -> None:
        """The record's rank and entry now, then each time its rank, score or window changed, until
        the client cancels or its deadline passes.  The watches of one record (the same request)
        share one read every WATCH_SECONDS on a worker (:class:`SharedRead`)."""

        async def work() -> None:
            request = await self._only_request(context, method, request_type)
            with self.rank_watchers.slot():
                key = (method, request.SerializeToString(deterministic=True))
                shared = self.shared_reads.get(key)
                if shared is None:
                    shared = self.shared_reads[key] = SharedRead()
                    shared.task = asyncio.get_running_loop().create_task(self._repeat(key, shared, method, request))
                shared.watchers += 1
                try:
                    seen_version, sent = 0, None
                    while True:
                        while shared.version == seen_version:
                            await shared.changed.wait()
                        seen_version = shared.version
                        if shared.error is not None:
                            raise shared.error
                        seen = rank_seen(shared.response)
                        if seen != sent:
                            await context.write(self.reply(shared.response))
                            sent = seen
                finally:
                    shared.watchers -= 1
                    if not shared.watchers and self.shared_reads.get(key) is shared:
                        del self.shared_reads[key]
                        shared.task.cancel()

        await self.answer(context, work(), method)

    async def _repeat(self, key: tuple, shared: SharedRead, method: str, request: Message) -> None:
        """``shared``'s read every WATCH_SECONDS (each with the default deadline) while anyone
        watches; an error ends it, and the watches with it."""
        read = getattr(self.servicer, RPCS[method].watches)
        while True:
            try:
                call = ServedCall(time.monotonic() + self.settings.default_deadline)
                shared.response = await self._on_worker(call, method, read, request)
            except Answer as answer:
                shared.error = answer
            shared.version += 1
            shared.changed.set()
            shared.changed = asyncio.Event()
            if shared.error is not None:
                if self.shared_reads.get(key) is shared:  # a new watch starts afresh
                    del self.shared_reads[key]
                return
            await asyncio.sleep(WATCH_SECONDS)

    # -- WatchWindowEnds ---------------------------------------------------------------------

    async def _on_worker(
        self, call: ServedCall, method: str, fn: Callable[[Any, ServedCall], Any], request: Message
    ) -> Any:
        """``fn(request, call)`` on a worker, within the call's deadline."""
        self.calls.add(call)
        try:
            return await self.within(call, asyncio.wrap_future(self.workers.submit(fn, request, call)), method)
        finally:
            call.cancelled = True
            self.calls.discard(call)

    async def _window_ends(self, method: str, request_type: type[Message], _requests: Any, context: Any) -> None:
        """The index's window-end events after the request's cursor (or from now on), read from the
        store's log every WATCH_SECONDS on a worker, until the client cancels or its deadline passes."""

        async def work() -> None:
            request = await self._only_request(context, method, request_type)
            with self.window_end_streams.slot():
                servicer = self.servicer
                after = await self._on_worker(self.start(context), method, servicer.window_ends_start, request)
                while True:
                    request.after = after
                    events = await self._on_worker(self.start(context), method, servicer.window_ends_after, request)
                    for event in events:
                        await context.write(self.reply(event))
                        after = event.cursor
                    if not events:
                        await asyncio.sleep(WATCH_SECONDS)

        await self.answer(context, work(), method)

    # -- BulkLoad ---------------------------------------------------------------------------

    async def _stream(self, method: str, request_type: type[Message], _requests: Any, context: Any) -> bytes | None:
        """A client stream (BulkLoad, Load) on a loader thread; a method that answers with a stream
        (Load: a generator) has each of its messages written as it yields it."""
        loop = asyncio.get_running_loop()
        idle = self.settings.stream_idle_timeout

        async def next_message() -> Message | None:
            data = await self._read(context, idle, f"the next {method} message")
            return None if data is None else self._parse(request_type, data, method, context)

        async def work() -> bytes:
            first = await next_message()  # a stream that sends nothing never takes a thread
            if not self.load_slots.acquire(blocking=False):
                raise Answer(
                    grpc.StatusCode.RESOURCE_EXHAUSTED,
                    f"{self.settings.max_bulk_loads} {method} streams are running: try again when one ends",
                )
            call = self.start(context)
            call.deadline = float("inf")  # a load may run long; each message has stream_idle_timeout
            self.calls.add(call)
            pending: list[concurrent.futures.Future] = []  # the handler's read of the next message
            putting: list[concurrent.futures.Future] = []  # and its reply waiting for room

            def messages() -> Iterator[Message]:
                if first is None:
                    return
                yield first
                while call.is_active():
                    future = asyncio.run_coroutine_threadsafe(next_message(), loop)
                    pending[:] = [future]
                    try:
                        message = future.result()
                    except concurrent.futures.CancelledError:
                        raise ClientGone() from None
                    if message is None:
                        return
                    yield message
                raise ClientGone()

            handler = getattr(self.servicer, method)
            # A few replies wait to be written at most: a generator producing faster than the
            # client reads (a Dump's parts) waits for it instead of filling the memory.
            replies: asyncio.Queue[object] = asyncio.Queue(REPLIES_AHEAD)

            def relay() -> Message | None:
                """Run the handler; a generator's messages go to ``replies`` as it yields them."""
                result = handler(messages(), call)
                if not isinstance(result, Iterator):
                    return result
                for reply in result:
                    queued = asyncio.run_coroutine_threadsafe(replies.put(reply), loop)
                    putting[:] = [queued]
                    while True:
                        try:
                            queued.result(REPORT_SECONDS)
                            break
                        except (concurrent.futures.TimeoutError, concurrent.futures.CancelledError) as waited:
                            # Cancelled: the client went away (the event loop said so at once);
                            # timed out: a deadline may have passed meanwhile.
                            if call.is_active() and isinstance(waited, concurrent.futures.TimeoutError):
                                continue
                            queued.cancel()
                            result.close()  # the handler's own clean-up runs now (a Dump's end)
                            raise ClientGone() from None
                return None

            try:
                future = loop.run_in_executor(self.loaders, relay)
                getter: asyncio.Future | None = None
                try:
                    while not future.done() or not replies.empty():
                        getter = asyncio.ensure_future(replies.get())
                        await asyncio.wait({getter, future}, return_when=asyncio.FIRST_COMPLETED)
                        if getter.done():
                            await context.write(self.reply(getter.result()))  # type: ignore[arg-type]
                        else:
                            getter.cancel()
                            await asyncio.wait({getter})  # ended before the event loop may close
                    try:
                        response = future.result()
                    except ClientGone:
                        raise Answer(grpc.StatusCode.CANCELLED, f"{method} cancelled by the client") from None
                    except Exception as exc:  # the handler's own refusals, as a unary call's (``_rpc``)
                        raise answer_for(exc, method) from exc
                except BaseException:  # the client went away, or a reply could not be written
                    call.cancelled = True  # the handler stops at its next check
                    if getter is not None:
                        getter.cancel()
                    for waiting in (*pending, *putting):
                        waiting.cancel()
                    future.add_done_callback(outcome_taken)  # however it ends, nobody waits for it
                    raise
            finally:
                call.cancelled = True
                self.calls.discard(call)
                self.load_slots.release()
            if first is not None and response is not None:
                self._observe(method, first, response)
            return None if response is None else self.reply(response)

        return await self.answer(context, work(), method)


def outcome_taken(future: asyncio.Future) -> None:
    """Take the outcome of a future nobody awaits any more (else asyncio logs its exception as
    "never retrieved", with a traceback, when it is collected)."""
    if not future.cancelled():
        future.exception()


def rank_seen(response: pb.RankAndEntryResponse) -> tuple:
    """What a rank watcher is told again when it changes: the rank, the score and the window."""
    entry = response.entry if response.HasField("entry") else None
    return (
        None if entry is None else (entry.rank, entry.score.SerializeToString()),
        response.window.SerializeToString(),
    )
