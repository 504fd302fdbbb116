"""The HTTP application: every RPC at ``POST /v1/<Method>``, the REST routes, the page, the
OpenAPI document and the metrics.

Handlers are async only to wait: each call runs the (blocking) servicer in a worker thread,
at most ``max_workers`` at once, as the gRPC server's pool does.  A handler checks the bearer
token before it reads anything else of the request; a body must arrive within the server's
``receive_timeout`` (each NDJSON line within ``stream_idle_timeout``), and a large one is parsed
on a heavy worker, never on the event loop.  Input a library refuses is INVALID_ARGUMENT (400),
a client gone before its answer CANCELLED (499), neither a server error.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import pathlib
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Iterator
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import grpc
from google.protobuf.message import Message
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.types import Message as AsgiMessage

from .. import formats
from ..access import Tokens
from ..service.calls import Dispatcher
from ..service.grpc_service import ClientGone
from ..service.metrics import Metrics
from ..service.status import Answer
from ..service.upgrades import StoreStatus
from ..wire import COMMIT_VERSION_HEADER, rpc_json
from . import openapi
from .deadlines import Deadlines
from .events import EventBoards, window_end_stream
from .guard import CLOSE, DoorGuard, has_body
from .limits import HttpLimits
from .plain import json_value, parse_request
from .rest import ROUTES, RestRoute, parse_uint
from .transcode import (
    INPUT_ERRORS,
    UNEXPECTED,
    CallFailed,
    Rpc,
    Transcoder,
    check_access,
    invalid_input,
)

log = logging.getLogger("fdb_leaderboard.http")
STATIC = pathlib.Path(__file__).parent / "static"
# Thread pools of the calls: point reads and writes, heavy calls, event streams' boards, and the
# readiness probe (one at a time: probes of a store that hangs queue there, never in the workers).
WORKERS, HEAVY, EVENTS, PROBE = "workers", "heavy", "events", "probe"
# /readyz answers 503 when a read of the store takes longer than this.
READY_SECONDS = 2.0
# Bodies larger than this are parsed on a heavy worker: JSON decoding costs about 0.6 s per MB,
# which on the event loop would hold every other request.
PARSE_ON_LOOP_BYTES = 64 * 1024
# HTTP methods counted by name in the metrics; any other is "other" (a label per made-up method
# would let anyone grow the metrics without bound).
COUNTED_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"})


def _commit_version(request: Request) -> dict[str, str] | None:
    """A score write's answer's ``commit-version`` header (gRPC's trailing metadata), where known:
    a read sent with it as ``min-version`` sees the write, through any server."""
    version = getattr(request.state, "commit_version", 0)
    return {COMMIT_VERSION_HEADER: str(version)} if version else None


def _error(exc: CallFailed, request: Request | None = None) -> JSONResponse:
    """The error's answer; for a request with a body (perhaps unread: a refusal does not wait for
    it), the connection then closes, so nobody can keep the server reading what it refused."""
    headers = exc.headers()
    if request is not None and has_body(request.headers):
        headers.update(CLOSE)
    return JSONResponse(exc.body(), status_code=exc.http_status, headers=headers)


async def _read_body(request: Request, limit: int, deadlines: Deadlines, late: set[Hashable]) -> bytes:
    """The body, at most ``limit`` bytes (the server's message limit, as for a gRPC request),
    arriving within the time ``deadlines`` keep (a late read's task is cancelled, and in ``late``)."""
    task = asyncio.current_task()
    assert task is not None
    deadlines.add(task, task.get_loop())
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise CallFailed(grpc.StatusCode.RESOURCE_EXHAUSTED, f"the request body is larger than {limit} bytes")
            chunks.append(chunk)
    except asyncio.CancelledError:
        if task not in late:
            raise
        late.discard(task)
        task.uncancel()
        raise CallFailed(
            grpc.StatusCode.DEADLINE_EXCEEDED, f"the request body did not arrive within {deadlines.seconds:g} s"
        ) from None
    except ClientDisconnect:
        raise CallFailed(grpc.StatusCode.CANCELLED, "the client went away before sending its request") from None
    finally:
        deadlines.discard(task)
    return b"".join(chunks)


async def _lines(chunks: AsyncIterator[bytes], limit: int, idle: float, what: str) -> AsyncIterator[bytes]:
    """The lines of a streamed body, each at most ``limit`` bytes, like a message, and each
    complete within ``idle`` seconds of the one before."""
    pending = bytearray()
    searched = 0  # where to look for the next newline
    iterator = aiter(chunks)
    loop = asyncio.get_running_loop()
    while True:
        ends = loop.time() + idle
        while (newline := pending.find(b"\n", searched)) < 0:
            _line_within(len(pending), limit)
            searched = len(pending)
            try:
                async with asyncio.timeout_at(ends):
                    chunk = await anext(iterator)
            except TimeoutError:
                raise Answer(grpc.StatusCode.DEADLINE_EXCEEDED, f"{what} did not arrive within {idle:g} s") from None
            except StopAsyncIteration:
                if pending:
                    yield bytes(pending)
                return
            pending += chunk
        _line_within(newline, limit)
        line = bytes(pending[:newline])
        del pending[: newline + 1]
        searched = 0
        yield line


def _line_within(size: int, limit: int) -> None:
    if size > limit:
        raise Answer(grpc.StatusCode.RESOURCE_EXHAUSTED, f"a line is larger than {limit} bytes")


class HttpApi:
    """The Starlette application over one servicer."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        max_workers: int = 16,
        tokens: Tokens | None = None,
        limits: HttpLimits | None = None,
        hosts: list[str] | None = None,
    ) -> None:
        """``hosts``: the host names answered (see :meth:`HttpLimits.allowed_hosts`; None: any)."""
        self.transcoder = Transcoder(dispatcher, tokens)
        self.limits = limits = limits or HttpLimits()
        self.metrics = metrics = dispatcher.metrics
        self.max_workers = max_workers
        self._limiters: dict[str, anyio.CapacityLimiter] = {}
        self.events = EventBoards(limits.event_stream_budget(), self.transcoder.stopping)
        if metrics is not None:
            metrics.event_streams.set_function(lambda: self.events.streams)
        # A body's time limit (each late read's task is cancelled, and answered DEADLINE_EXCEEDED).
        self.bodies = Deadlines(self.transcoder.settings.receive_timeout, self._body_too_late)
        self.late_bodies: set[Hashable] = set()
        routes: list[Route | Mount] = [
            Route("/", self.page, methods=["GET"], name="page"),
            Route("/openapi.json", self.openapi, methods=["GET"], name="openapi"),
            Route("/docs", self.docs, methods=["GET"], name="docs"),
            Route("/healthz", self.healthz, methods=["GET"], name="healthz"),
            Route("/readyz", self.readyz, methods=["GET"], name="readyz"),
        ]
        if metrics is not None:
            routes.append(Route("/metrics", self.metrics_text, methods=["GET"], name="metrics"))
        for rpc in self.transcoder.rpcs.values():
            handler = self._streaming_rpc(rpc) if rpc.client_streaming else self._unary_rpc(rpc)
            routes.append(Route(rpc.path, handler, methods=["POST"], name=rpc.name))
        for rest in ROUTES:
            routes.append(Route(rest.path, self._rest(rest), methods=[rest.method], name=f"{rest.method} {rest.path}"))
        routes.append(Mount("/static", StaticFiles(directory=STATIC), name="static"))
        handlers = {HTTPException: _no_route, Exception: _unexpected}
        self.starlette = Starlette(routes=routes, exception_handlers=handlers)  # type: ignore[arg-type]
        self.app: ASGIApp = DoorGuard(self.starlette, hosts or ["*"], tokens is not None)
        if metrics is not None:
            self.app = _MetricsMiddleware(self.app, metrics)
        self.document = openapi.document(list(self.transcoder.rpcs.values()), ROUTES, metrics is not None)

    @property
    def routes(self) -> list[Route | Mount]:
        return self.starlette.routes

    async def _in_thread(
        self, fn: Callable[..., Any], *args: Any, pool: str = WORKERS, abandon_on_cancel: bool = False
    ) -> Any:
        """``fn(*args)`` on a worker thread of ``pool``: at most ``max_workers`` at once, heavy calls
        (as the gRPC dispatcher judges them) on their own ``heavy_workers``, so they never hold
        the threads of point reads and score writes, and event streams' boards on one thread."""
        limiter = self._limiters.get(pool)
        if limiter is None:  # made on the event loop, on first use
            sizes = {WORKERS: self.max_workers, HEAVY: self.transcoder.settings.heavy_workers, EVENTS: 1, PROBE: 1}
            limiter = self._limiters[pool] = anyio.CapacityLimiter(sizes[pool])
        call = functools.partial(fn, *args)
        return await anyio.to_thread.run_sync(call, limiter=limiter, abandon_on_cancel=abandon_on_cancel)

    async def _body(self, request: Request) -> bytes:
        return await _read_body(request, self.transcoder.settings.max_message_bytes, self.bodies, self.late_bodies)

    def _body_too_late(self, task: Hashable) -> None:
        """Stop a body's read (``_read_body`` answers DEADLINE_EXCEEDED)."""
        self.late_bodies.add(task)
        task.cancel()  # type: ignore[attr-defined]

    async def _parsed(self, body: bytes, parse: Callable[[bytes], Any]) -> Any:
        """``parse(body)``: on a heavy worker if the body is large, so the event loop goes on."""
        if len(body) > PARSE_ON_LOOP_BYTES:
            return await self._in_thread(parse, body, pool=HEAVY)
        return parse(body)

    async def _call(
        self, request: Request, name: str, message: Any, background: bool = False, gone: Any = None
    ) -> Message:
        """The call's answer; ``background``: an event stream's, ``gone``: set when a stream's
        client went away (see :meth:`Transcoder.call`)."""
        pool = EVENTS if background else HEAVY if self.transcoder.dispatcher.is_heavy(name, message) else WORKERS
        headers = request.headers
        response, version = await self._in_thread(self._called, name, message, headers, background, gone, pool=pool)
        if version:
            request.state.commit_version = version
        return response

    def _called(self, name: str, message: Any, headers: Any, background: bool, gone: Any) -> tuple[Message, int]:
        """The call's answer and, for a score write, its commit version (on the thread that served it)."""
        response = self.transcoder.call(name, message, headers, background, gone=gone)
        return response, self.transcoder.commit_version(name)

    def _check_access(self, request: Request, method: str) -> None:
        check_access(self.transcoder.tokens, request.headers, method)

    # -- the RPCs ---------------------------------------------------------------------------------

    def _unary_rpc(self, rpc: Rpc) -> Callable[[Request], Awaitable[Response]]:
        def parse(body: bytes) -> Message:
            return parse_request(body, rpc.request_type)

        async def handle(request: Request) -> Response:
            try:
                self._check_access(request, rpc.name)
                message = await self._parsed(await self._body(request), parse)
                answer = rpc_json(await self._call(request, rpc.name, message))
                return JSONResponse(answer, headers=_commit_version(request))
            except CallFailed as exc:
                return _error(exc, request)

        return handle

    def _streaming_rpc(self, rpc: Rpc) -> Callable[[Request], Awaitable[Response]]:
        """A client-streaming RPC: the body is NDJSON, one request message per line, read as the
        servicer asks for them (the body is never held whole), each within the server's
        ``stream_idle_timeout``.  The servicer may read them from any thread (Load's loader)."""

        async def handle(request: Request) -> Response:
            try:
                self._check_access(request, rpc.name)
            except CallFailed as exc:
                return _error(exc, request)
            settings = self.transcoder.settings
            lines = _lines(
                request.stream(),
                settings.max_message_bytes,
                settings.stream_idle_timeout,
                f"the next {rpc.name} message",
            )
            loop = anyio.lowlevel.current_token()
            gone = threading.Event()  # the client went away: a Dump, say, stops at its next step
            watching: list[asyncio.Task] = []

            async def next_line() -> bytes | None:
                try:
                    return await anext(lines)
                except StopAsyncIteration:
                    if not watching:  # the body has ended: what the client sends now is its leaving
                        watching.append(asyncio.ensure_future(_until_disconnected(request, gone)))
                    return None
                except ClientDisconnect:
                    raise ClientGone() from None

            def messages() -> Iterator[Message]:
                number = 0
                while (line := anyio.from_thread.run(next_line, token=loop)) is not None:
                    number += 1
                    if line.strip():
                        try:
                            yield parse_request(line, rpc.request_type, f"line {number}")
                        except CallFailed as exc:
                            raise Answer(exc.code, exc.message) from None

            try:
                return JSONResponse(rpc_json(await self._call(request, rpc.name, messages(), gone=gone)))
            except CallFailed as exc:
                return _error(exc, request)
            finally:
                for task in watching:
                    task.cancel()

        return handle

    # -- the REST routes -----------------------------------------------------------------------------

    def _rest(self, route: RestRoute) -> Callable[[Request], Awaitable[Response]]:
        async def handle(request: Request) -> Response:
            try:
                self._check_access(request, route.rpc)
                try:
                    values = route.parse(request.path_params, request.query_params)
                except INPUT_ERRORS as exc:
                    raise invalid_input("the request", exc) from None
                body = None
                if route.method == "POST":
                    body = await self._parsed(await self._body(request), _json_body)
                if route.events:
                    return await self._events(request, route, values)
                if route.window_ends:
                    return await self._window_end_events(request, route, values)
                status, answer = await self._answer(request, route, values, body)
                return JSONResponse(answer, status_code=status, headers=_commit_version(request))
            except CallFailed as exc:
                return _error(exc, request)

        return handle

    async def _answer(
        self, request: Request, route: RestRoute, values: dict[str, Any], body: Any, background: bool = False
    ) -> tuple[int, Any]:
        # Building may read (at=latest), so it runs on a worker too.
        pool = EVENTS if background else WORKERS
        message = await self._in_thread(_built, route, values, body, self.transcoder, request.headers, pool=pool)
        return route.respond(await self._call(request, route.rpc, message, background), values)

    async def _events(self, request: Request, route: RestRoute, values: dict[str, Any]) -> Response:
        """Server-Sent Events of the route's answer, shared by the streams of one board (see
        ``events.py``).  A first failure is the HTTP answer; later ones are ``problem`` events."""
        most = self.limits.max_event_rows
        if values.get("n", 10) > most:
            raise CallFailed(
                grpc.StatusCode.INVALID_ARGUMENT, f"an event stream sends at most {most} rows: ask for n <= {most}"
            )
        interval = values.pop("interval", 1.0)
        slot = contextlib.ExitStack()  # a watched rank holds a watcher's slot while it streams
        if route.watches_rank:
            try:
                slot.enter_context(self.transcoder.dispatcher.rank_watchers.slot())
            except Answer as answer:
                raise CallFailed(answer.code, str(answer)) from None
        key = (route.path, interval, tuple(sorted(values.items())))
        try:
            first, stream, close = await self.events.open(
                key, interval, functools.partial(self._answer, request, route, values, None, True)
            )
        except BaseException:
            slot.close()
            raise
        if first[0] != 200:
            slot.close()
            return JSONResponse(first[1], status_code=first[0])

        def close_both() -> None:  # after the response, should the stream never have started (idempotent)
            close()
            slot.close()

        return StreamingResponse(
            _holding(slot, stream),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache"},
            background=BackgroundTask(close_both),
        )

    async def _window_end_events(self, request: Request, route: RestRoute, values: dict[str, Any]) -> Response:
        """Server-Sent Events of an index's window ends, read from the store's log once a second
        (``events.window_end_stream``); a first failure is the HTTP answer."""
        message = await self._in_thread(_built, route, values, None, self.transcoder, request.headers)
        last = request.headers.get("last-event-id", "").strip()
        if last and not message.HasField("after"):
            message.after = parse_uint(last, "Last-Event-ID", 2**63 - 1)
        slot = contextlib.ExitStack()
        try:
            slot.enter_context(self.events.stream_slot())
            slot.enter_context(self.transcoder.dispatcher.window_end_streams.slot())
            after = await self._in_thread(self.transcoder.call_handler, "window_ends_start", message, request.headers)
        except Answer as answer:
            slot.close()
            raise CallFailed(answer.code, str(answer)) from None
        except BaseException:
            slot.close()
            raise

        async def following(after: int) -> list[Any]:
            message.after = after
            return await self._in_thread(self.transcoder.call_handler, "window_ends_after", message, request.headers)

        return StreamingResponse(
            _holding(slot, window_end_stream(after, following, self.transcoder.stopping)),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache"},
            background=BackgroundTask(slot.close),
        )

    # -- the page, the document, the metrics ----------------------------------------------------------

    async def page(self, request: Request) -> Response:
        return FileResponse(STATIC / "index.html", media_type="text/html")

    async def openapi(self, request: Request) -> Response:
        return JSONResponse(self.document)

    async def docs(self, request: Request) -> Response:
        """The API's documentation, rendered from /openapi.json by the page's own script."""
        return FileResponse(STATIC / "docs.html", media_type="text/html")

    async def healthz(self, request: Request) -> Response:
        """The process answers (whatever the store does): for a liveness check."""
        return JSONResponse({"status": "SERVING"})

    async def readyz(self, request: Request) -> Response:
        """The store answers a read within READY_SECONDS: for a readiness check (a load balancer's).
        The answer says this server's release, the store's format, the releases the live processes
        on the store report (how many of each) and each index's format."""
        if self.transcoder.stopping.is_set():
            return _error(CallFailed(grpc.StatusCode.UNAVAILABLE, "the server is stopping"))
        try:
            with anyio.fail_after(READY_SECONDS):
                # A read that hangs is left to its thread (the probe pool's only one).
                status = await self._in_thread(self._probe, pool=PROBE, abandon_on_cancel=True)
        except TimeoutError:
            message = f"the store did not answer within {READY_SECONDS:g} s"
            return _error(CallFailed(grpc.StatusCode.UNAVAILABLE, message))
        except Exception:  # the store refused or failed: not ready (the log says why)
            log.warning("readiness: the store failed a read", exc_info=True)
            return _error(CallFailed(grpc.StatusCode.UNAVAILABLE, "the store failed a read: see the server log"))
        return JSONResponse(readiness(status))

    def _probe(self) -> StoreStatus:
        """A read of the store (the catalog's probe), then what /readyz says of formats and releases."""
        service = self.transcoder.service
        service.catalog.probe()
        return service.upgrades.brief()

    async def metrics_text(self, request: Request) -> Response:
        """The metrics (with tokens configured: for any valid token, as Prometheus can send one)."""
        assert self.metrics is not None
        try:
            check_access(self.transcoder.tokens, request.headers, None)
        except CallFailed as exc:
            return _error(exc, request)
        text = await self._in_thread(self.metrics.exposition)  # windows per index are read from the store
        return Response(text, media_type="text/plain; version=0.0.4; charset=utf-8")


def readiness(status: StoreStatus) -> dict[str, Any]:
    """What /readyz answers with a store that answered (``status``: ``Upgrades.brief``)."""
    releases: dict[str, int] = {}
    for release in status.live_releases():
        releases[release] = releases.get(release, 0) + 1
    return {
        "status": "SERVING",
        "release": formats.RELEASE,
        "store_format": {"version": status.store.version, "recorded": status.store.recorded},
        "releases": releases,
        "index_formats": {index.name: index.version for index in status.indexes},
    }


def _json_body(body: bytes) -> Any:
    """A route's body as JSON (None: none); each route's builder judges its shape."""
    return json_value(body, "the body is refused") if body else None


async def _until_disconnected(request: Request, gone: threading.Event) -> None:
    """Set ``gone`` when the client of ``request`` (whose body was read whole) goes away."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
    gone.set()


def _built(route: RestRoute, values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Any) -> Message:
    """The route's request message; values a library refuses (a key item out of range, a lone
    surrogate) are INVALID_ARGUMENT."""
    try:
        return route.build(values, body, transcoder, headers)
    except INPUT_ERRORS as exc:
        raise invalid_input("the request", exc) from None


async def _holding(slot: contextlib.ExitStack, stream: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """``stream``, letting go of ``slot`` when it ends, however it ends."""
    with slot:
        async for chunk in stream:
            yield chunk


async def _no_route(request: Request, exc: HTTPException) -> Response:
    """A path the server does not have (404), or a method its path does not take (405), in the
    API's error shape."""
    if exc.status_code == 405:
        allowed = ", ".join(sorted(m.strip() for m in (exc.headers or {}).get("Allow", "").split(",") if m.strip()))
        message = f"{request.method} is not allowed on {request.url.path}: use {allowed or 'another method'}"
        body = CallFailed(grpc.StatusCode.UNIMPLEMENTED, message).body()
        return JSONResponse(body, status_code=405, headers={"Allow": allowed} if allowed else None)
    if exc.status_code == 404:
        message = f"no such path: {request.url.path} (the API is described at /openapi.json)"
        return JSONResponse(CallFailed(grpc.StatusCode.NOT_FOUND, message).body(), status_code=404)
    code = grpc.StatusCode.INVALID_ARGUMENT if exc.status_code < 500 else grpc.StatusCode.INTERNAL
    return JSONResponse(CallFailed(code, str(exc.detail)).body(), status_code=exc.status_code)


async def _unexpected(request: Request, exc: Exception) -> Response:
    """A bug of this layer: answered like gRPC's INTERNAL (never a stack trace); Starlette raises
    it on to uvicorn, which logs it."""
    return _error(CallFailed(grpc.StatusCode.INTERNAL, UNEXPECTED))


class _MetricsMiddleware:
    """Counts and times every HTTP request by route (its path template), method and status."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = [500]

        async def send_and_note(message: AsgiMessage) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        started = time.perf_counter()
        try:
            await self.app(scope, receive, send_and_note)
        finally:
            route = scope.get("route")
            label = getattr(route, "path", None) or "unmatched"
            method = scope["method"] if scope["method"] in COUNTED_METHODS else "other"
            labels = (label, method, str(status[0]))
            self.metrics.http_requests.labels(*labels).inc()
            self.metrics.http_seconds.labels(*labels).observe(time.perf_counter() - started)
