"""Which status answers which error: the index's and the store's exceptions as gRPC status codes."""

from __future__ import annotations

import grpc

from ..access import PermissionDenied, Unauthenticated, UnknownOperation
from ..errors import AlreadyExists, FailedPrecondition, InvalidArgument, NotFound, ResourceExhausted, Unavailable
from ..rankedset import CorruptRankedSet
from ..store import KeyTooLarge, StoreFull, StoreUnavailable, TransactionTimedOut, TransactionTooLarge, ValueTooLarge

STATUS_BY_ERROR: list[tuple[type[BaseException], grpc.StatusCode]] = [
    (InvalidArgument, grpc.StatusCode.INVALID_ARGUMENT),
    (NotFound, grpc.StatusCode.NOT_FOUND),
    (FailedPrecondition, grpc.StatusCode.FAILED_PRECONDITION),
    (AlreadyExists, grpc.StatusCode.ALREADY_EXISTS),
    (ResourceExhausted, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (Unavailable, grpc.StatusCode.UNAVAILABLE),
    (KeyTooLarge, grpc.StatusCode.INVALID_ARGUMENT),
    (ValueTooLarge, grpc.StatusCode.INVALID_ARGUMENT),
    (TransactionTooLarge, grpc.StatusCode.INVALID_ARGUMENT),
    (TransactionTimedOut, grpc.StatusCode.ABORTED),
    (StoreUnavailable, grpc.StatusCode.UNAVAILABLE),
    (StoreFull, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (CorruptRankedSet, grpc.StatusCode.DATA_LOSS),
    (Unauthenticated, grpc.StatusCode.UNAUTHENTICATED),
    (PermissionDenied, grpc.StatusCode.PERMISSION_DENIED),
    (UnknownOperation, grpc.StatusCode.PERMISSION_DENIED),
]

# Messages may quote what a request held (a group, a key): this many characters at most, so an
# answer's status always fits gRPC's 8-16 KB header limits.
MAX_MESSAGE_CHARS = 1000


def cap_message(message: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``message`` cut to ``limit`` characters, saying how much was left out."""
    if len(message) <= limit:
        return message
    return f"{message[:limit]}... ({len(message) - limit} more characters)"


class Answer(Exception):
    """Raised by a handler to answer with ``code`` and this message (and ``trailing`` metadata)."""

    def __init__(self, code: grpc.StatusCode, message: str, trailing: tuple[tuple[str, str], ...] = ()) -> None:
        super().__init__(message)
        self.code = code
        self.trailing = trailing


def status_of(exc: BaseException) -> grpc.StatusCode | None:
    """The status code answering ``exc``, or None for an unexpected error (INTERNAL).

    Only the project's own errors are refusals: inputs are checked where they enter and refused
    with :class:`InvalidArgument` naming the field, so a ``TypeError`` or ``ValueError`` from
    deeper down is a defect, answered INTERNAL and logged, never blamed on the caller."""
    if isinstance(exc, Answer):
        return exc.code
    for error_type, code in STATUS_BY_ERROR:
        if isinstance(exc, error_type):
            return code
    return None
