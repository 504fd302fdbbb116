"""The HTTP application: every RPC at ``POST /v1/<Method>``, the REST routes, the page, the
OpenAPI document and the metrics.

Handlers are async only to wait: each call runs the (blocking) servicer in a worker thread,
at most ``max_workers`` at once, as the gRPC server's pool does.
"""

from __future__ import annotations

import contextlib
import functools
import json
import pathlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import grpc
from google.protobuf.message import Message
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import ClientDisconnect, Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.types import Message as AsgiMessage

from ..access import Tokens
from ..service.calls import Dispatcher
from ..service.grpc_service import ClientGone
from ..service.metrics import Metrics
from ..service.status import Answer
from . import openapi
from .rest import ROUTES, RestRoute
from .transcode import CallFailed, Rpc, Transcoder, check_access, dumps, parse_json, to_json

STATIC = pathlib.Path(__file__).parent / "static"
# An events stream sends a comment after this many quiet seconds (proxies close idle streams),
# and ends after STREAM_SECONDS (browsers reconnect by themselves).
KEEP_ALIVE_SECONDS = 15.0
STREAM_SECONDS = 600.0


def _error(exc: CallFailed) -> JSONResponse:
    return JSONResponse(exc.body(), status_code=exc.http_status)


async def _read_body(request: Request, limit: int) -> bytes:
    """The body, at most ``limit`` bytes (the server's message limit, as for a gRPC request)."""
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise CallFailed(grpc.StatusCode.RESOURCE_EXHAUSTED, f"the request body is larger than {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def _lines(chunks: AsyncIterator[bytes], limit: int) -> AsyncIterator[bytes]:
    """The lines of a streamed body, each at most ``limit`` bytes, like a message."""
    pending = b""
    async for chunk in chunks:
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for line in complete:  # a whole line can come in one chunk as well as in several
            yield _within(line, limit)
        _within(pending, limit)
    if pending:
        yield pending


def _within(line: bytes, limit: int) -> bytes:
    if len(line) > limit:
        raise Answer(grpc.StatusCode.RESOURCE_EXHAUSTED, f"a line is larger than {limit} bytes")
    return line


class HttpApi:
    """The Starlette application over one servicer."""

    def __init__(self, dispatcher: Dispatcher, max_workers: int = 16, tokens: Tokens | None = None) -> None:
        self.transcoder = Transcoder(dispatcher, tokens)
        self.metrics = metrics = dispatcher.metrics
        self.max_workers = max_workers
        self._limiters: dict[bool, anyio.CapacityLimiter] = {}
        routes: list[Route | Mount] = [
            Route("/", self.page, methods=["GET"], name="page"),
            Route("/openapi.json", self.openapi, methods=["GET"], name="openapi"),
        ]
        if metrics is not None:
            routes.append(Route("/metrics", self.metrics_text, methods=["GET"], name="metrics"))
        for rpc in self.transcoder.rpcs.values():
            handler = self._streaming_rpc(rpc) if rpc.client_streaming else self._unary_rpc(rpc)
            routes.append(Route(rpc.path, handler, methods=["POST"], name=rpc.name))
        for rest in ROUTES:
            routes.append(Route(rest.path, self._rest(rest), methods=[rest.method], name=f"{rest.method} {rest.path}"))
        routes.append(Mount("/static", StaticFiles(directory=STATIC), name="static"))
        self.app: ASGIApp = Starlette(routes=routes, exception_handlers={Exception: _unexpected})
        if metrics is not None:
            self.app = _MetricsMiddleware(self.app, metrics)
        self.document = openapi.document(list(self.transcoder.rpcs.values()), ROUTES, metrics is not None)

    @property
    def routes(self) -> list[Route | Mount]:
        app = self.app.app if isinstance(self.app, _MetricsMiddleware) else self.app
        return app.routes  # type: ignore[attr-defined]

    async def _in_thread(self, fn: Callable[..., Any], *args: Any, heavy: bool = False) -> Any:
        """``fn(*args)`` on a worker thread: at most ``max_workers`` at once, and heavy calls (as
        the gRPC dispatcher judges them) on their own ``heavy_workers``, so they never hold the
        threads of point reads and score writes."""
        limiter = self._limiters.get(heavy)
        if limiter is None:  # made on the event loop, on first use
            size = self.transcoder.settings.heavy_workers if heavy else self.max_workers
            limiter = self._limiters[heavy] = anyio.CapacityLimiter(size)
        return await anyio.to_thread.run_sync(functools.partial(fn, *args), limiter=limiter)

    async def _body(self, request: Request) -> bytes:
        return await _read_body(request, self.transcoder.settings.max_message_bytes)

    async def _call(self, request: Request, name: str, message: Any) -> Message:
        heavy = self.transcoder.dispatcher.is_heavy(name, message)
        return await self._in_thread(self.transcoder.call, name, message, request.headers, heavy=heavy)

    # -- the RPCs ---------------------------------------------------------------------------------

    def _unary_rpc(self, rpc: Rpc) -> Callable[[Request], Awaitable[Response]]:
        async def handle(request: Request) -> Response:
            try:
                message = parse_json(await self._body(request), rpc.request_type)
                return JSONResponse(to_json(await self._call(request, rpc.name, message)))
            except CallFailed as exc:
                return _error(exc)

        return handle

    def _streaming_rpc(self, rpc: Rpc) -> Callable[[Request], Awaitable[Response]]:
        """A client-streaming RPC: the body is NDJSON, one request message per line, read as the
        servicer asks for them (the body is never held whole)."""

        async def handle(request: Request) -> Response:
            lines = _lines(request.stream(), self.transcoder.settings.max_message_bytes)

            async def next_line() -> bytes | None:
                try:
                    return await lines.__anext__()
                except StopAsyncIteration:
                    return None
                except ClientDisconnect:
                    raise ClientGone() from None

            def messages() -> Iterator[Message]:
                number = 0
                while (line := anyio.from_thread.run(next_line)) is not None:
                    number += 1
                    if line.strip():
                        try:
                            yield parse_json(line, rpc.request_type, f"line {number}")
                        except CallFailed as exc:
                            raise Answer(exc.code, exc.message) from None

            try:
                return JSONResponse(to_json(await self._call(request, rpc.name, messages())))
            except CallFailed as exc:
                return _error(exc)

        return handle

    # -- the REST routes -----------------------------------------------------------------------------

    def _rest(self, route: RestRoute) -> Callable[[Request], Awaitable[Response]]:
        async def handle(request: Request) -> Response:
            try:
                values = route.parse(request.path_params, request.query_params)
                body = None
                if route.method == "POST":
                    try:
                        body = json.loads(await self._body(request) or b"null")
                    except ValueError as exc:
                        raise CallFailed(grpc.StatusCode.INVALID_ARGUMENT, f"the body is not JSON: {exc}") from None
                if route.events:
                    return await self._events(request, route, values)
                status, answer = await self._answer(request, route, values, body)
                return JSONResponse(answer, status_code=status)
            except CallFailed as exc:
                return _error(exc)

        return handle

    async def _answer(self, request: Request, route: RestRoute, values: dict[str, Any], body: Any) -> tuple[int, Any]:
        # Building may read (at=latest), so it runs on a worker too.
        message = await self._in_thread(route.build, values, body, self.transcoder, request.headers)
        return route.answer(await self._call(request, route.rpc, message))

    async def _events(self, request: Request, route: RestRoute, values: dict[str, Any]) -> Response:
        """Server-Sent Events: the answer now, then again each time it changes (checked every
        ``interval`` seconds), with a comment line after KEEP_ALIVE_SECONDS without one.  A stream
        ends after STREAM_SECONDS or when the server stops.  A first failure is the HTTP answer;
        later ones are ``problem`` events."""
        interval = values.pop("interval", 1.0)
        slot = contextlib.ExitStack()  # a watched rank holds a watcher's slot while it streams
        if route.watches_rank:
            try:
                slot.enter_context(self.transcoder.dispatcher.rank_watchers.slot())
            except Answer as answer:
                raise CallFailed(answer.code, str(answer)) from None
        try:
            first = await self._answer(request, route, values, None)
        except BaseException:
            slot.close()
            raise
        if first[0] != 200:
            slot.close()
            return JSONResponse(first[1], status_code=first[0])

        async def stream() -> AsyncIterator[bytes]:
            with slot:
                sent, quiet_since, ends = first, time.monotonic(), time.monotonic() + STREAM_SECONDS
                yield b"data: " + dumps(first[1]) + b"\n\n"
                while time.monotonic() < ends and not self.transcoder.stopping.is_set():
                    await anyio.sleep(interval)
                    if await request.is_disconnected():
                        return
                    try:
                        now = await self._answer(request, route, values, None)
                    except CallFailed as exc:
                        now = (exc.http_status, exc.body())
                    if now != sent:
                        event = b"data: " if now[0] == 200 else b"event: problem\ndata: "
                        yield event + dumps(now[1]) + b"\n\n"
                        sent, quiet_since = now, time.monotonic()
                    elif time.monotonic() - quiet_since > KEEP_ALIVE_SECONDS:
                        yield b": unchanged\n\n"
                        quiet_since = time.monotonic()

        # The slot is also let go after the response, should the stream never start (closing twice is harmless).
        return StreamingResponse(
            stream(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache"},
            background=BackgroundTask(slot.close),
        )

    # -- the page, the document, the metrics ----------------------------------------------------------

    async def page(self, request: Request) -> Response:
        return FileResponse(STATIC / "index.html", media_type="text/html")

    async def openapi(self, request: Request) -> Response:
        return JSONResponse(self.document)

    async def metrics_text(self, request: Request) -> Response:
        """The metrics (with tokens configured: for any valid token, as Prometheus can send one)."""
        assert self.metrics is not None
        try:
            check_access(self.transcoder.tokens, request.headers, None)
        except CallFailed as exc:
            return _error(exc)
        text = await self._in_thread(self.metrics.exposition)  # windows per index are read from the store
        return Response(text, media_type="text/plain; version=0.0.4; charset=utf-8")


async def _unexpected(request: Request, exc: Exception) -> Response:
    """A bug of this layer: answered like gRPC's INTERNAL (never a stack trace); Starlette raises
    it on to uvicorn, which logs it."""
    return _error(CallFailed(grpc.StatusCode.INTERNAL, "the request failed unexpectedly; see the server log"))


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
            labels = (label, scope["method"], str(status[0]))
            self.metrics.http_requests.labels(*labels).inc()
            self.metrics.http_seconds.labels(*labels).observe(time.perf_counter() - started)
