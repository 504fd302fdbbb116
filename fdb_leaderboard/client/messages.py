"""The requests the operations build and the answers they read, shared by both clients: the call an
operation asks for (:class:`UnaryCall`), argument checks, entries, windows and groups.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Generator, Sequence
from typing import Any, ParamSpec, TypeVar

import grpc

from .. import wire
from ..access import ROLE_BY_METHOD, Role
from ..errors import NoWindowsWarning
from ..index import Listing, WindowRef
from ..index.calendar import board_periods, timebase_scale
from ..index.values import check_timestamp
from ..proto import service_pb2 as pb
from .errors import InvalidArgument
from .retry import RetryPolicy, new_idempotency_key

# A window that ended, as window-end events tell it (watch_window_ends).
WindowEnd = wire.WindowEnd
MODES = {"ORDINAL": pb.ORDINAL, "COMPETITION": pb.COMPETITION, "DENSE": pb.DENSE}
# Calls that only read (the read role's): sent again when the server was unavailable.
READS = frozenset(method for method, role in ROLE_BY_METHOD.items() if role is Role.READ)
_UINT32 = 2**32
# A primary key, group or context: a sequence of elements, or one str, bytes or number standing
# for a one-element key ("alice" is ("alice",)).
Key = Sequence[object] | str | bytes | int | float
# A score: an int, a float (DOUBLE indexes), or a tuple or list of ints (indexes ranking by columns).
Score = int | float | Sequence[int]


@dataclasses.dataclass(frozen=True, slots=True)
class UnaryCall:
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
        return policy.read_codes if self.changes_nothing or self.method in READS else frozenset()


_T = TypeVar("_T")
_P = ParamSpec("_P")
# An operation: yields the calls it needs, gets each answer back, returns its result.
Op = Generator[UnaryCall, Any, _T]


def expired_until_done(method: str, request: Any) -> Op[int]:
    """Call an expiry (each call works until done or its deadline) until done; returns the total."""
    expired = 0
    while True:
        response = yield UnaryCall(method, request)
        expired += response.expired
        if response.done:
            return expired


def checked_count(value: object, name: str) -> int:
    """A count or size the protocol carries as uint32, refused as InvalidArgument (naming it) otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < _UINT32:
        raise InvalidArgument(f"{name} must be an integer from 0 to {_UINT32 - 1}, not {value!r}")
    return value


def enum_value(enum_type: Any, name: str, what: str) -> int:
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


def window_selector(window_type: int, timestamp: int | None) -> pb.WindowSelector:
    """The window selector of a window type and a time in it (None: now, the server's clock)."""
    selector = pb.WindowSelector(type=checked_count(window_type, "window_type"))
    if timestamp is not None:
        selector.timestamp = timestamp
    return selector


def board(window_type: int | WindowRef = 0, timestamp: int | None = None, group: Key = ()) -> dict[str, Any]:
    """The fields naming a read's board in its request (``window`` and ``group``), from the
    methods' loose arguments or from one :class:`~fdb_leaderboard.index.WindowRef`."""
    if isinstance(window_type, WindowRef):
        window_type, timestamp, group = window_type.type, window_type.timestamp, window_type.group
    return {"window": window_selector(window_type, timestamp), "group": wire.key_to_proto(group, "group")}


def entry_to_send(score: Score, timestamp: int | None, context: Key = (), group: Key = ()) -> pb.Entry:
    """An entry to write; without ``timestamp``, one made now (the server's clock, in the index's timebase)."""
    entry = pb.Entry(
        score=wire.score_to_proto(score),
        context=wire.key_to_proto(context, "context"),
        group=wire.key_to_proto(group, "group"),
    )
    if timestamp is not None:
        entry.timestamp = check_timestamp(timestamp)
    return entry


def entries_to_send(entries: Sequence[tuple]) -> list[pb.Entry]:
    return [entry_to_send(*entry) for entry in entries]


def record_to_send(pk: Key, entries: Sequence[tuple]) -> pb.RecordEntries:
    return pb.RecordEntries(pk=wire.key_to_proto(pk), entries=entries_to_send(entries))


def windows_written(response: pb.AddScoreResponse | pb.WriteResponse) -> int:
    """The windows a write changed, issuing the server's warning (e.g. no windows yet) if any."""
    if response.warning:
        warnings.warn(response.warning, NoWindowsWarning, stacklevel=6)  # the caller's line, past advance and _run
    return response.windows_changed


def listing_of(response: Any) -> Listing:
    """The entries answered, with the window they were read from (``.window``), as in process."""
    has_window = "window" in response.DESCRIPTOR.fields_by_name and response.HasField("window")
    window = wire.window_from_proto(response.window) if has_window else None
    return Listing([wire.ranked_entry_from_proto(e) for e in response.entries], window)


def keyed_write(method: str, request: Any, idempotency_key: str | None) -> UnaryCall:
    """A write under ``idempotency_key`` (a new one if None), sent again with the same key when
    its outcome is unknown."""
    request.idempotency_key = idempotency_key or new_idempotency_key()
    return UnaryCall(method, request, write=True)


def rank_request(index: str, pk: Key, window_type: int, timestamp: int | None, group: Key, mode: str) -> pb.RankRequest:
    return pb.RankRequest(
        index=index,
        pk=wire.key_to_proto(pk),
        **board(window_type, timestamp, group),
        mode=rank_mode(mode),
    )


def ranks_request(
    index: str, pks: Sequence[Key], window_type: int, timestamp: int | None, group: Key, mode: str
) -> pb.RanksRequest:
    if isinstance(pks, str | bytes):
        raise InvalidArgument("pks is a list of keys, not one key")
    return pb.RanksRequest(
        index=index,
        records=[pb.RecordKey(pk=wire.key_to_proto(pk)) for pk in pks],
        **board(window_type, timestamp, group),
        mode=rank_mode(mode),
    )


def score_of(response: Any) -> Score | None:
    return wire.score_from_proto(response.score) if response.HasField("score") else None


def with_boards(
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
