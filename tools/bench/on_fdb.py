"""The product benchmark on FoundationDB (``tools/bench.py --fdb CLUSTER_FILE``), in the same run.

After the embedded store's phases of an aggregation and before Redis's, the same data and
workloads run on the cluster, in one fresh index (named like the embedded store's):

- *Load*: ``index.bulk_load`` of every record in transactions of ``--load-batch``.  Every
  FoundationDB commit is durable (the cluster's logs fsync it), so there is no durable=false
  row; the row stands next to the embedded store's durable=false load.
- The submissions the embedded store made with durable=false (set S0) are applied untimed, so
  the reads see the same data on both stores.
- *Storage*: FoundationDB's own estimate of the bytes in the index's key range (sampled by the
  storage servers, ``get_estimated_range_size_bytes``), per record per window.
- *Reads* (rank daily and all-time, top 10, around-me) and *submissions* (one caller on S1,
  then ``--threads`` threads on S2, the sets the embedded store's durable rows used), exactly
  as :mod:`bench.reads` and :mod:`bench.submissions` run them, with the store's counters per
  call (``Database.stats``: read rounds, reads, writes, bytes written, commits, retries,
  conflicts).  Then a check: the all-time and daily counts and the weekly top-10 scores must
  equal the embedded store's after the same submissions.
- *Per-submission cost in FoundationDB operations*: the ``count`` submissions again through
  the counting proxy (:mod:`bench.counting`, rolled back): reads by kind, those that add a
  read conflict range (not made through ``snapshot``), explicit conflict ranges and writes by
  kind.  The backend adds to each write transaction one read conflict key and one write, its
  idempotency marker (see ``fdb_backend``), which neither the proxy nor ``Database.stats`` see:
  the conflict range totals add them.
- *Through gRPC* (unless ``--no-grpc``): a server process over the cluster
  (:mod:`bench.via_grpc`): reads and submissions (sets S3, S4).

Left out for FoundationDB, with a note in the report: the rows and notes that describe the
embedded store's machinery (durable=false, the redo log, pages written and fsyncs per commit,
the raw LMDB store rounds and the cost model built on them), the fill of a new window and
the gRPC load (long jobs that add minutes per aggregation and measure the same writes as the
load).  The benchmark refuses a cluster whose catalog already holds its index, and removes
its index afterwards (one range clear) unless ``--keep``.
"""

from __future__ import annotations

from typing import Any

from fdb_leaderboard.index import LeaderboardIndex
from fdb_leaderboard.service.catalog import Catalog
from fdb_leaderboard.store import Database, strinc

from . import bulk, reads, submissions, via_grpc
from .counting import CountingDatabase, op_totals, per_op_counts
from .data import DAILY, INDEX_NAME, NOW, TOP_N, WEEKLY, WINDOWS_PER_SCORE
from .processes import ServerProcess
from .stores import StoreUnderTest, fdb_cluster, fdb_range_bytes
from .suite import Run
from .timing import log

LEFT_OUT = (
    "FoundationDB rows leave out durable=false and the redo log (every FoundationDB commit is durable), "
    "the notes on pages and fsyncs (the embedded store's machinery), the raw store rounds and cost model "
    "(measured on LMDB), the fill and the gRPC load (long jobs: minutes per aggregation)"
)


def measure(run: Run, store: StoreUnderTest) -> None:
    """Every FoundationDB workload of one aggregation (see the module docstring)."""
    db = store.open()
    try:
        refuse_existing(db)
        run.fdb_figures["cluster"] = fdb_cluster(db)
        log(f"FoundationDB {store.url}: {run.fdb_figures['cluster']}")
        try:
            index = bulk.load_records(run, db, store, run.label("", store))
            run.fdb_figures["storage"] = storage(db, index, len(run.data.records))
            log(f"  applying the durable=false submissions (S0, {len(run.data.submissions['S0']):,}) untimed")
            submissions.submit_all(index, run.data.submissions["S0"])
            reads.in_process(run, index, store)
            in_process_submissions(run, index, store)
            check_same_as_embedded(run, index)
            run.fdb_figures["submit_ops"] = submission_ops(run, index)
            if run.args.grpc:
                with ServerProcess(store.url) as server:
                    via_grpc.reads_and_submissions(run, server.address, store)
        finally:
            if not run.args.keep:
                drop_index(db, INDEX_NAME)
    finally:
        db.close()
    run.notes.append(LEFT_OUT)


def refuse_existing(db: Database) -> None:
    names = [name for name, _ in Catalog(db).list()]
    if INDEX_NAME in names:
        raise SystemExit(
            f"{db.url} already holds an index named {INDEX_NAME!r} (a run kept with --keep, or one that "
            "was stopped): benchmark on a cluster without it"
        )


def drop_index(db: Database, name: str) -> None:
    """Remove the index ``name``'s keys and catalog entry (FoundationDB clears a range at once)."""
    catalog = Catalog(db)
    prefix = catalog.entry(name).prefix
    log(f"  removing the index {name!r} from the cluster")

    def drop(tr: Any) -> None:
        tr.clear_range(prefix, strinc(prefix))
        tr.clear(catalog._key(name))

    db.run(drop)


def storage(db: Database, index: LeaderboardIndex, records: int) -> dict[str, Any]:
    estimated = fdb_range_bytes(db, index.prefix, strinc(index.prefix))
    return {
        "estimated_bytes": estimated,
        "bytes_per_record_window": estimated / (records * WINDOWS_PER_SCORE),
    }


def in_process_submissions(run: Run, index: LeaderboardIndex, store: StoreUnderTest) -> None:
    threads = run.args.threads
    log(f"  submissions in-process: 1 caller, then {threads} threads")
    for workload, name, callers in (("submit_1", "S1", 1), ("submit_n", "S2", threads)):
        sample, counters = submissions.time_submissions(index, run.data.submissions[name], callers)
        run.record_ours(workload, "", sample, counters=counters, store=store)


def check_same_as_embedded(run: Run, index: LeaderboardIndex) -> None:
    """After the same submissions, FoundationDB's counts and top scores are the embedded store's."""
    ours = {
        "all_time_count": index.count(),
        "day_count": index.count(DAILY, NOW),
        "week_top_scores": [e.score for e in index.top(TOP_N, WEEKLY, NOW)],
    }
    same = ours == run.snapshot
    run.fdb_figures["same_as_embedded"] = same
    if not same:
        run.notes.append(f"CHECK FAILED: FoundationDB {ours} != the embedded store {run.snapshot}")
        log(f"  WARNING: FoundationDB and the embedded store differ: {ours} vs {run.snapshot}")


def submission_ops(run: Run, index: LeaderboardIndex) -> dict[str, float]:
    """The ``count`` submissions through the counting proxy, rolled back: FoundationDB operations
    per submission, with the read conflict ranges they add (the backend's marker included)."""
    counting = CountingDatabase(index.db, rollback=True)
    counted = LeaderboardIndex(counting, index.prefix, index.settings)
    made = submissions.submit_all(counted, run.data.submissions["count"])
    per_op = per_op_counts(counting.counts, made)
    totals = op_totals(per_op)
    transactions = counting.transactions / made
    writes = totals.atomic + sum(per_op.get(k, 0) for k in ("set", "clear", "clear_range"))
    return {
        **per_op,
        "gets": totals.gets,
        "ranges": totals.ranges,
        "rows": totals.rows,
        "atomic": totals.atomic,
        "writes": writes,
        "transactions": transactions,
        # each write transaction also reads (as a conflict key) and sets its idempotency marker
        "read_conflict_ranges": per_op.get("conflict_reads", 0) + per_op.get("conflict_range", 0) + transactions,
        "write_conflict_ranges": writes + transactions,
    }
