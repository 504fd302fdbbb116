"""Bulk loads: records saved in batches, several in flight on a network store, and the windows
holding no value built from sorted data as they come (``build.py``).

:class:`BulkLoad` is :meth:`LeaderboardIndex.bulk_load`.  Each batch is one transaction of the
write path (``LeaderboardIndex._write_batch``), applied once per batch idempotency key.  Where
reads cost round trips (``Database.batched_reads``: FoundationDB) up to ``LOAD_IN_FLIGHT``
batches run at once on threads, so one's reads and commit wait while the next one computes; a
batch holding a record that a batch in flight holds waits for it, so a record given twice keeps
its later value as when the batches run one after the other.  Batches are counted saved, and
``progress`` told, in their order.

Below index format 4 (``formats.SORTED_BUILDS``: a release 0.2.0 process may write meanwhile,
and it notes nothing for a build) the windows holding no value are deferred as 0.2.0 defers
them instead (``Filler.defer_ranks_of_empty_windows``): the load writes their primary B-trees,
holds them (renewed every half hold) and fills their ranked sets in key order at its end.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from .. import formats
from ..proto import index_pb2
from . import tuplecodec as tuples
from .build import HOLD_SECONDS, BuildLost, WindowsBuild, check_room
from .directory import Window
from .fill import batches
from .idempotency import batch_key, check_key
from .records import Entry
from .values import check_at_least, check_pk

# The index and its Operations, which import this module: typed loosely here.
LeaderboardIndex = Any
Operations = Any

LOAD_IN_FLIGHT = 8  # batches at once on a store whose reads cost round trips
# A load stops before the store has less room than this left (checked every ROOM_SECONDS).
ROOM_RESERVE = 256 << 20
ROOM_SECONDS = 2.0

Batch = Sequence[tuple[object, Sequence[Entry]]]


class BulkLoad:
    """One bulk load into ``index`` (see :meth:`LeaderboardIndex.bulk_load` for the arguments)."""

    def __init__(
        self,
        index: LeaderboardIndex,
        batch_size: int,
        progress: Callable[[int], None] | None,
        defer_ranks: bool,
        idempotency_key: str | None,
        actor: str | None,
        max_entries: int = 20_000,
    ) -> None:
        check_at_least(batch_size, 1, "batch_size")
        if idempotency_key is not None:
            check_key(idempotency_key)
        self.index = index
        self.batch_size = batch_size
        self.progress = progress
        self.defer_ranks = defer_ranks
        self.idempotency_key = idempotency_key
        self.actor = actor
        self.max_entries = max_entries
        self.build: WindowsBuild | None = None
        self.deferred: tuple[Window, ...] = ()  # below format 4: windows the fill ranks at the end
        self._held_until = 0.0
        self.written = 0
        self._lock = threading.Lock()  # the build takes values from several threads
        self._room_checked = 0.0

    def run(self, records: Iterable[tuple[object, Sequence[Entry]]]) -> int:
        index = self.index
        started = None if self.actor is None else index._event(self.actor, "BulkLoad")
        if started is not None:
            index.db.run(lambda tr: started.write(tr, phase="started", batch_size=self.batch_size))
        completed = False
        try:
            in_flight = LOAD_IN_FLIGHT if index.db.batched_reads else 1
            if in_flight == 1:
                for number, batch in enumerate(batches(records, self.batch_size)):
                    self._start(number)
                    self.save(batch, number)
                    self._saved(len(batch))
            else:
                self._run_together(records, in_flight)
        except BaseException:  # a refused record, say: the windows are still built, the error raised
            if self.build is not None:
                with contextlib.suppress(Exception):  # (a build that fails gives its windows back)
                    self.build.finish()
            raise
        else:
            if self.build is not None:
                with contextlib.suppress(BuildLost):  # taken over: filled again by whoever took them
                    self.build.finish()
            completed = True
        finally:  # also after a refused record: the deferred windows must not stay filling
            if self.deferred:
                index.fill(max_records=self.batch_size, max_entries=self.max_entries, actor=self.actor, build=False)
            if started is not None:
                ended, phase = started.next(), "finished" if completed else "stopped"
                written = self.written
                index.db.run(lambda tr: ended.write(tr, phase=phase, records_written=written))
        return self.written

    def _run_together(self, records: Iterable[tuple[object, Sequence[Entry]]], in_flight: int) -> None:
        """Batches on ``in_flight`` threads, each after the batches in flight holding its records."""
        running: deque[tuple[Future[None], set[Hashable] | None, int]] = deque()
        with ThreadPoolExecutor(in_flight, thread_name_prefix="load") as pool:
            try:
                for number, batch in enumerate(batches(records, self.batch_size)):
                    self._start(number)
                    keys = _record_keys(batch)
                    while running and (
                        len(running) >= in_flight
                        or keys is None
                        or any(held is None or not keys.isdisjoint(held) for _, held, _ in running)
                    ):
                        self._wait(running)
                    running.append((pool.submit(self.save, batch, number), keys, len(batch)))
                while running:
                    self._wait(running)
            finally:  # an error: the batches in flight end before it is raised, those saved counted
                for future, _, count in running:
                    with contextlib.suppress(Exception):
                        future.result()
                        self._saved(count)

    def _wait(self, running: deque[tuple[Future[None], set[Hashable] | None, int]]) -> None:
        future, _, count = running[0]
        future.result()  # a refused record raises here, the batches before it saved
        running.popleft()
        self._saved(count)

    def _start(self, number: int) -> None:
        now = time.monotonic()
        if now - self._room_checked >= ROOM_SECONDS:
            self._room_checked = now
            check_room(self.index.db, ROOM_RESERVE, f"a load (after {self.written:,} records saved)")
        index = self.index
        if self.defer_ranks and number == 0:
            if formats.allows(index.format, formats.SORTED_BUILDS):
                self.build = WindowsBuild.start(index, lambda ops: ops.filler.empty_windows(), from_records=False)
            else:
                self._held_until = index.clock() + HOLD_SECONDS
                until = int(self._held_until)
                self.deferred = index.run(lambda ops: ops.filler.defer_ranks_of_empty_windows(until))
        elif self.deferred and index.clock() > self._held_until - HOLD_SECONDS / 2:
            self._held_until = index.clock() + HOLD_SECONDS
            windows, until = self.deferred, int(self._held_until)
            index.run(lambda ops: ops.filler.hold(windows, until))

    def _saved(self, count: int) -> None:
        self.written += count
        if self.progress:
            self.progress(self.written)

    def save(self, batch: Batch, number: int) -> None:
        """Transaction ``number`` of the load, its values in the build's windows handed to the build."""
        index, build = self.index, self.build
        key = None if self.idempotency_key is None else batch_key(self.idempotency_key, number)
        if build is not None and not build.lost:
            try:
                emitted = index._write_batch(batch, True, key, False, build)
            except BuildLost:
                pass  # written as any write would, below
            else:
                with self._lock:
                    if emitted is None:  # saved before (sent again): the heads hold what it wrote
                        nested = [_nested(pk) for pk, _ in batch]
                        heads = index.read(lambda ops: _heads(ops, nested))
                        build.take_heads((pk, head) for pk, head in zip(nested, heads, strict=True) if head)
                    else:
                        build.take(emitted)
                return
        index._write_batch(batch, True, key, False)


def _record_keys(batch: Batch) -> set[Hashable] | None:
    """The batch's records, as checked keys (None if one is not a valid key: its batch waits for all)."""
    try:
        return {check_pk(pk) for pk, _ in batch}
    except Exception:
        return None


def _nested(pk: object) -> bytes:
    checked = check_pk(pk)
    return tuples.pack_nested(checked, tuples.pack(checked))


def _heads(ops: Operations, nested: Sequence[bytes]) -> list[index_pb2.RecordHead | None]:
    ops.txn.prefetch(heads=nested)
    return [ops.txn.read_head(pk) for pk in nested]
