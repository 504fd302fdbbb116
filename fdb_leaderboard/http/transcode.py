"""gRPC calls over HTTP/JSON: each RPC of the service, its messages as JSON, its status as HTTP's.

The RPC table is read from the service's protobuf descriptor, so an RPC added to the proto is
served over HTTP with no change here.  A call runs the same servicer method the gRPC dispatcher
(``service/calls.py``) runs, with the same deadline, answer-size limit, BulkLoad slots and
bearer-token check: same validation, same errors, same status codes, which :data:`HTTP_STATUS`
turns into HTTP's.

JSON is the API's one shape (``plain.py``): protobuf's JSON mapping (field names as in the
proto, lowerCamelCase accepted too, enums by name, ``bytes`` in base64, 64-bit integers as JSON
numbers up to 2^53 - 1 in magnitude and as strings beyond: JavaScript's numbers hold no more
exactly), but key items and scores as plain values, as the REST routes answer them.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import grpc
from google.protobuf import json_format, message_factory
from google.protobuf.descriptor import MethodDescriptor
from google.protobuf.message import Message

from .. import wire
from ..access import ANONYMOUS, USER_HEADER, PermissionDenied, Tokens, Unauthenticated, actor_name, bearer_token
from ..errors import InvalidArgument
from ..proto import service_pb2 as pb
from ..service.calls import INLINE_READS, Dispatcher
from ..service.metrics import remember_first
from ..service.readers import READ_METHODS
from ..service.status import Answer, cap_message

SERVICE = pb.DESCRIPTOR.services_by_name["Leaderboard"]

HTTP_STATUS: dict[grpc.StatusCode, int] = {
    grpc.StatusCode.OK: 200,
    grpc.StatusCode.CANCELLED: 499,  # the client closed the request (nginx's code, as grpc-gateway's)
    grpc.StatusCode.UNKNOWN: 500,
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.DEADLINE_EXCEEDED: 504,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.ALREADY_EXISTS: 409,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.FAILED_PRECONDITION: 412,
    grpc.StatusCode.ABORTED: 409,
    grpc.StatusCode.OUT_OF_RANGE: 400,
    grpc.StatusCode.UNIMPLEMENTED: 501,
    grpc.StatusCode.INTERNAL: 500,
    grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.DATA_LOSS: 500,
    grpc.StatusCode.UNAUTHENTICATED: 401,
}

UNEXPECTED = "the request failed unexpectedly; see the server log"


class CallFailed(Exception):
    """A call answered with a status other than OK."""

    def __init__(self, code: grpc.StatusCode, message: str, trailing: tuple[tuple[str, str], ...] = ()) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.trailing = trailing  # the gRPC call's trailing metadata (a score rule's refusal's)

    @property
    def http_status(self) -> int:
        return HTTP_STATUS[self.code]

    def body(self) -> dict[str, object]:
        """The error as JSON: code and message, and a refusing score rule's ``rule`` and
        ``retry_after`` (seconds) as its gRPC trailing metadata gives them."""
        body: dict[str, object] = {"code": self.code.name, "message": self.message}
        for key, value in self.trailing:
            if key == "rule":
                body["rule"] = value
            elif key == "retry-after":
                body["retry_after"] = float(value)
        return body

    def headers(self) -> dict[str, str]:
        """HTTP headers of the error: Retry-After (whole seconds, rounded up) when it says when."""
        for key, value in self.trailing:
            if key == "retry-after":
                return {"Retry-After": str(math.ceil(float(value)))}
        return {}


class HttpCallContext:
    """A call that came over HTTP, as its handler sees it (the servicer's ``CallContext``): it
    stops being active past its deadline, when the HTTP server stops, or once ``gone`` is set
    (a stream's client went away)."""

    def __init__(
        self,
        deadline: float,
        stopping: threading.Event,
        actor: str = ANONYMOUS,
        max_staleness_ms: int = 0,
        min_version: int = 0,
        gone: threading.Event | None = None,
    ) -> None:
        self.deadline = deadline
        self.stopping = stopping
        self.actor = actor
        self.max_staleness_ms = max_staleness_ms  # how stale its reads may be (gRPC's metadata, as headers)
        self.min_version = min_version
        self.gone = gone

    def is_active(self) -> bool:
        gone = self.gone is not None and self.gone.is_set()
        return not self.stopping.is_set() and not gone and time.monotonic() < self.deadline

    def time_remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())


@dataclasses.dataclass(frozen=True)
class Rpc:
    """One RPC of the service as HTTP serves it."""

    name: str
    request_type: type[Message]
    response_type: type[Message]
    client_streaming: bool
    server_streaming: bool
    descriptor: MethodDescriptor

    @property
    def path(self) -> str:
        return f"/v1/{self.name}"


def rpcs() -> list[Rpc]:
    """Every RPC of the service that answers a call (in the proto's order): all but the watches
    (WatchRank), which HTTP serves as events (rest/)."""
    return [
        Rpc(
            m.name,
            message_factory.GetMessageClass(m.input_type),
            message_factory.GetMessageClass(m.output_type),
            m.client_streaming,
            m.server_streaming,
            m,
        )
        for m in SERVICE.methods
        if m.client_streaming or not m.server_streaming
    ]


# What a library raises for malformed input (a value out of range, a lone surrogate, nesting too
# deep to decode; UnicodeError is a ValueError).
INPUT_ERRORS = (ValueError, TypeError, OverflowError, RecursionError)


def invalid_input(what: str, exc: BaseException) -> CallFailed:
    """Malformed input a library refused, as INVALID_ARGUMENT naming ``what``, never a server error."""
    return CallFailed(grpc.StatusCode.INVALID_ARGUMENT, cap_message(f"{what}: {exc}"))


def message_from_dict(value: Mapping[str, Any], message_type: type[Message], what: str) -> Message:
    try:
        return json_format.ParseDict(value, message_type())
    except (json_format.ParseError, RecursionError) as exc:
        raise not_a_valid(what, message_type, exc) from None


def not_a_valid(what: str, message_type: type[Message], exc: BaseException) -> CallFailed:
    return CallFailed(
        grpc.StatusCode.INVALID_ARGUMENT,
        cap_message(f"{what} is not a valid {message_type.DESCRIPTOR.name}: {readable_parse_error(exc)}"),
    )


# protobuf's JSON parser words its refusals in Python's terms ("invalid literal for int() with
# base 10"), field by field ("Failed to parse window field: Failed to parse type field: ...").
# They are said again as a field path and what is wrong with its value.
_NESTED_FIELD = re.compile(r"Failed to parse (\w+) field: ")
_REASONS = (
    (re.compile(r"invalid literal for int\(\) with base \d+: (.*?)\.*$", re.S), r"\1 is not an integer"),
    (re.compile(r"could not convert string to float: (.*?)\.*$", re.S), r"\1 is not a number"),
    (re.compile(r"Couldn't parse non-integer string: (.*?)(?: at .*)?\.*$", re.S), r"\1 is not an integer"),
    (re.compile(r"Couldn't parse integer: (.*?)(?: at .*)?\.*$", re.S), r"\1 is not an integer"),
    (
        re.compile(
            r'Message type "[\w.]*?(\w+)" has no field named "(.*?)" at '
            r'.*?Available Fields\(except extensions\): "?\[(.*?)\]"?\.*$',
            re.S,
        ),
        r'unknown field "\2" (\1 has \3)',
    ),
    (re.compile(r"Failed to load JSON: (.*?)\.*$", re.S), r"not JSON (\1)"),
)


def readable_parse_error(exc: BaseException) -> str:
    """What protobuf's JSON parser refused, without Python's wording: ``window.type: 'x' is not an integer``."""
    text = str(exc)
    path = []
    while match := _NESTED_FIELD.match(text):
        path.append(match.group(1))
        text = text[match.end() :]
    for pattern, replacement in _REASONS:
        if pattern.match(text):
            text = pattern.sub(replacement, text)
            break
    return f"{'.'.join(path)}: {text}" if path else text


def dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def check_access(tokens: Tokens | None, headers: Mapping[str, str], method: str | None) -> None:
    """Refuse a request whose ``Authorization: Bearer`` token may not call ``method`` (None: any
    valid token will do) as gRPC's interceptor does: UNAUTHENTICATED or PERMISSION_DENIED."""
    if tokens is None:
        return
    token = bearer_token(headers.get("authorization"))
    try:
        if method is None:
            tokens.authenticate(token)
        else:
            tokens.authorize(token, method)
    except Unauthenticated as exc:
        raise CallFailed(grpc.StatusCode.UNAUTHENTICATED, str(exc)) from None
    except (PermissionDenied, LookupError) as exc:  # LookupError: a method with no access rule
        raise CallFailed(grpc.StatusCode.PERMISSION_DENIED, str(exc)) from None


class Transcoder:
    """Calls the servicer for HTTP requests as the gRPC dispatcher does: the same handlers, deadline,
    answer-size limit, BulkLoad slots and bearer tokens, timed and counted like gRPC calls."""

    def __init__(self, dispatcher: Dispatcher, tokens: Tokens | None = None) -> None:
        self.dispatcher = dispatcher
        self.service = dispatcher.servicer
        self.settings = dispatcher.settings
        self.metrics = dispatcher.metrics
        self.tokens = tokens
        self.rpcs = {rpc.name: rpc for rpc in rpcs()}
        self.stopping = threading.Event()

    def _actor(self, headers: Mapping[str, str]) -> str:
        """Who makes an HTTP call: its token's name (or the user it names, without tokens)."""
        return actor_name(self.tokens, headers.get("authorization"), headers.get(USER_HEADER))

    def call_handler(self, name: str, request: Message, headers: Mapping[str, str]) -> Any:
        """The servicer's handler ``name`` (not an RPC: a step of a stream, such as the next
        window-end events), its errors as the RPC's would be."""
        deadline = time.monotonic() + self.settings.default_deadline
        context = HttpCallContext(deadline, self.stopping, actor_name(self.tokens, headers.get("authorization")))
        try:
            return getattr(self.service, name)(request, context)
        except Answer as answer:
            raise CallFailed(answer.code, cap_message(str(answer))) from None

    def _freshness(self, name: str, headers: Mapping[str, str]) -> tuple[int, int]:
        """A read's ``max-staleness-ms`` and ``min-version`` headers (the gRPC metadata's names;
        the server's default staleness without one); (0, 0) for other calls."""
        if name not in INLINE_READS:
            return 0, 0
        try:
            staleness = headers.get(wire.STALENESS_HEADER)
            version = headers.get(wire.MIN_VERSION_HEADER)
            bounds = (
                self.settings.max_staleness
                if staleness is None
                else wire.check_staleness(staleness, wire.STALENESS_HEADER),
                0 if version is None else wire.check_version(version, wire.MIN_VERSION_HEADER),
            )
        except InvalidArgument as exc:
            raise Answer(grpc.StatusCode.INVALID_ARGUMENT, str(exc)) from None
        return bounds if self.dispatcher.versioned else (0, 0)

    def commit_version(self, name: str) -> int:
        """The commit version of the score write ``name`` this thread just served (0: none, or a
        store without versions): its answer's ``commit-version`` header, as gRPC's trailing metadata."""
        if name not in wire.SCORE_WRITES or not self.dispatcher.versioned:
            return 0
        versions = self.dispatcher.servicer.catalog.db.last_commit_versions()
        return versions[-1] if versions else 0

    def call(
        self,
        name: str,
        request: Message | Iterator[Message],
        headers: Mapping[str, str],
        background: bool = False,
        counted: bool = True,
        gone: threading.Event | None = None,
    ) -> Message:
        """Call the RPC ``name`` (blocking: run it in a worker thread); raises :class:`CallFailed`.
        ``background``: a read no caller waits for (an event stream's), served on a reader process
        like a heavy read, whatever its size, where the server has them.  ``counted``: False for a
        route's own lookup (``at=latest``'s), which is not a call of the user's in the metrics.
        ``gone``: set once the client went away (the call stops at its next check)."""
        rpc = self.rpcs[name]
        started = time.perf_counter()
        code = grpc.StatusCode.UNKNOWN
        first: list[Message] = []
        load_slot = False
        try:
            check_access(self.tokens, headers, name)
            deadline = time.monotonic() + self.settings.default_deadline
            if rpc.client_streaming:
                if not self.dispatcher.load_slots.acquire(blocking=False):
                    raise Answer(
                        grpc.StatusCode.RESOURCE_EXHAUSTED,
                        f"{self.settings.max_bulk_loads} {name} streams are running: try again when one ends",
                    )
                load_slot = True
                deadline = float("inf")  # a load may run long, as over gRPC
                request = remember_first(request, first)  # type: ignore[arg-type]
            elsewhere = background and self.dispatcher.readers is not None and name in READ_METHODS
            if elsewhere or self.dispatcher.reads_elsewhere(name, request):  # a heavy read: on a reader process
                response = rpc.response_type.FromString(self.dispatcher.read_elsewhere(name, request, deadline))
            else:
                staleness, version = self._freshness(name, headers)
                response = getattr(self.service, name)(
                    request,
                    HttpCallContext(deadline, self.stopping, self._actor(headers), staleness, version, gone),
                )
            if rpc.server_streaming:  # Load: HTTP answers once, with the last progress message
                last = rpc.response_type()
                for last in response:  # noqa: B007
                    pass
                response = last
            self.dispatcher.reply(response)  # the same answer-size limit
            code = grpc.StatusCode.OK
            if self.metrics is not None:
                self.metrics.observe_result(name, first[0] if first else request, response)
            return response
        except Answer as answer:
            code = answer.code
            if answer.trailing and self.metrics is not None:
                self.metrics.observe_refusal(name, answer.trailing)
            raise CallFailed(answer.code, cap_message(str(answer)), answer.trailing) from None
        except CallFailed as failed:
            code = failed.code
            raise
        finally:
            if load_slot:
                self.dispatcher.load_slots.release()
            if self.metrics is not None and counted:
                self.metrics.observe_call("http", name, code, time.perf_counter() - started)
