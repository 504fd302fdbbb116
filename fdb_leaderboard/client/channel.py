"""What every call carries, the same for both clients: the channel's TLS credentials and options, the
authorization and user metadata, and the reads' freshness (read your writes).
"""

from __future__ import annotations

import threading
import warnings
from typing import Any

import grpc

from .. import access, errors, wire
from ..access import is_loopback
from .errors import InvalidArgument
from .messages import READS, UnaryCall


def _staleness(value: object) -> int:
    """A max_staleness, refused as InvalidArgument (the client's) otherwise."""
    try:
        return wire.check_staleness(value)
    except errors.InvalidArgument as exc:
        raise InvalidArgument(str(exc)) from None


class Freshness:
    """A client's reads' freshness: its default ``max_staleness``, and the newest commit version of
    its own score writes, which its stale reads must see (read your writes, through any server)."""

    def __init__(self, max_staleness: int) -> None:
        self.max_staleness = _staleness(max_staleness)
        self.seen = 0
        self._lock = threading.Lock()

    def staleness(self, per_call: int | None) -> int | None:
        """The staleness a read asks for: its own, else the client's (None: neither, the server's
        default applies)."""
        if per_call is not None:
            return _staleness(per_call)
        return self.max_staleness or None

    def metadata(self, call: UnaryCall, staleness: int | None) -> tuple[tuple[str, str], ...]:
        """The freshness metadata of ``call`` (a bounded read) at ``staleness`` ms."""
        if staleness is None or call.method not in READS:
            return ()
        sent = [(wire.STALENESS_HEADER, str(staleness))]
        if self.seen and staleness:
            sent.append((wire.MIN_VERSION_HEADER, str(self.seen)))
        return tuple(sent)

    def note(self, trailing: Any) -> None:
        """A write's answer's trailing metadata: its commit version, if any, is now seen."""
        for key, value in trailing or ():
            if key == wire.COMMIT_VERSION_HEADER:
                with self._lock:
                    self.seen = max(self.seen, int(value))


# Each client its own connection (gRPC shares one among channels to the same address by default):
# a server with several processes then spreads clients, and a check's pieces, over them.
CHANNEL_OPTIONS = [("grpc.use_local_subchannel_pool", 1)]


def _read_pem(path: str | None) -> bytes | None:
    if path is None:
        return None
    with open(path, "rb") as file:
        return file.read()


def channel_credentials(
    address: str, token: str | None, ca: str | None, cert: str | None, key: str | None
) -> grpc.ChannelCredentials | None:
    """TLS credentials for the arguments (None: plaintext), warning of a token sent in the clear."""
    if (cert is None) != (key is None):
        raise ValueError("a client certificate needs both cert and key")
    if ca is None and cert is None:
        if token and not is_loopback(address):
            warnings.warn(
                f"sending a bearer token to {address} without TLS: anyone on the way can read it "
                "(give the server's CA to use TLS)",
                stacklevel=3,
            )
        return None
    return grpc.ssl_channel_credentials(_read_pem(ca), _read_pem(key), _read_pem(cert))


def call_metadata(token: str | None, user: str | None) -> tuple[tuple[str, str], ...]:
    """What every call carries: ``authorization: Bearer TOKEN``, and the user the caller names
    (recorded by a server without tokens as who acted; one with tokens goes by the token)."""
    metadata = []
    if token:
        metadata.append(("authorization", f"Bearer {token}"))
    if user:
        metadata.append((access.USER_HEADER, user))
    return tuple(metadata)


class HeadersInterceptor(
    grpc.UnaryUnaryClientInterceptor,
    grpc.UnaryStreamClientInterceptor,
    grpc.StreamUnaryClientInterceptor,
    grpc.StreamStreamClientInterceptor,
):
    """Adds the call metadata (:func:`call_metadata`) to every call of a channel (also those made with ``stub``)."""

    def __init__(self, metadata: tuple[tuple[str, str], ...]) -> None:
        self._metadata = metadata

    def _details(self, details: Any) -> Any:
        return details._replace(metadata=[*(details.metadata or ()), *self._metadata])

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_stream_unary(self, continuation: Any, details: Any, requests: Any) -> Any:
        return continuation(self._details(details), requests)

    def intercept_stream_stream(self, continuation: Any, details: Any, requests: Any) -> Any:
        return continuation(self._details(details), requests)
