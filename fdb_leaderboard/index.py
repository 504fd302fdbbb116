"""The time-windowed leaderboard index: records, windows, and their maintenance.

Every public method runs in one store transaction (``db.run``) unless its docstring says
it works in bounded batches; ``LeaderboardIndex.run(fn)`` composes several operations in
one transaction (``fn(ops)`` receives an :class:`Operations` bound to it).

A write reads the record's head (its value per window and group), the directory and the
group's sub-directory, then changes only the windows whose value changed: for each, one
primary-entry clear/set and one ranked-set remove/add.  Nothing is cached across
transactions except parsed forms of bytes that are re-read (and compared) every time.
"""

from __future__ import annotations

import dataclasses
import random
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple, TypeVar

from . import tuplecodec as tuples
from .aggregation import AGGREGATIONS, Aggregation, Value
from .directory import (
    ALL_TIME,
    INT64_MAX,
    INT64_MIN,
    MAX_WINDOWS,
    Directory,
    Rebuild,
    Window,
    WindowUpdate,
    check_window_type,
    sub_directory_bytes,
    sub_directory_from_bytes,
)
from .errors import AlreadyExists, FailedPrecondition, InvalidArgument, NotFound
from .layout import IndexLayout, decode_latest_timestamp, encode_latest_timestamp, extensions_end
from .proto import index_pb2
from .rankedset import HashFunction, RankedSet
from .scans import IfAbsent, RankedEntry, RankMode, Reader, ScanPage, ScanType, WindowRef
from .store.api import MAX_VALUE_SIZE, Database, ReadView, Transaction, strinc
from .values import SCORE_TYPES, check_at_least, check_items, check_pk, check_timestamp, negate, normalize_score

T = TypeVar("T")

MAX_INDEX_KEY = 500  # every index key fits both backends (LMDB's limit is 511 bytes)
MAX_DIRECTORY_BYTES = 90_000  # the directory is one value: FoundationDB allows 100,000


@dataclasses.dataclass(frozen=True)
class IndexSettings:
    """Options fixed when an index is created."""

    aggregation: str = "BEST"
    hash_function: HashFunction = HashFunction.MURMUR3
    count_duplicates: bool = True
    group_size: int = 0
    context_size: int = 0
    high_score_first: bool = False
    score_type: str = "INT"

    def __post_init__(self) -> None:
        if self.aggregation not in AGGREGATIONS:
            raise InvalidArgument(f"aggregation must be one of {sorted(AGGREGATIONS)}, not {self.aggregation!r}")
        if self.score_type not in SCORE_TYPES:
            raise InvalidArgument(f"score_type must be one of {', '.join(SCORE_TYPES)}, not {self.score_type!r}")
        if self.aggregation == "SUM" and self.score_type != "INT":
            raise InvalidArgument("a SUM index adds scores exactly: it needs score_type INT")
        if not isinstance(self.hash_function, HashFunction):
            raise InvalidArgument(f"hash_function must be a HashFunction, not {self.hash_function!r}")
        for name in ("group_size", "context_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 8:
                raise InvalidArgument(f"{name} must be an integer between 0 and 8, not {value!r}")

    def to_proto(self, trimmed_before: int | None = None) -> index_pb2.IndexOptions:
        message = index_pb2.IndexOptions(
            aggregation=index_pb2.Aggregation.Value(self.aggregation),
            hash_function=index_pb2.RankHash.Value(self.hash_function.value),
            count_duplicates=self.count_duplicates,
            group_size=self.group_size,
            context_size=self.context_size,
            high_score_first=self.high_score_first,
            score_type=index_pb2.ScoreType.Value(self.score_type),
        )
        if trimmed_before is not None:
            message.trimmed_before = trimmed_before
        return message

    @classmethod
    def from_proto(cls, message: index_pb2.IndexOptions) -> IndexSettings:
        return cls(
            aggregation=index_pb2.Aggregation.Name(message.aggregation),
            hash_function=HashFunction(index_pb2.RankHash.Name(message.hash_function)),
            count_duplicates=message.count_duplicates,
            group_size=message.group_size,
            context_size=message.context_size,
            high_score_first=message.high_score_first,
            score_type=index_pb2.ScoreType.Name(message.score_type),
        )


@dataclasses.dataclass(frozen=True)
class Entry:
    """One timestamped score of a record."""

    score: int | float
    timestamp: int
    context: tuple = ()
    group: tuple = ()


class _CheckedEntry(NamedTuple):
    """An entry after validation, with what indexing it needs (a tuple: built per entry written)."""

    score: int | float
    timestamp: int
    context: tuple
    group: tuple
    group_bytes: bytes
    element: bytes


@dataclasses.dataclass(frozen=True)
class WindowUpdateResult:
    changed: bool
    added: tuple[Window, ...]
    deleted: tuple[Window, ...]
    filling: tuple[Window, ...]


@dataclasses.dataclass(frozen=True)
class FillProgress:
    """Where filling stands after one step.

    ``windows`` lists the windows being filled at the start of the step, each with the record
    key its first phase reached (None once every record is in its primary B-tree);
    ``entries_ranked`` counts the primary entries the second phase put into ranked sets.
    """

    done: bool
    records_processed: int
    windows: tuple[tuple[Window, bytes | None], ...]
    entries_ranked: int = 0


# -- per-transaction state -------------------------------------------------------------------


class Operations:
    """The index's operations inside one transaction ``tr``."""

    def __init__(self, index: LeaderboardIndex, tr: Any) -> None:
        self.index = index
        self.tr = tr
        self.layout = index.layout
        self._directory: Directory | bool | None = False  # False: not read yet
        self._hsf: dict[bytes, bool] = {}
        self._packers: dict[bytes, Callable[[int | float, int, tuple], bytes]] = {}
        self._cursors: dict[int, bytes | None] = {}
        self._latest_noted: int | None = None  # the largest timestamp this transaction MAXed in

    # -- reading the index's state -------------------------------------------------------

    def directory(self) -> Directory | None:
        if self._directory is False:
            self._directory = self.index._parse_directory(self.tr.get(self.layout.directory_key))
        return self._directory  # type: ignore[return-value]

    def default_high_score_first(self) -> bool:
        directory = self.directory()
        return directory.high_score_first if directory is not None else self.index.settings.high_score_first

    def high_score_first(self, group_bytes: bytes) -> bool:
        hsf = self._hsf.get(group_bytes)
        if hsf is None:
            stored = self.tr.get(self.layout.sub_directory_key(group_bytes)) if group_bytes else None
            hsf = sub_directory_from_bytes(stored) if stored is not None else self.default_high_score_first()
            self._hsf[group_bytes] = hsf
        return hsf

    def directed(self, score: int | float, group_bytes: bytes) -> int | float:
        """``score`` as the group stores it, or a stored score back (negation undoes itself)."""
        return negate(score) if self.high_score_first(group_bytes) else score

    def cursor(self, window: Window) -> index_pb2.FillCursor | None:
        """Where the fill of ``window`` stands; None before its first fill step."""
        if window.lb_key not in self._cursors:
            raw = self.tr.get(self.layout.cursor_key(window.lb_key))
            self._cursors[window.lb_key] = index_pb2.FillCursor.FromString(raw) if raw is not None else None
        return self._cursors[window.lb_key]

    def _save_cursor(self, window: Window, cursor: index_pb2.FillCursor) -> None:
        self.tr.set(self.layout.cursor_key(window.lb_key), cursor.SerializeToString())
        self._cursors[window.lb_key] = cursor

    def _clear_cursor(self, window: Window) -> None:
        self.tr.clear(self.layout.cursor_key(window.lb_key))
        self._cursors.pop(window.lb_key, None)

    def maintains(self, window: Window, pk_nested: bytes) -> bool:
        """Whether writes to this record must keep ``window``'s value (head and primary B-tree) now."""
        if not window.filling:
            return True
        cursor = self.cursor(window)
        if cursor is None:
            return False
        return cursor.records_done or (bool(cursor.records_through) and pk_nested <= cursor.records_through)

    def rank_limit(self, window: Window) -> bytes | None:
        """The last primary key (after the window's prefix) whose element the ranked set holds.

        None when it holds every element (the window is complete); ``b""`` when none yet.
        """
        if not window.filling:
            return None
        cursor = self.cursor(window)
        return cursor.ranked_through if cursor is not None and cursor.records_done else b""

    def _ranked(self, window: Window, group_bytes: bytes, element: bytes, pk_flat: bytes) -> bool:
        limit = self.rank_limit(window)
        return limit is None or (limit != b"" and group_bytes + element + pk_flat <= limit)

    def packer(self, group_bytes: bytes) -> Callable[[int | float, int, tuple], bytes]:
        """The group's element packer (its score direction read once per transaction)."""
        pack = self._packers.get(group_bytes)
        if pack is None:
            if self.high_score_first(group_bytes):
                pack = lambda score, ts, context: tuples.pack((negate(score), ts, *context))  # noqa: E731
            else:
                pack = lambda score, ts, context: tuples.pack((score, ts, *context))  # noqa: E731
            self._packers[group_bytes] = pack
        return pack

    # -- one window's index entries ------------------------------------------------------

    def _primary_key(self, window: Window, group_bytes: bytes, element: bytes, pk_flat: bytes) -> bytes:
        return self.layout.primary + window.key_bytes + group_bytes + element + pk_flat

    def index_add(self, window: Window, group_bytes: bytes, element: bytes, pk_flat: bytes) -> None:
        self.tr.set(self._primary_key(window, group_bytes, element, pk_flat), b"")
        if self._ranked(window, group_bytes, element, pk_flat):
            self.index.ranked_set(window, group_bytes).add(self.tr, element)

    def _shared(self, window: Window, group_bytes: bytes, element: bytes) -> bool:
        """Whether another ranked record holds ``element`` (for sets that keep one per element)."""
        shared = self.layout.primary + window.key_bytes + group_bytes + element
        end = extensions_end(shared)
        limit = self.rank_limit(window)
        if limit is not None:  # while the set is built, only records up to the limit are in it
            end = min(end, self.layout.primary + window.key_bytes + limit + b"\x00")
        return bool(self.tr.get_range(shared, end, 1))

    def index_remove(self, window: Window, group_bytes: bytes, element: bytes, pk_flat: bytes) -> None:
        self.tr.clear(self._primary_key(window, group_bytes, element, pk_flat))
        if not self._ranked(window, group_bytes, element, pk_flat):
            return
        ranked = self.index.ranked_set(window, group_bytes)
        # Records with identical score keys share one element: keep it while one remains.
        if ranked.count_duplicates or not self._shared(window, group_bytes, element):
            ranked.remove(self.tr, element)

    def index_move(self, window: Window, group_bytes: bytes, old: bytes, new: bytes, pk_flat: bytes) -> None:
        """A record's value in a window changes from element ``old`` to ``new``."""
        self.tr.clear(self._primary_key(window, group_bytes, old, pk_flat))
        self.tr.set(self._primary_key(window, group_bytes, new, pk_flat), b"")
        ranked_old = self._ranked(window, group_bytes, old, pk_flat)
        ranked_new = self._ranked(window, group_bytes, new, pk_flat)
        ranked = self.index.ranked_set(window, group_bytes)
        if ranked_old and not ranked.count_duplicates and self._shared(window, group_bytes, old):
            ranked_old = False  # another record keeps `old`
        if ranked_old and ranked_new:
            ranked.move(self.tr, old, new)
        elif ranked_old:
            ranked.remove(self.tr, old)
        elif ranked_new:
            ranked.add(self.tr, new)

    # -- records ---------------------------------------------------------------------------

    def read_head(self, pk_nested: bytes) -> index_pb2.RecordHead | None:
        raw = self.tr.get(self.layout.head_key(pk_nested))
        return index_pb2.RecordHead.FromString(raw) if raw is not None else None

    def _state_value(self, state: index_pb2.WindowState) -> Value:
        """A stored window state as a Value (score and context decoded only for SUM)."""
        if self.index.aggregation.name != "SUM":
            return Value(0, _element_timestamp(state.element), state.seq, (), state.element)
        stored, ts, *context = tuples.unpack(state.element)
        return Value(self.directed(stored, state.group), ts, state.seq, tuple(context), state.element)

    def _check_entry(self, entry: Entry, pk_flat: bytes) -> _CheckedEntry:
        """The validated entry with its packed group and its ranked-set element."""
        if not isinstance(entry, Entry):
            raise InvalidArgument(f"expected an Entry, not {type(entry).__name__}")
        settings = self.index.settings
        score = normalize_score(entry.score, settings.score_type)
        ts = check_timestamp(entry.timestamp)
        if ts == INT64_MAX:
            raise InvalidArgument(f"timestamp {ts} is the all-time window's exclusive end: no window can hold it")
        context = check_items(entry.context, "context")
        group = check_items(entry.group, "group")
        if len(group) != settings.group_size:
            raise InvalidArgument(f"this index groups by {settings.group_size} element(s); got group {group!r}")
        if len(context) != settings.context_size:
            raise InvalidArgument(f"this index takes {settings.context_size} context element(s); got {context!r}")
        group_bytes = tuples.pack(group)
        element = self.packer(group_bytes)(score, ts, context)
        # The longest key this entry can produce: the widest window key, one more byte in case the
        # score is negated later (a direction change), every element byte escaped in a node key.
        widest = 6
        longest = max(
            len(self.layout.primary) + widest + len(group_bytes) + len(element) + 1 + len(pk_flat),
            len(self.layout.secondary) + widest + len(group_bytes) + 4 + 2 * (len(element) + 1),
        )
        if longest > MAX_INDEX_KEY:
            raise InvalidArgument(
                f"primary key, group and context are too large: they make a {longest}-byte index key, "
                f"more than the {MAX_INDEX_KEY} allowed"
            )
        return _CheckedEntry(score, ts, context, group, group_bytes, element)

    def _pk(self, pk: object) -> tuple[tuple, bytes, bytes]:
        pk = check_pk(pk)
        pk_flat = tuples.pack(pk)
        if len(pk_flat) > 200:
            raise InvalidArgument(f"primary key packs to {len(pk_flat)} bytes; at most 200 are allowed")
        return pk, tuples.pack_nested(pk, pk_flat), pk_flat

    def add_entries(self, pk: object, entries: Iterable[Entry]) -> int:
        """Add entries to a record (created if new); returns how many window values changed."""
        pk, pk_nested, pk_flat = self._pk(pk)
        entries = [self._check_entry(entry, pk_flat) for entry in entries]
        head = self.read_head(pk_nested) or index_pb2.RecordHead()
        directory = self.directory()
        aggregation = self.index.aggregation
        states = {(state.lb_key, state.group): state for state in head.windows}
        current: dict[tuple[int, bytes], Value] = {}
        seq = head.next_seq
        for entry in entries:
            self.tr.set(
                self.layout.entry_key(pk_nested, entry.timestamp, seq),
                tuples.pack((entry.group, entry.score, entry.context)),
            )
            if directory is not None:
                group_bytes = entry.group_bytes
                value = Value(entry.score, entry.timestamp, seq, entry.context, entry.element)
                for window in directory.containing(entry.timestamp):
                    if not self.maintains(window, pk_nested):
                        continue
                    key = (window.lb_key, group_bytes)
                    before = current.get(key)
                    if before is None and key in states:
                        before = self._state_value(states[key])
                    after = aggregation.add(before, value, self.packer(group_bytes))
                    if after is not None:
                        current[key] = after
            seq += 1
        head.next_seq = seq
        self._note_timestamps(entry.timestamp for entry in entries)
        return self._apply(head, states, current, (), pk_nested, pk_flat, directory)

    def save_record(self, pk: object, entries: Iterable[Entry]) -> int:
        """Replace all of a record's entries; returns how many window values changed."""
        pk, pk_nested, pk_flat = self._pk(pk)
        entries = [self._check_entry(entry, pk_flat) for entry in entries]
        old = self.read_head(pk_nested)
        if old is not None:  # a record without a head has no entries
            self.tr.clear_range(*self.layout.entries_range(pk_nested))
        values: list[tuple[bytes, Value]] = []
        for seq, entry in enumerate(entries):
            self.tr.set(
                self.layout.entry_key(pk_nested, entry.timestamp, seq),
                tuples.pack((entry.group, entry.score, entry.context)),
            )
            values.append((entry.group_bytes, Value(entry.score, entry.timestamp, seq, entry.context, entry.element)))
        directory = self.directory()
        head = old or index_pb2.RecordHead()
        head.next_seq = len(entries)
        del head.carried[:]  # the record starts over: nothing folded by a trim remains
        states = {(state.lb_key, state.group): state for state in head.windows}
        computed = self._fold(values, directory, pk_nested, carried={}) if directory is not None else {}
        gone = [
            key
            for key in states
            if key not in computed
            and (window := directory.by_key(key[0]) if directory is not None else None) is not None
            and self.maintains(window, pk_nested)
        ]
        self._note_timestamps(entry.timestamp for entry in entries)
        return self._apply(head, states, computed, gone, pk_nested, pk_flat, directory)

    def delete_record(self, pk: object) -> bool:
        """Remove a record and its value from every window; False if there was none."""
        pk, pk_nested, pk_flat = self._pk(pk)
        head = self.read_head(pk_nested)
        if head is None:
            return False
        directory = self.directory()
        for state in head.windows:
            window = directory.by_key(state.lb_key) if directory is not None else None
            if window is not None and self.maintains(window, pk_nested):
                self.index_remove(window, state.group, state.element, pk_flat)
        self.tr.clear(self.layout.head_key(pk_nested))
        self.tr.clear_range(*self.layout.entries_range(pk_nested))
        return True

    def _apply(
        self,
        head: index_pb2.RecordHead,
        states: dict[tuple[int, bytes], index_pb2.WindowState],
        changes: dict[tuple[int, bytes], Value],
        gone: Sequence[tuple[int, bytes]],
        pk_nested: bytes,
        pk_flat: bytes,
        directory: Directory | None,
    ) -> int:
        """Move the record's changed window values in the index and write its head.

        ``changes`` maps (window key, group) to the new value, ``gone`` lists those whose value
        disappears.  Returns how many values were added, moved or removed.
        """
        changed = 0
        for key in gone:
            self.index_remove(directory.by_key(key[0]), key[1], states.pop(key).element, pk_flat)  # type: ignore[union-attr,arg-type]
            changed += 1
        for key, value in changes.items():
            old = states.get(key)
            if old is None:
                self.index_add(directory.by_key(key[0]), key[1], value.element, pk_flat)  # type: ignore[union-attr,arg-type]
                changed += 1
            elif old.element != value.element:
                self.index_move(directory.by_key(key[0]), key[1], old.element, value.element, pk_flat)  # type: ignore[union-attr,arg-type]
                changed += 1
        kept = [  # values of deleted windows go; changed ones are written anew
            state
            for key, state in states.items()
            if key not in changes and directory is not None and directory.by_key(key[0]) is not None
        ]
        self._write_head(head, kept, changes, pk_nested)
        return changed

    def _write_head(
        self,
        head: index_pb2.RecordHead,
        kept: Sequence[index_pb2.WindowState],
        values: dict[tuple[int, bytes], Value],
        pk_nested: bytes,
    ) -> None:
        """Write ``head`` with the window states ``kept`` (taken from it) and those of ``values``."""
        del head.windows[:]
        head.windows.extend(kept)
        # New states are filled in the messages the field adds: building each WindowState apart
        # and copying it in took 1.3-1.8x as long (four states, head serialized included).
        add = head.windows.add
        for (lb_key, group), value in values.items():
            add(lb_key=lb_key, group=group, element=value.element, seq=value.seq)
        self.tr.set(self.layout.head_key(pk_nested), _head_bytes(head))

    def _note_timestamps(self, timestamps: Iterable[int]) -> None:
        latest = max(timestamps, default=None)
        # A MAX at or below one this transaction already made changes nothing: skip it (a batch
        # of records then makes a few MAX writes, not one per record).
        if latest is not None and (self._latest_noted is None or latest > self._latest_noted):
            self.tr.max(self.layout.latest_timestamp_key, encode_latest_timestamp(latest))
            self._latest_noted = latest

    def latest_timestamp(self) -> int | None:
        raw = self.tr.get(self.layout.latest_timestamp_key)
        return decode_latest_timestamp(raw) if raw is not None else None

    def read_entries(
        self, pk_nested: bytes, start: int = INT64_MIN, end: int | None = None
    ) -> list[tuple[int, int, Any]]:
        """A record's entries with ``start <= ts < end`` as (ts, seq, (group, score, context))."""
        low, high = self.layout.entries_range(pk_nested)
        prefix = low[:-1]
        if start > INT64_MIN:
            low = prefix + tuples.pack((start,))
        if end is not None and end <= INT64_MAX:
            high = prefix + tuples.pack((end,))
        out = []
        for key, value in self.tr.get_range(low, high):
            ts, seq = tuples.unpack(key[len(prefix) :])
            out.append((ts, seq, tuples.unpack(value)))
        return out

    def _fold(
        self,
        values: Sequence[tuple[bytes, Value]],
        directory: Directory,
        pk_nested: bytes,
        carried: dict[bytes, Value],
        only: Sequence[Window] | None = None,
    ) -> dict[tuple[int, bytes], Value]:
        """Each (window, group) value from scratch, for maintained windows (or ``only`` those)."""
        buckets: dict[tuple[int, bytes], list[Value]] = {}
        wanted = {window.lb_key for window in only} if only is not None else None
        for group_bytes, value in values:
            for window in directory.containing(value.ts):
                if wanted is not None:
                    if window.lb_key not in wanted:
                        continue
                elif not self.maintains(window, pk_nested):
                    continue
                buckets.setdefault((window.lb_key, group_bytes), []).append(value)
        for window in directory.of_type(ALL_TIME):
            if (wanted is None and not self.maintains(window, pk_nested)) or (
                wanted is not None and window.lb_key not in wanted
            ):
                continue
            for group_bytes in carried:
                buckets.setdefault((window.lb_key, group_bytes), [])
        out = {}
        aggregation = self.index.aggregation
        for (lb_key, group_bytes), bucket in buckets.items():
            window = directory.by_key(lb_key)
            extra = carried.get(group_bytes) if window is not None and window.type == ALL_TIME else None
            if len(bucket) == 1 and extra is None:
                value = bucket[0]  # every aggregation folds one entry to itself (loads take this way)
            else:
                bucket.sort(key=lambda value: (value.ts, value.seq))
                value = aggregation.fold(bucket, self.packer(group_bytes), extra)
            if value is not None:
                out[(lb_key, group_bytes)] = value
        return out

    # -- sub-directories -------------------------------------------------------------------

    def save_sub_directory(self, group: object, high_score_first: bool) -> None:
        group = check_items(group, "group")
        if len(group) != self.index.settings.group_size or not group:
            raise InvalidArgument(
                f"a sub-directory needs a group of {self.index.settings.group_size} element(s), not {group!r}"
            )
        group_bytes = tuples.pack(group)
        directory = self.directory()
        if directory is not None:
            for window in directory.windows:
                # Primary entries, not ranked-set nodes: an emptied group keeps its sentinels.
                prefix = self.layout.window_primary(window.key_bytes) + group_bytes
                if self.tr.get_range(prefix, extensions_end(prefix), 1):
                    current = self.high_score_first(group_bytes)
                    if current == high_score_first:
                        break
                    raise FailedPrecondition(
                        f"group {group!r} already has scores in {window.describe()}: "
                        "its high_score_first can only be set before it has scores"
                    )
        self.tr.set(self.layout.sub_directory_key(group_bytes), sub_directory_bytes(high_score_first))
        self._hsf[group_bytes] = high_score_first
        self._packers.pop(group_bytes, None)

    def sub_directories(self) -> dict[tuple, bool]:
        begin, end = self.layout.sub_directories_range()
        out = {}
        for key, value in self.tr.get_range(begin, end):
            out[tuples.unpack(key[len(self.layout.secondary) :])[1:]] = sub_directory_from_bytes(value)
        return out

    # -- windows -----------------------------------------------------------------------------

    def update_windows(self, update: WindowUpdate) -> WindowUpdateResult:
        """Apply a window-update specification (see :class:`WindowUpdate`)."""
        try:
            requested = update.requested_windows()
        except (TypeError, ValueError) as exc:
            raise InvalidArgument(str(exc)) from None
        if not isinstance(update.rebuild, Rebuild):
            raise InvalidArgument(f"rebuild must be a Rebuild policy, not {update.rebuild!r}")
        old = self.directory()
        rebuild_all = update.rebuild is Rebuild.ALWAYS
        changed = old is None
        if old is None:
            old = Directory(update.update_timestamp, update.high_score_first, 0, ())
        elif old.high_score_first != bool(update.high_score_first):
            if update.rebuild is Rebuild.NEVER:
                raise FailedPrecondition("changing high_score_first needs a rebuild of every window (rebuild=NEVER)")
            rebuild_all = changed = True
        windows: list[Window] = []
        deleted: list[Window] = []
        for window in old.windows:
            if update.delete_before is not None and window.type != ALL_TIME and window.end <= update.delete_before:
                deleted.append(window)
            else:
                windows.append(window)
        next_key = old.next_key
        added: list[Window] = []
        present = {(w.type, w.start, w.end) for w in windows}

        def add(window_type: int, start: int, end: int) -> None:
            nonlocal next_key
            if (window_type, start, end) in present:
                return
            present.add((window_type, start, end))
            window = Window(window_type, start, end, next_key, update.nlevels)
            next_key += 1
            windows.append(window)
            added.append(window)

        if update.all_time and not any(window.type == ALL_TIME for window in windows):
            add(ALL_TIME, INT64_MIN, INT64_MAX)
        for window_type, start, end in requested:
            add(window_type, start, end)
        trimmed_before = self.index.trimmed_before(self.tr)
        latest = self.latest_timestamp()
        refill = list(added)
        if rebuild_all:
            refill.extend(window for window in windows if window not in added)
        filling: list[Window] = []
        # After a trim, every existing window's value entries are still stored, so refills
        # are exact, except a BEST index flipping high_score_first (other entries win then).
        flips_best = rebuild_all and old.high_score_first != bool(update.high_score_first)
        flips_best = flips_best and self.index.aggregation.name == "BEST"
        for window in refill:
            inexact = window in added or flips_best
            if inexact and trimmed_before is not None and window.start < trimmed_before:
                raise FailedPrecondition(
                    f"{window.describe()} starts before {trimmed_before}, where entries were trimmed: "
                    "it cannot be filled exactly"
                )
            if latest is None or window.start > latest:
                continue  # no stored entry can fall in it: complete as it is
            if update.rebuild is Rebuild.NEVER:
                raise FailedPrecondition(
                    f"{window.describe()} overlaps stored scores and must be filled, but rebuild=NEVER"
                )
            filling.append(window)
        for window in deleted:
            self._clear_window(window)
        refilled = {window.lb_key for window in filling}
        final = []
        for window in windows:
            if window.lb_key in refilled:
                if window not in added:
                    self._clear_window(window)
                window = dataclasses.replace(window, filling=True)
            final.append(window)
        changed = changed or bool(added or deleted or filling)
        directory = Directory(update.update_timestamp, bool(update.high_score_first), next_key, final)
        if changed:
            self._save_directory(directory)
        return WindowUpdateResult(changed, tuple(added), tuple(deleted), tuple(w for w in final if w.filling))

    def _clear_window(self, window: Window) -> None:
        for begin, end in self.layout.window_ranges(window.key_bytes):
            self.tr.clear_range(begin, end)
        self._clear_cursor(window)

    def _save_directory(self, directory: Directory) -> None:
        data = directory.to_bytes()
        if len(data) > MAX_DIRECTORY_BYTES:
            raise InvalidArgument(
                f"the directory would hold {len(directory.windows)} windows ({len(data)} bytes, more than "
                f"{MAX_DIRECTORY_BYTES}); expire old windows first"
            )
        self.tr.set(self.layout.directory_key, data)
        self._directory = directory

    def _save_filling(self, directory: Directory, lb_keys: set[int], filling: bool) -> None:
        """Save ``directory`` with the windows of ``lb_keys`` marked filling (or complete)."""
        windows = [dataclasses.replace(w, filling=filling) if w.lb_key in lb_keys else w for w in directory.windows]
        self._save_directory(directory.replace(windows=windows))

    def defer_ranks_of_empty_windows(self) -> tuple[Window, ...]:
        """Mark complete windows holding no value as filling with every record done (phase 2).

        Writes then keep their primary B-trees for every record and leave their ranked sets
        to be built in key order by the fill.  Returns the windows marked.
        """
        directory = self.directory()
        if directory is None:
            return ()
        empty = []
        for window in directory.windows:
            prefix = self.layout.window_primary(window.key_bytes)
            if not window.filling and not self.tr.get_range(prefix, strinc(prefix), 1):
                empty.append(window)
        if not empty:
            return ()
        for window in empty:
            self._save_cursor(window, index_pb2.FillCursor(records_done=True))
        self._save_filling(directory, {window.lb_key for window in empty}, True)
        return tuple(empty)

    def expire(self, before: int) -> tuple[Window, ...]:
        """Delete every window (but all-time) that ends at or before ``before``, with its data."""
        before = check_timestamp(before)
        directory = self.directory()
        if directory is None:
            return ()
        gone = [w for w in directory.windows if w.type != ALL_TIME and w.end <= before]
        if not gone:
            return ()
        for window in gone:
            self._clear_window(window)
        keep = [w for w in directory.windows if w not in gone]
        self._save_directory(directory.replace(windows=keep))
        return tuple(gone)

    def fill_step(self, max_records: int, max_entries: int) -> FillProgress:
        """Fill the windows being filled a bounded amount; one transaction.

        Phase 1 puts the values of up to ``max_records`` records (at most about ``max_entries``
        entries read) into the primary B-tree of every window still in it.  Once every record
        is done, phase 2 builds each window's ranked sets from its primary B-tree in key order,
        up to the rest of ``max_entries`` primary entries per step; the window is then complete.
        """
        check_at_least(max_records, 1, "max_records")
        check_at_least(max_entries, 1, "max_entries")
        directory = self.directory()
        filling = directory.filling() if directory is not None else []
        if not filling:
            return FillProgress(True, 0, ())
        cursors = {window.lb_key: self.cursor(window) or index_pb2.FillCursor() for window in filling}
        loading = [window for window in filling if not cursors[window.lb_key].records_done]
        processed = entries_read = 0
        reached: bytes | None = None
        if loading:
            processed, entries_read, reached = self._fill_records(loading, cursors, max_records, max_entries)
            for window in loading:
                cursor = cursors[window.lb_key]
                if reached is None:
                    cursor.records_done = True
                elif not cursor.records_through or reached > cursor.records_through:
                    cursor.records_through = reached
                self._save_cursor(window, cursor)
        budget = max_entries - entries_read
        ranked = 0
        complete = set()
        if reached is None:
            for window in filling:
                if budget <= 0:
                    break
                count, finished = self._rank_from_primary(window, cursors[window.lb_key], budget)
                ranked += count
                budget -= count
                if finished:
                    complete.add(window.lb_key)
                    self._clear_cursor(window)
        if complete:
            self._save_filling(directory, complete, False)  # type: ignore[arg-type]
        windows = tuple((window, None if cursors[window.lb_key].records_done else reached) for window in filling)
        return FillProgress(len(complete) == len(filling), processed, windows, ranked)

    def _fill_records(
        self, windows: Sequence[Window], cursors: dict[int, index_pb2.FillCursor], max_records: int, max_entries: int
    ) -> tuple[int, int, bytes | None]:
        """Phase 1 for ``windows``: (records processed, entries read, last record key or None if all done)."""
        directory = self.directory()
        positions = [cursors[window.lb_key].records_through for window in windows]
        begin_cursor = min(positions) if all(positions) else None
        records = self.layout.records
        begin = records + begin_cursor + b"\x00" if begin_cursor is not None else records
        rows = self.tr.get_range(begin, strinc(records), max_records)
        entries_read = processed = 0
        last: bytes | None = None
        for key, raw in rows:
            pk_nested = key[len(records) :]
            pending = [w for w, at in zip(windows, positions, strict=True) if not at or pk_nested > at]
            head = index_pb2.RecordHead.FromString(raw)
            entries_read += self._fill_record(pk_nested, head, pending, directory)  # type: ignore[arg-type]
            processed += 1
            last = pk_nested
            if entries_read >= max_entries:
                break
        if processed == len(rows) and len(rows) < max_records:
            return processed, entries_read, None
        return processed, entries_read, last

    def _rank_from_primary(self, window: Window, cursor: index_pb2.FillCursor, budget: int) -> tuple[int, bool]:
        """Phase 2: append up to ``budget`` primary entries to the ranked sets; (entries, finished)."""
        prefix = self.layout.window_primary(window.key_bytes)
        begin = prefix + cursor.ranked_through + b"\x00" if cursor.ranked_through else prefix
        rows = self.tr.get_range(begin, strinc(prefix), budget)
        group_size = self.index.settings.group_size
        element_end = group_size + 2 + self.index.settings.context_size  # items before the pk
        runs: dict[bytes, list[tuple[bytes, int]]] = {}
        for key, _ in rows:
            ends = tuples.item_ends(key[len(prefix) :], element_end)
            group_end, pk_start = ends[group_size - 1] if group_size else 0, ends[-1]
            group_bytes = key[len(prefix) : len(prefix) + group_end]
            element = key[len(prefix) + group_end : len(prefix) + pk_start]
            run = runs.setdefault(group_bytes, [])
            if run and run[-1][0] == element:
                run[-1] = (element, run[-1][1] + 1)
            else:
                run.append((element, 1))
        for group_bytes, run in runs.items():
            self.index.ranked_set(window, group_bytes).append(self.tr, run)
        finished = len(rows) < budget
        if not finished:
            cursor.ranked_through = rows[-1][0][len(prefix) :]
            self._save_cursor(window, cursor)
        return len(rows), finished

    def _fill_record(
        self, pk_nested: bytes, head: index_pb2.RecordHead, windows: Sequence[Window], directory: Directory
    ) -> int:
        if not windows:
            return 0
        pk_flat = tuples.pack(tuples.unpack(pk_nested)[0])
        start = min(window.start for window in windows)
        end = max(window.end for window in windows)
        rows = self.read_entries(pk_nested, start, end)
        values = []
        for ts, seq, (group, score, context) in rows:
            group_bytes = tuples.pack(group)
            values.append(
                (group_bytes, Value(score, ts, seq, tuple(context), self.packer(group_bytes)(score, ts, context)))
            )
        carried = self._carried(head)
        try:
            computed = self._fold(values, directory, pk_nested, carried, only=windows)
        except InvalidArgument as exc:  # a SUM over entries whose totals in older windows fit
            raise FailedPrecondition(
                f"record {tuples.unpack(pk_nested)[0]!r} cannot be filled into "
                f"{', '.join(window.describe() for window in windows)}: {exc}; delete or rewrite the "
                "record, or remove the window"
            ) from exc
        filled = {window.lb_key for window in windows}
        for key, value in computed.items():
            self.index_add(directory.by_key(key[0]), key[1], value.element, pk_flat)  # type: ignore[arg-type]
        self._write_head(head, [state for state in head.windows if state.lb_key not in filled], computed, pk_nested)
        return len(rows)

    def trim_step(self, before: int, cursor: bytes | None, max_records: int) -> tuple[int, bytes | None]:
        """Trim the records after ``cursor``; returns (entries removed, next cursor or None)."""
        check_at_least(max_records, 1, "max_records")
        directory = self.directory()
        if directory is not None and directory.filling():
            raise FailedPrecondition("windows are being filled from the records: finish the fill before trimming")
        if cursor is None:
            options = index_pb2.IndexOptions.FromString(self.tr.get(self.layout.options_key) or b"")
            if not options.HasField("trimmed_before") or options.trimmed_before < before:
                options.trimmed_before = before
                self.tr.set(self.layout.options_key, options.SerializeToString())
        records = self.layout.records
        begin = records + cursor + b"\x00" if cursor is not None else records
        rows = self.tr.get_range(begin, strinc(records), max_records)
        removed = 0
        for key, raw in rows:
            removed += self._trim_record(key[len(records) :], index_pb2.RecordHead.FromString(raw), before, directory)
        next_cursor = rows[-1][0][len(records) :] if len(rows) == max_records else None
        return removed, next_cursor

    def _trim_record(
        self, pk_nested: bytes, head: index_pb2.RecordHead, before: int, directory: Directory | None
    ) -> int:
        live = [s for s in head.windows if directory is not None and directory.by_key(s.lb_key) is not None]
        if self.index.aggregation.name == "SUM":
            needed: set[tuple[int, int]] = set()
        else:
            needed = {(_element_timestamp(state.element), state.seq) for state in live}
        carried = {c.group: c for c in head.carried}
        totals: dict[bytes, int] = {}  # the carried totals as Python ints: partial sums may leave int64
        doomed = []
        for ts, seq, (group, score, context) in self.read_entries(pk_nested, INT64_MIN, before):
            if self.index.aggregation.name == "SUM":
                windows = directory.containing(ts) if directory is not None else []
                if any(window.type != ALL_TIME for window in windows):
                    continue
                if any(window.type == ALL_TIME for window in windows):
                    group_bytes = tuples.pack(group)
                    fold = carried.get(group_bytes)
                    if fold is None:
                        fold = carried[group_bytes] = index_pb2.CarriedTotal(group=group_bytes, ts=ts, seq=seq)
                    totals[group_bytes] = totals.get(group_bytes, fold.total) + score
                    if (ts, seq) >= (fold.ts, fold.seq):  # entries come in (ts, seq) order
                        fold.ts, fold.seq, fold.context = ts, seq, tuples.pack(tuple(context))
            elif (ts, seq) in needed:
                continue
            doomed.append(self.layout.entry_key(pk_nested, ts, seq))
        if not all(INT64_MIN <= total <= INT64_MAX for total in totals.values()):
            return 0  # a carried total must fit in int64: keep the entries it would replace
        for group_bytes, total in totals.items():
            carried[group_bytes].total = total
        for key in doomed:
            self.tr.clear(key)
        removed = len(doomed)
        if removed or len(live) != len(head.windows):
            del head.windows[:]
            head.windows.extend(live)
            del head.carried[:]
            head.carried.extend(carried.values())
            self.tr.set(self.layout.head_key(pk_nested), _head_bytes(head))
        return removed

    def _carried(self, head: index_pb2.RecordHead) -> dict[bytes, Value]:
        out = {}
        for carried in head.carried:
            context = tuples.unpack(carried.context) if carried.context else ()
            out[carried.group] = Value(carried.total, carried.ts, carried.seq, tuple(context), b"")
        return out


def _element_timestamp(element: bytes) -> int:
    """The timestamp a ranked-set element holds: (stored score, timestamp, context...)."""
    return tuples.unpack_with_offsets(element, 2)[0][1]


def _head_bytes(head: index_pb2.RecordHead) -> bytes:
    data = head.SerializeToString()
    if len(data) > MAX_VALUE_SIZE:
        raise InvalidArgument(
            f"the record is in too many windows and groups ({len(head.windows)}): its head would take "
            f"{len(data)} bytes; expire old windows or trim it"
        )
    return data


def _batches(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """``items`` in lists of ``size`` (the last may be shorter; none is empty)."""
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


class LeaderboardIndex:
    """A time-windowed leaderboard index under key prefix ``prefix`` of store ``db``."""

    def __init__(self, db: Database, prefix: bytes, settings: IndexSettings) -> None:
        self.db = db
        self.prefix = prefix
        self.settings = settings
        self.layout = IndexLayout(prefix)
        self.aggregation: Aggregation = AGGREGATIONS[settings.aggregation]
        self._ranked_sets: OrderedDict[tuple[int, int, bytes], RankedSet] = OrderedDict()
        self._directory_cache: tuple[bytes, Directory] | None = None

    # -- creation ----------------------------------------------------------------------------

    @classmethod
    def create(cls, db: Database, prefix: bytes, settings: IndexSettings | None = None) -> LeaderboardIndex:
        """Create the index (or open it if it exists with the same settings)."""
        settings = settings or IndexSettings()
        layout = IndexLayout(prefix)

        def create(tr: Transaction) -> None:
            stored = tr.get(layout.options_key)
            if stored is not None:
                existing = IndexSettings.from_proto(index_pb2.IndexOptions.FromString(stored))
                if existing != settings:
                    raise AlreadyExists(f"an index exists at {prefix!r} with other settings: {existing}")
                return
            tr.set(layout.options_key, settings.to_proto().SerializeToString())

        db.run(create)
        return cls(db, prefix, settings)

    @classmethod
    def open(cls, db: Database, prefix: bytes) -> LeaderboardIndex:
        stored = db.read(lambda tr: tr.get(IndexLayout(prefix).options_key))
        if stored is None:
            raise NotFound(f"no index at {prefix!r}")
        return cls(db, prefix, IndexSettings.from_proto(index_pb2.IndexOptions.FromString(stored)))

    # -- plumbing ------------------------------------------------------------------------------

    def ranked_set(self, window: Window, group_bytes: bytes) -> RankedSet:
        """The ranked set of one window and group (key derivation only, so cached)."""
        key = (window.lb_key, window.nlevels, group_bytes)
        ranked = self._ranked_sets.get(key)
        if ranked is None:
            ranked = RankedSet(
                self.layout.window_secondary(window.key_bytes) + group_bytes,
                window.nlevels,
                self.settings.hash_function,
                self.settings.count_duplicates,
            )
            self._ranked_sets[key] = ranked
            if len(self._ranked_sets) > 4096:
                self._ranked_sets.popitem(last=False)
        return ranked

    def _parse_directory(self, raw: bytes | None) -> Directory | None:
        """Parse stored directory bytes, reusing the last parse when the bytes are the same."""
        if raw is None:
            return None
        cached = self._directory_cache
        if cached is not None and cached[0] == raw:
            return cached[1]
        directory = Directory.from_bytes(raw)
        self._directory_cache = (raw, directory)
        return directory

    def trimmed_before(self, tr: ReadView) -> int | None:
        options = index_pb2.IndexOptions.FromString(tr.get(self.layout.options_key) or b"")
        return options.trimmed_before if options.HasField("trimmed_before") else None

    def run(self, fn: Callable[[Operations], T]) -> T:
        """Run ``fn(ops)`` in one read-write transaction."""
        return self.db.run(lambda tr: fn(Operations(self, tr)))

    def read(self, fn: Callable[[Operations], T]) -> T:
        return self.db.read(lambda tr: fn(Operations(self, tr)))

    # -- writes -------------------------------------------------------------------------------

    def add_score(self, pk: object, score: int | float, timestamp: int, context: tuple = (), group: tuple = ()) -> int:
        """Add one entry to a record; returns the number of window values that changed."""
        return self.run(lambda ops: ops.add_entries(pk, [Entry(score, timestamp, context, group)]))

    def add_entries(self, pk: object, entries: Sequence[Entry]) -> int:
        return self.run(lambda ops: ops.add_entries(pk, entries))

    def save_record(self, pk: object, entries: Sequence[Entry]) -> int:
        return self.run(lambda ops: ops.save_record(pk, entries))

    def delete_record(self, pk: object) -> bool:
        return self.run(lambda ops: ops.delete_record(pk))

    def write_batch(self, records: Sequence[tuple[object, Sequence[Entry]]], replace: bool = True) -> None:
        """Save (or add to, with ``replace=False``) many records in one transaction."""

        def write(ops: Operations) -> None:
            for pk, entries in records:
                if replace:
                    ops.save_record(pk, entries)
                else:
                    ops.add_entries(pk, entries)

        self.run(write)

    def bulk_load(
        self,
        records: Iterable[tuple[object, Sequence[Entry]]],
        batch_size: int = 500,
        progress: Callable[[int], None] | None = None,
        defer_ranks: bool = True,
    ) -> int:
        """Save records in transactions of ``batch_size``; returns how many were written.

        With ``defer_ranks``, windows that hold no value when the first transaction starts are
        built the way a fill builds a new window: the load writes their primary B-trees only,
        and their ranked sets are then built in key order (appending, about one write per
        entry instead of a skip-list insert per entry).  Until that ends those windows raise
        WindowNotReady on reads, as filling windows do.  If a record is refused (or the store
        fails), the transactions before it stay saved and those windows are still built before
        the error is raised; if the process dies midway, ``fill()`` finishes them.  Windows
        holding values are kept up to date entry by entry, as by any write.
        """
        check_at_least(batch_size, 1, "batch_size")
        deferred = False
        written = 0
        try:
            for batch in _batches(records, batch_size):
                if defer_ranks and not deferred:
                    self.run(lambda ops: ops.defer_ranks_of_empty_windows())
                    deferred = True
                self.write_batch(batch)
                written += len(batch)
                if progress:
                    progress(written)
        finally:  # also after a refused record: the deferred windows must not stay filling
            if deferred:
                self.fill(max_records=batch_size)
        return written

    # -- windows -------------------------------------------------------------------------------

    def update_windows(self, update: WindowUpdate) -> WindowUpdateResult:
        return self.run(lambda ops: ops.update_windows(update))

    def directory(self) -> Directory | None:
        return self.read(lambda ops: ops.directory())

    def save_sub_directory(self, group: tuple, high_score_first: bool) -> None:
        self.run(lambda ops: ops.save_sub_directory(group, high_score_first))

    def sub_directories(self) -> dict[tuple, bool]:
        return self.read(lambda ops: ops.sub_directories())

    def expire(self, before: int) -> tuple[Window, ...]:
        """Delete windows ending at or before ``before``; repeated calls are harmless."""
        return self.run(lambda ops: ops.expire(before))

    def fill_step(self, max_records: int = 200, max_entries: int = 20_000) -> FillProgress:
        return self.run(lambda ops: ops.fill_step(max_records, max_entries))

    def fill(
        self, max_records: int = 200, max_entries: int = 20_000, progress: Callable[[FillProgress], None] | None = None
    ) -> int:
        """Fill every window being filled, batch by batch, until done; returns records processed.

        Each batch is its own transaction and records its position in the store, so an
        interrupted fill resumes where it stopped, from any process.
        """
        total = 0
        while True:
            step = self.fill_step(max_records, max_entries)
            total += step.records_processed
            if progress:
                progress(step)
            if step.done:
                return total

    def keep_ahead(
        self,
        now: int,
        types: Sequence[tuple[int, int, int, int]],
        horizon: int,
        certain_within: int = 0,
        rng: random.Random | None = None,
        nlevels: int | None = None,
    ) -> tuple[Window, ...]:
        """Add the regular windows needed from ``now`` until ``now + horizon``.

        ``types`` lists ``(type, base, increment, duration)``.  A window that has started (or
        starts within ``certain_within``) is always added; a later one with a probability
        falling linearly to 0 at the horizon, so many servers calling this at once rarely
        all write the directory.  Returns the windows added.
        """
        rng = rng or random.Random()
        wanted = plan_ahead(now, types, horizon, certain_within, rng)
        if not wanted:
            return ()

        def add(ops: Operations) -> tuple[Window, ...]:
            directory = ops.directory()
            missing = [w for w in wanted if directory is None or directory.find(*w) is None]
            if not missing:
                return ()
            update = WindowUpdate(
                update_timestamp=now,
                high_score_first=ops.default_high_score_first(),
                all_time=False,
                windows=missing,
                nlevels=nlevels or 6,
            )
            return ops.update_windows(update).added

        return self.run(add)

    # -- reads (see scans.py for the semantics) -------------------------------------------

    def _reader(self, fn: Callable[[Reader], T]) -> T:
        return self.read(lambda ops: fn(Reader(ops)))

    def rank(
        self,
        pk: object,
        window_type: int = ALL_TIME,
        timestamp: int | None = None,
        group: tuple = (),
        mode: RankMode | None = None,
    ) -> int | None:
        """The record's 0-based rank in the window, or None if it has no value there."""
        return self._reader(lambda r: r.rank(pk, WindowRef(window_type, timestamp), group, mode or RankMode.ORDINAL))

    def rank_and_entry(
        self,
        pk: object,
        window_type: int = ALL_TIME,
        timestamp: int | None = None,
        group: tuple = (),
        mode: RankMode | None = None,
    ) -> RankedEntry | None:
        return self._reader(
            lambda r: r.rank_and_entry(pk, WindowRef(window_type, timestamp), group, mode or RankMode.ORDINAL)
        )

    def top(
        self,
        n: int,
        window_type: int = ALL_TIME,
        timestamp: int | None = None,
        group: tuple = (),
        mode: RankMode | None = None,
    ) -> list[RankedEntry]:
        return self._reader(lambda r: r.top(n, WindowRef(window_type, timestamp), group, mode or RankMode.ORDINAL))

    def around(
        self,
        pk: object,
        above: int,
        below: int,
        window_type: int = ALL_TIME,
        timestamp: int | None = None,
        group: tuple = (),
        mode: RankMode | None = None,
        if_absent: IfAbsent | None = None,
    ) -> list[RankedEntry]:
        return self._reader(
            lambda r: r.around(
                pk,
                above,
                below,
                WindowRef(window_type, timestamp),
                group,
                mode or RankMode.ORDINAL,
                if_absent or IfAbsent.EMPTY,
            )
        )

    def count(self, window_type: int = ALL_TIME, timestamp: int | None = None, group: tuple = ()) -> int:
        return self._reader(lambda r: r.count(WindowRef(window_type, timestamp), group))

    def score_for_rank(
        self, rank: int, window_type: int = ALL_TIME, timestamp: int | None = None, group: tuple = ()
    ) -> int | float | None:
        return self._reader(lambda r: r.score_for_rank(rank, WindowRef(window_type, timestamp), group))

    def rank_for_score(
        self, score: int | float, window_type: int = ALL_TIME, timestamp: int | None = None, group: tuple = ()
    ) -> int:
        return self._reader(lambda r: r.rank_for_score(score, WindowRef(window_type, timestamp), group))

    def scan(self, scan_type: ScanType, **kwargs: Any) -> ScanPage:
        """One page of a BY_VALUE, BY_RANK or BY_TIME_WINDOW scan (see ``Reader.scan``)."""
        return self._reader(lambda r: r.scan(scan_type, **kwargs))

    def trim(self, before: int, max_records: int = 200) -> int:
        """Drop entries before ``before`` that no window's value depends on, in batches.

        BEST and LATEST keep every entry that is some window's value; SUM keeps entries in
        any window but all-time and folds the rest into a carried total per group.  Windows
        starting before ``before`` cannot be added afterwards.  Returns entries removed.
        """
        before = check_timestamp(before)
        removed = 0
        cursor: bytes | None = None
        while True:
            count, cursor = self.run(lambda ops, c=cursor: ops.trim_step(before, c, max_records))
            removed += count
            if cursor is None:
                return removed


def check_plan_size(horizon: int, types: Sequence[tuple[int, int, int, int]]) -> None:
    """Refuse a keep-ahead plan that could need more windows than one update may add."""
    if horizon < 0:
        raise InvalidArgument(f"horizon must not be negative, not {horizon}")
    planned = 0
    for window_type, _base, increment, duration in types:
        check_window_type(window_type)
        if increment <= 0 or duration <= 0:
            raise InvalidArgument(f"window type {window_type}: increment and duration must be positive")
        planned += (horizon + duration) // increment + 1
    if planned > MAX_WINDOWS:
        raise InvalidArgument(
            f"keeping windows ahead would need up to {planned} windows, more than the {MAX_WINDOWS} one window "
            "update may add: use a shorter horizon or fewer, longer-spaced windows"
        )


def plan_ahead(
    now: int, types: Sequence[tuple[int, int, int, int]], horizon: int, certain_within: int, rng: random.Random
) -> list[tuple[int, int, int]]:
    """The regular windows :meth:`LeaderboardIndex.keep_ahead` chooses to add now."""
    check_plan_size(horizon, types)
    wanted = []
    for window_type, base, increment, duration in types:
        first = (now - duration - base) // increment + 1  # the first window still open at `now`
        i = max(first, 0) if base <= now else 0
        while True:
            start = base + i * increment
            if start > now + horizon:
                break
            if start + duration > now:
                lead = start - now
                if lead <= certain_within:
                    wanted.append((window_type, start, start + duration))
                else:
                    chance = 1 - (lead - certain_within) / max(horizon - certain_within, 1)
                    if rng.random() < chance:
                        wanted.append((window_type, start, start + duration))
            i += 1
    return wanted
