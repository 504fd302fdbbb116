"""Dumps of served indexes while they take writes, and restores published under a name.

A dump (``index/snapshot.py``) copies an index's rows in bounded transactions, which see the index
at different moments.  A served index's dump stays consistent by catching up with the writes:

1. before it copies anything, it starts capturing the index's changes (``catalog.py``): every
   write transaction, on any server process or host, also notes each record and idempotency key
   it changes, in the write's own transaction;
2. it copies every row in key order (a record written after its rows were copied is noted);
3. it then copies the noted units again, each read whole in one transaction that also clears
   its notes (so a write after that read notes it again), until a transaction finds no note left:
   every unit's copy is then the unit as it was at that transaction, which also reads the
   index's own rows (windows, options...).  The dump is the index as it was at that moment;
4. if writes keep coming so that no such moment arrives within ``catch_up_seconds``, the index's
   writes are refused (UNAVAILABLE, retried by clients) while the last notes are copied, which
   takes about as long as copying the writes of one catch-up round: the pause the dump's end
   reports;
5. a dump for a move (``keep_paused``) never pauses the writes itself: it keeps copying the
   noted units, marking each moment it has sent all of them ("caught up" progress), while the
   target rebuilds the board and applies them; the mover pauses the writes (SetWritesPaused)
   once the target has applied the changes up to such a mark, and the dump ends at the first
   transaction that finds no note left and the writes paused: the pause covers only the last
   changes' copy.  Its writes then stay refused (the index moved).

A restore writes a dump under a new prefix, noted as being restored (a restore that dies is
cleared by a later drop), and publishes the name only once the index is complete.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator

from ..errors import AlreadyExists, NotFound
from ..index import LeaderboardIndex
from ..index.restore import RestoreCounts, restoring
from ..index.snapshot import PART_BYTES, CatchUp, DumpError, dump_parts, issue_unit, state_rows
from ..proto import index_pb2
from ..proto import service_pb2 as pb
from ..store.api import KeyValue, Transaction, strinc
from . import convert
from .catalog import Catalog, StaleIndex, changes_prefix, check_name, writes_paused

log = logging.getLogger("fdb_leaderboard.service")

CAPTURE_LEASE = 600.0  # seconds a capture lasts unless renewed (a dump that died stops costing writes)
RENEW_EVERY = 120.0
PAUSE_LEASE = 30.0  # a dump's pause, renewed while it copies the last changes
DEFAULT_CATCH_UP = 10.0
UNITS_PER_STEP = 200
MOVE_ROUND = 0.5  # seconds between a move's catch-up rounds once it has caught up, until it is paused
MOVE_ROUND_POLL = 0.05  # and how often it looks for the pause meanwhile


class Stopped(Exception):
    """The caller went away: the dump or restore stops."""


class ServedDump:
    """The dump of a served index, catching up with its writes (see the module docstring)."""

    def __init__(
        self, catalog: Catalog, request: pb.DumpRequest, keep_going: Callable[[], bool], actor: str | None = None
    ) -> None:
        self.catalog = catalog
        self.actor = actor  # who asked for the dump: recorded with its capture's start
        self.name = check_name(request.index)
        self.request = request
        self.keep_going = keep_going
        self.capture = b""
        self._renewal_failed: NotFound | None = None
        self._paused_at: float | None = None
        self._pause_until = 0.0
        self.pause_seconds = 0.0

    def parts(self) -> Iterator[pb.DumpPart]:
        catalog = self.catalog
        index = catalog.get(self.name)
        entry = catalog.entry(self.name)
        header = pb.DumpHeader(
            index=self.name,
            options=convert.settings_to_proto(index.settings),
            maintenance=convert.maintenance_to_proto(entry.maintenance),
            source=catalog.db.url,
        )
        header.index_format = entry.options.format  # the rows' format (0: not recorded)
        self.capture = catalog.start_capture(self.name, CAPTURE_LEASE, self.actor)
        finished = False
        ended = threading.Event()
        threading.Thread(target=self._renew, args=(ended,), name=f"dump {self.name} renewal", daemon=True).start()
        try:
            yield from dump_parts(
                catalog.db,
                index,
                header,
                self._catch_up,
                pause_seconds=lambda: self.pause_seconds,
                tick=self._tick,
            )
            finished = True
        finally:
            ended.set()
            moved = finished and self.request.keep_paused
            paused_until = -1 if moved else (0 if self._paused_at is not None else None)
            reason = f"index {self.name!r} moved to {self.request.moved_to or 'another store'}" if moved else ""
            try:
                catalog.end_capture(self.name, self.capture, paused_until, reason)
            except Exception:  # the index was dropped meanwhile, or the store is gone: the lease ends it
                log.warning("the end of the dump of %r could not be recorded", self.name, exc_info=True)

    def _renew(self, ended: threading.Event) -> None:
        """Renew the capture while the dump lives, also while its stream waits for the reader
        (a mover's target reads nothing while it rebuilds the board)."""
        while not ended.wait(RENEW_EVERY) and self.keep_going():
            try:
                self.catalog.renew_capture(self.name, self.capture, CAPTURE_LEASE)
            except NotFound as gone:  # the lease ran out: writes may have gone unnoted, the dump fails
                self._renewal_failed = gone
                return
            except Exception:  # the store did not answer: tried again in RENEW_EVERY, well within the lease
                log.warning("the capture of the dump of %r could not be renewed", self.name, exc_info=True)

    def _tick(self) -> None:
        if not self.keep_going():
            raise Stopped()
        if self._renewal_failed is not None:
            raise self._renewal_failed
        if self._paused_at is not None and time.time() > self._pause_until - PAUSE_LEASE / 2:
            self._pause()

    def _pause(self) -> None:
        self._pause_until = time.time() + PAUSE_LEASE
        reason = f"a dump of index {self.name!r} is copying its last changes"
        self.catalog.set_writes_paused(self.name, int(self._pause_until) + 1, reason)

    def _catch_up(self) -> CatchUp:
        ends = time.monotonic() + (self.request.catch_up_seconds or DEFAULT_CATCH_UP)
        moving = self.request.keep_paused  # the mover pauses the writes itself, once its target is built
        index = self.catalog.get(self.name)
        noted = changes_prefix(self.catalog.root, self.capture)
        entry_key = self.catalog.entry_key(self.name)
        while True:
            self._tick()
            if not moving and self._paused_at is None and time.monotonic() >= ends:
                self._pause()
                self._paused_at = time.monotonic()
            units, state, drained, paused = self.catalog.db.run(self._step, index.prefix, noted, entry_key)
            if paused and self._paused_at is None:
                self._paused_at = time.monotonic()
            if state is not None:
                if self._paused_at is not None:
                    self.pause_seconds = time.monotonic() - self._paused_at
                yield units, state, paused, True
                return
            yield units, None, paused, drained
            if moving and drained and not paused:
                # Waiting for the mover's pause: the next round takes the writes of a moment at once
                # (a record written many times meanwhile is copied once: the target, which moves its
                # values in every window, keeps up), unless the writes are paused meanwhile.
                self._wait_round(entry_key)

    def _wait_round(self, entry_key: bytes) -> None:
        ends = time.monotonic() + MOVE_ROUND
        while time.monotonic() < ends:
            time.sleep(MOVE_ROUND_POLL)
            raw = self.catalog.db.read(lambda tr: tr.get(entry_key))
            if raw is not None and writes_paused(index_pb2.CatalogEntry.FromString(raw), time.time()):
                return

    def _step(
        self, tr: Transaction, prefix: bytes, noted: bytes, entry_key: bytes
    ) -> tuple[list[tuple[bytes, list[KeyValue]]], list[KeyValue] | None, bool, bool]:
        """One catch-up transaction: up to UNITS_PER_STEP noted units read and their notes
        cleared; or, with none noted, the index's own rows (the dump's moment) unless a move's
        writes are not paused yet.  Also says whether every noted unit was read, and whether the
        index's writes are paused."""
        found = tr.snapshot.get_range(noted, strinc(noted), UNITS_PER_STEP)
        paused = self._paused_at is not None
        if not found or (self.request.keep_paused and not paused):
            reader = tr if not found else tr.snapshot  # the dump's moment reads its entry for good
            raw = reader.get(entry_key)
            entry = index_pb2.CatalogEntry.FromString(raw) if raw is not None else None
            if entry is None or entry.prefix != prefix:
                raise StaleIndex(self.name)
            paused = paused or bool(writes_paused(entry, time.time()))
        if not found:
            if self.request.keep_paused and not paused:
                return [], None, True, False
            return [], state_rows(tr, prefix), True, paused
        reads = [(key, issue_unit(tr.snapshot, prefix, key[len(noted) :])) for key, _ in found]
        units = []
        size = 0
        for key, read in reads:
            rows = read()
            if units and size >= PART_BYTES:
                break  # the rest stay noted, for the next step
            size += sum(len(k) + len(v) for k, v in rows)
            # A write noting this unit again after the read conflicts with this clear: not lost.
            tr.add_read_conflict_key(key)
            tr.clear(key)
            units.append((key[len(noted) :], rows))
        return units, None, len(units) == len(found) < UNITS_PER_STEP, paused


RESERVATION_LEASE = 600.0


def restore_served(
    catalog: Catalog,
    first: pb.RestoreRequest,
    rest: Iterator[pb.RestoreRequest],
    keep_going: Callable[[], bool],
    actor: str | None = None,
) -> Iterator[pb.RestoreProgress]:
    """Restore the dump whose parts come in ``first`` and ``rest`` as a new index of ``catalog``,
    yielding progress; the index is published (named) only at the end."""
    if first.part.WhichOneof("part") != "header":
        raise DumpError("a restore's first message must carry the dump's header")
    name = check_name(first.index or first.part.header.index)
    try:
        catalog.entry(name)
    except NotFound:
        pass  # the name is free
    else:
        raise AlreadyExists(f"index {name!r} exists: restore under another name, or drop it first")
    prefix = catalog.reserve_prefix(RESERVATION_LEASE)
    renewed = time.monotonic()

    def renew() -> None:
        nonlocal renewed
        if not keep_going():
            raise Stopped()
        if time.monotonic() - renewed > RENEW_EVERY:
            catalog.renew_reservation(prefix, RESERVATION_LEASE)
            renewed = time.monotonic()

    def parts() -> Iterator[pb.DumpPart]:
        yield first.part
        for request in rest:
            renew()
            yield request.part

    try:
        steps = restoring(catalog.db, prefix, parts())
        while True:
            try:
                counts = next(steps)
            except StopIteration as done:
                header, _end, counts = done.value
                break
            renew()
            yield _progress(counts)
        settings = LeaderboardIndex.open(catalog.db, prefix).settings
        source = f"{header.index} ({counts.rows} rows)"
        catalog.publish(name, prefix, settings, convert.maintenance_from_proto(header.maintenance), actor, source)
        yield _progress(counts, name)
    except BaseException:
        try:
            catalog.abandon(prefix)
        except Exception:
            log.warning("what the failed restore of %r wrote is left to a later drop", name, exc_info=True)
        raise


def _progress(counts: RestoreCounts, name: str = "") -> pb.RestoreProgress:
    return pb.RestoreProgress(
        phase="done" if name else counts.phase,
        rows=counts.rows,
        changes=counts.changes,
        entries_ranked=counts.entries_ranked,
        index=name,
    )
