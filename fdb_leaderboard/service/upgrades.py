"""Raising the store's format and each index's: by an operator, or by the server's maintenance.

What a store and its indexes are at, and who runs on them (:func:`status`): the store's format
record, the processes' reports (``releases.py``) and each index's format with the upgrade under
way, if any (``index/upgrade.py``).

Two ways a format rises (``fdb_leaderboard/formats.py``):

- **By the maintenance** (:meth:`Upgrades.raise_formats`, each pass of the server's own, unless
  ``serve --no-raise-formats``): to the newest format every process that may be running reads:
  the live reports' releases, this one's, and below store format 3 the processes that do not
  report (taken to run release 0.2.0).  An index's data is rewritten first where its next format
  needs it, in the job's bounded batches, a pass going on where the last stopped.
- **By an operator** (:meth:`Upgrades.upgrade_store`, :meth:`Upgrades.upgrade_index`: ``store
  upgrade``, ``index upgrade``): to the newest format this release writes, the operator vouching
  that no process of an older release that does not report runs on the store any more.  Refused,
  naming them, while a live process reports a release that does not read it.

Both are idempotent and resumable: several servers may run them at once (each batch conflicts
with the same batch elsewhere, and one of them runs again).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

import fdb.tuple

from .. import formats
from ..errors import FailedPrecondition, NotFound, Unavailable
from ..index.audit import SYSTEM_ACTOR
from ..index.layout import IndexLayout
from ..index.upgrade import UpgradeProgress, UpgradeState
from ..proto import index_pb2
from ..store.api import Transaction, strinc
from . import releases
from .catalog import Catalog, writes_paused
from .entry_checks import index_format

UPGRADE_BATCH = 200  # records per upgrade transaction


@dataclasses.dataclass(frozen=True)
class IndexFormatState:
    """An index's format and the upgrade under way (None: none)."""

    name: str
    version: int
    recorded: bool
    upgrade: UpgradeState | None


@dataclasses.dataclass(frozen=True)
class StoreStatus:
    """The store's format, the processes reporting on it, its indexes' formats."""

    store: releases.StoreFormatState
    processes: list[releases.Process]
    indexes: list[IndexFormatState]

    def live_releases(self) -> list[str]:
        return [process.release for process in self.processes if process.live]


def _upgrade_state(raw: bytes | None) -> UpgradeState | None:
    if raw is None:
        return None
    cursor = index_pb2.UpgradeCursor.FromString(raw)
    return UpgradeState(cursor.to_format, cursor.records_done, cursor.heads_changed, cursor.started_at)


def _index_formats(tr: Transaction, listed: list[tuple[str, index_pb2.CatalogEntry]]) -> list[IndexFormatState]:
    cursors = [tr.get_async(IndexLayout(entry.prefix).upgrade_key) for _, entry in listed]
    return [
        IndexFormatState(name, index_format(entry.options), bool(entry.options.format), _upgrade_state(cursor.value))
        for (name, entry), cursor in zip(listed, cursors, strict=True)
    ]


class Upgrades:
    """The formats of ``catalog``'s store and indexes, and their raising."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.root = catalog.root

    def status(self) -> StoreStatus:
        """The store's format, the processes' reports and every index's format, in one read (the
        indexes' upgrade cursors read together)."""
        listed = self.catalog.list()

        def read(tr: Transaction) -> StoreStatus:
            indexes = _index_formats(tr, listed)
            return StoreStatus(releases.read_store_format(tr, self.root), releases.processes(tr, self.root), indexes)

        return self.catalog.db.read(read)

    def brief(self) -> StoreStatus:
        """The status without the upgrades under way: the catalog, the store's format and the
        reports, in one read transaction (for readiness probes)."""

        def read(tr: Transaction) -> StoreStatus:
            begin = self.root + fdb.tuple.pack(("catalog",))
            indexes = [
                IndexFormatState(
                    fdb.tuple.unpack(key[len(self.root) :])[1],
                    index_format((entry := index_pb2.CatalogEntry.FromString(raw)).options),
                    bool(entry.options.format),
                    None,
                )
                for key, raw in tr.get_range(begin, strinc(begin))
            ]
            return StoreStatus(releases.read_store_format(tr, self.root), releases.processes(tr, self.root), indexes)

        return self.catalog.db.read(read)

    def index_formats(self, listed: list[tuple[str, index_pb2.CatalogEntry]]) -> list[IndexFormatState]:
        """The formats of the indexes ``listed`` (catalog entries), their upgrade cursors read together."""
        return self.catalog.db.read(lambda tr: _index_formats(tr, listed))

    def _live(self) -> tuple[releases.StoreFormatState, list[releases.Process]]:
        def read(tr: Transaction) -> tuple[releases.StoreFormatState, list[releases.Process]]:
            return releases.read_store_format(tr, self.root), [p for p in releases.processes(tr, self.root) if p.live]

        return self.catalog.db.read(read)

    # -- by the maintenance ----------------------------------------------------------------------

    def raise_formats(self, keep_going: Callable[[], bool], actor: str = SYSTEM_ACTOR) -> tuple[list[str], bool]:
        """Raise the store and each index as far as every process that may be running reads, until
        done or ``keep_going()`` says stop; returns what it did (lines for the log) and whether an
        upgrade is left unfinished."""
        store, live = self._live()
        running = [process.release for process in live]
        done = []
        target = formats.raisable(formats.STORE_FORMATS, store.version, running, store.reporting)
        if target > store.version:
            self._raise_store(target, actor)
            done.append(f"store format raised to {target}")
            store = dataclasses.replace(store, version=target)
        unfinished = False
        for name, entry in self.catalog.list():
            current = index_format(entry.options)
            target = formats.raisable(formats.INDEX_FORMATS, current, running, store.reporting)
            if target <= current or writes_paused(entry, time.time()):  # a paused index: when it resumes
                continue
            if not keep_going():
                return done, True
            try:
                step = self._run_index(name, target, keep_going, actor)
            except (NotFound, Unavailable):  # dropped or paused since the listing
                continue
            if step.format > current:
                done.append(f"{name}: index format raised to {step.format}")
            elif step.records_done:
                done.append(f"{name}: {step.describe()}")
            unfinished = unfinished or not step.done
        return done, unfinished

    # -- by an operator --------------------------------------------------------------------------

    def upgrade_store(self, keep_going: Callable[[], bool], actor: str) -> tuple[StoreStatus, bool]:
        """``store upgrade``: the store raised to the newest format, then every index (in batches
        until done or ``keep_going()`` says stop: call again to go on); returns the status and
        whether everything is at the newest format.  An index whose writes are paused (a dump
        finishing, or moved to another store) is left as it is, as the maintenance leaves it."""
        store, live = self._live()
        self._refuse_older(formats.STORE_FORMATS, store.version, formats.NEWEST_STORE, live, "the store")
        if store.version < formats.NEWEST_STORE or not store.recorded:
            self._raise_store(formats.NEWEST_STORE, actor)
        for name, entry in self.catalog.list():
            if index_format(entry.options) >= formats.NEWEST_INDEX or writes_paused(entry, time.time()):
                continue
            if not self.upgrade_index(name, keep_going, actor).done:
                return self.status(), False
        return self.status(), True

    def upgrade_index(
        self,
        name: str,
        keep_going: Callable[[], bool],
        actor: str,
        max_records: int = UPGRADE_BATCH,
        max_batches: int = 0,
    ) -> UpgradeProgress:
        """``index upgrade``: index ``name`` to the newest format, in batches until done, ``max_batches``
        or ``keep_going()`` says stop (call again to go on)."""
        entry = self.catalog.entry(name)
        current = index_format(entry.options)
        _, live = self._live()
        self._refuse_older(formats.INDEX_FORMATS, current, formats.NEWEST_INDEX, live, f"index {name!r}")
        return self._run_index(name, formats.NEWEST_INDEX, keep_going, actor, max_records, max_batches)

    # -- the steps -------------------------------------------------------------------------------

    def _run_index(
        self,
        name: str,
        target: int,
        keep_going: Callable[[], bool],
        actor: str,
        max_records: int = UPGRADE_BATCH,
        max_batches: int = 0,
    ) -> UpgradeProgress:
        index = self.catalog.get(name)
        batches = 0

        def go_on() -> bool:
            nonlocal batches
            batches += 1
            return keep_going() and not (max_batches and batches >= max_batches)

        return index.upgrade(target, max_records, keep_going=go_on, actor=actor)

    def _raise_store(self, target: int, actor: str) -> None:
        event = self.catalog.audit.event(actor, "UpgradeStore")

        def write(tr: Transaction) -> None:
            state = releases.read_store_format(tr, self.root)
            formats.check_readable("store", state.version, "the store", state.raised_by)
            if state.recorded and state.version >= target:
                return
            releases.write_store_format(tr, self.root, max(target, state.version))
            event.write(tr, format=max(target, state.version), previous=state.version if state.recorded else 0)

        self.catalog.db.run(write)

    @staticmethod
    def _refuse_older(
        table: tuple[formats.Format, ...],
        current: int,
        target: int,
        live: list[releases.Process],
        what: str,
    ) -> None:
        """FailedPrecondition naming the live processes whose release does not read ``target``."""
        too_old = set(formats.blockers(table, current, target, [process.release for process in live]))
        if not too_old:
            return
        now = time.time()
        named = ", ".join(
            f"{p.report.host}:{p.report.pid} ({p.release}, seen {now - p.report.seen_at:.0f} s ago)"
            for p in live
            if p.release in too_old
        )
        needed = formats.read_from(table, current, target)
        raise FailedPrecondition(
            f"{what} cannot be raised to format {target}: release {needed} or later reads it, and these processes "
            f"run older ones: {named}; upgrade or stop them first (a stopped process stops counting "
            f"{releases.LIVE_SECONDS:.0f} s after its last report)"
        )
