"""How a call is served: its request received as raw bytes on the event loop, then run.

Every method of the service is registered as a generic handler that takes the request as raw
bytes (no grpcio deserializer: a request that does not parse leaks nothing and answers
INVALID_ARGUMENT with one short, rate-limited log line).  A unary method is read as a stream, so
its request must arrive within ``receive_timeout``; while it has not, the call holds no thread.
Its first message is its request (a unary call has one; whatever might follow is not read).  The
call then has a deadline of the client's or ``default_deadline``, whichever is sooner, and runs:

- on the event loop itself if it is a read of a few rows and the store's reads cost no round
  trips (the embedded store): such a read takes tens of microseconds of Python, which a worker
  thread would take the interpreter for anyway, while handing it to the thread and its answer
  back costs more than the read (two thread wake-ups, the loop's self-pipe);
- score writes, on a store that commits calls together (the embedded one, with group commit,
  and FoundationDB), on the threads of :class:`WritePipeline`, each batch of them queued
  meanwhile committed together (one commit; on FoundationDB one transaction);
- otherwise on a worker thread (writes wait for a commit, FoundationDB reads for round trips).
  Heavy calls (many rows, whole-index jobs) queue for threads of their own, and heavy reads go
  to reader processes where the store allows it (``readers.py``), so they never hold the
  interpreter this event loop and the point reads need.

BulkLoad streams run on their own threads (``max_bulk_loads`` at once), each message within
``stream_idle_timeout``.  A WatchRank stream holds no thread: once a second it reads the
record's rank on a worker, and writes it when it changed (``max_rank_watchers`` at once); a
WatchWindowEnds stream likewise reads the store's event log (``max_window_end_streams``).

Access: :class:`AccessInterceptor` checks each call's bearer token against its method's role
(:mod:`fdb_leaderboard.access`) before anything else is read.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import logging
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, NamedTuple

import grpc
from google.protobuf.message import Message
from grpc import aio

from .. import access, wire
from ..errors import InvalidArgument
from ..proto import service_pb2 as pb
from ..rpcs import RPCS, Stream, names
from ..store import Database
from ..store.api import call_deadline
from .grpc_service import SERVICE_NAME, CallContext, ClientGone, LeaderboardService, answer_for
from .metrics import Metrics
from .readers import ReadProcesses
from .settings import ServerSettings
from .status import Answer, cap_message, status_of

log = logging.getLogger("fdb_leaderboard.service")

REPORT_SECONDS = 1.0
# A queued score write with less time left than this is answered at once, not run (see WritePipeline).
LATE_SECONDS = 1.0
LATE = (
    "the store did not take this write before its deadline (the writes queued before it were still "
    "waiting for the cluster); it was not applied: retry"
)
REPLIES_AHEAD = 4  # a streamed answer's messages produced ahead of the client
# How often receive timeouts and deadlines are checked: one may fire this much late.
SWEEP_SECONDS = 0.1
# Reads of up to INLINE_ROWS rows may run on the event loop when the store's reads cost no round
# trips (an entry's ``inline``): about 10 microseconds of Python a row, so one holds the loop no
# longer than the interpreter's switch interval would let a thread hold it (see server.tune_for_serving).
INLINE_READS = names(inline=True)  # also read by the HTTP door
INLINE_ROWS = 25
# The most score writes (an entry's ``pipelined``) the write pipeline puts in one commit (the
# store's own group-commit batch).
PIPELINE_BATCH = 64
# Write threads on a store whose commits wait for a network (FoundationDB): batches in flight at once.
PIPELINE_THREADS = 3
# A watched rank is read this often: its changes are coalesced to at most one message a second.
WATCH_SECONDS = 1.0
HEALTH_PREFIX = "/grpc.health.v1.Health/"
REFLECTION_PREFIX = "/grpc.reflection."


class RateLimitedLog:
    """At most one line per ``interval`` seconds; the next line says how many were left out."""

    def __init__(self, interval: float = 10.0) -> None:
        self.interval = interval
        self._next = 0.0
        self._skipped = 0
        self._lock = threading.Lock()

    def warning(self, message: str) -> None:
        with self._lock:
            now = time.monotonic()
            if now < self._next:
                self._skipped += 1
                return
            skipped, self._skipped, self._next = self._skipped, 0, now + self.interval
        log.warning("%s%s", message, f" ({skipped} more like it not logged)" if skipped else "")


class _Timeouts:
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


class _SharedRead:
    """One watched record's latest read, repeated for every stream watching it (on the event loop)."""

    def __init__(self) -> None:
        self.response: Any = None
        self.error: Answer | None = None
        self.version = 0  # reads done
        self.changed = asyncio.Event()  # set (and replaced) after each read
        self.watchers = 0
        self.task: asyncio.Task | None = None


class _Call(CallContext):
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


class Dispatcher(grpc.GenericRpcHandler):
    """The service's methods as raw-bytes handlers on an asyncio gRPC server."""

    def __init__(
        self,
        service: LeaderboardService,
        settings: ServerSettings,
        max_workers: int,
        metrics: Metrics | None = None,
        readers: ReadProcesses | None = None,
    ) -> None:
        self.servicer = service
        self.settings = settings
        self.metrics = metrics
        self.readers = readers
        self.workers = concurrent.futures.ThreadPoolExecutor(max_workers, thread_name_prefix="rpc")
        db = service.catalog.db
        self.writes = WritePipeline(db, PIPELINE_THREADS if db.batched_reads else 1) if db.commits_together else None
        # Long reads and whole-index jobs queue for a few threads of their own, so a flood of them
        # shares the CPU with everyone else instead of taking every worker.
        self.heavy = concurrent.futures.ThreadPoolExecutor(settings.heavy_workers, thread_name_prefix="heavy")
        self.loaders = concurrent.futures.ThreadPoolExecutor(settings.max_bulk_loads, thread_name_prefix="load")
        # BulkLoad streams in progress, over gRPC and HTTP together (the HTTP layer takes them too).
        self.load_slots = threading.BoundedSemaphore(settings.max_bulk_loads)
        self.rank_watchers = Watchers(
            settings.max_rank_watchers, metrics and metrics.rank_watchers, "ranks are watched", "max_rank_watchers"
        )
        self.window_end_streams = Watchers(
            settings.max_window_end_streams,
            metrics and metrics.window_end_streams,
            "window-end event streams are open",
            "max_window_end_streams",
        )
        self.bad_requests = RateLimitedLog()
        self.calls: set[_Call] = set()  # calls running on threads (shutdown stops them)
        # gRPC calls of the service being answered now (changed on the event loop only), against
        # the server's cap (ServerSettings.max_concurrent_calls), in the metrics.
        self.in_flight = 0
        if metrics is not None:
            metrics.calls_in_flight.set_function(lambda: self.in_flight)
            metrics.max_calls.set(settings.max_concurrent_calls)
        self.shared_reads: dict[tuple, _SharedRead] = {}  # watched ranks' reads, by request
        self.stale_answers: dict[tuple[str, bytes], _StaleAnswer] = {}  # reads that tolerate staleness
        self._stale_pruned = 0.0
        self.timeouts = _Timeouts()
        # Reads of the embedded store cost no round trips: short ones are served on the event loop.
        self.inline_reads = not service.catalog.db.batched_reads
        # A store with versions serves reads that tolerate staleness; the embedded store's always read the latest.
        self.versioned = service.catalog.db.newest_version() is not None
        self._handlers: dict[str, grpc.RpcMethodHandler] = {}
        for method in pb.DESCRIPTOR.services_by_name["Leaderboard"].methods:
            request_type = getattr(pb, method.input_type.name)
            path = f"/{SERVICE_NAME}/{method.name}"
            stream = RPCS[method.name].stream
            if stream is not Stream.UNARY:
                # A method answering with a stream (Load) writes its messages itself and returns nothing.
                make = (
                    grpc.stream_stream_rpc_method_handler
                    if stream.server_streaming
                    else grpc.stream_unary_rpc_method_handler
                )
                behaviour = (
                    self._stream
                    if stream.client_streaming
                    else self._window_ends
                    if stream is Stream.EVENTS
                    else self._watch
                )
                self._handlers[path] = make(_bind(behaviour, method.name, request_type))
            else:
                unary = _Unary(self, method.name, request_type, getattr(service, method.name))
                self._handlers[path] = grpc.stream_unary_rpc_method_handler(unary.serve)

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        return self._handlers.get(handler_call_details.method)

    def shutdown(self) -> None:
        """Stop the calls still running (they end at their next check) and wait for their threads."""
        for call in list(self.calls):
            call.cancelled = True
        if self.writes is not None:
            self.writes.stop()
        self.workers.shutdown(wait=True, cancel_futures=True)
        self.heavy.shutdown(wait=True, cancel_futures=True)
        self.loaders.shutdown(wait=True, cancel_futures=True)
        if self.readers is not None:
            self.readers.shutdown()

    # -- helpers ------------------------------------------------------------------------------

    async def _read(self, context: aio.ServicerContext, timeout: float, what: str) -> bytes | None:
        """The next message's bytes, None at the end of the stream."""
        try:
            message = await self.timeouts.read(context, timeout)
        except TimeoutError:
            raise Answer(grpc.StatusCode.DEADLINE_EXCEEDED, f"{what} did not arrive within {timeout:g} s") from None
        return None if message is aio.EOF else message

    def _parse(self, request_type: type[Message], data: bytes, method: str, context: aio.ServicerContext) -> Message:
        try:
            return request_type.FromString(data)
        except Exception:  # DecodeError, or a recursion limit on deep nesting: either way, not a request
            peer = context.peer()[:60]
            self.bad_requests.warning(f"{method}: a request of {len(data)} bytes from {peer} does not parse")
            raise Answer(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"the request does not parse as {request_type.DESCRIPTOR.full_name}",
            ) from None

    def rows(self, method: str, request: Any) -> int:
        """The rows the call answers with (1 for a point read or a write)."""
        rows = RPCS[method].rows
        return 1 if rows is None else rows(request, self.settings)

    def is_heavy(self, method: str, request: Any) -> bool:
        """Whether a call may do much more work than a point read or a score write."""
        return RPCS[method].heavy or self.rows(method, request) > self.settings.heavy_rows

    def reads_elsewhere(self, method: str, request: Any) -> bool:
        """Whether the call is a heavy read that a reader process serves."""
        return self.readers is not None and RPCS[method].elsewhere and self.is_heavy(method, request)

    def resolve(self, name: str) -> Any:
        """The index ``name`` as this server knows it (blocking: it may read the catalog)."""
        try:
            return self.servicer.catalog.get(name)
        except Exception as exc:
            code = status_of(exc)
            if code is None:
                raise
            raise Answer(code, cap_message(str(exc))) from None

    def read_elsewhere(self, method: str, request: Message, deadline: float) -> bytes:
        """Serve a heavy read on a reader process and wait for its answer (from a worker thread)."""
        assert self.readers is not None
        data = request.SerializeToString()
        return self.sized(self.readers.call(method, self.resolve(request.index), request.index, data, deadline))

    def reply(self, response: Message) -> bytes:
        """The answer's bytes; RESOURCE_EXHAUSTED over the message limit (HTTP answers too)."""
        return self.sized(response.SerializeToString())

    def sized(self, data: bytes) -> bytes:
        """``data``, if within the message limit; RESOURCE_EXHAUSTED otherwise."""
        if len(data) > self.settings.max_message_bytes:
            raise Answer(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"the answer is {len(data)} bytes, over the {self.settings.max_message_bytes}-byte message limit: "
                "ask for fewer rows",
            )
        return data

    async def answer(self, context: aio.ServicerContext, work: Awaitable[bytes | None], method: str) -> bytes | None:
        """The call's answer: ``work``'s, or the status of the :class:`Answer` it raised (timed and
        counted in the metrics either way)."""
        started = time.perf_counter()
        code = grpc.StatusCode.CANCELLED  # unless it ends otherwise: the client went away
        self.in_flight += 1
        try:
            data = await work
            code = grpc.StatusCode.OK
            return data
        except Answer as answer:
            # Set, not raised with context.abort: thousands of stalled calls end this way, and the
            # exception abort raises costs several times the rest of the call.
            code = answer.code
            context.set_code(code)
            context.set_details(cap_message(str(answer)))
            if answer.trailing:
                context.set_trailing_metadata(answer.trailing)
                if self.metrics is not None:
                    self.metrics.observe_refusal(method, answer.trailing)
            return None
        finally:
            self.in_flight -= 1
            if self.metrics is not None:
                self.metrics.observe_call("grpc", method, code, time.perf_counter() - started)

    def _observe(self, method: str, request: Message, response: Message) -> None:
        if self.metrics is not None:
            self.metrics.observe_result(method, request, response)

    @staticmethod
    async def within(call: _Call, answer: Awaitable[Any], method: str) -> Any:
        """``answer``, awaited until the call's deadline (and a moment to report progress)."""
        try:
            async with asyncio.timeout(call.time_remaining() + REPORT_SECONDS):
                return await answer
        except TimeoutError:
            raise Answer(grpc.StatusCode.DEADLINE_EXCEEDED, f"{method} ran past its deadline on the server") from None

    def read_bounds(self, call: _Call, context: aio.ServicerContext) -> None:
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
        self, method: str, data: bytes, call: _Call, compute: Callable[[], Awaitable[bytes]]
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
        # least at the newest version seen now, and at the call's min_version.
        floor = max(self.servicer.catalog.db.newest_version() or 0, call.min_version)
        answer = asyncio.ensure_future(compute())
        shared = self.stale_answers[key] = _StaleAnswer(now - staleness, floor, answer)
        answer.add_done_callback(functools.partial(self._settled, key, shared, call))
        if now - self._stale_pruned > 1.0:
            self._prune_stale(now)
        return await asyncio.shield(answer)

    def _settled(self, key: tuple[str, bytes], shared: _StaleAnswer, call: _Call, answer: asyncio.Future) -> None:
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

    def start(self, context: aio.ServicerContext) -> _Call:
        """The call's context for its handler, with its deadline: the client's or ours, whichever is sooner."""
        limit = self.settings.default_deadline
        remaining = context.time_remaining()
        if remaining is not None and remaining < limit:
            limit = remaining
        return _Call(time.monotonic() + limit, context, self.settings.tokens)

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
        share one read every WATCH_SECONDS on a worker (:class:`_SharedRead`)."""

        async def work() -> None:
            request = await self._only_request(context, method, request_type)
            with self.rank_watchers.slot():
                key = (method, request.SerializeToString(deterministic=True))
                shared = self.shared_reads.get(key)
                if shared is None:
                    shared = self.shared_reads[key] = _SharedRead()
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

    async def _repeat(self, key: tuple, shared: _SharedRead, method: str, request: Message) -> None:
        """``shared``'s read every WATCH_SECONDS (each with the default deadline) while anyone
        watches; an error ends it, and the watches with it."""
        read = getattr(self.servicer, RPCS[method].watches)
        while True:
            try:
                call = _Call(time.monotonic() + self.settings.default_deadline)
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

    async def _on_worker(self, call: _Call, method: str, fn: Callable[[Any, _Call], Any], request: Message) -> Any:
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
                    future.add_done_callback(_outcome_taken)  # however it ends, nobody waits for it
                    raise
            finally:
                call.cancelled = True
                self.calls.discard(call)
                self.load_slots.release()
            if first is not None and response is not None:
                self._observe(method, first, response)
            return None if response is None else self.reply(response)

        return await self.answer(context, work(), method)


def _outcome_taken(future: asyncio.Future) -> None:
    """Take the outcome of a future nobody awaits any more (else asyncio logs its exception as
    "never retrieved", with a traceback, when it is collected)."""
    if not future.cancelled():
        future.exception()


def _settle(done: asyncio.Future, result: Any, error: BaseException | None) -> None:
    """Give ``done`` its outcome (on the event loop), unless it has one already (the call timed out
    or its client went away)."""
    if not done.done():
        if error is None:
            done.set_result(result)
        else:
            done.set_exception(error)


def _run_into(
    loop: asyncio.AbstractEventLoop,
    done: asyncio.Future,
    handler: Callable,
    request: Any,
    call: _Call,
    db: Database | None = None,
) -> None:
    """Run ``handler`` (on a worker thread) and hand its outcome to ``done`` on the event loop;
    with ``db``, a read that tolerates staleness, with when the state it read was current."""
    try:
        result, error = handler(request, call), None
        if db is not None:
            result = Fresh(result, db.last_read_since())
    except BaseException as exc:  # the event loop answers with it
        result, error = None, exc
    with contextlib.suppress(RuntimeError):  # the loop closed: the server stopped without waiting for this call
        loop.call_soon_threadsafe(_settle, done, result, error)


def _late(left: float, waited: float) -> bool:
    """Whether a queued write with ``left`` seconds to its deadline, after ``waited`` in the queue,
    is answered without running (see :data:`LATE_SECONDS`)."""
    return left < LATE_SECONDS and waited > left


def _settle_all(outcomes: list[tuple[asyncio.Future, Any, BaseException | None]]) -> None:
    for done, result, error in outcomes:
        _settle(done, result, error)


class WritePipeline:
    """Score writes run on a few threads of their own, each taking the writes queued meanwhile as
    one batch that the store commits together (``Database.run_together``), their answers handed
    to the event loop together once it is durable.

    On the embedded store one thread runs each batch in one commit: a worker thread per write
    cost a wake-up there and back and a turn in the group commit's queue (with six writers a
    quarter of the server's CPU per write).  On FoundationDB a batch is one transaction (one read
    version, one commit) instead of one per write, and ``threads`` batches are in flight at once:
    one thread's batch runs while another's commits."""

    def __init__(self, db: Database, threads: int = 1) -> None:
        self.db = db
        self._queue: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future, float, Callable, Any, _Call]] = deque()
        self._ready = threading.Condition()
        self._stopping = False
        self._threads = [
            threading.Thread(target=self._serve, name=f"writes_{number}", daemon=True) for number in range(threads)
        ]
        for thread in self._threads:
            thread.start()

    def submit(
        self, loop: asyncio.AbstractEventLoop, done: asyncio.Future, handler: Callable, request: Any, call: _Call
    ) -> None:
        """Run ``handler(request, call)`` with the next batch and settle ``done`` with its outcome
        (on ``loop``) once the batch committed; not at all if ``call`` is cancelled by then."""
        with self._ready:
            self._queue.append((loop, done, time.monotonic(), handler, request, call))
            self._ready.notify()

    def stop(self) -> None:
        """Run what is queued (cancelled calls are skipped), then end the threads."""
        with self._ready:
            self._stopping = True
            self._ready.notify_all()
        for thread in self._threads:
            thread.join()

    def _serve(self) -> None:
        while True:
            with self._ready:
                while not self._queue and not self._stopping:
                    self._ready.wait()
                if not self._queue:
                    return
                batch = [self._queue.popleft() for _ in range(min(len(self._queue), PIPELINE_BATCH))]
            self._run(batch)

    def _run(self, batch: list[tuple[asyncio.AbstractEventLoop, asyncio.Future, float, Callable, Any, _Call]]) -> None:
        # A call answered already (its deadline passed, or its client left) is not run; nor one
        # that waited in the queue longer than it has left, too little to wait for the store (the
        # writes before it waited for the cluster): it is answered now, not applied, to retry.
        taken = [queued for queued in batch if not queued[5].cancelled]
        now = time.monotonic()
        late = [queued for queued in taken if _late(queued[5].time_remaining(), now - queued[2])]
        if late:
            taken = [queued for queued in taken if queued not in late]
            for loop, done, *_ in late:
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(_settle_all, [(done, None, Answer(grpc.StatusCode.UNAVAILABLE, LATE))])
        calls = [functools.partial(handler, request, call) for *_, handler, request, call in taken]
        # The store waits for the cluster no longer than the first of these calls must be answered.
        deadline = min((call.time_remaining() for *_, call in taken), default=float("inf"))
        try:
            with call_deadline(deadline):
                outcomes = self.db.run_together(calls)
            versions = self.db.last_commit_versions()
        except Exception as exc:  # the store failed outside any call: every call of the batch answers it
            outcomes, versions = [(None, exc)] * len(calls), []
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future, Any, BaseException | None]]] = {}
        for number, ((loop, done, *_), (result, error)) in enumerate(zip(taken, outcomes, strict=True)):
            if error is not None and not isinstance(error, Answer):  # the commit's: the store's status
                error = answer_for(error, "a score write")
            elif error is None and number < len(versions) and versions[number]:
                result = Committed(result, versions[number])
            by_loop.setdefault(loop, []).append((done, result, error))
        for loop, settled in by_loop.items():
            with contextlib.suppress(RuntimeError):  # the loop closed: the server stopped without waiting
                loop.call_soon_threadsafe(_settle_all, settled)


class Committed(NamedTuple):
    """A write's answer and the version it committed at (told in the trailing metadata)."""

    response: Any
    version: int


class Fresh(NamedTuple):
    """A read's answer and when the state it read was current (None: not known)."""

    response: Any
    since: float | None


class _StaleAnswer:
    """An answer to a read that tolerates staleness, shared by identical reads (the same method and
    request bytes) while it is young enough for them: it holds every write acknowledged before
    ``as_of`` (its computation's start, less the staleness it was computed with), and every
    commit up to version ``floor``."""

    __slots__ = ("as_of", "floor", "answer")

    def __init__(self, as_of: float, floor: int, answer: asyncio.Future) -> None:
        self.as_of = as_of
        self.floor = floor
        self.answer = answer


def _expire(done: asyncio.Future, method: str) -> None:
    _settle(done, None, Answer(grpc.StatusCode.DEADLINE_EXCEEDED, f"{method} ran past its deadline on the server"))


class _Unary:
    """One unary method as the dispatcher serves it (what it can work out once, it does here)."""

    def __init__(self, dispatcher: Dispatcher, name: str, request_type: type[Message], handler: Callable) -> None:
        self.dispatcher = dispatcher
        self.name = name
        self.request_type = request_type
        self.handler = handler
        # Reads of up to this many rows run on the event loop (0: none of this method's do).
        rpc = RPCS[name]
        self.inline_rows = min(INLINE_ROWS, dispatcher.settings.heavy_rows) if dispatcher.inline_reads else 0
        if not rpc.inline:
            self.inline_rows = 0
        self.elsewhere = dispatcher.readers is not None and rpc.elsewhere
        self.pipelined = dispatcher.writes is not None and rpc.pipelined
        self.counts_result = rpc.counted
        self.bounded = rpc.inline  # reads whose freshness the caller may bound

    async def serve(self, _requests: Any, context: aio.ServicerContext) -> bytes | None:
        return await self.dispatcher.answer(context, self._serve(context), self.name)

    async def _serve(self, context: aio.ServicerContext) -> bytes:
        dispatcher = self.dispatcher
        settings = dispatcher.settings
        data = await dispatcher._read(context, settings.receive_timeout, "the request")
        if data is None:
            raise Answer(grpc.StatusCode.INVALID_ARGUMENT, f"{self.name} needs a request message")
        request = dispatcher._parse(self.request_type, data, self.name, context)
        call = dispatcher.start(context)
        if self.bounded:
            dispatcher.read_bounds(call, context)
            if call.max_staleness_ms:
                return await dispatcher.shared_stale(self.name, data, call, lambda: self._answer(request, data, call))
        return await self._answer(request, data, call)

    async def _answer(self, request: Message, data: bytes, call: _Call) -> bytes:
        dispatcher = self.dispatcher
        if dispatcher.rows(self.name, request) <= self.inline_rows:
            response = self.handler(request, call)
        elif not dispatcher.is_heavy(self.name, request):
            response = await self._on_thread(dispatcher.workers, request, call)
        elif self.elsewhere:
            return dispatcher.sized(await self._on_reader(request, data, call))
        else:
            response = await self._on_thread(dispatcher.heavy, request, call)
        if isinstance(response, Fresh):
            call.read_since = response.since
            response = response.response
        if isinstance(response, Committed):
            if call._context is not None:
                call._context.set_trailing_metadata(((wire.COMMIT_VERSION_HEADER, str(response.version)),))
            response = response.response
        if self.counts_result:
            dispatcher._observe(self.name, request, response)
        return dispatcher.reply(response)

    async def _on_thread(self, pool: concurrent.futures.Executor, request: Message, call: _Call) -> Message:
        """The handler's answer, from a worker thread of ``pool`` (a score write that the write
        pipeline takes instead, from its thread): one future the worker settles,
        DEADLINE_EXCEEDED once the deadline passed (with a moment for a handler that watches it,
        such as Fill, to report its progress)."""
        calls = self.dispatcher.calls
        calls.add(call)
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        work = None
        if self.pipelined and pool is self.dispatcher.workers:
            self.dispatcher.writes.submit(loop, done, self.handler, request, call)  # type: ignore[union-attr]
        else:
            db = self.dispatcher.servicer.catalog.db if call.max_staleness_ms else None
            work = pool.submit(_run_into, loop, done, self.handler, request, call, db)
        timeouts = self.dispatcher.timeouts
        timeouts.add(done, call.deadline + REPORT_SECONDS, _expire, done, self.name)
        try:
            return await done
        except asyncio.CancelledError:  # the client went away: a call no thread took yet never runs
            if work is not None:
                work.cancel()
            done.cancel()  # what the handler ends with is answered to nobody
            raise
        finally:
            timeouts.discard(done)
            call.cancelled = True  # a client's cancel or a deadline: loops in the handler stop
            calls.discard(call)

    async def _on_reader(self, request: Any, data: bytes, call: _Call) -> bytes:
        dispatcher = self.dispatcher
        assert dispatcher.readers is not None
        index = request.index
        if dispatcher.inline_reads:  # the catalog read, if the name is not kept open yet
            resolved = dispatcher.resolve(index)
        else:
            resolved = await asyncio.get_running_loop().run_in_executor(dispatcher.workers, dispatcher.resolve, index)
        answer = dispatcher.readers.submit(self.name, resolved, index, data, call.deadline)
        return await dispatcher.within(call, asyncio.wrap_future(answer), self.name)


def rank_seen(response: pb.RankAndEntryResponse) -> tuple:
    """What a rank watcher is told again when it changes: the rank, the score and the window."""
    entry = response.entry if response.HasField("entry") else None
    return (
        None if entry is None else (entry.rank, entry.score.SerializeToString()),
        response.window.SerializeToString(),
    )


def _bind(behaviour: Callable[..., Awaitable[bytes]], method: str, request_type: type[Message]) -> Callable:
    async def handle(requests: Any, context: Any) -> bytes:
        return await behaviour(method, request_type, requests, context)

    return handle


class AccessInterceptor(aio.ServerInterceptor):
    """Checks each call's bearer token before its request is read: health is open, reflection
    needs the read role, each Leaderboard method the role its entry of :data:`fdb_leaderboard.rpcs.RPCS` names."""

    def __init__(self, tokens: access.Tokens) -> None:
        self.tokens = tokens
        self.refusals = RateLimitedLog()

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        method = handler_call_details.method
        if method.startswith(HEALTH_PREFIX):
            return await continuation(handler_call_details)
        header, headers = None, 0
        for key, value in handler_call_details.invocation_metadata or ():
            if key == "authorization":
                header = value if isinstance(value, str) else value.decode("latin-1")
                headers += 1
        if headers > 1:  # which one is the caller's is anyone's guess
            return _refusal(grpc.StatusCode.UNAUTHENTICATED, access.several_authorizations(headers))
        token = access.bearer_token(header)
        try:
            if method.startswith(REFLECTION_PREFIX):
                self.tokens.authenticate(token)
            elif method.startswith(f"/{SERVICE_NAME}/"):
                self.tokens.authorize(token, method)
            else:
                return await continuation(handler_call_details)  # no such service: UNIMPLEMENTED
        except access.Unauthenticated as exc:
            return _refusal(grpc.StatusCode.UNAUTHENTICATED, str(exc))
        except access.AccessError as exc:  # too low a role, or a method without a rule
            self.refusals.warning(f"refused {access.method_name(method)[:100]}: {exc}")
            return _refusal(grpc.StatusCode.PERMISSION_DENIED, str(exc))
        return await continuation(handler_call_details)


def _refusal(code: grpc.StatusCode, message: str) -> grpc.RpcMethodHandler:
    async def refuse(_requests: Any, context: aio.ServicerContext) -> None:
        context.set_code(code)  # set, not raised with abort: refusals may come in floods
        context.set_details(message)

    return grpc.stream_stream_rpc_method_handler(refuse)
