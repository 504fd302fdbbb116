"""The client's errors: a :class:`CallError` class per status code, each also the in-process index's
class of that error, and :func:`error_from_rpc` turning a transport's error into one.
"""

from __future__ import annotations

from typing import Any

import grpc

from .. import access, errors


class CallError(errors.LeaderboardError, grpc.RpcError):
    """A call refused by the server (or, for an argument it cannot send, by the client).

    ``str(error)`` and ``details()`` are the server's message, ``code()`` the ``grpc.StatusCode``;
    ``trailing_metadata()`` holds what the server added (e.g. :func:`load_refusal`'s fields).
    The subclass says the code; each is also the index's own class of that error, if any.
    """

    status: grpc.StatusCode = grpc.StatusCode.UNKNOWN

    def __init__(self, message: str, *, code: grpc.StatusCode | None = None, rpc: Any = None) -> None:
        super().__init__(message)
        self._code = code or self.status
        self._rpc = rpc  # the transport's error, for its metadata and debug string

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return str(self)

    def trailing_metadata(self) -> tuple[tuple[str, str], ...]:
        found = self._rpc.trailing_metadata() if self._rpc is not None else None
        return tuple(found or ())

    def initial_metadata(self) -> tuple[tuple[str, str], ...]:
        found = self._rpc.initial_metadata() if self._rpc is not None else None
        return tuple(found or ())

    def debug_error_string(self) -> str:
        return self._rpc.debug_error_string() if self._rpc is not None else f"{self._code.name}: {self}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._code.name}: {str(self)!r})"


class InvalidArgument(CallError, errors.InvalidArgument):
    """INVALID_ARGUMENT: the request is malformed (also raised before sending one)."""

    status = grpc.StatusCode.INVALID_ARGUMENT


class NotFound(CallError, errors.NotFound):
    """NOT_FOUND: no such index, window (of that type at that time) or record."""

    status = grpc.StatusCode.NOT_FOUND


class FailedPrecondition(CallError, errors.FailedPrecondition):
    """FAILED_PRECONDITION: the index's state does not allow it (e.g. a window still filling)."""

    status = grpc.StatusCode.FAILED_PRECONDITION


class AlreadyExists(CallError, errors.AlreadyExists):
    """ALREADY_EXISTS: an index with other options, or an idempotency key used for another request."""

    status = grpc.StatusCode.ALREADY_EXISTS


class ResourceExhausted(CallError, errors.ResourceExhausted):
    """RESOURCE_EXHAUSTED: a bound is reached (the server's concurrent calls, the index's keys): retry later."""

    status = grpc.StatusCode.RESOURCE_EXHAUSTED


class ScoreOutOfRange(InvalidArgument, errors.ScoreOutOfRange):
    """INVALID_ARGUMENT from the index's score range: ``rule`` is ``min_score`` or ``max_score``."""


class SubmissionLimited(ResourceExhausted, errors.SubmissionLimited):
    """RESOURCE_EXHAUSTED from a submission limit: ``rule`` is ``max_per_window`` or
    ``max_per_minute``, ``retry_after`` the seconds until the record may submit again (None: never
    into that window)."""


# A score rule's refusal carries trailing metadata "rule": these classes answer it, by code.
RULE_ERRORS: dict[grpc.StatusCode, type[ScoreOutOfRange | SubmissionLimited]] = {
    grpc.StatusCode.INVALID_ARGUMENT: ScoreOutOfRange,
    grpc.StatusCode.RESOURCE_EXHAUSTED: SubmissionLimited,
}


class PermissionDenied(CallError, access.PermissionDenied):
    """PERMISSION_DENIED: the token's role is too low for the call."""

    status = grpc.StatusCode.PERMISSION_DENIED


class Unauthenticated(CallError, access.Unauthenticated):
    """UNAUTHENTICATED: no token, or one the server does not know."""

    status = grpc.StatusCode.UNAUTHENTICATED


class Unavailable(CallError):
    """UNAVAILABLE: the server (or its store) could not be reached; already retried per the policy."""

    status = grpc.StatusCode.UNAVAILABLE


class DeadlineExceeded(CallError):
    """DEADLINE_EXCEEDED: no answer within the call's timeout; already retried per the policy."""

    status = grpc.StatusCode.DEADLINE_EXCEEDED


class Aborted(CallError):
    """ABORTED: the store gave up on the transaction (e.g. it ran past 5 seconds)."""

    status = grpc.StatusCode.ABORTED


class Cancelled(CallError):
    """CANCELLED: the call was cancelled."""

    status = grpc.StatusCode.CANCELLED


class DataLoss(CallError):
    """DATA_LOSS: the server found stored data damaged (run ``verify``)."""

    status = grpc.StatusCode.DATA_LOSS


class Internal(CallError):
    """INTERNAL (or UNKNOWN, UNIMPLEMENTED, OUT_OF_RANGE): a defect; the server logged it."""

    status = grpc.StatusCode.INTERNAL


ERRORS: dict[grpc.StatusCode, type[CallError]] = {
    cls.status: cls
    for cls in (
        InvalidArgument,
        NotFound,
        FailedPrecondition,
        AlreadyExists,
        ResourceExhausted,
        PermissionDenied,
        Unauthenticated,
        Unavailable,
        DeadlineExceeded,
        Aborted,
        Cancelled,
        DataLoss,
        Internal,
    )
}


def error_from_rpc(error: grpc.RpcError) -> CallError:
    """The :class:`CallError` for a transport's error (sync or asyncio), keeping its code and metadata."""
    if isinstance(error, CallError):
        return error
    code = error.code() if callable(getattr(error, "code", None)) else grpc.StatusCode.UNKNOWN  # type: ignore[attr-defined]
    details = error.details() if callable(getattr(error, "details", None)) else None  # type: ignore[attr-defined]
    if code in RULE_ERRORS:
        trailing = dict(getattr(error, "trailing_metadata", lambda: None)() or ())
        if "rule" in trailing:
            refusal = RULE_ERRORS[code](details or code.name, code=code, rpc=error)
            refusal.rule = str(trailing["rule"])
            retry = trailing.get("retry-after")
            refusal.retry_after = float(retry) if retry is not None else None
            return refusal
    return ERRORS.get(code, Internal)(details or code.name, code=code, rpc=error)


def load_refusal(error: grpc.RpcError) -> tuple[int | None, int | None]:
    """For an error ending a load: (0-based position of the refused record, records saved before it).

    Either is None when the server did not say (e.g. the load failed for another reason).
    """
    found: dict[str, int] = {}
    for key, value in getattr(error, "trailing_metadata", lambda: None)() or ():
        if key in ("refused-record", "records-saved"):
            found[key] = int(value)
    return found.get("refused-record"), found.get("records-saved")
