"""The window directory: which time windows an index maintains, serialized as protobuf.

A window is ``(type, start, end)`` with ``start <= ts < end`` and a key ``lb_key`` that the
directory assigns (``next_key``, never reused); type 0 is the all-time window.  The
directory's bytes are those of the Record Layer's ``TimeWindowLeaderboardDirectory``:
every field set, windows ordered by type, then start, then wider first, then key; int64
timestamps bit-cast into uint64.  A window still being filled carries our extension
field ``filling`` and is not served.

Lookups: :meth:`Directory.containing` (every window holding a timestamp, O(log w + k) per
type through per-type start lists) and :meth:`Directory.oldest` (the window of a type that
scans use: the earliest start, and for equal starts the wider one).
"""

from __future__ import annotations

import bisect
import dataclasses
import enum
import functools
from collections.abc import Iterable, Sequence

from ..errors import InvalidArgument
from ..proto import index_pb2
from ..proto import time_window_leaderboard_pb2 as pb
from ..rankedset import DEFAULT_LEVELS, MAX_LEVELS, MIN_LEVELS
from . import tuplecodec as tuples

ALL_TIME = 0
MAX_DIRECTORY_BYTES = 90_000  # the directory is one value: FoundationDB allows 100,000
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
_UINT64 = (1 << 64) - 1


def _to_wire(value: int) -> int:
    return value & _UINT64


def _from_wire(value: int) -> int:
    return value - (1 << 64) if value > INT64_MAX else value


def check_int64(value: object, name: str) -> int:
    """``value`` as an int64, or InvalidArgument naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(f"{name} must be an integer, not {type(value).__name__}")
    if not INT64_MIN <= value <= INT64_MAX:
        raise InvalidArgument(f"{name} {value} is outside the int64 range")
    return value


@dataclasses.dataclass(frozen=True, order=False)
class Window:
    """One time window of an index."""

    type: int
    start: int
    end: int
    lb_key: int
    nlevels: int = DEFAULT_LEVELS
    filling: bool = False

    @functools.cached_property
    def key_bytes(self) -> bytes:
        """``pack((lb_key,))``: the window's subspace key under the primary and secondary spaces."""
        return tuples.pack((self.lb_key,))

    def contains(self, ts: int) -> bool:
        return self.start <= ts < self.end

    def sort_key(self) -> tuple:
        # The reference's TreeSet order: type, start, wider first, subspace key, nlevels.
        return (self.type, self.start, -self.end, self.lb_key, self.nlevels)

    def describe(self) -> str:
        if self.type == ALL_TIME:
            return "all-time window"
        return f"window type {self.type} [{self.start}, {self.end})"


@dataclasses.dataclass(frozen=True)
class WindowRef:
    """Which board a read uses: the window (type 0 is all-time; another type's window is the oldest
    holding ``timestamp``, or now, the index's clock in its timebase, without one) and the group
    within it (``()``: the whole index)."""

    type: int = ALL_TIME
    timestamp: int | None = None
    group: tuple = ()


class Rebuild(enum.Enum):
    """What a window update refills (the reference's RebuildPolicy, with its defects fixed)."""

    NEVER = "NEVER"  # refuse an update that would need any window filled from stored records
    IF_OVERLAPPING_CHANGED = "IF_OVERLAPPING_CHANGED"  # fill the new windows that overlap stored data
    ALWAYS = "ALWAYS"  # refill every window, keeping their keys


@dataclasses.dataclass(frozen=True)
class WindowSpec:
    """``count`` windows of ``type``: ``[base + i*increment, base + i*increment + duration)``."""

    type: int
    base: int
    increment: int
    duration: int
    count: int

    def windows(self) -> list[tuple[int, int, int]]:
        check_window_type(self.type)
        for name in ("base", "increment", "duration", "count"):
            check_int64(getattr(self, name), name)
        if self.duration <= 0:
            raise InvalidArgument(f"window duration must be positive, not {self.duration}")
        if self.count < 0:
            raise InvalidArgument(f"window count must not be negative, not {self.count}")
        if self.count > MAX_WINDOWS:
            raise InvalidArgument(f"a spec may add at most {MAX_WINDOWS} windows, not {self.count}")
        out = []
        for i in range(self.count):
            start = self.base + i * self.increment
            end = start + self.duration
            out.append((self.type, check_int64(start, "window start"), check_int64(end, "window end")))
        return out


MAX_WINDOWS = 2_500  # about 30 bytes each: keeps the directory under FoundationDB's 100 kB values


def check_window_type(window_type: object, allow_all_time: bool = False) -> int:
    if isinstance(window_type, bool) or not isinstance(window_type, int):
        raise InvalidArgument(f"window type must be an integer, not {type(window_type).__name__}")
    low = 0 if allow_all_time else 1
    if not low <= window_type <= 0xFFFF_FFFF:
        raise InvalidArgument(f"window type must be between {low} and 4294967295, not {window_type}")
    return window_type


def _sequence(value: object, name: str) -> Sequence:
    if not isinstance(value, list | tuple):
        raise InvalidArgument(f"{name} must be a list or tuple, not {type(value).__name__}")
    return value


def check_nlevels(nlevels: object) -> int:
    if isinstance(nlevels, bool) or not isinstance(nlevels, int) or not MIN_LEVELS <= nlevels <= MAX_LEVELS:
        raise InvalidArgument(f"nlevels must be an integer between {MIN_LEVELS} and {MAX_LEVELS}, not {nlevels!r}")
    return nlevels


class Directory:
    """The parsed directory: immutable; changes build a new one (see :meth:`replace`)."""

    __slots__ = (
        "update_timestamp",
        "high_score_first",
        "next_key",
        "windows",
        "rules",
        "filling_windows",
        "_by_type",
        "_by_key",
    )

    def __init__(
        self,
        update_timestamp: int = 0,
        high_score_first: bool = False,
        next_key: int = 0,
        windows: Iterable[Window] = (),
        rules: index_pb2.ScoreRules | None = None,
    ) -> None:
        """``rules``: the index's score rules as stored (None: none; rules.py reads them), kept in
        the directory's bytes."""
        self.update_timestamp = update_timestamp
        self.high_score_first = high_score_first
        self.next_key = next_key
        self.rules = rules
        self.windows: tuple[Window, ...] = tuple(sorted(windows, key=Window.sort_key))
        self.filling_windows = tuple(window for window in self.windows if window.filling)
        by_type: dict[int, tuple[list[int], list[Window], int]] = {}
        for window in self.windows:
            starts, ordered, widest = by_type.setdefault(window.type, ([], [], 0))
            starts.append(window.start)
            ordered.append(window)
            by_type[window.type] = (starts, ordered, max(widest, window.end - window.start))
        self._by_type = by_type
        self._by_key = {window.lb_key: window for window in self.windows}

    # -- lookups -------------------------------------------------------------------------

    def by_key(self, lb_key: int) -> Window | None:
        return self._by_key.get(lb_key)

    def types(self) -> list[int]:
        return sorted(self._by_type)

    def of_type(self, window_type: int) -> list[Window]:
        entry = self._by_type.get(window_type)
        return list(entry[1]) if entry else []

    def containing(self, ts: int) -> list[Window]:
        """Every window (filling or not) with ``start <= ts < end``, in directory order."""
        out = []
        for starts, ordered, widest in self._by_type.values():
            i = bisect.bisect_right(starts, ts)
            lowest = ts - widest
            while i > 0:
                i -= 1
                window = ordered[i]
                if window.start < lowest:
                    break
                if ts < window.end:
                    out.append(window)
        return out

    def oldest(self, window_type: int, ts: int) -> Window | None:
        """The window of ``window_type`` containing ``ts`` with the earliest start (wider on ties)."""
        entry = self._by_type.get(window_type)
        if not entry:
            return None
        for window in entry[1]:
            if window.start > ts:
                return None
            if ts < window.end:
                return window
        return None

    def find(self, window_type: int, start: int, end: int) -> Window | None:
        entry = self._by_type.get(window_type)
        if entry:
            for window in entry[1]:
                if window.start == start and window.end == end:
                    return window
        return None

    def filling(self) -> list[Window]:
        return list(self.filling_windows)

    def replace(self, **changes: object) -> Directory:
        fields = {
            "update_timestamp": self.update_timestamp,
            "high_score_first": self.high_score_first,
            "next_key": self.next_key,
            "windows": self.windows,
            "rules": self.rules,
        }
        fields.update(changes)
        return Directory(**fields)  # type: ignore[arg-type]

    # -- serialization -------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        message = pb.TimeWindowLeaderboardDirectory(
            update_timestamp=_to_wire(self.update_timestamp),
            high_score_first=self.high_score_first,
            next_key=self.next_key,
        )
        for window in self.windows:
            entry = message.leaderboards.add(
                type=window.type,
                start_timestamp=_to_wire(window.start),
                end_timestamp=_to_wire(window.end),
                subspace_key=window.key_bytes,
                nlevels=window.nlevels,
            )
            if window.filling:
                entry.filling = True
        if self.rules is not None:
            message.score_rules.CopyFrom(self.rules)
        return message.SerializeToString(deterministic=True)

    @classmethod
    def from_bytes(cls, data: bytes) -> Directory:
        message = pb.TimeWindowLeaderboardDirectory.FromString(data)
        windows = []
        for entry in message.leaderboards:
            key = tuples.unpack(entry.subspace_key)
            if len(key) != 1 or not isinstance(key[0], int):
                raise ValueError(f"window subspace key {entry.subspace_key!r} is not a packed integer")
            windows.append(
                Window(
                    type=entry.type,
                    start=_from_wire(entry.start_timestamp),
                    end=_from_wire(entry.end_timestamp),
                    lb_key=key[0],
                    nlevels=entry.nlevels if entry.HasField("nlevels") else DEFAULT_LEVELS,
                    filling=entry.filling,
                )
            )
        rules = message.score_rules if message.HasField("score_rules") else None
        return cls(_from_wire(message.update_timestamp), message.high_score_first, message.next_key, windows, rules)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Directory) and self.to_bytes() == other.to_bytes()

    def __repr__(self) -> str:
        return (
            f"Directory(update_timestamp={self.update_timestamp}, high_score_first={self.high_score_first}, "
            f"next_key={self.next_key}, windows={list(self.windows)!r}, rules={self.rules!r})"
        )


def sub_directory_bytes(high_score_first: bool) -> bytes:
    return pb.TimeWindowLeaderboardSubDirectory(high_score_first=high_score_first).SerializeToString()


def sub_directory_from_bytes(data: bytes) -> bool:
    return pb.TimeWindowLeaderboardSubDirectory.FromString(data).high_score_first


@dataclasses.dataclass
class WindowUpdate:
    """A window-update specification (the reference's TimeWindowLeaderboardWindowUpdate).

    ``windows`` adds explicit ``(type, start, end)`` windows, for calendar periods that
    regular specs cannot express.  ``high_score_first`` None keeps the index's direction (or,
    before the first update, the one it was created with); True or False sets it, and a change
    rebuilds every window.  Deletions run before additions; the all-time window is never
    deleted by ``delete_before``, and windows ending by it are not added (applying an update
    twice changes nothing the second time; a spec adding only such windows is refused).
    """

    update_timestamp: int = 0
    high_score_first: bool | None = None
    delete_before: int | None = None
    all_time: bool = True
    specs: Sequence[WindowSpec] = ()
    windows: Sequence[tuple[int, int, int]] = ()
    nlevels: int = DEFAULT_LEVELS
    rebuild: Rebuild = Rebuild.IF_OVERLAPPING_CHANGED

    def requested_windows(self) -> list[tuple[int, int, int]]:
        """Every (type, start, end) the update asks for, validated, in request order."""
        check_int64(self.update_timestamp, "update_timestamp")
        if self.delete_before is not None:
            check_int64(self.delete_before, "delete_before")
        check_nlevels(self.nlevels)
        out: list[tuple[int, int, int]] = []
        for spec in _sequence(self.specs, "specs"):
            if not isinstance(spec, WindowSpec):
                raise InvalidArgument(f"specs must hold WindowSpecs, not a {type(spec).__name__}")
            out.extend(self._surviving(spec.windows(), f"spec {spec}"))
        explicit = []
        for window in _sequence(self.windows, "windows"):
            if not isinstance(window, tuple | list) or len(window) != 3:
                raise InvalidArgument(f"each of windows must be a (type, start, end) tuple, not {window!r:.100}")
            window_type, start, end = window
            check_window_type(window_type)
            check_int64(start, "window start")
            check_int64(end, "window end")
            if end <= start:
                raise InvalidArgument(f"window type {window_type} [{start}, {end}) must end after it starts")
            explicit.append((window_type, start, end))
        out.extend(self._surviving(explicit, "the explicit windows"))
        if len(out) > MAX_WINDOWS:
            raise InvalidArgument(f"a window update may add at most {MAX_WINDOWS} windows, not {len(out)}")
        return out

    def _surviving(self, windows: list[tuple[int, int, int]], what: str) -> list[tuple[int, int, int]]:
        """The ``windows`` that ``delete_before`` leaves; InvalidArgument if it would remove them all.

        Deletions run first, so a window ending by ``delete_before`` is not added: added, it
        would be deleted by the same update applied again and re-added under a new key, and
        applying one update twice must change nothing.
        """
        if self.delete_before is None:
            return windows
        kept = [window for window in windows if window[2] > self.delete_before]
        if windows and not kept:
            raise InvalidArgument(
                f"{what}: every window it adds ends by delete_before {self.delete_before}, "
                "which deletes it: move the windows later or delete_before earlier"
            )
        return kept
