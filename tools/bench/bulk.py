"""Workloads 5 and 6, in-process: bulk load of the records, and fill of a new window over them.

5. *Bulk load* of the N records into an empty index: ``index.bulk_load`` in transactions of
   ``--load-batch`` records, on the store opened with durable=false; records/s, and the
   latency of each batch (from the load's progress callback).  Then the storage it took: the
   LMDB pages holding data (``tree_bytes()``) and the data file with its free pages
   (``disk_usage()``), per record per window (ours includes the records' heads and entries,
   not only the windows); and the store operations of a whole
   ``bulk_load`` of ``--load-batch`` records into a scratch index with the same windows
   (cleared afterwards), ranked-set build included.
6. *Fill* of a new window over the loaded data: ``update_windows`` adds a 31-day window (a
   new type) covering every stored entry, then ``index.fill()`` fills it in batches of 200
   records on the durable store; records/s, latency per batch.  The store operations counted
   are those of one first-phase fill step (records into the primary B-tree, rolled back; the
   second phase adds about one write per entry).

The gRPC load and fill are in :mod:`bench.via_grpc`, Redis's in :mod:`bench.redis_sets`.
"""

from __future__ import annotations

from typing import Any

from fdb_leaderboard.index import Entry, LeaderboardIndex
from fdb_leaderboard.service.catalog import Catalog
from fdb_leaderboard.store import Database, strinc

from .counting import StoreCounters
from .data import FILL_BATCH, FILL_END, FILL_START, FILL_TYPE_INPROC, INDEX_NAME, NOW, WINDOWS_PER_SCORE
from .stores import StoreUnderTest, as_lmdb
from .suite import Run
from .timing import BatchClock, expect, log, profiled


def load_records(run: Run, db: Database, store: StoreUnderTest, label: str) -> LeaderboardIndex:
    """Create the index with the benchmark's windows in ``db`` (of ``store``) and load every
    record; records the load (with the store's counters per record) as ``label``."""
    args, data = run.args, run.data
    n = len(data.records)
    log(f"  load: {n:,} records, index.bulk_load in transactions of {args.load_batch} ({label})")
    index, _ = Catalog(db).create(INDEX_NAME, run.settings)
    index.update_windows(run.update())
    clock = BatchClock("load", n)
    counters = StoreCounters(db)
    with profiled(args.profile, "in-process bulk load"):
        written = index.bulk_load(run.records(), args.load_batch, clock.tick)
    expect("load", written, n)
    run.record_ours("load", "", clock.sample(n), label=label, counters=counters.per_call(n), store=store)
    return index


def load(run: Run, db: Database) -> LeaderboardIndex:
    """The load into the embedded store (durable=false), its storage and its store operations."""
    args, data = run.args, run.data
    n = len(data.records)
    index = load_records(run, db, run.store, run.label("nondurable"))
    run.storage[run.system()] = storage(db, n)
    log("  counting store operations of a load (a scratch index, then cleared)")
    scratch, _ = Catalog(db).create(INDEX_NAME + "-count", run.settings)
    scratch.update_windows(run.update())
    sample = [((i,), [Entry(score, ts)]) for i, (score, ts) in enumerate(data.records[: args.load_batch])]
    run.count("load (per record)", scratch, lambda ix: ix.bulk_load(sample, args.load_batch), rollback=False)
    db.run(lambda tr: tr.clear_range(scratch.prefix, strinc(scratch.prefix)))
    return index


def storage(db: Database, records: int) -> dict[str, Any]:
    """The embedded store's size after loading ``records`` records, per record per window."""
    lmdb_db = as_lmdb(db)
    stat = lmdb_db._env.stat()
    disk = lmdb_db.disk_usage()
    tree = lmdb_db.tree_bytes()
    return {
        "disk_bytes": disk,
        "tree_bytes": tree,
        "bytes_per_record_window": tree / (records * WINDOWS_PER_SCORE),
        "file_bytes_per_record_window": disk / (records * WINDOWS_PER_SCORE),
        "store_keys": stat["entries"],
        "btree_depth": stat["depth"],
    }


def fill(run: Run) -> None:
    """A new window over every record, filled in-process on the durable store."""
    db = run.store.open(durable=True)
    try:
        index = Catalog(db).get(INDEX_NAME)
        result = index.update_windows(run.update([(FILL_TYPE_INPROC, FILL_START, FILL_END)]))
        expect("filling windows after the update", len(result.filling), 1)
        log("  counting store operations of one fill batch (rolled back)")
        run.count("fill (per record)", index, lambda ix: ix.fill_step(FILL_BATCH).records_processed, True)
        total = len(run.data.records)
        log(f"  fill in-process: a new window over {total:,} records, batches of {FILL_BATCH} (durable)")
        clock = BatchClock("fill", total)
        done = 0

        def progress(step: Any) -> None:
            nonlocal done
            done += step.records_processed
            clock.tick(done)

        processed = index.fill(FILL_BATCH, progress=progress)
        expect("fill", processed, total)
        run.record_ours("fill", "", clock.sample(processed))
        expect("filled window size", index.count(FILL_TYPE_INPROC, NOW), total)
    finally:
        db.close()
