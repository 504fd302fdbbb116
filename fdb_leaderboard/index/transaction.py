"""The index as one store transaction sees it: the narrow context every concern works in.

:class:`IndexTransaction` reads the index's shared state (directory, score directions,
fill cursors, record heads and entries) at most once per transaction and keeps what it
read for the rest of it.  Writes, window maintenance, fills, trims and reads all take one;
none of them depends on another's class.

An operation that knows what it will need calls :meth:`IndexTransaction.prefetch` first:
the directory, the record heads and the groups' sub-directories are then read together,
one round trip on a network store instead of one each.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from ..errors import InvalidArgument
from ..proto import index_pb2
from ..store.api import Future
from . import tuplecodec as tuples
from .directory import INT64_MAX, INT64_MIN, MAX_DIRECTORY_BYTES, Directory, Window, sub_directory_from_bytes
from .latest import LatestTimestamp
from .rules import NO_RULES, ScoreRules
from .space import IndexSpace
from .values import check_pk

MAX_PK_BYTES = 200

Packer = Callable[[int | float, int, tuple], bytes]


class FillState(NamedTuple):
    """How far the fill of a window got: phase 1 puts records into it, phase 2 ranks them."""

    phase: int
    records_processed: int
    entries_ranked: int
    records_total: int | None  # the index's records (its all-time window's count), when known
    entries_put_in: int = 0  # phase 1's values in the window: what phase 2 ranks

    @property
    def ratio(self) -> float | None:
        """How much of the fill is done, 0 to 1: phase 1 is the first half (records put in, of
        the index's records: None when that total is unknown), phase 2 the second (entries
        ranked, of those phase 1 put in)."""
        if self.phase == 1:
            if self.records_total is None:
                return None
            return 0.5 * min(1.0, self.records_processed / self.records_total) if self.records_total else 0.5
        ranked = min(1.0, self.entries_ranked / self.entries_put_in) if self.entries_put_in else 1.0
        return 0.5 + 0.5 * ranked

    def describe(self) -> str:
        if self.phase == 1:
            total = f" of {self.records_total:,}" if self.records_total is not None else ""
            return f"phase 1 of 2, {self.records_processed:,}{total} records put in"
        total = f" of {self.records_total:,}" if self.records_total is not None else ""
        return f"phase 2 of 2, {self.entries_ranked:,}{total} ranked"


UNREAD = object()  # KnownMetadata.directory before the directory was read


class KnownMetadata:
    """An index's directory and sub-directories as a metadata cache knows them for one transaction
    (``hit``: the transaction reads them from here, and notes in ``served`` the keys it took, whose
    read conflicts the cache's owner declares), or as the transaction read them, for the cache to
    keep (a miss).  Either way what the transaction reads of them at its read version is added,
    and ``changed`` notes that it wrote them (then nothing of it is kept)."""

    __slots__ = ("hit", "directory", "sub_directories", "served", "changed")

    def __init__(
        self, hit: bool = False, directory: object = UNREAD, sub_directories: dict[bytes, bytes | None] | None = None
    ) -> None:
        self.hit = hit
        self.directory = directory  # the directory's stored bytes (None: no directory), or UNREAD
        self.sub_directories = dict(sub_directories or {})  # by group bytes: stored bytes or None
        self.served: list[bytes] = []
        self.changed = False


class RecordKey(NamedTuple):
    """A checked primary key: the tuple, packed as one nested item, and packed flat."""

    pk: tuple
    nested: bytes
    flat: bytes


class IndexTransaction:
    """The index ``space`` inside store transaction ``tr``."""

    def __init__(self, space: IndexSpace, tr: Any) -> None:
        self.space = space
        self.tr = tr
        self.layout = space.layout
        self.settings = space.settings
        self._directory: Directory | bool | None = False  # False: not read yet
        self._rules: tuple[Directory, ScoreRules] | None = None  # the parsed rules of that directory
        self._directory_read: Future[bytes | None] | None = None
        self._heads_read: dict[bytes, Future[bytes | None]] = {}
        self._groups_read: dict[bytes, Future[bytes | None]] = {}
        self._hsf: dict[bytes, bool] = {}
        self._packers: dict[bytes, Packer] = {}
        self._cursors: dict[int, index_pb2.FillCursor | None] = {}
        self.window_read: Window | None = None  # the window a read resolved (listings name it)
        self._now: int | None = None
        self._latest: LatestTimestamp | None = None
        # Windows this transaction's writes build from sorted data (build.py): their values go to
        # ``emitted`` as (window key, group, element, pk flat, hidden), not into the index.
        self.building: frozenset[int] = frozenset()
        self.emitted: list[tuple[int, bytes, bytes, bytes, bool]] = []
        self._built: tuple[Directory, list[Window]] | None = None  # others' builds (note_written)
        self._known: KnownMetadata | None = tr.cached  # a metadata cache's, for this transaction

    # -- reading ahead -----------------------------------------------------------------------

    def prefetch(self, heads: Iterable[bytes] = (), groups: Iterable[bytes] = ()) -> None:
        """Issue now, together, the reads of the directory (unless read), the heads of records
        ``heads`` (nested pks) and the sub-directories of ``groups`` (packed, unless known).
        :meth:`directory`, :meth:`read_head` and :meth:`high_score_first` then wait on them."""
        get = self.tr.get_async
        known = self._known
        if self._directory is False and self._directory_read is None and not (known and known.hit):
            self._directory_read = get(self.layout.directory_key)
        for pk_nested in heads:
            if pk_nested not in self._heads_read:
                self._heads_read[pk_nested] = get(self.layout.head_key(pk_nested))
        for group_bytes in groups:
            if (
                group_bytes
                and group_bytes not in self._hsf
                and group_bytes not in self._groups_read
                and (known is None or group_bytes not in known.sub_directories)
            ):
                self._groups_read[group_bytes] = get(self.layout.sub_directory_key(group_bytes))

    # -- the directory and score directions ------------------------------------------------

    def directory(self) -> Directory | None:
        if self._directory is False:
            known = self._known
            if known is not None and known.hit and known.directory is not UNREAD:
                raw = known.directory
                known.served.append(self.layout.directory_key)
            else:
                read, self._directory_read = self._directory_read, None
                raw = read.value if read is not None else self.tr.get(self.layout.directory_key)
                if known is not None:
                    known.directory = raw
            self._directory = self.space.parse_directory(raw)  # type: ignore[arg-type]
        return self._directory  # type: ignore[return-value]

    def save_directory(self, directory: Directory) -> None:
        data = directory.to_bytes()
        if len(data) > MAX_DIRECTORY_BYTES:
            raise InvalidArgument(
                f"the directory would hold {len(directory.windows)} windows ({len(data)} bytes, more than "
                f"{MAX_DIRECTORY_BYTES}); expire old windows first"
            )
        self.tr.set(self.layout.directory_key, data)
        self.changed_metadata()
        self._directory = directory

    def changed_metadata(self) -> None:
        """This transaction writes the directory or a sub-directory: metadata caches must know."""
        self.tr.changed_metadata()
        if self._known is not None:
            self._known.changed = True

    def rules(self) -> ScoreRules:
        """The index's score rules (kept in the directory), parsed once per directory read."""
        directory = self.directory()
        if directory is None or directory.rules is None:
            return NO_RULES
        if self._rules is None or self._rules[0] is not directory:
            self._rules = (directory, ScoreRules.from_proto(directory.rules))
        return self._rules[1]

    def default_high_score_first(self) -> bool:
        directory = self.directory()
        return directory.high_score_first if directory is not None else self.settings.high_score_first

    def high_score_first(self, group_bytes: bytes) -> bool:
        hsf = self._hsf.get(group_bytes)
        if hsf is None:
            stored = None
            if group_bytes:
                known = self._known
                key = self.layout.sub_directory_key(group_bytes)
                if known is not None and group_bytes in known.sub_directories:
                    stored = known.sub_directories[group_bytes]
                    known.served.append(key)
                else:
                    read = self._groups_read.pop(group_bytes, None)
                    stored = read.value if read is not None else self.tr.get(key)
                    if known is not None:
                        known.sub_directories[group_bytes] = stored
            hsf = sub_directory_from_bytes(stored) if stored is not None else self.default_high_score_first()
            self._hsf[group_bytes] = hsf
        return hsf

    def set_high_score_first(self, group_bytes: bytes, high_score_first: bool) -> None:
        """Note a group's new direction (its sub-directory was just written)."""
        self._hsf[group_bytes] = high_score_first
        self._groups_read.pop(group_bytes, None)
        self._packers.pop(group_bytes, None)

    def directed(self, score: Any, group_bytes: bytes) -> Any:
        """``score`` as the group stores it, or a stored score back (negation undoes itself)."""
        return self.space.negate(score) if self.high_score_first(group_bytes) else score

    def packer(self, group_bytes: bytes) -> Packer:
        """The group's element packer (its score direction read once per transaction)."""
        pack = self._packers.get(group_bytes)
        if pack is None:
            if self.high_score_first(group_bytes):
                negate = self.space.negate  # a column index's flips each HIGH column
                pack = lambda score, ts, context: tuples.pack((negate(score), ts, *context))  # noqa: E731
            else:
                pack = lambda score, ts, context: tuples.pack((score, ts, *context))  # noqa: E731
            self._packers[group_bytes] = pack
        return pack

    # -- windows being filled --------------------------------------------------------------

    def cursor(self, window: Window) -> index_pb2.FillCursor | None:
        """Where the fill of ``window`` stands; None before its first fill step."""
        if window.lb_key not in self._cursors:
            raw = self.tr.get(self.layout.cursor_key(window.lb_key))
            self._cursors[window.lb_key] = index_pb2.FillCursor.FromString(raw) if raw is not None else None
        return self._cursors[window.lb_key]

    def save_cursor(self, window: Window, cursor: index_pb2.FillCursor) -> None:
        self.tr.set(self.layout.cursor_key(window.lb_key), cursor.SerializeToString())
        self._cursors[window.lb_key] = cursor

    def clear_cursor(self, window: Window) -> None:
        self.tr.clear(self.layout.cursor_key(window.lb_key))
        self._cursors.pop(window.lb_key, None)

    def maintains(self, window: Window, pk_nested: bytes) -> bool:
        """Whether writes to this record must keep ``window``'s value (head and primary B-tree) now."""
        if not window.filling:
            return True
        if window.lb_key in self.building:
            return True
        cursor = self.cursor(window)
        if cursor is None or cursor.sorted_build:
            return False
        return self._reached(cursor, pk_nested)

    @staticmethod
    def _reached(cursor: index_pb2.FillCursor, pk_nested: bytes) -> bool:
        return cursor.records_done or (bool(cursor.records_through) and pk_nested <= cursor.records_through)

    def sorted_build(self, window: Window) -> bool:
        """Whether a build from sorted data owns ``window`` (build.py): writes then leave its values
        (and the record head's states there) as they are, and note the record for the build."""
        if not window.filling:
            return False
        cursor = self.cursor(window)
        return cursor is not None and cursor.sorted_build

    def note_written(self, pk_nested: bytes, lost: Iterable[index_pb2.WindowState] = ()) -> None:
        """A write changed the record: in each window a build from sorted data owns that has taken
        the record in already, note it for the build to redo, with the values its head ``lost``
        there (a deleted record's), which the build may hold (see build.py)."""
        directory = self.directory()
        if directory is None or not directory.filling_windows:
            return
        if self._built is None or self._built[0] is not directory:
            built = [w for w in directory.filling_windows if w.lb_key not in self.building and self.sorted_build(w)]
            self._built = (directory, built)
        layout, tr = self.layout, self.tr
        for window in self._built[1]:
            if not self._reached(self.cursor(window), pk_nested):  # type: ignore[arg-type]
                continue
            tr.set(layout.rewrite_key(window.key_bytes, pk_nested), b"")
            for state in lost:
                if state.lb_key == window.lb_key:
                    tr.set(layout.lost_value_key(window.key_bytes, pk_nested, state.group, state.element), b"")

    def fill_state(self, window: Window) -> FillState:
        """How far the fill of ``window`` (a filling window) got; the total is the ranked record
        count of a complete all-time window, when the index has one and no groups."""
        cursor = self.cursor(window) or index_pb2.FillCursor()
        total = None
        directory = self.directory()
        every = [w for w in directory.windows if w.type == 0 and not w.filling] if directory is not None else []
        if every and not self.settings.group_size:
            total = self.space.ranked_set(every[0], b"").size(self.tr)
        phase = 2 if cursor.records_done else 1
        processed = min(cursor.records_processed, total) if total is not None else cursor.records_processed
        return FillState(phase, processed, cursor.entries_ranked, total, cursor.entries_put_in)

    def rank_limit(self, window: Window) -> bytes | None:
        """The last primary key (after the window's prefix) whose element the ranked set holds.

        None when it holds every element (the window is complete); ``b""`` when none yet.
        """
        if not window.filling:
            return None
        cursor = self.cursor(window)
        return cursor.ranked_through if cursor is not None and cursor.records_done else b""

    def emit(self, window: Window, group_bytes: bytes, element: bytes, pk_flat: bytes, hidden: bool) -> None:
        """Hand a value of a window this transaction builds to the build (see ``building``)."""
        self.emitted.append((window.lb_key, group_bytes, element, pk_flat, hidden))

    # -- records -----------------------------------------------------------------------------

    def pk(self, pk: object) -> RecordKey:
        """The checked primary key, packed as one nested item (``nested``) and flat (``flat``).

        A :class:`RecordKey` (from an earlier call) is returned as it is: callers that check a
        batch's keys up front (to read their heads together) do not pack them twice.
        """
        if isinstance(pk, RecordKey):
            return pk
        pk = check_pk(pk)
        pk_flat = tuples.pack(pk)
        if len(pk_flat) > MAX_PK_BYTES:
            raise InvalidArgument(f"primary key packs to {len(pk_flat)} bytes; at most {MAX_PK_BYTES} are allowed")
        return RecordKey(pk, tuples.pack_nested(pk, pk_flat), pk_flat)

    def head_absent(self, pk_nested: bytes) -> bool:
        """Whether the record has no head, by its prefetched read (which stays for ``read_head``)."""
        read = self._heads_read.get(pk_nested)
        return (read.value if read is not None else self.tr.get(self.layout.head_key(pk_nested))) is None

    def read_head(self, pk_nested: bytes) -> index_pb2.RecordHead | None:
        """The record's head as stored (a prefetched read is used once: a later call reads again)."""
        read = self._heads_read.pop(pk_nested, None)
        raw = read.value if read is not None else self.tr.get(self.layout.head_key(pk_nested))
        return index_pb2.RecordHead.FromString(raw) if raw is not None else None

    def read_entries(
        self, pk_nested: bytes, start: int = INT64_MIN, end: int | None = None
    ) -> list[tuple[int, int, Any]]:
        """A record's entries with ``start <= ts < end`` as (ts, seq, (group, score, context))."""
        return self.issue_entries(pk_nested, start, end)()

    def issue_entries(
        self, pk_nested: bytes, start: int = INT64_MIN, end: int | None = None
    ) -> Callable[[], list[tuple[int, int, Any]]]:
        """:meth:`read_entries` issued now: call the result to wait for the entries."""
        low, high = self.layout.entries_range(pk_nested)
        prefix = low[:-1]
        if start > INT64_MIN:
            low = prefix + tuples.pack((start,))
        if end is not None and end <= INT64_MAX:
            high = prefix + tuples.pack((end,))
        rows = self.tr.get_range_async(low, high)

        def entries() -> list[tuple[int, int, Any]]:
            out = []
            for key, value in rows.value:
                ts, seq = tuples.unpack(key[len(prefix) :])
                out.append((ts, seq, tuples.unpack(value)))
            return out

        return entries

    # -- index-wide values ---------------------------------------------------------------------

    def now(self) -> int:
        """The index's clock in its timebase, read once: every read of one transaction sees one now."""
        if self._now is None:
            self._now = self.space.now()
        return self._now

    @property
    def latest(self) -> LatestTimestamp:
        """The index's latest timestamp, and its recompute when the record holding it goes."""
        if self._latest is None:
            self._latest = LatestTimestamp(self.tr, self.layout, self.space.format)
        return self._latest

    def latest_timestamp(self) -> int | None:
        return self.latest.read()

    def options(self) -> index_pb2.IndexOptions:
        return index_pb2.IndexOptions.FromString(self.tr.get(self.layout.options_key) or b"")

    def trimmed_before(self) -> int | None:
        options = self.options()
        return options.trimmed_before if options.HasField("trimmed_before") else None
