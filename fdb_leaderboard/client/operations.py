"""Python clients for the gRPC service, taking and returning plain Python values.

    with LeaderboardClient("127.0.0.1:50051") as lb:
        lb.create_index("game", boards=["daily"])
        lb.add_score("game", "alice", 1200, timestamp=1_700_000_000)  # pk ("alice",)
        lb.top("game", 10)

    async with AsyncLeaderboardClient("127.0.0.1:50051") as lb:  # for asyncio servers (grpc.aio)
        await lb.add_score("game", "alice", 1200, timestamp=1_700_000_000)
        await lb.top("game", 10)

Both clients have the same methods, with the same arguments and answers: each operation is
written once, as a generator that builds its requests and turns the answers into Python values
(:class:`_Ops`); a client only sends what it yields, blocking or awaiting.

Errors are :class:`CallError` subclasses named after the status code (:class:`NotFound`,
:class:`InvalidArgument`, :class:`Unavailable`...), carrying the server's message.  Each is also
the in-process index's class of that error where there is one (``client.NotFound`` is an
``errors.NotFound``, ``client.InvalidArgument`` an ``errors.InvalidArgument`` and so a
``ValueError``), so one ``except`` serves both, and a ``grpc.RpcError`` (``.code()``,
``.details()``, ``.trailing_metadata()``).  An argument the client cannot send (a key of the
wrong type, a negative count, an unknown mode) is refused before any call as InvalidArgument.

Writes are exactly-once: each write call carries an idempotency key (a new UUID unless one is
given), and a write that fails with UNAVAILABLE or DEADLINE_EXCEEDED (the server may or may not
have applied it) is sent again with the same key, with capped exponential backoff
(:class:`RetryPolicy`; ``retry=None`` sends every call once).  The server applies a key once and
answers its repeats with the first answer.  Reads are retried on UNAVAILABLE.

A server with access control needs ``token=`` (sent as ``authorization: Bearer TOKEN`` on every
call); one with TLS needs ``ca=`` (the PEM file of the CA that signed its certificate), and with
mutual TLS also ``cert=`` and ``key=`` (the client's certificate and key).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import inspect
import itertools
import random
import threading
import time
import uuid
import warnings
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Callable,
    Coroutine,
    Generator,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar

import grpc
import grpc.aio

from .. import access, errors, wire
from ..access import ROLE_BY_METHOD, Role, is_loopback
from ..errors import NoWindowsWarning
from ..index import (
    AuditEvent,
    Cohort,
    DeletionProgress,
    Entry,
    HiddenRecord,
    History,
    Leagues,
    Listing,
    Movement,
    Page,
    RankedEntry,
    ScoreRules,
)
from ..index.calendar import board_periods, timebase_scale
from ..index.values import check_timestamp
from ..proto import service_pb2 as pb
from ..proto import service_pb2_grpc as pb_grpc

# A window that ended, as window-end events tell it (watch_window_ends).
WindowEnd = wire.WindowEnd
_MESSAGE_RECORDS = 500  # a BulkLoad message carries up to this many records
_MESSAGE_BYTES = 1 << 20  # or about this many bytes (gRPC refuses messages over 4 MB)
MODES = {"ORDINAL": pb.ORDINAL, "COMPETITION": pb.COMPETITION, "DENSE": pb.DENSE}
# Calls that only read (the read role's): sent again when the server was unavailable.
_READS = frozenset(method for method, role in ROLE_BY_METHOD.items() if role is Role.READ)
# Writes whose answers carry their commit version (trailing metadata), noted for read-your-writes.
_SCORE_WRITES = wire.SCORE_WRITES
_UINT32 = 2**32
# A primary key, group or context: a sequence of elements, or one str, bytes or number standing
# for a one-element key ("alice" is ("alice",)).
Key = Sequence[object] | str | bytes | int | float
# A score: an int, a float (DOUBLE indexes), or a tuple or list of ints (indexes ranking by columns).
Score = int | float | Sequence[int]

# -- errors ------------------------------------------------------------------------------------


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


# -- retries and keys ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """How calls that may not have reached the server, or whose answer was lost, are sent again.

    ``attempts`` counts the first try (1: never again).  After try ``n`` fails the client waits
    ``b / 2`` plus a random part of ``b / 2`` seconds, ``b = min(max_backoff, initial_backoff *
    multiplier ** (n - 1))``: about 2-4 s over the default 5 tries, time for a server to restart
    or a connection to come back, and clients cut off together do not return together.  Writes
    are retried on ``write_codes``, reads on ``read_codes``; a write keeps its idempotency key.
    """

    attempts: int = 5
    initial_backoff: float = 0.25
    max_backoff: float = 4.0
    multiplier: float = 2.0
    write_codes: frozenset[grpc.StatusCode] = frozenset(
        {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED}
    )
    read_codes: frozenset[grpc.StatusCode] = frozenset({grpc.StatusCode.UNAVAILABLE})

    def __post_init__(self) -> None:
        if self.attempts < 1 or self.initial_backoff < 0 or self.max_backoff < 0 or self.multiplier < 1:
            raise ValueError("a retry policy needs attempts >= 1, backoffs >= 0 and a multiplier >= 1")

    def backoff(self, tries: int) -> float:
        """Seconds to wait after ``tries`` failed tries."""
        ceiling = min(self.max_backoff, self.initial_backoff * self.multiplier ** (tries - 1))
        return ceiling / 2 + random.uniform(0, ceiling / 2)

    def again(self, error: grpc.RpcError, codes: frozenset[grpc.StatusCode], tries: int) -> bool:
        """Whether a call that failed with ``error`` after ``tries`` tries is sent again."""
        return error.code() in codes and tries < self.attempts  # type: ignore[attr-defined]


def new_idempotency_key() -> str:
    """A key for one logical write (sent again with the write, never with another)."""
    return uuid.uuid4().hex


# -- requests and answers, shared by both clients ---------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _Call:
    """One unary call an operation asks its client to make."""

    method: str
    request: Any
    write: bool = False  # a keyed write: sent again on the policy's write codes
    timeout: float | None = None  # None: the client's
    changes_nothing: bool = False  # an admin call that only reads (Verify): sent again as reads are

    def retry_codes(self, policy: RetryPolicy) -> frozenset[grpc.StatusCode]:
        """The codes this call is sent again on (admin calls that change things: none)."""
        if self.write:
            return policy.write_codes
        return policy.read_codes if self.changes_nothing or self.method in _READS else frozenset()


_T = TypeVar("_T")
_P = ParamSpec("_P")
# An operation: yields the calls it needs, gets each answer back, returns its result.
Op = Generator[_Call, Any, _T]


def _expired_until_done(method: str, request: Any) -> Op[int]:
    """Call an expiry (each call works until done or its deadline) until done; returns the total."""
    expired = 0
    while True:
        response = yield _Call(method, request)
        expired += response.expired
        if response.done:
            return expired


def _natural(value: object, name: str) -> int:
    """A count or size the protocol carries as uint32, refused as InvalidArgument (naming it) otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < _UINT32:
        raise InvalidArgument(f"{name} must be an integer from 0 to {_UINT32 - 1}, not {value!r}")
    return value


def _enum(enum_type: Any, name: str, what: str) -> int:
    """The value of the protobuf enum member ``name`` (any case), or InvalidArgument naming the choices."""
    members = list(enum_type.keys())
    if not isinstance(name, str) or name.upper() not in members:
        raise InvalidArgument(f"{what} must be one of {', '.join(members)}, not {name!r}")
    return enum_type.Value(name.upper())


def rank_mode(mode: str) -> int:
    """A rank mode's name (ORDINAL, COMPETITION, DENSE; any case) as the protocol's value."""
    if not isinstance(mode, str) or mode.upper() not in MODES:
        raise InvalidArgument(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    return MODES[mode.upper()]


def _window(window_type: int, timestamp: int | None) -> pb.WindowSelector:
    selector = pb.WindowSelector(type=_natural(window_type, "window_type"))
    if timestamp is not None:
        selector.timestamp = timestamp
    return selector


def _pb_entry(score: Score, timestamp: int | None, context: Key = (), group: Key = ()) -> pb.Entry:
    """An entry to write; without ``timestamp``, one made now (the server's clock, in the index's timebase)."""
    entry = pb.Entry(
        score=wire.python_to_score(score),
        context=wire.key_to_items(context, "context"),
        group=wire.key_to_items(group, "group"),
    )
    if timestamp is not None:
        entry.timestamp = check_timestamp(timestamp)
    return entry


def _pb_entries(entries: Sequence[tuple]) -> list[pb.Entry]:
    return [_pb_entry(*entry) for entry in entries]


def _record(pk: Key, entries: Sequence[tuple]) -> pb.RecordEntries:
    return pb.RecordEntries(pk=wire.key_to_items(pk), entries=_pb_entries(entries))


def _warned(response: pb.AddScoreResponse | pb.WriteResponse) -> int:
    """The windows a write changed, issuing the server's warning (e.g. no windows yet) if any."""
    if response.warning:
        warnings.warn(response.warning, NoWindowsWarning, stacklevel=6)  # the caller's line, past _step and _run
    return response.windows_changed


def _entries(response: Any) -> Listing:
    """The entries answered, with the window they were read from (``.window``), as in process."""
    has_window = "window" in response.DESCRIPTOR.fields_by_name and response.HasField("window")
    window = wire.window_from_proto(response.window) if has_window else None
    return Listing([wire.ranked_entry_from_proto(e) for e in response.entries], window)


def _write(method: str, request: Any, idempotency_key: str | None) -> _Call:
    """A write under ``idempotency_key`` (a new one if None), sent again with the same key when
    its outcome is unknown."""
    request.idempotency_key = idempotency_key or new_idempotency_key()
    return _Call(method, request, write=True)


def _rank_request(
    index: str, pk: Key, window_type: int, timestamp: int | None, group: Key, mode: str
) -> pb.RankRequest:
    return pb.RankRequest(
        index=index,
        pk=wire.key_to_items(pk),
        window=_window(window_type, timestamp),
        group=wire.key_to_items(group, "group"),
        mode=rank_mode(mode),
    )


def _ranks_request(
    index: str, pks: Sequence[Key], window_type: int, timestamp: int | None, group: Key, mode: str
) -> pb.RanksRequest:
    if isinstance(pks, str | bytes):
        raise InvalidArgument("pks is a list of keys, not one key")
    return pb.RanksRequest(
        index=index,
        records=[pb.RecordKey(pk=wire.key_to_items(pk)) for pk in pks],
        window=_window(window_type, timestamp),
        group=wire.key_to_items(group, "group"),
        mode=rank_mode(mode),
    )


def _score(response: Any) -> Score | None:
    return wire.score_to_python(response.score) if response.HasField("score") else None


def _with_boards(
    maintenance: pb.MaintenancePolicy | None, boards: Sequence[str], timezone: str, timebase: str | None = None
) -> pb.MaintenancePolicy | None:
    """``maintenance`` keeping the calendar ``boards`` named (daily, weekly, monthly) too, and its
    times in ``timebase`` if given."""
    if not boards and timebase is None:
        return maintenance
    policy = pb.MaintenancePolicy()
    if maintenance is not None:
        policy.CopyFrom(maintenance)
    if timebase is not None:
        timebase_scale(timebase)  # refused here if unknown
        policy.timebase = "" if timebase == "seconds" else timebase
    for periods in board_periods(boards, timezone, policy.timebase or "seconds"):
        policy.calendar.add(type=periods.type, period=periods.period, timezone=timezone)
    return policy


class _Ops:
    """Every unary operation of the service, written once for both clients.

    Each is a generator: it builds its requests (refusing what cannot be sent), yields a
    :class:`_Call` per request, receives its answer and returns the Python result.  The clients
    wrap each one (:func:`_blocking`, :func:`_awaiting`) under the same name and signature.
    """

    # -- admin ------------------------------------------------------------------------------

    @staticmethod
    def create_index(
        name: str,
        aggregation: str = "BEST",
        hash_function: str = "MURMUR3",
        group_size: int = 0,
        context_size: int = 0,
        high_score_first: bool = True,
        reference_layout: bool = False,
        count_duplicates: bool = False,
        maintenance: pb.MaintenancePolicy | None = None,
        score_type: str = "INT",
        dense_ranks: bool = False,
        *,
        boards: Sequence[str] = (),
        timezone: str = "UTC",
        all_time: bool = True,
        columns: Sequence[str] = (),
        leagues: Leagues | None = None,
        timebase: str | None = None,
    ) -> Op[bool]:
        """Create index ``name`` (False: it exists with these options; the ``boards`` it lacks are
        added to it).  It ranks all-time from its first score (unless ``all_time`` is False) and
        keeps the calendar ``boards`` named (daily, weekly, monthly: window types 1, 2, 3) in
        ``timezone``, today's ones from the start: they join ``maintenance`` (the server keeps them
        ahead and expires them per that policy).  ``timebase``: its times in ``"seconds"`` (the
        default) or ``"milliseconds"``; a timestamp that cannot be one (after the year 9999) is
        refused.
        ``columns``: rank by 2 to 4 integer columns, each ``"HIGH"`` or ``"LOW"`` (most kills, then
        fewest deaths: ``("HIGH", "LOW")``); its scores are then tuples of ints.  ``leagues``:
        cohorts and tiers on one window type's windows (read with :meth:`cohort`)."""
        options = pb.IndexOptions(
            aggregation=_enum(pb.Aggregation, aggregation, "aggregation"),
            hash_function=_enum(pb.RankHash, hash_function, "hash_function"),
            group_size=_natural(group_size, "group_size"),
            context_size=_natural(context_size, "context_size"),
            high_score_first=high_score_first,
            count_duplicates=count_duplicates,
            score_type=_enum(pb.ScoreType, score_type, "score_type"),
            dense_ranks=dense_ranks,
            columns=[_enum(pb.ColumnOrder, direction, "a column's direction") for direction in columns],
            leagues=pb.Leagues(**dataclasses.asdict(leagues)) if leagues is not None else None,
        )
        request = pb.CreateIndexRequest(
            name=name,
            options=options,
            reference_layout=reference_layout,
            maintenance=_with_boards(maintenance, boards, timezone, timebase),
            all_time=all_time,
        )
        return (yield _Call("CreateIndex", request)).created

    @staticmethod
    def list_indexes() -> Op[list[pb.IndexInfo]]:
        """Every index with its options and maintenance policy."""
        return list((yield _Call("ListIndexes", pb.ListIndexesRequest())).indexes)

    @staticmethod
    def drop_index(name: str) -> Op[None]:
        """Delete the index and all its data (NotFound if there is none)."""
        yield _Call("DropIndex", pb.DropIndexRequest(index=name))

    @staticmethod
    def set_maintenance(index: str, policy: pb.MaintenancePolicy) -> Op[None]:
        """Replace the index's maintenance policy (windows kept ahead, retention, timebase)."""
        yield _Call("SetMaintenancePolicy", pb.SetMaintenancePolicyRequest(index=index, maintenance=policy))

    @staticmethod
    def set_writes_paused(index: str, paused: bool, reason: str = "") -> Op[None]:
        """Refuse the index's writes (UNAVAILABLE, saying ``reason``) until resumed, or resume them."""
        yield _Call("SetWritesPaused", pb.SetWritesPausedRequest(index=index, paused=paused, reason=reason))

    @staticmethod
    def update_windows(
        index: str,
        specs: Sequence[tuple[int, int, int, int, int]] = (),
        windows: Sequence[tuple[int, int, int]] = (),
        high_score_first: bool | None = None,
        all_time: bool = True,
        delete_before: int | None = None,
        update_timestamp: int = 0,
        nlevels: int = 0,
        rebuild: str = "IF_OVERLAPPING_CHANGED",
    ) -> Op[pb.UpdateWindowsResponse]:
        """Add (and with ``delete_before``, delete) windows; see ``WindowUpdate``.

        ``high_score_first`` None keeps the index's direction; True or False changes it (every
        window is then rebuilt).
        """
        request = pb.UpdateWindowsRequest(
            index=index,
            update_timestamp=update_timestamp,
            high_score_first=high_score_first,
            all_time=all_time,
            specs=[pb.WindowSpec(type=t, base=b, increment=i, duration=d, count=c) for t, b, i, d, c in specs],
            windows=[pb.ExplicitWindow(type=t, start=s, end=e) for t, s, e in windows],
            nlevels=nlevels,
            rebuild=_enum(pb.Rebuild, rebuild, "rebuild"),
        )
        if delete_before is not None:
            request.delete_before = delete_before
        return (yield _Call("UpdateWindows", request))

    @staticmethod
    def list_windows(index: str, window_type: int | None = None) -> Op[pb.ListWindowsResponse]:
        """The index's windows (only those of ``window_type`` if given), direction, latest
        timestamp and fill progress."""
        request = pb.ListWindowsRequest(index=index)
        if window_type is not None:
            request.window_type = window_type
        return (yield _Call("ListWindows", request))

    @staticmethod
    def save_sub_directory(index: str, group: Key, high_score_first: bool) -> Op[None]:
        """Set a group's score direction (before it has scores)."""
        request = pb.SaveSubDirectoryRequest(
            index=index, group=wire.key_to_items(group, "group"), high_score_first=high_score_first
        )
        yield _Call("SaveSubDirectory", request)

    @staticmethod
    def sub_directories(index: str) -> Op[dict[tuple, bool]]:
        """Each group with a direction of its own: whether it ranks high scores first."""
        response = yield _Call("ListSubDirectories", pb.ListSubDirectoriesRequest(index=index))
        return {wire.items_to_tuple(s.group): s.high_score_first for s in response.sub_directories}

    @staticmethod
    def groups(
        index: str, window_type: int = 0, timestamp: int | None = None, limit: int = 0, continuation: bytes = b""
    ) -> Op[tuple[list[tuple], bytes]]:
        """One page of the groups holding a value in the window (a grouped index's boards), in key
        order, at most ``limit`` (1-1000; 0: 100), and the continuation of the next (empty: done)."""
        window = _window(window_type, timestamp)
        limit = _natural(limit, "limit")
        request = pb.ListGroupsRequest(index=index, window=window, limit=limit, continuation=continuation)
        response = yield _Call("ListGroups", request)
        return [wire.items_to_tuple(g.group) for g in response.groups], response.continuation

    @staticmethod
    def expire(index: str, before: int) -> Op[list[pb.Window]]:
        """Delete the windows ending at or before ``before``, with their data."""
        return list((yield _Call("Expire", pb.ExpireRequest(index=index, before=before))).deleted)

    @staticmethod
    def fill(index: str, max_records: int = 0, max_batches: int = 0) -> Op[pb.FillResponse]:
        """Fill windows added over stored scores, for at most this many records and batches (0: all)."""
        request = pb.FillRequest(
            index=index,
            max_records=_natural(max_records, "max_records"),
            max_batches=_natural(max_batches, "max_batches"),
        )
        return (yield _Call("Fill", request))

    @staticmethod
    def trim(index: str, before: int) -> Op[int]:
        """Drop entries before ``before`` no window depends on; returns how many."""
        return (yield _Call("Trim", pb.TrimRequest(index=index, before=before))).entries_removed

    @staticmethod
    def keep_ahead(index: str, now: int | None = None) -> Op[list[pb.Window]]:
        """Add the windows the index's policy needs soon (``now`` default: the server's clock)."""
        request = pb.KeepAheadRequest(index=index)
        if now is not None:
            request.now = now
        return list((yield _Call("KeepAhead", request)).added)

    @staticmethod
    def expire_idempotency_keys(index: str, before: int | None = None) -> Op[int]:
        """Forget the index's idempotency keys applied before ``before`` (Unix seconds; default: its
        policy's retention ago), in bounded batches; returns how many.  The server does it too."""
        request = pb.ExpireIdempotencyKeysRequest(index=index)
        if before is not None:
            request.before = before
        return (yield from _expired_until_done("ExpireIdempotencyKeys", request))

    @staticmethod
    def verify(index: str, max_problems: int = 0) -> Op[list[str]]:
        """Problems the server's consistency check finds in the index (empty: sound)."""
        return list((yield from _Ops.verify_report(index, max_problems)).problems)

    @staticmethod
    def verify_plan(index: str, parts: int, timeout: float | None = None) -> Op[list[bytes]]:
        """Where each of about ``parts`` pieces of one whole check starts (see ``verify_report``)."""
        request = pb.VerifyRequest(index=index, split=_natural(parts, "parts"))
        return list((yield _Call("Verify", request, timeout=timeout, changes_nothing=True)).parts)

    @staticmethod
    def verify_report(
        index: str,
        max_problems: int = 0,
        timeout: float | None = None,
        progress: Callable[[pb.VerifyResponse], None] | None = None,
        continuation: bytes = b"",
    ) -> Op[pb.VerifyResponse]:
        """The server's consistency check of the whole index (or of the piece starting at
        ``continuation``), in as many calls as it takes, each within the server's deadline and
        ``timeout``: every call's problems and what the check looked at.  ``progress`` sees each
        call's answer.  The clients' ``verify_report`` methods take ``parts``: the check in about
        that many pieces over key ranges, run at once (their answers summed)."""
        request = pb.VerifyRequest(
            index=index, max_problems=_natural(max_problems, "max_problems"), continuation=continuation
        )
        problems: list[str] = []
        while True:
            answer = yield _Call("Verify", request, timeout=timeout, changes_nothing=True)
            problems.extend(answer.problems)
            if progress is not None:
                progress(answer)
            if answer.complete:
                del answer.problems[:]
                answer.problems.extend(problems)
                return answer
            request.continuation = answer.continuation

    # -- stored formats and releases ---------------------------------------------------------

    @staticmethod
    def store_status() -> Op[pb.StoreStatus]:
        """The store's format, the server processes on it with their releases (live or seen within
        a day), each index's format and upgrade under way, and the formats the server knows."""
        return (yield _Call("GetStoreStatus", pb.GetStoreStatusRequest()))

    @staticmethod
    def upgrade_index(
        index: str,
        max_records: int = 0,
        max_batches: int = 0,
        progress: Callable[[pb.UpgradeIndexResponse], None] | None = None,
    ) -> Op[pb.UpgradeIndexResponse]:
        """Raise ``index`` to the newest format the server writes (admin; refused while a live
        process runs a release that does not read it), its data rewritten first where that format
        needs it: calls until done, each ``max_batches`` batches of ``max_records`` records (0:
        the server's defaults, until its deadline), ``progress`` seeing each answer.  Returns the
        last answer, with the records and heads of every call."""
        request = pb.UpgradeIndexRequest(
            index=index,
            max_records=_natural(max_records, "max_records"),
            max_batches=_natural(max_batches, "max_batches"),
        )
        records = changed = 0
        while True:
            answer = yield _Call("UpgradeIndex", request, changes_nothing=True)  # resumable: sent again safely
            records += answer.records_processed
            changed += answer.heads_changed
            if progress is not None:
                progress(answer)
            if answer.done:
                answer.records_processed, answer.heads_changed = records, changed
                return answer

    @staticmethod
    def upgrade_store(progress: Callable[[pb.StoreStatus], None] | None = None) -> Op[pb.StoreStatus]:
        """Raise the store, then every index, to the newest formats the server writes (admin;
        refused while a live process runs a release that does not read them; stop processes of
        releases that do not report theirs, 0.2.0 and earlier, first): calls until done,
        ``progress`` seeing the status after each.  Returns the status at the end."""
        while True:
            answer = yield _Call("UpgradeStore", pb.UpgradeStoreRequest(), changes_nothing=True)
            if progress is not None:
                progress(answer.status)
            if answer.done:
                return answer.status

    # -- writes -----------------------------------------------------------------------------

    @staticmethod
    def add_score(
        index: str,
        pk: Key,
        score: Score,
        timestamp: int | None = None,
        context: Key = (),
        group: Key = (),
        metadata: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> Op[int]:
        """Add one entry, made at ``timestamp`` in the index's timebase (None: now, the server's
        clock when it applies the write, as the CLI and HTTP default to); ``metadata`` fields are
        merged into the record's in the same transaction.  Applied once, however often it is sent
        (see the module docstring): a write sent again keeps the time it was first applied at."""
        request = pb.AddScoreRequest(
            index=index,
            pk=wire.key_to_items(pk),
            entry=_pb_entry(score, timestamp, context, group),
            metadata=metadata or {},
        )
        return _warned((yield _write("AddScore", request, idempotency_key)))

    @staticmethod
    def set_metadata(
        index: str,
        pk: Key,
        metadata: Mapping[str, str],
        merge: bool = False,
        remove: Sequence[str] = (),
        idempotency_key: str | None = None,
    ) -> Op[dict[str, str]]:
        """Replace (or merge into) a record's display metadata; returns what is stored now."""
        request = pb.SetMetadataRequest(
            index=index, pk=wire.key_to_items(pk), metadata=metadata, merge=merge, remove=list(remove)
        )
        return dict(sorted((yield _write("SetMetadata", request, idempotency_key)).metadata.items()))

    @staticmethod
    def metadata(index: str, pk: Key) -> Op[dict[str, str] | None]:
        """A record's display metadata ({} if none), or None if the record does not exist."""
        response = yield _Call("GetMetadata", pb.MetadataRequest(index=index, pk=wire.key_to_items(pk)))
        return dict(sorted(response.metadata.items())) if response.exists else None

    @staticmethod
    def add_entries(index: str, pk: Key, entries: Sequence[tuple], idempotency_key: str | None = None) -> Op[int]:
        """Add ``(score, timestamp[, context[, group]])`` entries to a record."""
        request = pb.AddEntriesRequest(index=index, pk=wire.key_to_items(pk), entries=_pb_entries(entries))
        return _warned((yield _write("AddEntries", request, idempotency_key)))

    @staticmethod
    def save_record(index: str, pk: Key, entries: Sequence[tuple], idempotency_key: str | None = None) -> Op[int]:
        """Replace a record's entries with ``(score, timestamp[, context[, group]])`` entries."""
        request = pb.SaveRecordRequest(index=index, pk=wire.key_to_items(pk), entries=_pb_entries(entries))
        return _warned((yield _write("SaveRecord", request, idempotency_key)))

    @staticmethod
    def delete_record(index: str, pk: Key, idempotency_key: str | None = None) -> Op[bool]:
        """Delete a record from every window (False: there was none)."""
        request = pb.DeleteRecordRequest(index=index, pk=wire.key_to_items(pk))
        return (yield _write("DeleteRecord", request, idempotency_key)).existed

    # -- fair play: hidden records, score rules ----------------------------------------------

    @staticmethod
    def hide_record(index: str, pk: Key, reason: str = "", idempotency_key: str | None = None) -> Op[bool]:
        """Hide a record from every window, keeping its entries (admin); False: it was hidden already."""
        request = pb.HideRecordRequest(index=index, pk=wire.key_to_items(pk), reason=reason)
        return (yield _write("HideRecord", request, idempotency_key)).changed

    @staticmethod
    def restore_record(index: str, pk: Key, idempotency_key: str | None = None) -> Op[bool]:
        """Put a hidden record back in every window (admin); False: it was not hidden."""
        request = pb.RestoreRecordRequest(index=index, pk=wire.key_to_items(pk))
        return (yield _write("RestoreRecord", request, idempotency_key)).changed

    @staticmethod
    def hidden_records(
        index: str, limit: int = 100, continuation: bytes | None = None
    ) -> Op[tuple[list[HiddenRecord], bytes | None]]:
        """A page of hidden records (who hid each, when, why) and the next page's continuation (admin)."""
        request = pb.ListHiddenRecordsRequest(
            index=index, limit=_natural(limit, "limit"), continuation=continuation or b""
        )
        response = yield _Call("ListHiddenRecords", request, changes_nothing=True)
        return [wire.hidden_from_proto(record) for record in response.records], response.continuation or None

    @staticmethod
    def score_rules(index: str) -> Op[ScoreRules]:
        """The index's score rules."""
        return wire.rules_from_proto((yield _Call("GetScoreRules", pb.GetScoreRulesRequest(index=index))).rules)

    @staticmethod
    def set_score_rules(index: str, rules: ScoreRules) -> Op[ScoreRules]:
        """Replace the index's score rules (admin); returns them as kept."""
        if not isinstance(rules, ScoreRules):
            raise InvalidArgument(f"expected ScoreRules, not {type(rules).__name__}")
        request = pb.SetScoreRulesRequest(index=index, rules=wire.rules_to_proto(rules))
        # Setting the same rules again changes nothing: sent again as reads are.
        return wire.rules_from_proto((yield _Call("SetScoreRules", request, changes_nothing=True)).rules)

    @staticmethod
    def delete_records(
        index: str,
        group: Key | None = None,
        all_records: bool = False,
        max_records: int = 200,
        progress: Callable[[DeletionProgress], None] | None = None,
    ) -> Op[DeletionProgress]:
        """Delete every record of ``group`` (its data in the group), or with ``all_records`` every record
        of the index, in bounded batches (admin); calls until done, ``progress`` getting the
        totals after each call.  The index and its windows stay."""
        total = DeletionProgress(False)
        while True:
            request = pb.DeleteRecordsRequest(
                index=index,
                group=wire.key_to_items(group or (), "group"),
                all_records=all_records,
                max_records=_natural(max_records, "max_records"),
                continuation=total.continuation or b"",
            )
            answer = yield _write("DeleteRecords", request, None)
            total = total + DeletionProgress(
                answer.done,
                answer.records_changed,
                answer.records_deleted,
                answer.entries_deleted,
                answer.continuation or None,
            )
            if progress is not None:
                progress(total)
            if total.done:
                return total

    @staticmethod
    def audit_events(
        index: str | None = None,
        action: str | None = None,
        since_us: int | None = None,
        until_us: int | None = None,
        limit: int = 100,
        continuation: bytes | None = None,
        newest_first: bool = False,
    ) -> Op[tuple[list[AuditEvent], bytes | None]]:
        """A page of the audit trail (admin): who did what and when, oldest first (or newest), of
        ``index`` and ``action`` only if given, between ``since_us`` and ``until_us`` (Unix
        microseconds); and the next page's continuation (None: the last page)."""
        request = pb.ListAuditEventsRequest(
            index=index or "",
            action=action or "",
            limit=_natural(limit, "limit"),
            continuation=continuation or b"",
            newest_first=newest_first,
        )
        if since_us is not None:
            request.since_us = since_us
        if until_us is not None:
            request.until_us = until_us
        response = yield _Call("ListAuditEvents", request, changes_nothing=True)
        return [wire.audit_event_from_proto(event) for event in response.events], response.continuation or None

    @staticmethod
    def audit_retention() -> Op[int]:
        """Seconds the audit trail keeps events (admin)."""
        request = pb.ListAuditEventsRequest(limit=1, until_us=0)  # no event is that old: the retention only
        return (yield _Call("ListAuditEvents", request, changes_nothing=True)).retention

    @staticmethod
    def set_audit_retention(seconds: int) -> Op[int]:
        """Keep audit events ``seconds`` (0: the default, 90 days) (admin); returns the retention now."""
        request = pb.SetAuditRetentionRequest(retention=_natural(seconds, "seconds"))
        return (yield _Call("SetAuditRetention", request)).retention

    @staticmethod
    def expire_audit_events(before_us: int | None = None) -> Op[int]:
        """Clear audit events older than ``before_us`` (default: the retention ago), in bounded
        batches (admin); returns how many.  The server does it too."""
        request = pb.ExpireAuditEventsRequest()
        if before_us is not None:
            request.before_us = before_us
        return (yield from _expired_until_done("ExpireAuditEvents", request))

    @staticmethod
    def write_batch(
        index: str,
        records: Sequence[tuple[Key, Sequence[tuple]]],
        replace: bool = True,
        idempotency_key: str | None = None,
    ) -> Op[None]:
        """Write ``(pk, entries)`` records in one transaction: replacing them, or adding to them."""
        request = pb.WriteBatchRequest(
            index=index, replace=replace, records=[_record(pk, entries) for pk, entries in records]
        )
        yield _write("WriteBatch", request, idempotency_key)

    # -- reads ------------------------------------------------------------------------------

    @staticmethod
    def rank(
        index: str, pk: Key, window_type: int = 0, timestamp: int | None = None, group: Key = (), mode: str = "ORDINAL"
    ) -> Op[int | None]:
        """The record's 0-based rank in the window (None: no value there)."""
        response = yield _Call("GetRank", _rank_request(index, pk, window_type, timestamp, group, mode))
        return response.rank if response.HasField("rank") else None

    @staticmethod
    def rank_and_entry(
        index: str, pk: Key, window_type: int = 0, timestamp: int | None = None, group: Key = (), mode: str = "ORDINAL"
    ) -> Op[RankedEntry | None]:
        """The record's value in the window with its rank and metadata (None: no value there)."""
        request = _rank_request(index, pk, window_type, timestamp, group, mode)
        return wire.optional_entry((yield _Call("GetRankAndEntry", request)), "entry")

    @staticmethod
    def around(
        index: str,
        pk: Key,
        above: int,
        below: int,
        window_type: int = 0,
        timestamp: int | None = None,
        group: Key = (),
        mode: str = "ORDINAL",
        if_absent: str = "EMPTY",
    ) -> Op[list[RankedEntry]]:
        """The records ranked around ``pk``: ``above`` before it, ``below`` after it (shifted at the ends)."""
        request = pb.AroundMeRequest(
            index=index,
            pk=wire.key_to_items(pk),
            window=_window(window_type, timestamp),
            group=wire.key_to_items(group, "group"),
            mode=rank_mode(mode),
            above=_natural(above, "above"),
            below=_natural(below, "below"),
            if_absent=_enum(pb.IfAbsent, if_absent, "if_absent"),
        )
        return _entries((yield _Call("AroundMe", request)))

    @staticmethod
    def top(
        index: str, n: int, window_type: int = 0, timestamp: int | None = None, group: Key = (), mode: str = "ORDINAL"
    ) -> Op[list[RankedEntry]]:
        """The best ``n`` records of the window, best first."""
        request = pb.TopRequest(
            index=index,
            window=_window(window_type, timestamp),
            group=wire.key_to_items(group, "group"),
            mode=rank_mode(mode),
            n=_natural(n, "n"),
        )
        return _entries((yield _Call("Top", request)))

    @staticmethod
    def count(index: str, window_type: int = 0, timestamp: int | None = None, group: Key = ()) -> Op[int]:
        """How many records have a value in the window."""
        request = pb.CountRequest(
            index=index, window=_window(window_type, timestamp), group=wire.key_to_items(group, "group")
        )
        return (yield _Call("Count", request)).count

    @staticmethod
    def score_for_rank(
        index: str, rank: int, window_type: int = 0, timestamp: int | None = None, group: Key = ()
    ) -> Op[Score | None]:
        """The score at 0-based ``rank`` (None: the window has fewer records)."""
        request = pb.ScoreForRankRequest(
            index=index, window=_window(window_type, timestamp), group=wire.key_to_items(group, "group"), rank=rank
        )
        return _score((yield _Call("ScoreForRank", request)))

    @staticmethod
    def rank_for_score(
        index: str,
        score: int | float | list | tuple,
        window_type: int = 0,
        timestamp: int | None = None,
        group: Key = (),
    ) -> Op[int]:
        """The rank a record with ``score`` would have; ``score`` may be a score key
        ``(score, timestamp, context...)`` or a prefix of one, as the Record Layer takes it.  A
        tuple is a score key here, so a multi-column score is given as a list (``[10, 2]``), or
        as a key's first item (``((10, 2), timestamp)``)."""
        key = score if isinstance(score, tuple) else (score,)
        if not key:
            raise InvalidArgument("a score key needs at least the score")
        request = pb.RankForScoreRequest(
            index=index,
            window=_window(window_type, timestamp),
            group=wire.key_to_items(group, "group"),
            score=wire.python_to_score(key[0]),
            key_context=wire.tuple_to_items(key[2:], "score key context"),
        )
        if len(key) > 1:
            request.key_timestamp = key[1]
        return (yield _Call("RankForScore", request)).rank

    @staticmethod
    def score_trim(index: str, entries: Sequence[tuple]) -> Op[list[Entry]]:
        """Of ``(score, timestamp[, context[, group]])`` entries, those the index's current windows
        use, best first (the Record Layer's score trim)."""
        request = pb.ScoreTrimRequest(index=index, entries=_pb_entries(entries))
        return [wire.entry_to_python(e) for e in (yield _Call("ScoreTrim", request)).entries]

    # -- several records, pages, percentiles, movement --------------------------------------

    @staticmethod
    def ranks(
        index: str,
        pks: Sequence[Key],
        window_type: int = 0,
        timestamp: int | None = None,
        group: Key = (),
        mode: str = "ORDINAL",
    ) -> Op[list[RankedEntry | None]]:
        """Each record's entry and rank (None: no value in the window), in the order given (up to 200)."""
        response = yield _Call("GetRanks", _ranks_request(index, pks, window_type, timestamp, group, mode))
        return [wire.optional_entry(slot, "entry") for slot in response.ranks]

    @staticmethod
    def friends_board(
        index: str,
        pks: Sequence[Key],
        window_type: int = 0,
        timestamp: int | None = None,
        group: Key = (),
        mode: str = "ORDINAL",
    ) -> Op[list[RankedEntry]]:
        """The board of just these records, in the window's order, with their global ranks."""
        request = _ranks_request(index, pks, window_type, timestamp, group, mode)
        return _entries((yield _Call("FriendsBoard", request)))

    @staticmethod
    def page(
        index: str,
        page: int,
        size: int,
        window_type: int = 0,
        timestamp: int | None = None,
        group: Key = (),
        mode: str = "ORDINAL",
    ) -> Op[Page]:
        """Page ``page`` (1-based) of ``size`` records, with the window's total and page count."""
        request = pb.PageRequest(
            index=index,
            window=_window(window_type, timestamp),
            group=wire.key_to_items(group, "group"),
            mode=rank_mode(mode),
            page=_natural(page, "page"),
            size=_natural(size, "size"),
        )
        response = yield _Call("GetPage", request)
        window = wire.window_from_proto(response.window) if response.HasField("window") else None
        return Page(_entries(response), response.page, response.size, response.total, response.pages, window)

    @staticmethod
    def cohort(
        index: str,
        pk: Key | None = None,
        tier: int | None = None,
        cohort: int | None = None,
        timestamp: int | None = None,
        mode: str = "ORDINAL",
        page: int = 1,
        size: int = 0,
        around: tuple[int, int] | None = None,
    ) -> Op[Cohort | None]:
        """A cohort of the league window holding ``timestamp`` (None: now): record ``pk``'s (None if
        it joined none there) or cohort ``cohort`` of tier ``tier``; its entries are page ``page``
        of ``size`` (0: all), or with ``around=(above, below)`` those around the record.  Ranks are
        within the cohort."""
        if (pk is None) == (tier is None or cohort is None):
            raise errors.InvalidArgument("name a record (pk) or a cohort (tier and cohort), not both")
        above, below = around if around is not None else (0, 0)
        request = pb.CohortRequest(
            index=index,
            window=_window(0, timestamp),
            pk=wire.key_to_items(pk) if pk is not None else [],
            tier=_natural(tier or 0, "tier"),
            cohort=_natural(cohort or 0, "cohort"),
            mode=rank_mode(mode),
            page=_natural(page, "page"),
            size=_natural(size, "size"),
            above=_natural(above, "above"),
            below=_natural(below, "below"),
        )
        response = yield _Call("GetCohort", request)
        if not response.HasField("tier"):
            return None
        entry = wire.ranked_entry_from_proto(response.entry) if response.HasField("entry") else None
        window = wire.window_from_proto(response.window)
        return Cohort(window, response.tier, response.cohort, response.total, _entries(response), entry)

    @staticmethod
    def percentile(
        index: str, pk: Key, window_type: int = 0, timestamp: int | None = None, group: Key = ()
    ) -> Op[float | None]:
        """The share of the window's records behind ``pk``, in percent (None: no value there)."""
        request = pb.PercentileRequest(
            index=index,
            pk=wire.key_to_items(pk),
            window=_window(window_type, timestamp),
            group=wire.key_to_items(group, "group"),
        )
        response = yield _Call("GetPercentile", request)
        return response.percentile if response.HasField("percentile") else None

    @staticmethod
    def score_for_percentile(
        index: str, percentile: float, window_type: int = 0, timestamp: int | None = None, group: Key = ()
    ) -> Op[Score | None]:
        """The score at ``percentile`` (0: the worst, 100: the best), interpolated (None: empty window)."""
        request = pb.ScoreForPercentileRequest(
            index=index,
            window=_window(window_type, timestamp),
            group=wire.key_to_items(group, "group"),
            percentile=percentile,
        )
        return _score((yield _Call("ScoreForPercentile", request)))

    @staticmethod
    def movement(
        index: str,
        pk: Key,
        window_type: int,
        timestamp: int | None = None,
        group: Key = (),
        mode: str = "ORDINAL",
    ) -> Op[Movement]:
        """The record's rank now (or in the window holding ``timestamp``) and in the previous
        window of the type (``.change``: places gained)."""
        response = yield _Call("GetMovement", _rank_request(index, pk, window_type, timestamp, group, mode))
        previous = wire.window_from_proto(response.previous_window) if response.HasField("previous_window") else None
        return Movement(
            wire.window_from_proto(response.window),
            wire.optional_entry(response, "entry"),
            previous,
            wire.optional_entry(response, "previous_entry"),
        )

    @staticmethod
    def rank_history(
        index: str,
        pk: Key,
        window_type: int,
        until: int | None = None,
        count: int = 10,
        group: Key = (),
        mode: str = "ORDINAL",
    ) -> Op[History]:
        """The record's rank in each of the latest ``count`` windows of the type, and the best."""
        request = pb.RankHistoryRequest(
            index=index,
            pk=wire.key_to_items(pk),
            window_type=_natural(window_type, "window_type"),
            count=_natural(count, "count"),
            group=wire.key_to_items(group, "group"),
            mode=rank_mode(mode),
        )
        if until is not None:
            request.until = until
        response = yield _Call("GetRankHistory", request)
        rows = [(wire.window_from_proto(row.window), wire.optional_entry(row, "entry")) for row in response.windows]
        best = None
        if response.HasField("best"):
            best = (wire.window_from_proto(response.best.window), wire.ranked_entry_from_proto(response.best.entry))
        return History(rows, best)

    @staticmethod
    def scan(
        index: str,
        scan_type: str = "BY_RANK",
        *,
        low: Score | None = None,
        high: Score | None = None,
        low_exclusive: bool = False,
        high_exclusive: bool = False,
        window_type: int = 0,
        timestamp: int | None = None,
        group: Key = (),
        reverse: bool = False,
        limit: int = 0,
        continuation: bytes = b"",
        mode: str = "ORDINAL",
    ) -> Op[tuple[list[RankedEntry], bytes]]:
        """One page of a BY_VALUE, BY_RANK or BY_TIME_WINDOW scan and the continuation of the
        next (empty: done)."""
        request = pb.ScanRequest(
            index=index,
            type=_enum(pb.ScanType, scan_type, "scan_type"),
            window=_window(window_type, timestamp),
            group=wire.key_to_items(group, "group"),
            low_exclusive=low_exclusive,
            high_exclusive=high_exclusive,
            reverse=reverse,
            limit=_natural(limit, "limit"),
            continuation=continuation,
            mode=rank_mode(mode),
        )
        if low is not None:
            request.low.CopyFrom(wire.python_to_score(low))
        if high is not None:
            request.high.CopyFrom(wire.python_to_score(high))
        response = yield _Call("Scan", request)
        return _entries(response), response.continuation

    # -- window-end events ---------------------------------------------------------------------

    @staticmethod
    def add_webhook(
        index: str, url: str, secret: str = "", window_types: Sequence[int] = (), top: int | None = None
    ) -> Op[pb.Webhook]:
        """Subscribe ``url`` to the index's window ends (admin): each ended window of
        ``window_types`` (all without any) is POSTed to it with its top ``top`` (default 10),
        signed with ``secret`` (empty: the server makes one up and answers it, this once)."""
        request = pb.AddWebhookRequest(index=index, url=url, secret=secret, window_types=list(window_types))
        if top is not None:
            request.top = _natural(top, "top")
        return (yield _Call("AddWebhook", request)).webhook

    @staticmethod
    def webhooks(index: str) -> Op[list[pb.Webhook]]:
        """The index's webhooks (admin), without their secrets, with their events pending."""
        response = yield _Call("ListWebhooks", pb.ListWebhooksRequest(index=index), changes_nothing=True)
        return list(response.webhooks)

    @staticmethod
    def delete_webhook(index: str, webhook_id: str) -> Op[bool]:
        """Unsubscribe a webhook (admin), dropping its undelivered events; False: no such webhook."""
        request = pb.DeleteWebhookRequest(index=index, id=webhook_id)
        # Deleting again deletes nothing: sent again as reads are.
        return (yield _Call("DeleteWebhook", request, changes_nothing=True)).deleted

    @staticmethod
    def notice_window_ends(index: str, now: int | None = None) -> Op[pb.NoticeWindowEndsResponse]:
        """Notice the index's ended windows now (admin; the server's maintenance does it by
        itself): ``now`` in the index's timebase, default the server's clock.  Each window is
        noticed once, whoever asks; the answer names those this call noticed."""
        request = pb.NoticeWindowEndsRequest(index=index)
        if now is not None:
            request.now = check_timestamp(now)
        return (yield _Call("NoticeWindowEnds", request, changes_nothing=True))


def _step(op: Op[_T], answer: Any) -> _Call | _Done[_T]:
    """Run ``op`` to its next call (or its end), given the answer to its last one.

    What the operation raises while building a request (a ``ValueError`` or ``TypeError`` of
    protobuf or of the values' checks) is the caller's argument: InvalidArgument.
    """
    try:
        return op.send(answer)
    except StopIteration as done:
        return _Done(done.value)
    except CallError:
        raise
    except (ValueError, TypeError) as exc:
        raise InvalidArgument(" ".join(str(exc).split()) or type(exc).__name__) from exc


@dataclasses.dataclass(frozen=True, slots=True)
class _Done(Generic[_T]):
    """An operation's result."""

    value: _T


def _like(
    method: Callable[..., Any], op: Callable[..., Any], owner: str, *more: inspect.Parameter
) -> Callable[..., Any]:
    """``method`` named, documented and signed as ``op``, with ``self``, the ``more`` parameters
    and the op's result type."""
    signature = inspect.signature(op)
    returns = signature.return_annotation
    if isinstance(returns, str) and returns.startswith("Op[") and returns.endswith("]"):
        returns = returns[3:-1]
    self = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    method.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[self, *signature.parameters.values(), *more], return_annotation=returns
    )
    method.__name__ = op.__name__
    method.__qualname__ = f"{owner}.{op.__name__}"
    method.__doc__ = op.__doc__
    return method


# Reads whose freshness a caller may bound (``max_staleness``): the server's bounded reads.
_BOUNDED_OPS = frozenset(
    {
        "rank", "rank_and_entry", "around", "top", "count", "score_for_rank", "rank_for_score", "ranks",
        "friends_board", "page", "cohort", "percentile", "score_for_percentile", "movement", "scan", "groups",
        "metadata", "list_windows", "sub_directories",
    }
)  # fmt: skip
_STALENESS_PARAMETER = inspect.Parameter("max_staleness", inspect.Parameter.KEYWORD_ONLY, default=None)


def _blocking(op: Callable[_P, Op[_T]]) -> Callable[Concatenate[Any, _P], _T]:
    """The operation as a method of the blocking client."""
    if op.__name__ in _BOUNDED_OPS:

        def method(self: LeaderboardClient, *args: Any, max_staleness: int | None = None, **kwargs: Any) -> Any:
            return self._run(op(*args, **kwargs), self._staleness(max_staleness))

        return _like(method, op, "LeaderboardClient", _STALENESS_PARAMETER)

    def plain(self: LeaderboardClient, *args: Any, **kwargs: Any) -> Any:
        return self._run(op(*args, **kwargs))

    return _like(plain, op, "LeaderboardClient")


def _awaiting(op: Callable[_P, Op[_T]]) -> Callable[Concatenate[Any, _P], Coroutine[Any, Any, _T]]:
    """The operation as a coroutine method of the asyncio client."""
    if op.__name__ in _BOUNDED_OPS:

        async def method(
            self: AsyncLeaderboardClient, *args: Any, max_staleness: int | None = None, **kwargs: Any
        ) -> Any:
            return await self._run(op(*args, **kwargs), self._staleness(max_staleness))

        return _like(method, op, "AsyncLeaderboardClient", _STALENESS_PARAMETER)

    async def plain(self: AsyncLeaderboardClient, *args: Any, **kwargs: Any) -> Any:
        return await self._run(op(*args, **kwargs))

    return _like(plain, op, "AsyncLeaderboardClient")


def _staleness(value: object) -> int:
    """A max_staleness, refused as InvalidArgument (the client's) otherwise."""
    try:
        return wire.check_staleness(value)
    except errors.InvalidArgument as exc:
        raise InvalidArgument(str(exc)) from None


class _Freshness:
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

    def metadata(self, call: _Call, staleness: int | None) -> tuple[tuple[str, str], ...]:
        """The freshness metadata of ``call`` (a bounded read) at ``staleness`` ms."""
        if staleness is None or call.method not in _READS:
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


# -- the channel, the same for both clients ---------------------------------------------------------

# Each client its own connection (gRPC shares one among channels to the same address by default):
# a server with several processes then spreads clients, and a check's pieces, over them.
_CHANNEL_OPTIONS = [("grpc.use_local_subchannel_pool", 1)]


def _read_pem(path: str | None) -> bytes | None:
    if path is None:
        return None
    with open(path, "rb") as file:
        return file.read()


def _credentials(
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


def _call_metadata(token: str | None, user: str | None) -> tuple[tuple[str, str], ...]:
    """What every call carries: ``authorization: Bearer TOKEN``, and the user the caller names
    (recorded by a server without tokens as who acted; one with tokens goes by the token)."""
    metadata = []
    if token:
        metadata.append(("authorization", f"Bearer {token}"))
    if user:
        metadata.append((access.USER_HEADER, user))
    return tuple(metadata)


class _Headers(
    grpc.UnaryUnaryClientInterceptor,
    grpc.UnaryStreamClientInterceptor,
    grpc.StreamUnaryClientInterceptor,
    grpc.StreamStreamClientInterceptor,
):
    """Adds the call metadata (:func:`_call_metadata`) to every call of a channel (also those made with ``stub``)."""

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


# -- loads: the stream's messages, shared ----------------------------------------------------------


class _LoadMessages:
    """A load's records gathered into BulkLoad messages: the first names the index and the key."""

    def __init__(self, index: str, batch_size: int, rank_as_loaded: bool, idempotency_key: str) -> None:
        self.message = pb.BulkLoadRequest(
            index=index,
            batch_size=_natural(batch_size, "batch_size"),
            rank_as_loaded=rank_as_loaded,
            idempotency_key=idempotency_key,
        )
        self.size = 0
        self.added = 0
        self.failure: BaseException | None = None  # what ended the records early, raised after the stream

    def add(self, record: tuple[Key, Sequence[tuple]]) -> pb.BulkLoadRequest | None:
        """Add a record; returns a full message to send, if this one filled it."""
        try:
            pk, entries = record
            converted = _record(pk, entries)
        except (ValueError, TypeError) as exc:
            raise InvalidArgument(f"record {self.added} of the load: {' '.join(str(exc).split())}") from exc
        self.added += 1
        self.message.records.append(converted)
        self.size += converted.ByteSize()
        if len(self.message.records) < _MESSAGE_RECORDS and self.size < _MESSAGE_BYTES:
            return None
        full, self.message, self.size = self.message, pb.BulkLoadRequest(), 0
        return full

    def last(self) -> pb.BulkLoadRequest | None:
        """The last message (the first one names the index even with no records)."""
        return self.message if self.message.records or self.message.index else None

    def raise_failure(self, written: int) -> None:
        if self.failure is not None:
            saved = "the record" if written == 1 else f"the {written} records"
            self.failure.add_note(f"BulkLoad saved {saved} before it")
            raise self.failure


def _can_send_again(records: object) -> bool:
    """Whether a load's records can be read again from the start (a list, not an iterator)."""
    if isinstance(records, AsyncIterable):
        return aiter(records) is not records
    return iter(records) is not records  # type: ignore[call-overload]


# -- dumps: the streams' messages, shared -----------------------------------------------------------


DEFAULT_MOVE_CATCH_UP = 10.0  # seconds a move catches up after the target's rebuild before it pauses the writes


def _dump_request(index: str, keep_paused: bool, moved_to: str, catch_up_seconds: float) -> pb.DumpRequest:
    return pb.DumpRequest(index=index, keep_paused=keep_paused, moved_to=moved_to, catch_up_seconds=catch_up_seconds)


def _restore_request(number: int, part: pb.DumpPart, index: str) -> pb.RestoreRequest:
    """The restore stream's ``number``-th message: the first names the index to create."""
    return pb.RestoreRequest(index="" if number else index, part=part)


class _Move:
    """A move's bookkeeping (blocking and asyncio alike): the dump's parts shown on their way to
    the target and its end kept; and when to pause the source's writes.  The source keeps taking
    writes while the target rebuilds the board and applies the changes made meanwhile; the pause
    comes once the target has applied every change the source had noted at its last "caught up"
    mark (or ``catch_up_seconds`` after the rebuild, if writes never let it catch up), so it
    covers only the changes written since then."""

    def __init__(self, catch_up_seconds: float, progress: Callable[[pb.DumpPart | pb.RestoreProgress], None] | None):
        self.catch_up_seconds = catch_up_seconds or DEFAULT_MOVE_CATCH_UP
        self.progress = progress
        self.ends: list[pb.DumpEnd] = []
        self.caught_up: int | None = None  # the dump's changes count at its last "caught up" mark
        self.built_at: float | None = None
        self.paused = False

    def part(self, part: pb.DumpPart) -> pb.DumpPart:
        """A part on its way to the target."""
        kind = part.WhichOneof("part")
        if kind == "end":
            self.ends.append(part.end)
            return part
        if kind == "progress" and part.progress.phase == "caught up":
            self.caught_up = part.progress.changes
        if self.progress is not None:
            self.progress(part)
        return part

    def restored(self, step: pb.RestoreProgress) -> bool:
        """The target's progress: whether to pause the source's writes now."""
        if self.progress is not None:
            self.progress(step)
        if self.paused or step.phase not in ("built", "catching up"):
            return False
        if self.built_at is None:
            self.built_at = time.monotonic()
        caught_up = self.caught_up is not None and step.changes >= self.caught_up
        return caught_up or time.monotonic() - self.built_at >= self.catch_up_seconds

    def pausing(self) -> None:
        self.paused = True
        if self.progress is not None:
            self.progress(pb.DumpPart(progress=pb.DumpProgress(phase="paused")))


def _moved_reason(index: str, moved_to: str) -> str:
    return f"index {index!r} moved to {moved_to or 'another store'}"


def _verify_parts(plan: Sequence[bytes]) -> list[bytes]:
    return list(plan) or [b""]


class _VerifyMerge:
    """The answers of a check's pieces run at once, as one (counts added, problems in order)."""

    def __init__(self, pieces: int, max_problems: int, progress: Callable[[pb.VerifyResponse], None] | None) -> None:
        self.latest = [pb.VerifyResponse(complete=True) for _ in range(pieces)]  # (a piece not answered yet)
        self.max_problems = max_problems or 100
        self.progress = progress
        self.lock = threading.Lock()

    def seen(self, piece: int) -> Callable[[pb.VerifyResponse], None]:
        def note(answer: pb.VerifyResponse) -> None:
            with self.lock:
                self.latest[piece] = answer
                if self.progress is not None:  # complete while no piece took more than one call
                    self.progress(self.merged(complete=all(answer.complete for answer in self.latest)))

        return note

    def merged(self, answers: Sequence[pb.VerifyResponse] | None = None, complete: bool = True) -> pb.VerifyResponse:
        out = pb.VerifyResponse(complete=complete)
        for answer in answers if answers is not None else self.latest:
            out.problems.extend(answer.problems)
            for field in ("records", "entries", "elements", "ranked_sets", "windows", "batches"):
                setattr(out, field, getattr(out, field) + getattr(answer, field))
        del out.problems[self.max_problems :]
        return out


# -- the blocking client ------------------------------------------------------------------------------


class LeaderboardClient:
    """The blocking client (see the module docstring); a thread-safe channel, closed by ``close``."""

    def __init__(
        self,
        address: str,
        timeout: float | None = 30.0,
        *,
        token: str | None = None,
        ca: str | None = None,
        cert: str | None = None,
        key: str | None = None,
        retry: RetryPolicy | None = RetryPolicy(),  # frozen: one shared default is safe
        user: str | None = None,
        max_staleness: int = 0,
    ) -> None:
        """``token``: a bearer token; ``ca``: a CA file to verify the server's TLS certificate
        (TLS is used when ``ca`` or ``cert`` is given); ``cert``/``key``: a client certificate;
        ``retry``: how calls are sent again (None: once), each try with ``timeout``; ``user``: who
        the caller says it is, recorded by a server without tokens in its audit trail (the CLI
        sends the local user); ``max_staleness``: milliseconds the reads may lag behind the
        latest writes (0: exact; each read also takes ``max_staleness=``), always seeing this
        client's own score writes, through any server of the store (docs/foundationdb.md,
        "Fresh reads and stale ones")."""
        self.freshness = _Freshness(max_staleness)
        credentials = _credentials(address, token, ca, cert, key)
        options = _CHANNEL_OPTIONS
        if credentials is None:
            channel = grpc.insecure_channel(address, options)
        else:
            channel = grpc.secure_channel(address, credentials, options)
        self._raw_channel = channel
        self._connect = lambda: LeaderboardClient(
            address, timeout, token=token, ca=ca, cert=cert, key=key, retry=retry, user=user
        )
        metadata = _call_metadata(token, user)
        self.channel = grpc.intercept_channel(channel, _Headers(metadata)) if metadata else channel
        self.stub = pb_grpc.LeaderboardStub(self.channel)
        self.timeout = timeout
        self.retry = retry or RetryPolicy(attempts=1)

    def close(self) -> None:
        self._raw_channel.close()

    def __enter__(self) -> LeaderboardClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _staleness(self, per_call: int | None) -> int | None:
        return self.freshness.staleness(per_call)

    def _run(self, op: Op[_T], staleness: int | None = None) -> _T:
        step = _step(op, None)
        while isinstance(step, _Call):
            step = _step(op, self._send(step, staleness))
        return step.value

    def _send(self, call: _Call, staleness: int | None = None) -> Any:
        send = getattr(self.stub, call.method)
        codes = call.retry_codes(self.retry)
        metadata = self.freshness.metadata(call, staleness)
        tries = 0
        while True:
            tries += 1
            try:
                if call.method in _SCORE_WRITES:
                    response, rpc = send.with_call(call.request, timeout=call.timeout or self.timeout)
                    self.freshness.note(rpc.trailing_metadata())
                    return response
                return send(call.request, timeout=call.timeout or self.timeout, metadata=metadata or None)
            except grpc.RpcError as exc:
                if not self.retry.again(exc, codes, tries):
                    raise error_from_rpc(exc) from None
            time.sleep(self.retry.backoff(tries))

    create_index = _blocking(_Ops.create_index)
    list_indexes = _blocking(_Ops.list_indexes)
    drop_index = _blocking(_Ops.drop_index)
    set_maintenance = _blocking(_Ops.set_maintenance)
    set_writes_paused = _blocking(_Ops.set_writes_paused)
    update_windows = _blocking(_Ops.update_windows)
    list_windows = _blocking(_Ops.list_windows)
    save_sub_directory = _blocking(_Ops.save_sub_directory)
    sub_directories = _blocking(_Ops.sub_directories)
    groups = _blocking(_Ops.groups)
    expire = _blocking(_Ops.expire)
    fill = _blocking(_Ops.fill)
    trim = _blocking(_Ops.trim)
    keep_ahead = _blocking(_Ops.keep_ahead)
    expire_idempotency_keys = _blocking(_Ops.expire_idempotency_keys)
    verify = _blocking(_Ops.verify)
    verify_plan = _blocking(_Ops.verify_plan)

    def verify_report(
        self,
        index: str,
        max_problems: int = 0,
        timeout: float | None = None,
        progress: Callable[[pb.VerifyResponse], None] | None = None,
        parts: int = 1,
    ) -> pb.VerifyResponse:
        """The server's consistency check of the whole index, in calls each within the server's
        deadline and ``timeout``.  With ``parts`` above 1 the check is cut into about that many
        pieces over key ranges, run at once, each on a connection of its own (a server with several
        processes spreads them); ``progress`` then sees their answers summed."""
        if parts <= 1:
            return self._run(_Ops.verify_report(index, max_problems, timeout, progress))
        plan = _verify_parts(self.verify_plan(index, parts, timeout))
        merge = _VerifyMerge(len(plan), max_problems, progress)

        def piece(number: int) -> pb.VerifyResponse:
            with self._connect() as own:
                return own._run(_Ops.verify_report(index, max_problems, timeout, merge.seen(number), plan[number]))

        with concurrent.futures.ThreadPoolExecutor(len(plan)) as pool:
            return merge.merged(list(pool.map(piece, range(len(plan)))))

    store_status = _blocking(_Ops.store_status)
    upgrade_index = _blocking(_Ops.upgrade_index)
    upgrade_store = _blocking(_Ops.upgrade_store)
    add_score = _blocking(_Ops.add_score)
    set_metadata = _blocking(_Ops.set_metadata)
    metadata = _blocking(_Ops.metadata)
    add_entries = _blocking(_Ops.add_entries)
    save_record = _blocking(_Ops.save_record)
    delete_record = _blocking(_Ops.delete_record)
    hide_record = _blocking(_Ops.hide_record)
    restore_record = _blocking(_Ops.restore_record)
    hidden_records = _blocking(_Ops.hidden_records)
    score_rules = _blocking(_Ops.score_rules)
    set_score_rules = _blocking(_Ops.set_score_rules)
    delete_records = _blocking(_Ops.delete_records)
    audit_events = _blocking(_Ops.audit_events)
    audit_retention = _blocking(_Ops.audit_retention)
    set_audit_retention = _blocking(_Ops.set_audit_retention)
    expire_audit_events = _blocking(_Ops.expire_audit_events)
    write_batch = _blocking(_Ops.write_batch)
    rank = _blocking(_Ops.rank)
    rank_and_entry = _blocking(_Ops.rank_and_entry)
    around = _blocking(_Ops.around)
    top = _blocking(_Ops.top)
    count = _blocking(_Ops.count)
    score_for_rank = _blocking(_Ops.score_for_rank)
    rank_for_score = _blocking(_Ops.rank_for_score)
    score_trim = _blocking(_Ops.score_trim)
    ranks = _blocking(_Ops.ranks)
    friends_board = _blocking(_Ops.friends_board)
    page = _blocking(_Ops.page)
    cohort = _blocking(_Ops.cohort)
    percentile = _blocking(_Ops.percentile)
    score_for_percentile = _blocking(_Ops.score_for_percentile)
    movement = _blocking(_Ops.movement)
    rank_history = _blocking(_Ops.rank_history)
    scan = _blocking(_Ops.scan)
    add_webhook = _blocking(_Ops.add_webhook)
    webhooks = _blocking(_Ops.webhooks)
    delete_webhook = _blocking(_Ops.delete_webhook)
    notice_window_ends = _blocking(_Ops.notice_window_ends)

    def all_groups(self, index: str, window_type: int = 0, timestamp: int | None = None) -> Iterator[tuple]:
        """Every group holding a value in the window, following continuations page by page."""
        continuation = b""
        while True:
            groups, continuation = self.groups(index, window_type, timestamp, continuation=continuation)
            yield from groups
            if not continuation:
                return

    def scan_all(self, index: str, scan_type: str = "BY_RANK", page: int = 100, **kwargs: Any) -> Iterator[RankedEntry]:
        """Every entry of a scan, following continuations page by page."""
        continuation = b""
        while True:
            entries, continuation = self.scan(index, scan_type, limit=page, continuation=continuation, **kwargs)
            yield from entries
            if not continuation:
                return

    def watch_rank(
        self,
        index: str,
        pk: Key,
        window_type: int = 0,
        timestamp: int | None = None,
        group: Key = (),
        mode: str = "ORDINAL",
        timeout: float | None = None,
    ) -> RankWatch:
        """The record's value in the window with its rank (None: no value there), now and then
        whenever its rank, score or window changes (at most once a second), until the watch is
        closed (from any thread) or ``timeout`` seconds pass (None: no end).  Without
        ``timestamp``, the window is the current one of its type, following the clock."""
        return RankWatch(
            self.stub.WatchRank(_rank_request(index, pk, window_type, timestamp, group, mode), timeout=timeout)
        )

    def watch_window_ends(
        self, index: str, after: int | None = None, top: int | None = None, timeout: float | None = None
    ) -> WindowEndWatch:
        """The index's ended windows (:class:`~fdb_leaderboard.wire.WindowEnd`) as they are noticed,
        from now on, or those after cursor ``after`` first (an event's ``cursor``: where to resume
        after a reconnect), each with its top ``top`` (default 10), until the watch is closed
        (from any thread) or ``timeout`` seconds pass (None: no end)."""
        return WindowEndWatch(self.stub.WatchWindowEnds(_window_ends_request(index, after, top), timeout=timeout))

    def bulk_load(
        self,
        index: str,
        records: Iterable[tuple[Key, Sequence[tuple]]],
        batch_size: int = 500,
        rank_as_loaded: bool = False,
        progress: Callable[[int], None] | None = None,
        timeout: float | None = None,
        idempotency_key: str | None = None,
    ) -> int:
        """Stream ``(pk, entries)`` records to the server's Load; returns how many it saved.

        Each record replaces that record's entries.  ``progress`` gets the count of records
        saved so far, after each transaction the server commits.  If iterating ``records``
        raises, the stream ends there: the server saves what came before, then that exception
        is raised here (noting how many were saved); a record that cannot be sent does the same
        as InvalidArgument.  A record the server refuses raises a :class:`CallError`;
        :func:`load_refusal` tells which record and how many were saved.  No timeout by default:
        a load takes as long as its data.

        The load goes under an idempotency key: each of its transactions is applied once.  When
        ``records`` can be iterated again (a list, or an object whose ``__iter__`` starts over:
        not an iterator), a load cut off (UNAVAILABLE, DEADLINE_EXCEEDED) is sent again from
        its start and the server saves only the transactions it had not.
        """
        key = idempotency_key or new_idempotency_key()
        again = _can_send_again(records)
        tries = 0
        while True:
            tries += 1
            try:
                return self._load(index, records, batch_size, rank_as_loaded, progress, timeout, key)
            except grpc.RpcError as exc:
                if not again or not self.retry.again(exc, self.retry.write_codes, tries):
                    raise error_from_rpc(exc) from None
            time.sleep(self.retry.backoff(tries))

    def _load(
        self,
        index: str,
        records: Iterable[tuple[Key, Sequence[tuple]]],
        batch_size: int,
        rank_as_loaded: bool,
        progress: Callable[[int], None] | None,
        timeout: float | None,
        idempotency_key: str,
    ) -> int:
        """One try of :meth:`bulk_load`."""
        messages = _LoadMessages(index, batch_size, rank_as_loaded, idempotency_key)

        def requests() -> Iterator[pb.BulkLoadRequest]:
            try:
                for record in records:
                    if (full := messages.add(record)) is not None:
                        yield full
            except Exception as exc:  # end the stream here; grpc would only say "Exception iterating requests"
                messages.failure = exc
            if (last := messages.last()) is not None:
                yield last

        call = self.stub.Load(requests(), timeout=timeout)
        written = 0
        try:
            for step in call:
                written = step.records_saved
                if progress:
                    progress(written)
        except KeyboardInterrupt:  # stop the server's load too: what it saved stays saved
            call.cancel()
            raise
        messages.raise_failure(written)
        return written

    # -- dumps, restores, moves ---------------------------------------------------------------

    def dump(
        self,
        index: str,
        keep_paused: bool = False,
        moved_to: str = "",
        catch_up_seconds: float = 0.0,
        timeout: float | None = None,
    ) -> Iterator[pb.DumpPart]:
        """The index's dump, part by part, as the server copies it while the index takes writes
        (``fdb_leaderboard.index.dumps``; :func:`~fdb_leaderboard.index.dumpfile.write_dump` writes
        it to a file).  ``keep_paused``: the index's writes stay refused afterwards (a move,
        see :meth:`move`).  A dump cut off is not sent again: start it again."""
        request = _dump_request(index, keep_paused, moved_to, catch_up_seconds)
        call = self.stub.Dump(iter([request]), timeout=timeout)
        try:
            yield from call
        except grpc.RpcError as exc:
            raise error_from_rpc(exc) from None
        finally:
            call.cancel()  # the caller stopped reading: the server stops the dump (a no-op once done)

    def restore(
        self, parts: Iterable[pb.DumpPart], index: str = "", timeout: float | None = None
    ) -> Iterator[pb.RestoreProgress]:
        """Send a dump's parts to the server, which restores them as the new index ``index`` (empty:
        the dumped index's name); yields its progress, the last with phase "done"."""

        def requests() -> Iterator[pb.RestoreRequest]:
            for number, part in enumerate(parts):
                yield _restore_request(number, part, index)

        call = self.stub.Restore(requests(), timeout=timeout)
        try:
            yield from call
        except grpc.RpcError as exc:
            raise error_from_rpc(exc) from None
        finally:
            call.cancel()

    def move(
        self,
        index: str,
        target: LeaderboardClient,
        target_index: str = "",
        moved_to: str = "",
        catch_up_seconds: float = 0.0,
        progress: Callable[[pb.DumpPart | pb.RestoreProgress], None] | None = None,
    ) -> tuple[pb.DumpEnd, pb.RestoreProgress]:
        """Copy the index to ``target``'s store while it takes writes here: the target rebuilds
        the board and applies the changes made meanwhile; the writes here are then refused
        (UNAVAILABLE naming ``moved_to``) while the last changes are copied, and stay refused:
        point the writers at the target then.  ``catch_up_seconds``: the longest the writes run
        on once the target's rebuild is done if they never let it catch up (0: 10 s).  Returns
        the dump's end and the restore's last progress.  If the restore fails, the index takes
        writes here again."""
        move = _Move(catch_up_seconds, progress)
        parts = (move.part(part) for part in self.dump(index, True, moved_to, catch_up_seconds))
        last = pb.RestoreProgress()
        try:
            for last in target.restore(parts, target_index or index):
                if move.restored(last):
                    move.pausing()
                    self.set_writes_paused(index, True, _moved_reason(index, moved_to))
        except BaseException:
            if move.paused:  # take writes here again
                self.set_writes_paused(index, False)
            raise
        return move.ends[0], last


class RankWatch:
    """A watched rank (:meth:`LeaderboardClient.watch_rank`): iterate it for the updates; ``close``
    (from any thread, or leaving a ``with`` block) ends the watch and the iteration quietly."""

    def __init__(self, call: Any) -> None:
        self._call = call
        self._closed = False

    def __iter__(self) -> Iterator[RankedEntry | None]:
        try:
            for response in self._call:
                yield wire.optional_entry(response, "entry")
        except grpc.RpcError as exc:
            if not self._closed:
                raise error_from_rpc(exc) from None

    def close(self) -> None:
        self._closed = True
        self._call.cancel()

    def __enter__(self) -> RankWatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class WindowEndWatch(RankWatch):
    """Window-end events (:meth:`LeaderboardClient.watch_window_ends`): iterate it for them;
    ``close`` ends the watch quietly."""

    def __iter__(self) -> Iterator[wire.WindowEnd]:  # type: ignore[override]
        try:
            for response in self._call:
                yield wire.window_end_from_proto(response)
        except grpc.RpcError as exc:
            if not self._closed:
                raise error_from_rpc(exc) from None

    def __enter__(self) -> WindowEndWatch:
        return self


def _window_ends_request(index: str, after: int | None, top: int | None) -> pb.WatchWindowEndsRequest:
    request = pb.WatchWindowEndsRequest(index=index)
    if after is not None:
        request.after = _natural(after, "after")
    if top is not None:
        request.top = _natural(top, "top")
    return request


# -- the asyncio client -------------------------------------------------------------------------------


class AsyncWatch(Generic[_T]):
    """A watch of the asyncio client (:meth:`AsyncLeaderboardClient.watch_rank`,
    :meth:`~AsyncLeaderboardClient.watch_window_ends`), as the blocking client's: ``async for`` it
    for the updates; ``close`` (or leaving an ``async with`` block) ends the watch and the
    iteration quietly."""

    def __init__(self, call: Any, convert: Callable[[Any], _T]) -> None:
        self._call = call
        self._convert = convert
        self._closed = False

    def __aiter__(self) -> AsyncIterator[_T]:
        return self._updates()

    async def _updates(self) -> AsyncIterator[_T]:
        try:
            async for response in self._call:
                yield self._convert(response)
        except grpc.RpcError as exc:
            if not self._closed:
                raise error_from_rpc(exc) from None
        except asyncio.CancelledError:  # grpc.aio's word for a call this watch's close cancelled
            if not self._closed:
                raise
        finally:
            self._call.cancel()

    def close(self) -> None:
        self._closed = True
        self._call.cancel()

    async def __aenter__(self) -> AsyncWatch[_T]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


class AsyncLeaderboardClient:
    """The asyncio client (grpc.aio): the blocking client's methods as coroutines, with the same
    arguments, answers, errors, idempotency keys and retries.  Make it inside the event loop
    that uses it (``async with AsyncLeaderboardClient(address) as lb``)."""

    def __init__(
        self,
        address: str,
        timeout: float | None = 30.0,
        *,
        token: str | None = None,
        ca: str | None = None,
        cert: str | None = None,
        key: str | None = None,
        retry: RetryPolicy | None = RetryPolicy(),  # frozen: one shared default is safe
        user: str | None = None,
        max_staleness: int = 0,
    ) -> None:
        """The arguments of :class:`LeaderboardClient`."""
        self.freshness = _Freshness(max_staleness)
        credentials = _credentials(address, token, ca, cert, key)
        if credentials is None:
            self.channel = grpc.aio.insecure_channel(address, _CHANNEL_OPTIONS)
        else:
            self.channel = grpc.aio.secure_channel(address, credentials, _CHANNEL_OPTIONS)
        self.stub = pb_grpc.LeaderboardStub(self.channel)
        self._metadata = _call_metadata(token, user) or None
        self.timeout = timeout
        self.retry = retry or RetryPolicy(attempts=1)

    async def close(self) -> None:
        await self.channel.close()

    async def __aenter__(self) -> AsyncLeaderboardClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _staleness(self, per_call: int | None) -> int | None:
        return self.freshness.staleness(per_call)

    async def _run(self, op: Op[_T], staleness: int | None = None) -> _T:
        step = _step(op, None)
        while isinstance(step, _Call):
            step = _step(op, await self._send(step, staleness))
        return step.value

    async def _send(self, call: _Call, staleness: int | None = None) -> Any:
        send = getattr(self.stub, call.method)
        codes = call.retry_codes(self.retry)
        fresh = self.freshness.metadata(call, staleness)
        metadata = (*(self._metadata or ()), *fresh) or None
        tries = 0
        while True:
            tries += 1
            try:
                rpc = send(call.request, timeout=call.timeout or self.timeout, metadata=metadata)
                response = await rpc
                if call.method in _SCORE_WRITES:
                    self.freshness.note(await rpc.trailing_metadata())
                return response
            except grpc.RpcError as exc:
                if not self.retry.again(exc, codes, tries):
                    raise error_from_rpc(exc) from None
            await asyncio.sleep(self.retry.backoff(tries))

    create_index = _awaiting(_Ops.create_index)
    list_indexes = _awaiting(_Ops.list_indexes)
    drop_index = _awaiting(_Ops.drop_index)
    set_maintenance = _awaiting(_Ops.set_maintenance)
    set_writes_paused = _awaiting(_Ops.set_writes_paused)
    update_windows = _awaiting(_Ops.update_windows)
    list_windows = _awaiting(_Ops.list_windows)
    save_sub_directory = _awaiting(_Ops.save_sub_directory)
    sub_directories = _awaiting(_Ops.sub_directories)
    groups = _awaiting(_Ops.groups)
    expire = _awaiting(_Ops.expire)
    fill = _awaiting(_Ops.fill)
    trim = _awaiting(_Ops.trim)
    keep_ahead = _awaiting(_Ops.keep_ahead)
    expire_idempotency_keys = _awaiting(_Ops.expire_idempotency_keys)
    verify = _awaiting(_Ops.verify)
    verify_plan = _awaiting(_Ops.verify_plan)

    async def verify_report(
        self,
        index: str,
        max_problems: int = 0,
        timeout: float | None = None,
        progress: Callable[[pb.VerifyResponse], None] | None = None,
        parts: int = 1,
    ) -> pb.VerifyResponse:
        if parts <= 1:
            return await self._run(_Ops.verify_report(index, max_problems, timeout, progress))
        plan = _verify_parts(await self.verify_plan(index, parts, timeout))
        merge = _VerifyMerge(len(plan), max_problems, progress)
        answers = await asyncio.gather(
            *(
                self._run(_Ops.verify_report(index, max_problems, timeout, merge.seen(number), token))
                for number, token in enumerate(plan)
            )
        )
        return merge.merged(answers)

    verify_report.__doc__ = LeaderboardClient.verify_report.__doc__  # (its pieces share this client's channel)

    store_status = _awaiting(_Ops.store_status)
    upgrade_index = _awaiting(_Ops.upgrade_index)
    upgrade_store = _awaiting(_Ops.upgrade_store)
    add_score = _awaiting(_Ops.add_score)
    set_metadata = _awaiting(_Ops.set_metadata)
    metadata = _awaiting(_Ops.metadata)
    add_entries = _awaiting(_Ops.add_entries)
    save_record = _awaiting(_Ops.save_record)
    delete_record = _awaiting(_Ops.delete_record)
    hide_record = _awaiting(_Ops.hide_record)
    restore_record = _awaiting(_Ops.restore_record)
    hidden_records = _awaiting(_Ops.hidden_records)
    score_rules = _awaiting(_Ops.score_rules)
    set_score_rules = _awaiting(_Ops.set_score_rules)
    delete_records = _awaiting(_Ops.delete_records)
    audit_events = _awaiting(_Ops.audit_events)
    audit_retention = _awaiting(_Ops.audit_retention)
    set_audit_retention = _awaiting(_Ops.set_audit_retention)
    expire_audit_events = _awaiting(_Ops.expire_audit_events)
    write_batch = _awaiting(_Ops.write_batch)
    rank = _awaiting(_Ops.rank)
    rank_and_entry = _awaiting(_Ops.rank_and_entry)
    around = _awaiting(_Ops.around)
    top = _awaiting(_Ops.top)
    count = _awaiting(_Ops.count)
    score_for_rank = _awaiting(_Ops.score_for_rank)
    rank_for_score = _awaiting(_Ops.rank_for_score)
    score_trim = _awaiting(_Ops.score_trim)
    ranks = _awaiting(_Ops.ranks)
    friends_board = _awaiting(_Ops.friends_board)
    page = _awaiting(_Ops.page)
    cohort = _awaiting(_Ops.cohort)
    percentile = _awaiting(_Ops.percentile)
    score_for_percentile = _awaiting(_Ops.score_for_percentile)
    movement = _awaiting(_Ops.movement)
    rank_history = _awaiting(_Ops.rank_history)
    scan = _awaiting(_Ops.scan)
    add_webhook = _awaiting(_Ops.add_webhook)
    webhooks = _awaiting(_Ops.webhooks)
    delete_webhook = _awaiting(_Ops.delete_webhook)
    notice_window_ends = _awaiting(_Ops.notice_window_ends)

    async def all_groups(self, index: str, window_type: int = 0, timestamp: int | None = None) -> AsyncIterator[tuple]:
        """Every group holding a value in the window, following continuations page by page (``async for``)."""
        continuation = b""
        while True:
            groups, continuation = await self.groups(index, window_type, timestamp, continuation=continuation)
            for group in groups:
                yield group
            if not continuation:
                return

    async def scan_all(
        self, index: str, scan_type: str = "BY_RANK", page: int = 100, **kwargs: Any
    ) -> AsyncIterator[RankedEntry]:
        """Every entry of a scan, following continuations page by page (``async for``)."""
        continuation = b""
        while True:
            entries, continuation = await self.scan(index, scan_type, limit=page, continuation=continuation, **kwargs)
            for entry in entries:
                yield entry
            if not continuation:
                return

    def watch_rank(
        self,
        index: str,
        pk: Key,
        window_type: int = 0,
        timestamp: int | None = None,
        group: Key = (),
        mode: str = "ORDINAL",
        timeout: float | None = None,
    ) -> AsyncWatch[RankedEntry | None]:
        """As :meth:`LeaderboardClient.watch_rank`: ``async with lb.watch_rank(...) as watch:
        async for entry in watch`` (or ``async for`` on it directly)."""
        request = _rank_request(index, pk, window_type, timestamp, group, mode)
        call = self.stub.WatchRank(request, timeout=timeout, metadata=self._metadata)
        return AsyncWatch(call, lambda response: wire.optional_entry(response, "entry"))

    def watch_window_ends(
        self, index: str, after: int | None = None, top: int | None = None, timeout: float | None = None
    ) -> AsyncWatch[wire.WindowEnd]:
        """As :meth:`LeaderboardClient.watch_window_ends`, with ``async with`` and ``async for``."""
        call = self.stub.WatchWindowEnds(
            _window_ends_request(index, after, top), timeout=timeout, metadata=self._metadata
        )
        return AsyncWatch(call, wire.window_end_from_proto)

    async def bulk_load(
        self,
        index: str,
        records: Iterable[tuple[Key, Sequence[tuple]]] | AsyncIterable[tuple[Key, Sequence[tuple]]],
        batch_size: int = 500,
        rank_as_loaded: bool = False,
        progress: Callable[[int], None] | None = None,
        timeout: float | None = None,
        idempotency_key: str | None = None,
    ) -> int:
        """:meth:`LeaderboardClient.bulk_load`; ``records`` may also be an async iterable (sent
        again when cut off if ``__aiter__`` starts over)."""
        key = idempotency_key or new_idempotency_key()
        again = _can_send_again(records)
        tries = 0
        while True:
            tries += 1
            try:
                return await self._load(index, records, batch_size, rank_as_loaded, progress, timeout, key)
            except grpc.RpcError as exc:
                if not again or not self.retry.again(exc, self.retry.write_codes, tries):
                    raise error_from_rpc(exc) from None
            await asyncio.sleep(self.retry.backoff(tries))

    async def _load(
        self,
        index: str,
        records: Iterable[tuple[Key, Sequence[tuple]]] | AsyncIterable[tuple[Key, Sequence[tuple]]],
        batch_size: int,
        rank_as_loaded: bool,
        progress: Callable[[int], None] | None,
        timeout: float | None,
        idempotency_key: str,
    ) -> int:
        """One try of :meth:`bulk_load`."""
        messages = _LoadMessages(index, batch_size, rank_as_loaded, idempotency_key)

        async def requests() -> AsyncIterator[pb.BulkLoadRequest]:
            try:
                if isinstance(records, AsyncIterable):
                    async for record in records:
                        if (full := messages.add(record)) is not None:
                            yield full
                else:
                    for record in records:
                        if (full := messages.add(record)) is not None:
                            yield full
            except Exception as exc:  # end the stream here, as the blocking client does
                messages.failure = exc
            if (last := messages.last()) is not None:
                yield last

        call = self.stub.Load(requests(), timeout=timeout, metadata=self._metadata)
        written = 0
        try:
            async for step in call:
                written = step.records_saved
                if progress:
                    progress(written)
        except asyncio.CancelledError:  # stop the server's load too: what it saved stays saved
            call.cancel()
            raise
        messages.raise_failure(written)
        return written

    # -- dumps, restores, moves ---------------------------------------------------------------

    async def dump(
        self,
        index: str,
        keep_paused: bool = False,
        moved_to: str = "",
        catch_up_seconds: float = 0.0,
        timeout: float | None = None,
    ) -> AsyncIterator[pb.DumpPart]:
        """:meth:`LeaderboardClient.dump`, an async iterator."""
        request = _dump_request(index, keep_paused, moved_to, catch_up_seconds)
        call = self.stub.Dump(iter([request]), timeout=timeout, metadata=self._metadata)
        try:
            async for part in call:
                yield part
        except grpc.RpcError as exc:
            raise error_from_rpc(exc) from None
        finally:
            call.cancel()

    async def restore(
        self, parts: Iterable[pb.DumpPart] | AsyncIterable[pb.DumpPart], index: str = "", timeout: float | None = None
    ) -> AsyncIterator[pb.RestoreProgress]:
        """:meth:`LeaderboardClient.restore`, an async iterator; ``parts`` may be an async iterable."""

        async def requests() -> AsyncIterator[pb.RestoreRequest]:
            number = 0
            if isinstance(parts, AsyncIterable):
                async for part in parts:
                    yield _restore_request(number, part, index)
                    number += 1
            else:
                for number, part in enumerate(parts):
                    yield _restore_request(number, part, index)

        call = self.stub.Restore(requests(), timeout=timeout, metadata=self._metadata)
        try:
            async for step in call:
                yield step
        except grpc.RpcError as exc:
            raise error_from_rpc(exc) from None
        finally:
            call.cancel()

    async def move(
        self,
        index: str,
        target: AsyncLeaderboardClient,
        target_index: str = "",
        moved_to: str = "",
        catch_up_seconds: float = 0.0,
        progress: Callable[[pb.DumpPart | pb.RestoreProgress], None] | None = None,
    ) -> tuple[pb.DumpEnd, pb.RestoreProgress]:
        """:meth:`LeaderboardClient.move`, to another asyncio client's server."""
        move = _Move(catch_up_seconds, progress)

        async def parts() -> AsyncIterator[pb.DumpPart]:
            async for part in self.dump(index, True, moved_to, catch_up_seconds):
                yield move.part(part)

        last = pb.RestoreProgress()
        try:
            async for last in target.restore(parts(), target_index or index):
                if move.restored(last):
                    move.pausing()
                    await self.set_writes_paused(index, True, _moved_reason(index, moved_to))
        except BaseException:
            if move.paused:  # take writes here again
                await self.set_writes_paused(index, False)
            raise
        return move.ends[0], last


@dataclasses.dataclass
class Comparison:
    """What :func:`compare_boards` found: differences (empty: the same), windows and entries compared."""

    differences: list[str]
    windows: int
    entries: int


def compare_boards(
    first: LeaderboardClient, first_index: str, second: LeaderboardClient, second_index: str, page: int = 500
) -> Comparison:
    """Compare two indexes window by window: the same windows, and in each the same records in the
    same order with the same ranks, scores, times, contexts and metadata (the first difference of
    each window is reported).  For indexes without groups (groups cannot be listed)."""
    for lb, name in ((first, first_index), (second, second_index)):
        info = {i.name: i for i in lb.list_indexes()}.get(name)
        if info is None:
            raise ValueError(f"no index named {name!r}")
        if info.options.group_size:
            raise ValueError(f"index {name!r} has groups: its boards cannot be listed to compare")
    ours = {(w.type, w.start, w.end): w for w in first.list_windows(first_index).windows}
    theirs = {(w.type, w.start, w.end): w for w in second.list_windows(second_index).windows}
    differences = [
        f"window type {key[0]} [{key[1]}, {key[2]}) is only in {first_index if key in ours else second_index}"
        for key in sorted(ours.keys() ^ theirs.keys())
    ]
    entries = 0
    for key in sorted(ours.keys() & theirs.keys()):
        label = "all-time" if key[0] == 0 else f"type {key[0]} [{key[1]}, {key[2]})"
        if ours[key].filling or theirs[key].filling:
            differences.append(f"window {label} is still filling: fill both, then compare")
            continue
        at = {"window_type": key[0], "timestamp": None if key[0] == 0 else key[1]}
        left = first.scan_all(first_index, "BY_TIME_WINDOW", page=page, **at)
        right = second.scan_all(second_index, "BY_TIME_WINDOW", page=page, **at)
        for mine, other in itertools.zip_longest(left, right):
            if mine != other:
                differences.append(f"window {label}: {mine} in {first_index}, {other} in {second_index}")
                break
            entries += 1
    return Comparison(differences, len(ours.keys() & theirs.keys()), entries)


def load_refusal(error: grpc.RpcError) -> tuple[int | None, int | None]:
    """For an error ending a load: (0-based position of the refused record, records saved before it).

    Either is None when the server did not say (e.g. the load failed for another reason).
    """
    found: dict[str, int] = {}
    for key, value in getattr(error, "trailing_metadata", lambda: None)() or ():
        if key in ("refused-record", "records-saved"):
            found[key] = int(value)
    return found.get("refused-record"), found.get("records-saved")


__all__ = [
    "ERRORS",
    "Aborted",
    "AlreadyExists",
    "AsyncLeaderboardClient",
    "CallError",
    "Cancelled",
    "DataLoss",
    "DeadlineExceeded",
    "FailedPrecondition",
    "Internal",
    "InvalidArgument",
    "Key",
    "LeaderboardClient",
    "NotFound",
    "PermissionDenied",
    "ResourceExhausted",
    "RetryPolicy",
    "ScoreOutOfRange",
    "SubmissionLimited",
    "Unauthenticated",
    "Unavailable",
    "error_from_rpc",
    "load_refusal",
    "new_idempotency_key",
    "rank_mode",
]
