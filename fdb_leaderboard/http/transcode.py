"""gRPC calls over HTTP/JSON: each RPC of the service, its messages as JSON, its status as HTTP's.

The RPC table is read from the service's protobuf descriptor, so an RPC added to the proto is
served over HTTP with no change here.  A call runs the same servicer method the gRPC server
runs, with :class:`HttpCallContext` standing for gRPC's context: same validation, same errors,
same status codes, which :data:`HTTP_STATUS` turns into HTTP's.

JSON is protobuf's (``json_format``): field names as in the proto (lowerCamelCase accepted
too), enums by name, ``bytes`` in base64, and 64-bit integers as JSON numbers up to 2^53 - 1
in magnitude and as strings beyond (JavaScript's numbers hold no more exactly; strings or
numbers are accepted on input).
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import grpc
from google.protobuf import json_format, message_factory
from google.protobuf.descriptor import MethodDescriptor
from google.protobuf.message import Message

from ..access import PermissionDenied, Tokens, Unauthenticated, bearer_token
from ..proto import service_pb2 as pb
from ..service import LeaderboardService
from ..service.metrics import Metrics, remember_first

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

# The largest integer JavaScript's numbers hold exactly.
JSON_SAFE_INTEGER = 2**53 - 1


class CallFailed(Exception):
    """A call answered with a status other than OK."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    @property
    def http_status(self) -> int:
        return HTTP_STATUS[self.code]

    def body(self) -> dict[str, str]:
        return {"code": self.code.name, "message": self.message}


class HttpCallContext:
    """What the servicer uses of ``grpc.ServicerContext``, for a call that came over HTTP."""

    def __init__(self, metadata: tuple[tuple[str, str], ...], peer: str, active: Callable[[], bool]) -> None:
        self._metadata = metadata
        self._peer = peer
        self._active = active
        self._code: grpc.StatusCode | None = None
        self._details = ""

    def abort(self, code: grpc.StatusCode, details: str) -> None:
        self._code, self._details = code, details
        raise CallFailed(code, details)

    def abort_with_status(self, status: grpc.Status) -> None:
        self.abort(status.code, status.details)

    def set_code(self, code: grpc.StatusCode) -> None:
        self._code = code

    def set_details(self, details: str) -> None:
        self._details = details

    def code(self) -> grpc.StatusCode | None:
        return self._code

    def details(self) -> str:
        return self._details

    def is_active(self) -> bool:
        return self._active()

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._metadata

    def peer(self) -> str:
        return self._peer

    def time_remaining(self) -> None:
        return None  # HTTP calls carry no deadline

    def add_callback(self, callback: Callable[[], None]) -> bool:
        return False  # like gRPC's answer once the call has ended: the caller must not rely on it

    def set_trailing_metadata(self, metadata: tuple[tuple[str, str], ...]) -> None:
        pass  # HTTP answers carry no trailers here


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
    """Every RPC of the service, in the proto's order."""
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
    ]


def parse_json(text: str | bytes, message_type: type[Message], what: str = "request body") -> Message:
    """A message from JSON; malformed JSON or a field the message lacks is INVALID_ARGUMENT."""
    try:
        return json_format.Parse(text or b"{}", message_type())
    except (json_format.ParseError, UnicodeDecodeError) as exc:
        raise CallFailed(
            grpc.StatusCode.INVALID_ARGUMENT, f"{what} is not a valid {message_type.DESCRIPTOR.name}: {exc}"
        ) from None


def message_from_dict(value: Mapping[str, Any], message_type: type[Message], what: str) -> Message:
    try:
        return json_format.ParseDict(value, message_type())
    except json_format.ParseError as exc:
        raise CallFailed(
            grpc.StatusCode.INVALID_ARGUMENT, f"{what} is not a valid {message_type.DESCRIPTOR.name}: {exc}"
        ) from None


def to_json(message: Message) -> dict[str, Any]:
    """A message as JSON values (every field without presence printed, so zeros show)."""
    value = json_format.MessageToDict(
        message,
        always_print_fields_with_no_presence=True,
        preserving_proto_field_name=True,
        unquote_int64_if_possible=True,
    )
    return quote_unsafe_integers(value)


def quote_unsafe_integers(value: Any) -> Any:
    """Integers JavaScript cannot hold exactly become strings (proto3 JSON's form for 64-bit)."""
    if isinstance(value, dict):
        return {k: quote_unsafe_integers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [quote_unsafe_integers(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > JSON_SAFE_INTEGER:
        return str(value)
    return value


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
    """Calls the servicer for HTTP requests, timing and counting them like gRPC calls; with
    ``tokens``, each call needs a bearer token whose role may call the RPC."""

    def __init__(
        self, service: LeaderboardService, metrics: Metrics | None = None, tokens: Tokens | None = None
    ) -> None:
        self.service = service
        self.metrics = metrics
        self.tokens = tokens
        self.rpcs = {rpc.name: rpc for rpc in rpcs()}
        self.stopping = threading.Event()

    def call(
        self, name: str, request: Message | Iterator[Message], headers: Mapping[str, str], peer: str = ""
    ) -> Message:
        """Call the RPC ``name`` (blocking: run it in a worker thread); raises :class:`CallFailed`."""
        rpc = self.rpcs[name]
        started = time.perf_counter()
        code = grpc.StatusCode.UNKNOWN
        first: list[Message] = []
        try:
            check_access(self.tokens, headers, name)
            if rpc.client_streaming:
                request = remember_first(request, first)  # type: ignore[arg-type]
            metadata = tuple((k, v) for k, v in headers.items() if k == "authorization")
            context = HttpCallContext(metadata, peer, lambda: not self.stopping.is_set())
            response = getattr(self.service, name)(request, context)
            code = context.code() or grpc.StatusCode.OK
            if self.metrics is not None:
                self.metrics.observe_result(name, first[0] if first else request, response)
            return response
        except CallFailed as exc:
            code = exc.code
            raise
        finally:
            if self.metrics is not None:
                self.metrics.observe_call("http", name, code, time.perf_counter() - started)
