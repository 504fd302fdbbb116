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

Streams are served by :mod:`.streams`, score writes by :mod:`.write_pipeline`, reads that
tolerate staleness by :mod:`.stale_reads`, time limits by :mod:`.timeouts`; how each method is
served (heavy, inline, pipelined, on a reader process, which stream) its entry of
:data:`fdb_leaderboard.rpcs.RPCS` says.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple

import grpc
from google.protobuf.message import Message
from grpc import aio

from .. import wire
from ..proto import service_pb2 as pb
from ..rpcs import RPCS, Stream, names
from ..store import Database
from .grpc_service import SERVICE_NAME, LeaderboardService
from .log_lines import RateLimitedLog
from .metrics import Metrics
from .readers import ReadProcesses
from .settings import ServerSettings
from .stale_reads import StaleAnswer, StaleReads
from .status import Answer, cap_message, status_of
from .streams import SharedRead, StreamedCalls, Watchers
from .timeouts import REPORT_SECONDS, ServedCall, Timeouts
from .write_pipeline import PIPELINE_THREADS, Committed, WritePipeline, settle

# Reads of up to INLINE_ROWS rows may run on the event loop when the store's reads cost no round
# trips (an entry's ``inline``): about 10 microseconds of Python a row, so one holds the loop no
# longer than the interpreter's switch interval would let a thread hold it (see server.tune_for_serving).
INLINE_READS = names(inline=True)  # also read by the HTTP door
INLINE_ROWS = 25


class Dispatcher(StreamedCalls, StaleReads, grpc.GenericRpcHandler):
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
        self.calls: set[ServedCall] = set()  # calls running on threads (shutdown stops them)
        # gRPC calls of the service being answered now (changed on the event loop only), against
        # the server's cap (ServerSettings.max_concurrent_calls), in the metrics.
        self.in_flight = 0
        if metrics is not None:
            metrics.calls_in_flight.set_function(lambda: self.in_flight)
            metrics.max_calls.set(settings.max_concurrent_calls)
        self.shared_reads: dict[tuple, SharedRead] = {}  # watched ranks' reads, by request
        self.stale_answers: dict[tuple[str, bytes], StaleAnswer] = {}  # reads that tolerate staleness
        self._stale_pruned = 0.0
        self.timeouts = Timeouts()
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
    async def within(call: ServedCall, answer: Awaitable[Any], method: str) -> Any:
        """``answer``, awaited until the call's deadline (and a moment to report progress)."""
        try:
            async with asyncio.timeout(call.time_remaining() + REPORT_SECONDS):
                return await answer
        except TimeoutError:
            raise Answer(grpc.StatusCode.DEADLINE_EXCEEDED, f"{method} ran past its deadline on the server") from None

    def start(self, context: aio.ServicerContext) -> ServedCall:
        """The call's context for its handler, with its deadline: the client's or ours, whichever is sooner."""
        limit = self.settings.default_deadline
        remaining = context.time_remaining()
        if remaining is not None and remaining < limit:
            limit = remaining
        return ServedCall(time.monotonic() + limit, context, self.settings.tokens)


def _run_into(
    loop: asyncio.AbstractEventLoop,
    done: asyncio.Future,
    handler: Callable,
    request: Any,
    call: ServedCall,
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
        loop.call_soon_threadsafe(settle, done, result, error)


class Fresh(NamedTuple):
    """A read's answer and when the state it read was current (None: not known)."""

    response: Any
    since: float | None


def _expire(done: asyncio.Future, method: str) -> None:
    settle(done, None, Answer(grpc.StatusCode.DEADLINE_EXCEEDED, f"{method} ran past its deadline on the server"))


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

    async def _answer(self, request: Message, data: bytes, call: ServedCall) -> bytes:
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

    async def _on_thread(self, pool: concurrent.futures.Executor, request: Message, call: ServedCall) -> Message:
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

    async def _on_reader(self, request: Any, data: bytes, call: ServedCall) -> bytes:
        dispatcher = self.dispatcher
        assert dispatcher.readers is not None
        index = request.index
        if dispatcher.inline_reads:  # the catalog read, if the name is not kept open yet
            resolved = dispatcher.resolve(index)
        else:
            resolved = await asyncio.get_running_loop().run_in_executor(dispatcher.workers, dispatcher.resolve, index)
        answer = dispatcher.readers.submit(self.name, resolved, index, data, call.deadline)
        return await dispatcher.within(call, asyncio.wrap_future(answer), self.name)


def _bind(behaviour: Callable[..., Awaitable[bytes]], method: str, request_type: type[Message]) -> Callable:
    async def handle(requests: Any, context: Any) -> bytes:
        return await behaviour(method, request_type, requests, context)

    return handle
