"""What the HTTP door refuses before any handler runs, and the headers the page carries.

A browser sends a "simple" cross-site POST (a form's, or ``fetch`` with ``text/plain``) without
asking the server first, and a page reaching the server through a host name of its own (DNS
rebinding) is not cross-site at all.  Without tokens (the default, on loopback) either would let
any web page write to, or drop, the indexes.  So :class:`DoorGuard` refuses:

- a request whose ``Host`` is not one the server answers to (400; see
  :meth:`HttpLimits.allowed_hosts`): a name, ``*.domain`` or ``*``, matched as Starlette's
  ``TrustedHostMiddleware`` matches them, each Host value judged once;
- a POST whose ``Origin`` is not the server's own (``null`` included; 403);
- a write whose body is not JSON or NDJSON by its ``Content-Type`` (415): browsers cannot send
  those cross-site without a preflight, which this server never answers.  A ``DELETE`` without a
  body (``DELETE /v1/indexes/I/records/PK``) needs no type: it has nothing to type.  A body
  declared in another charset than UTF-8 is refused (400): JSON between systems is UTF-8;
- with tokens, a request carrying more than one ``Authorization`` header (401): which of them
  would be the caller's is anyone's guess (the gRPC door refuses the same).

The page, its files, the OpenAPI document and the metrics say ``nosniff``, may not be framed,
and the page may only load its own files (``Content-Security-Policy``); the API's JSON answers
carry none of it (nothing a browser renders).  All of it is one pass over the request's headers:
Starlette's middlewares, one after the other, cost every call 40,000 instructions, some 4% of a
point read over HTTP.
"""

from __future__ import annotations

from collections.abc import Mapping

import grpc
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.types import Message as AsgiMessage

from ..access import several_authorizations
from .transcode import CallFailed

# Bodies the API reads: JSON (requests, scores) and NDJSON (streams of requests).
BODY_TYPES = frozenset({"application/json", "application/x-ndjson", "application/ndjson", "application/jsonl"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
API_PREFIX = "/v1/"
SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (
        b"content-security-policy",
        b"default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'",
    ),
    (b"referrer-policy", b"no-referrer"),
]
CLOSE = {"connection": "close"}
MEMORIZED_HOSTS = 64  # Host values whose verdict is kept (more are judged each time)


def has_body(headers: Mapping[str, str]) -> bool:
    """Whether a request announces a body."""
    return headers.get("content-length", "0") != "0" or "transfer-encoding" in headers


def refusal(status: int, message: str, code: grpc.StatusCode, headers: Mapping[str, str]) -> JSONResponse:
    """A refusal; the connection closes after it if the request has a body (left unread)."""
    close = CLOSE if has_body(headers) else None
    return JSONResponse(CallFailed(code, message).body(), status_code=status, headers=close)


def is_json_body(content_type: bytes | None) -> bool:
    """Whether ``content_type`` names a body the API reads (parameters such as charset aside)."""
    if not content_type:
        return False
    media = content_type.split(b";", 1)[0].strip().lower().decode("latin-1")
    return media in BODY_TYPES or (media.startswith("application/") and media.endswith("+json"))


def declared_charset(content_type: bytes) -> str | None:
    """The ``charset`` parameter of ``content_type`` (lower case), None without one."""
    for parameter in content_type.split(b";")[1:]:
        key, _, value = parameter.partition(b"=")
        if key.strip().lower() == b"charset":
            return value.strip().strip(b'"').lower().decode("latin-1")
    return None


class DoorGuard:
    """Refuses foreign hosts, cross-site and non-JSON writes; adds the security headers to all
    but the API's answers."""

    def __init__(self, app: ASGIApp, allowed_hosts: list[str], tokens: bool = False) -> None:
        """``tokens``: whether the server checks bearer tokens (then one Authorization header at most)."""
        self.app = app
        self.tokens = tokens
        self.allowed_hosts = [pattern.lower() for pattern in allowed_hosts]
        self.any_host = "*" in self.allowed_hosts
        self._hosts: dict[bytes, bool] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = origin = content_type = None
        bodyless = True
        authorizations = 0
        for name, value in scope["headers"]:
            if name == b"host":
                host = value
            elif name == b"origin":
                origin = value
            elif name == b"content-type":
                content_type = value
            elif (name == b"content-length" and value != b"0") or name == b"transfer-encoding":
                bodyless = False
            elif name == b"authorization":
                authorizations += 1
        refused = None
        if not self.any_host and not self._answers(host):
            shown = host.decode("latin-1")[:100] if host else "none"
            refused = (400, f"this server does not answer to the host name {shown!r}", grpc.StatusCode.INVALID_ARGUMENT)
        elif authorizations > 1 and self.tokens:
            refused = (401, several_authorizations(authorizations), grpc.StatusCode.UNAUTHENTICATED)
        elif scope["method"] not in SAFE_METHODS:
            refused = _write_refusal(host, origin, content_type, scope["method"], bodyless)
        if refused is not None:
            await refusal(*refused, Headers(scope=scope))(scope, receive, send)
            return
        if scope["path"].startswith(API_PREFIX):  # JSON answers: nothing a browser would render
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: AsgiMessage) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _answers(self, host: bytes | None) -> bool:
        """Whether the server answers to the ``Host`` value ``host``."""
        if host is None:
            return False
        known = self._hosts.get(host)
        if known is None:
            name = host_name(host.decode("latin-1").lower())
            known = name is not None and any(
                name == pattern or (pattern.startswith("*") and name.endswith(pattern[1:]))
                for pattern in self.allowed_hosts
            )
            if len(self._hosts) < MEMORIZED_HOSTS:
                self._hosts[host] = known
        return known


def host_name(value: str) -> str | None:
    """The name in a ``Host`` value, ``name[:port]`` or ``[v6][:port]`` (an IPv6 address keeps its
    brackets); None if it is neither."""
    if value.startswith("["):
        end = value.find("]") + 1
        name, rest = value[:end], value[end:]
    else:
        name, colon, port = value.partition(":")
        rest = colon + port
    if not name or (rest and not (rest[0] == ":" and rest[1:].isdigit())):
        return None
    return name


def _write_refusal(
    host: bytes | None,
    origin: bytes | None,
    content_type: bytes | None,
    method: str = "POST",
    bodyless: bool = False,
) -> tuple[int, str, grpc.StatusCode] | None:
    """Why a write is refused (status, message, code), None if it is not.  A DELETE without a
    body may come untyped (its route reads none): no page of another site can send one without
    the CORS preflight this server never grants, as it can a form's POST.  A body still needs
    its type."""
    if origin is not None:
        _, _, where = origin.partition(b"://")
        if not where or where.lower() != (host or b"").lower():
            return (
                403,
                f"a request from another site ({origin.decode('latin-1')[:100]}) may not write here: "
                "the page of this server, or a client that is not a browser, may",
                grpc.StatusCode.PERMISSION_DENIED,
            )
    if not is_json_body(content_type) and not (method == "DELETE" and content_type is None and bodyless):
        given = content_type.decode("latin-1")[:100] if content_type else "untyped"
        return (
            415,
            "the body must be JSON (Content-Type: application/json, or application/x-ndjson for a stream), "
            f"not {given}",
            grpc.StatusCode.INVALID_ARGUMENT,
        )
    if content_type is not None and b";" in content_type:
        charset = declared_charset(content_type)
        if charset not in (None, "utf-8", "utf8"):
            return (
                400,
                f"the body must be UTF-8 (JSON between systems is, RFC 8259), not charset={charset[:40]}",
                grpc.StatusCode.INVALID_ARGUMENT,
            )
    return None
