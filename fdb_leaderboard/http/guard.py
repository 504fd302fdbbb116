"""What the HTTP door refuses before any handler runs, and the headers every answer carries.

A browser sends a "simple" cross-site POST (a form's, or ``fetch`` with ``text/plain``) without
asking the server first, and a page reaching the server through a host name of its own (DNS
rebinding) is not cross-site at all.  Without tokens (the default, on loopback) either would let
any web page write to, or drop, the indexes.  So:

- a request whose ``Host`` is not one the server answers to is refused (400; Starlette's
  ``TrustedHostMiddleware``, see :meth:`HttpLimits.allowed_hosts`);
- a POST whose ``Origin`` is not the server's own (``null`` included) is refused (403);
- a POST whose body is not JSON or NDJSON by its ``Content-Type`` is refused (415): browsers
  cannot send those cross-site without a preflight, which this server never answers;
- every answer says ``nosniff`` and may not be framed, and the page may only load its own
  files (``Content-Security-Policy``).
"""

from __future__ import annotations

import grpc
from starlette.datastructures import Headers
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.types import Message as AsgiMessage

from .transcode import CallFailed

# Bodies the API reads: JSON (requests, scores) and NDJSON (streams of requests).
BODY_TYPES = frozenset({"application/json", "application/x-ndjson", "application/ndjson", "application/jsonl"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (
        b"content-security-policy",
        b"default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'",
    ),
    (b"referrer-policy", b"no-referrer"),
]


def refusal(status: int, message: str, code: grpc.StatusCode) -> JSONResponse:
    return JSONResponse(CallFailed(code, message).body(), status_code=status)


def is_json_body(content_type: str | None) -> bool:
    """Whether ``content_type`` names a body the API reads (parameters such as charset aside)."""
    if not content_type:
        return False
    media = content_type.split(";", 1)[0].strip().lower()
    return media in BODY_TYPES or (media.startswith("application/") and media.endswith("+json"))


class CrossSiteGuard:
    """Refuses cross-site and non-JSON writes; adds the security headers to every answer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: AsgiMessage) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), *SECURITY_HEADERS]
            await send(message)

        if scope["method"] not in SAFE_METHODS:
            refused = self._refusal(Headers(scope=scope))
            if refused is not None:
                await refused(scope, receive, send_with_headers)
                return
        await self.app(scope, receive, send_with_headers)

    @staticmethod
    def _refusal(headers: Headers) -> JSONResponse | None:
        origin = headers.get("origin")
        if origin is not None:
            _, _, where = origin.partition("://")
            if not where or where.lower() != headers.get("host", "").lower():
                return refusal(
                    403,
                    f"a request from another site ({origin[:100]}) may not write here: "
                    "the page of this server, or a client that is not a browser, may",
                    grpc.StatusCode.PERMISSION_DENIED,
                )
        if not is_json_body(headers.get("content-type")):
            given = headers.get("content-type")
            return refusal(
                415,
                f"the body must be JSON (Content-Type: application/json, or application/x-ndjson for a stream), "
                f"not {given[:100] if given else 'untyped'}",
                grpc.StatusCode.INVALID_ARGUMENT,
            )
        return None


def guarded(app: ASGIApp, allowed_hosts: list[str]) -> ASGIApp:
    """``app`` behind the host check and the cross-site guard."""
    return TrustedHostMiddleware(CrossSiteGuard(app), allowed_hosts=allowed_hosts, www_redirect=False)
