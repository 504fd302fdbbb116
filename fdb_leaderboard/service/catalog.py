"""Named indexes in one store: the catalog a server uses to address several indexes.

``ROOT + ("catalog", name)`` holds a ``CatalogEntry``: the index's key prefix, its options
(a copy of what the index itself stores at ``S + (0,)``) and its maintenance policy.
Prefixes are ``ROOT + (n,)`` with ``n`` from a counter, so renaming or dropping never
collides with a later index.  Every key of an index starts with its prefix and neither store
compresses key prefixes, so the prefix is kept short: 4 bytes of root, 1-3 bytes of number
(with the former ``("fdb-leaderboard",) + ("index", n)`` it was 26 bytes, a quarter of the
bytes of an indexed score).

Several server processes may serve one store (``serve --processes``, reader processes), each with
its own catalog.  An opened index is kept, so every transaction of a kept index also reads its
catalog entry (issued with the transaction's first reads: no round trip of its own) and stops,
committing nothing, with :class:`StaleIndex` if the entry no longer names the index's prefix:
another process dropped the index, or dropped it and created it again.  The service then opens
the name afresh and runs the call again.  Without this, a write through another process's kept
index would be acknowledged into the dropped index's prefix and lost.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import fdb.tuple

from ..errors import AlreadyExists, InvalidArgument, NotFound
from ..index import IndexSettings, LeaderboardIndex, Window
from ..index.calendar import TIMEBASES
from ..proto import index_pb2
from ..store.api import Database, Transaction, WrappedDatabase, strinc

ROOT = fdb.tuple.pack(("lb",))
T = TypeVar("T")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}$")


def check_name(name: object) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidArgument(
            f"index name {name!r} is invalid: use 1-100 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit"
        )
    return name


def timebase_scale(policy: index_pb2.MaintenancePolicy | None) -> int:
    """Units of the index's times per second, as its policy says (seconds unless told)."""
    return TIMEBASES[(policy.timebase if policy is not None else "") or "seconds"]


class StaleIndex(Exception):
    """The index ``name`` this process opened was dropped since, maybe created again, by another
    process; the transaction that found out committed nothing."""

    def __init__(self, name: str) -> None:
        super().__init__(f"index {name!r} was dropped or created again by another server process")
        self.name = name


class _EntryChecked(WrappedDatabase):
    """The store as an index opened through the catalog sees it: each transaction also checks
    that the index's catalog entry still names its prefix (see the module docstring)."""

    def __init__(
        self,
        inner: Database,
        name: str,
        entry_key: bytes,
        prefix: bytes,
        on_entry: Callable[[index_pb2.CatalogEntry], None] | None = None,
    ) -> None:
        super().__init__(inner)
        self.name = name
        self.entry_key = entry_key
        self.prefix = prefix
        self.on_entry = on_entry  # told of an entry found changed (another process set a policy)
        self._current: bytes | None = None  # the entry last found to name ``prefix``: not parsed again

    def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return self.inner.run(self._checked, fn, *args, **kwargs)

    def read(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return self.inner.read(self._checked, fn, *args, **kwargs)

    def _checked(self, tr: Transaction, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        entry = tr.get_async(self.entry_key)
        result = fn(tr, *args, **kwargs)
        stored = entry.value
        if stored != self._current:
            parsed = index_pb2.CatalogEntry.FromString(stored) if stored is not None else None
            if parsed is None or parsed.prefix != self.prefix:
                raise StaleIndex(self.name)
            self._current = stored
            if self.on_entry is not None:
                self.on_entry(parsed)
        return result

    def close(self) -> None:
        """Nothing: the store belongs to the catalog's owner."""


class Catalog:
    """The indexes of one store, by name.  Opened indexes are kept (they hold no data)."""

    def __init__(self, db: Database, root: bytes = ROOT) -> None:
        self.db = db
        self.root = root
        self._open: dict[str, tuple[bytes, LeaderboardIndex]] = {}

    def _key(self, name: str) -> bytes:
        return self.root + fdb.tuple.pack(("catalog", name))

    def create(
        self,
        name: str,
        settings: IndexSettings,
        maintenance: index_pb2.MaintenancePolicy | None = None,
        all_time: bool = True,
        windows: Sequence[tuple[int, int, int]] = (),
    ) -> tuple[LeaderboardIndex, tuple[Window, ...] | None]:
        """Create the index ``name`` with its all-time window (unless ``all_time`` is False) and
        ``windows``; returns (index, windows added), None for those when it existed with the same
        options (not an error)."""
        check_name(name)
        options = settings.to_proto()

        def create(tr: Transaction) -> tuple[bytes, tuple[Window, ...] | None]:
            stored = tr.get(self._key(name))
            if stored is not None:
                entry = index_pb2.CatalogEntry.FromString(stored)
                if IndexSettings.from_proto(entry.options) != settings:
                    raise AlreadyExists(f"index {name!r} exists with other options")
                return entry.prefix, None
            counter_key = self.root + fdb.tuple.pack(("next_index",))
            number = int.from_bytes(tr.get(counter_key) or b"\x00" * 8, "little")
            tr.set(counter_key, (number + 1).to_bytes(8, "little"))
            prefix = self.root + fdb.tuple.pack((number,))
            entry = index_pb2.CatalogEntry(prefix=prefix, options=options, maintenance=maintenance)
            tr.set(self._key(name), entry.SerializeToString())
            return prefix, LeaderboardIndex(self.db, prefix, settings).initialize(tr, all_time, windows)

        prefix, added = self.db.run(create)
        return self._keep(name, prefix, settings, maintenance), added

    def _keep(
        self, name: str, prefix: bytes, settings: IndexSettings, policy: index_pb2.MaintenancePolicy | None
    ) -> LeaderboardIndex:
        """The index ``name`` at ``prefix``, kept open; its transactions check its entry (and
        follow its policy's timebase: what "now" is for its windows)."""
        checked = _EntryChecked(self.db, name, self._key(name), prefix)
        index = LeaderboardIndex(checked, prefix, settings)
        index.timebase = timebase_scale(policy)
        checked.on_entry = lambda entry: setattr(index, "timebase", timebase_scale(entry.maintenance))
        self._open[name] = (prefix, index)
        return index

    def forget(self, name: str) -> None:
        """Open ``name`` afresh next time (it was found stale)."""
        self._open.pop(name, None)

    def entry(self, name: str) -> index_pb2.CatalogEntry:
        stored = self.db.read(lambda tr: tr.get(self._key(check_name(name))))
        if stored is None:
            raise NotFound(f"no index named {name!r}")
        return index_pb2.CatalogEntry.FromString(stored)

    def get(self, name: str) -> LeaderboardIndex:
        """The index ``name`` (NotFound if it does not exist)."""
        cached = self._open.get(name)
        if cached is not None:
            return cached[1]
        entry = self.entry(name)
        return self._keep(name, entry.prefix, IndexSettings.from_proto(entry.options), entry.maintenance)

    def list(self) -> list[tuple[str, index_pb2.CatalogEntry]]:
        begin = self.root + fdb.tuple.pack(("catalog",))
        rows = self.db.read(lambda tr: tr.get_range(begin, strinc(begin)))
        return [(fdb.tuple.unpack(key[len(self.root) :])[1], index_pb2.CatalogEntry.FromString(v)) for key, v in rows]

    def drop(self, name: str, batch_keys: int = 10_000) -> None:
        """Delete the index ``name`` and all its data (NotFound if there is none).

        The name is freed at once, in one transaction that also leaves a note of the prefix;
        the data is then cleared in transactions of at most ``batch_keys`` keys (a huge index
        would overrun one transaction on the embedded store), and the note removed.  An
        interrupted drop is finished by the next ``drop`` of any index.
        """
        check_name(name)

        def unlink(tr: Transaction) -> bytes:
            stored = tr.get(self._key(name))
            if stored is None:
                raise NotFound(f"no index named {name!r}")
            prefix = index_pb2.CatalogEntry.FromString(stored).prefix
            tr.clear(self._key(name))
            tr.set(self._dropping_key(prefix), b"")
            return prefix

        self.db.run(unlink)
        self._open.pop(name, None)
        self._clear_dropped(batch_keys)

    def _dropping_key(self, prefix: bytes) -> bytes:
        return self.root + fdb.tuple.pack(("dropping", prefix))

    def _clear_dropped(self, batch_keys: int) -> None:
        begin = self.root + fdb.tuple.pack(("dropping",))
        for key, _ in self.db.read(lambda tr: tr.get_range(begin, strinc(begin))):
            prefix = fdb.tuple.unpack(key[len(self.root) :])[1]

            def clear_batch(tr: Transaction, prefix: bytes = prefix, note: bytes = key) -> bool:
                rows = tr.get_range(prefix, strinc(prefix), batch_keys)
                if len(rows) < batch_keys:
                    tr.clear_range(prefix, strinc(prefix))
                    tr.clear(note)
                    return True
                tr.clear_range(prefix, rows[-1][0] + b"\x00")
                return False

            while not self.db.run(clear_batch):
                pass

    def set_maintenance(self, name: str, maintenance: index_pb2.MaintenancePolicy) -> None:
        def update(tr: Transaction) -> None:
            stored = tr.get(self._key(check_name(name)))
            if stored is None:
                raise NotFound(f"no index named {name!r}")
            entry = index_pb2.CatalogEntry.FromString(stored)
            entry.maintenance.CopyFrom(maintenance)
            tr.set(self._key(name), entry.SerializeToString())

        self.db.run(update)
        kept = self._open.get(name)
        if kept is not None:
            kept[1].timebase = timebase_scale(maintenance)
