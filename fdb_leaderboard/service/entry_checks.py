"""Every transaction of an index opened through the catalog checks the index's catalog entry.

Several server processes may serve one store (``serve --processes``, reader processes), each with
its own catalog.  An opened index is kept, so every transaction of a kept index also reads its
catalog entry (issued with the transaction's first reads: no round trip of its own) and stops,
committing nothing, with :class:`StaleIndex` if the entry no longer names the index's prefix:
another process dropped the index, or dropped it and created it again.  The service then opens
the name afresh and runs the call again.  Without this, a write through another process's kept
index would be acknowledged into the dropped index's prefix and lost.

The same entry says, for every transaction of the index at no cost of its own, two things a dump
(``served_dumps.py``) sets: that the index's writes are paused (they are refused with
:class:`~fdb_leaderboard.errors.Unavailable`, committing nothing), and that changes are being
captured: each write transaction then also sets ``ROOT + ("changes", id) + unit`` for every
record and idempotency key it changes (:class:`ChangeRecorder`), in the write's own transaction,
so the dump copies them again.  A transaction that finds a capture it did not record for runs
again, recording.

The entry holds the index's stored format too (``options.format``, see ``fdb_leaderboard/formats.py``):
an index is opened only if this release reads its format, and a transaction that finds the entry
raised past what it reads (a newer release upgraded the index meanwhile) stops, committing
nothing, with :class:`~fdb_leaderboard.errors.FormatTooNew`; one that finds it raised to a format
it reads goes on, and the index writes that format's forms from then on.  The store's own format
and the processes' releases are kept under the root too (``releases.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TypeVar

import fdb.tuple

from .. import formats
from ..errors import Unavailable
from ..index.layout import IndexLayout
from ..index.snapshot import unit_of
from ..index.transaction import UNREAD, KnownMetadata
from ..proto import index_pb2
from ..store.api import Database, Transaction, WrappedDatabase, strinc

T = TypeVar("T")


def index_format(options: index_pb2.IndexOptions) -> int:
    """The index format its options record (written before formats were recorded: format 2)."""
    return options.format or formats.UNRECORDED_INDEX


def check_format(name: str, options: index_pb2.IndexOptions) -> int:
    """The index's format, if this release reads it (FormatTooNew otherwise)."""
    version = index_format(options)
    formats.check_readable("index", version, f"index {name!r}")
    return version


class StaleIndex(Exception):
    """The index ``name`` this process opened was dropped since, maybe created again, by another
    process; the transaction that found out committed nothing."""

    def __init__(self, name: str) -> None:
        super().__init__(f"index {name!r} was dropped or created again by another server process")
        self.name = name


class _EntryState(NamedTuple):
    """What a catalog entry (its stored bytes) says to every transaction of its index."""

    stored: bytes | None
    captures: tuple[tuple[bytes, int], ...]  # (id, until): changes are captured for these dumps
    paused_until: int  # writes are refused until then (0: they are not; -1: until resumed)
    pause_reason: str


_UNREAD = _EntryState(None, (), 0, "")


def changes_prefix(root: bytes, capture: bytes) -> bytes:
    """Where the changes captured for dump ``capture`` are noted, one key per unit."""
    return root + fdb.tuple.pack(("changes", capture))


class ChangeRecorder:
    """A transaction of an index that notes the units (records, idempotency keys) it writes to,
    for the dumps capturing its changes; everything else goes to the transaction as it is."""

    __slots__ = ("_tr", "_prefix", "units")

    def __init__(self, tr: Transaction, prefix: bytes) -> None:
        self._tr = tr
        self._prefix = prefix
        self.units: set[bytes] = set()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tr, name)

    def _note(self, key: bytes) -> None:
        if key.startswith(self._prefix):
            unit = unit_of(key[len(self._prefix) :])
            if unit is not None:
                self.units.add(unit)

    def set(self, key: bytes, value: bytes) -> None:
        self._note(key)
        self._tr.set(key, value)

    def set_many(self, pairs: Sequence[tuple[bytes, bytes]]) -> None:
        for key, _ in pairs:
            self._note(key)
        self._tr.set_many(pairs)

    def clear(self, key: bytes) -> None:
        self._note(key)
        self._tr.clear(key)

    def clear_range(self, begin: bytes, end: bytes) -> None:
        self._note(begin)  # a record's entries, or no unit (a window's keys, a trim's range)
        self._tr.clear_range(begin, end)

    def clear_range_startswith(self, prefix: bytes) -> None:
        self.clear_range(prefix, strinc(prefix))

    def add(self, key: bytes, param: bytes) -> None:
        self._note(key)
        self._tr.add(key, param)

    def max(self, key: bytes, param: bytes) -> None:
        self._note(key)
        self._tr.max(key, param)

    def min(self, key: bytes, param: bytes) -> None:
        self._note(key)
        self._tr.min(key, param)

    def note_changes(self, root: bytes, captures: Sequence[bytes]) -> None:
        """Set, in the transaction itself, a change key per unit written for each capture."""
        for capture in captures:
            where = changes_prefix(root, capture)
            for unit in self.units:
                self._tr.set(where + unit, b"")


class _CaptureStarted(Exception):
    """A dump began capturing changes since this process last read the entry: run the
    transaction again, recording (nothing was committed)."""


class _MetadataChanged(Exception):
    """A transaction used the cached entry and directory, and the store's metadata version says
    they changed since they were read: run it again, reading them (nothing was committed)."""


class _CachedMetadata(NamedTuple):
    """The entry's state and the index's directory and sub-directories as read at a transaction
    whose metadata version was ``stamp``: what they are for every transaction that sees it."""

    stamp: bytes
    state: _EntryState
    directory: object  # stored bytes, None (no directory) or UNREAD
    sub_directories: dict[bytes, bytes | None]


class EntryChecked(WrappedDatabase):
    """The store as an index opened through the catalog sees it: each transaction also checks
    that the index's catalog entry still names its prefix, and follows what it says of pauses
    and captures (see the module docstring).

    Where the store has a metadata version (FoundationDB's, which comes with every read version
    at no cost, ``Transaction.metadata_stamp``), the entry and the index's directory and
    sub-directories are kept across transactions with the version they were read at: a
    transaction that sees the same version reads none of them (each change to them changes the
    version, ``Transaction.changed_metadata``), and a write still declares read conflicts on the
    keys it took from the cache, so a change committed meanwhile aborts it.  A transaction that
    sees another version, having used the cache, runs again reading them.  The reads saved are
    counted in the store's ``cached_reads``."""

    def __init__(
        self,
        inner: Database,
        name: str,
        entry_key: bytes,
        prefix: bytes,
        root: bytes,
        on_entry: Callable[[index_pb2.CatalogEntry], None] | None = None,
        stamps_kept: Callable[[], bool] = lambda: True,
    ) -> None:
        super().__init__(inner)
        self.name = name
        self.entry_key = entry_key
        self.prefix = prefix
        self.root = root
        self.on_entry = on_entry  # told of an entry found changed (another process set a policy)
        self._state = _UNREAD  # the entry last found to name ``prefix``: not parsed again
        self._stamps = inner.metadata_stamps
        # Whether every process on the store changes the metadata version as this one does (the
        # store's format says so): until then the cache is not used.
        self._stamps_kept = stamps_kept
        self._stamped = False
        self._cache: _CachedMetadata | None = None
        self._layout = IndexLayout(prefix)

    def _use_stamps(self) -> None:
        if self._stamps and not self._stamped:
            self._stamped = self._stamps_kept()

    def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        self._use_stamps()
        while True:
            try:
                return self.inner.run(self._checked_write, fn, args, kwargs)
            except (_CaptureStarted, _MetadataChanged):
                continue

    def read(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        self._use_stamps()
        while True:
            try:
                return self.inner.read(self._checked, fn, *args, **kwargs)
            except _MetadataChanged:
                continue

    def _checked(self, tr: Transaction, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        known, cache, stamp = self._begin(tr)
        entry = None if cache is not None else tr.get_async(self.entry_key)
        try:
            result = fn(tr, *args, **kwargs)
        except Exception:
            self._check_source(cache, stamp, entry)  # a refusal from a stale directory is none
            raise
        self._end(known, cache, stamp, entry)
        return result

    def _checked_write(self, tr: Transaction, fn: Callable[..., T], args: tuple, kwargs: dict) -> T:
        known, cache, stamp = self._begin(tr)
        entry = None
        if cache is None:
            entry = tr.get_async(self.entry_key)
        else:
            # Declared before the call runs: FoundationDB drops a read conflict on a key the
            # transaction has written already, so a directory taken from the cache and then
            # rewritten (a window added) would otherwise conflict with no change made meanwhile.
            tr.add_read_conflict_ranges([(key, key + b"\x00") for key in self._cached_keys(cache)])
            if cache.state.paused_until:  # refused before writing anything (alone, in a shared transaction)
                try:
                    self._refuse_paused(cache.state)
                except Unavailable:
                    self._check_stamp(cache, stamp)  # unless the pause is over
                    raise
        captures = (cache.state if cache is not None else self._state).captures
        recorder = ChangeRecorder(tr, self.prefix) if captures else None
        try:
            result = fn(recorder if recorder is not None else tr, *args, **kwargs)
        except Exception:
            self._check_source(cache, stamp, entry)
            raise
        state = self._end(known, cache, stamp, entry)
        if state.paused_until or state.captures:
            self._refuse_paused(state)
            now = time.time()
            active = [capture for capture, until in state.captures if now < until]
            if active:
                if recorder is None:
                    raise _CaptureStarted()
                recorder.note_changes(self.root, active)
        return result

    def _refuse_paused(self, state: _EntryState) -> None:
        until = state.paused_until
        if until < 0 or (until and time.time() < until):
            raise Unavailable(f"writes to index {self.name!r} are refused: {state.pause_reason}; retry later")

    def _begin(self, tr: Transaction) -> tuple[KnownMetadata | None, _CachedMetadata | None, Any]:
        """What the cache gives this transaction: (what the transaction reads its metadata from,
        the cached entry if used, the metadata version's read)."""
        if not self._stamped:
            return None, None, None
        stamp = tr.metadata_stamp()
        if stamp is None:  # the transaction changed metadata itself: read everything
            tr.cached = None
            return None, None, None
        cache = self._cache
        known = KnownMetadata() if cache is None else KnownMetadata(True, cache.directory, cache.sub_directories)
        tr.cached = known
        return known, cache, stamp

    def _check_source(self, cache: _CachedMetadata | None, stamp: Any, entry: Any) -> None:
        """For a call that raised: StaleIndex if the entry it read no longer names this index (a
        dropped index's keys answer nothing), _MetadataChanged if the cache it used is stale."""
        if entry is not None:
            self._entry_state(entry.value)
        self._check_stamp(cache, stamp)

    def _check_stamp(self, cache: _CachedMetadata | None, stamp: Any) -> None:
        """_MetadataChanged if the transaction used ``cache`` and the metadata changed since."""
        if cache is not None and stamp.value != cache.stamp:
            if self._cache is cache:
                self._cache = None
            raise _MetadataChanged()

    def _end(self, known: KnownMetadata | None, cache: _CachedMetadata | None, stamp: Any, entry: Any) -> _EntryState:
        """The entry's state for the transaction (StaleIndex if the entry no longer names this
        index; _MetadataChanged if the cache it used was stale), keeping what it read."""
        if cache is not None:
            self._check_stamp(cache, stamp)
            assert known is not None
            self.inner.stats.add(cached_reads=1 + len(known.served))
            state = cache.state
        else:
            state = self._entry_state(entry.value)
        if known is not None and not known.changed:
            learned = cache is None or known.directory is not cache.directory
            if learned or len(known.sub_directories) != len(cache.sub_directories):  # type: ignore[union-attr]
                version = stamp.value
                kept = self._cache
                if version is not None and (kept is None or version >= kept.stamp):
                    self._cache = _CachedMetadata(version, state, known.directory, known.sub_directories)
        return state

    def _cached_keys(self, cache: _CachedMetadata) -> list[bytes]:
        """The keys ``cache`` may answer for: the entry, the directory, the sub-directories."""
        keys = [self.entry_key]
        if cache.directory is not UNREAD:
            keys.append(self._layout.directory_key)
        keys.extend(self._layout.sub_directory_key(group) for group in cache.sub_directories)
        return keys

    def _entry_state(self, stored: bytes | None) -> _EntryState:
        """What the entry read says (StaleIndex if it no longer names this index)."""
        state = self._state
        if stored is not None and stored == state.stored:
            return state
        parsed = index_pb2.CatalogEntry.FromString(stored) if stored is not None else None
        if parsed is None or parsed.prefix != self.prefix:
            raise StaleIndex(self.name)
        check_format(self.name, parsed.options)
        captures = tuple((capture.id, capture.until) for capture in parsed.captures)
        state = self._state = _EntryState(stored, captures, parsed.writes_paused_until, parsed.pause_reason)
        if self.on_entry is not None:
            self.on_entry(parsed)
        return state

    def close(self) -> None:
        """Nothing: the store belongs to the catalog's owner."""
