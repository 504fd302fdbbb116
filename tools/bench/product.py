"""The product benchmark behind ``tools/bench.py``: which workloads run, on which stores, in which order.

Per ``--aggregations`` entry, on a fresh embedded store (a subdirectory of ``--dir``) and fresh
Redis servers, in this order: the in-process load (durable=false, :mod:`bench.bulk`), the raw
store rounds (:mod:`bench.rawstore`), submissions with durable=false; the store reopened
durable (the redo log, the default): operation counts (:mod:`bench.counting`), reads
(:mod:`bench.reads`), the floor of a durable commit (:func:`bench.floors.sync_floor`),
submissions (:mod:`bench.submissions`); reopened with ``redo_log=false`` (pages synced):
submissions; then, through a server over the durable store (:mod:`bench.via_grpc`), reads and
submissions, the in-process fill (while that server runs, sharing its log), the gRPC fill and a
gRPC load; through a server on the ``redo_log=false`` URL, submissions and a load; with
``--fdb``, the same data and workloads on FoundationDB (:mod:`bench.on_fdb`); last Redis
(:mod:`bench.redis_sets`).  The figures of every run, the configuration and the machine make one
JSON document; :mod:`bench.report` prints it.

**Store cost**: each of our operations runs again through a counting ``Database`` wrapper
(:mod:`bench.counting`; the submissions' and the fill step's writes rolled back), giving the
store operations per operation (200 operations per kind; the load and fill rows as described
in :mod:`bench.bulk`).  The raw store is measured in the same run on the same LMDB environment
(:mod:`bench.rawstore`: get / put / clear / atomic add / range reads through the store API and
through py-lmdb, 1000 per transaction, durable=false, median of 3 rounds, on 20,000 scratch
keys removed afterwards).  The count x raw cost of each kind, summed, is the operation's
store-bound cost; the measured in-process mean per operation divided by it tells how much is
Python work above the store.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fdb_leaderboard.service.catalog import Catalog

from . import bulk, on_fdb, reads, submissions, via_grpc
from .data import INDEX_NAME, NOW, make_data
from .floors import sync_floor
from .output import ROOT, environment, write_json
from .processes import ServerProcess
from .rawstore import measure_on_scratch_keys
from .redis_sets import RedisBench
from .report import report, write_docs
from .stores import StoreUnderTest, as_lmdb, require_empty, store_directory
from .suite import Run
from .timing import log

RAW_KEYS = 20_000  # scratch keys of the raw store rounds
RAW_BATCH = 1_000
RAW_ROUNDS = 3
SYNC_FLOOR_ROUNDS = 1000


def measure(run: Run) -> None:
    """Every workload of one aggregation: ours, then Redis (unless skipped)."""
    ours(run)
    if run.fdb is not None:
        on_fdb.measure(run, run.fdb)
    if run.args.redis_skip_reason is None:
        RedisBench(run).measure()


def ours(run: Run) -> None:
    args = run.args
    db = run.store.open(durable=False)
    try:
        index = bulk.load(run, db)
        submissions.nondurable(run, index)
        log("  raw store rounds (bench.rawstore, durable=false)")
        run.raw = measure_on_scratch_keys(as_lmdb(db), args.seed, RAW_KEYS, RAW_BATCH, RAW_ROUNDS)
    finally:
        db.close()
    ours_durable(run)
    if args.grpc:
        with ServerProcess(run.store.url_with(durable=True)) as server:
            via_grpc.reads_and_submissions(run, server.address)
            bulk.fill(run)
            via_grpc.fill_and_load(run, server.address)
        with ServerProcess(run.store.url_with(durable=True, redo_log=False)) as server:
            via_grpc.synced(run, server.address)
    else:
        bulk.fill(run)


def ours_durable(run: Run) -> None:
    """Counts, reads and submissions on the durable store (the redo log), then submissions with
    synced pages; before the submissions, the floor of a durable commit on the store's disk."""
    db = run.store.open(durable=True)
    try:
        as_lmdb(db)._env.sync(True)  # flush what the durable=false phase left, outside any timing
        index = Catalog(db).get(INDEX_NAME)
        log("  the floor of a durable commit: bare 1-KB writes and fdatasyncs beside the store")
        run.sync_floor = sync_floor(os.path.dirname(as_lmdb(db).path) or ".", SYNC_FLOOR_ROUNDS, run.args.seed)
        log("  counting store operations of reads and submissions")
        run.count("submit", index, lambda ix: submissions.submit_all(ix, run.data.submissions["count"]), rollback=True)
        reads.count_reads(run, index)
        reads.in_process(run, index)
        submissions.durable(run, db, index)
    finally:
        db.close()
    submissions.synced(run)


def main(args: argparse.Namespace, argv: Sequence[str] | None) -> int:
    """The whole benchmark for parsed ``args``: every aggregation, the report, JSON and docs if asked."""
    command = shlex.join(
        [sys.executable, os.path.relpath(Path(sys.argv[0]).resolve(), ROOT), *(sys.argv[1:] if argv is None else argv)]
    )
    skipped = []
    if args.redis_skip_reason:
        skipped.append(f"Redis: {args.redis_skip_reason}")
        if args.redis:
            log(f"skipping Redis: {args.redis_skip_reason}")
    if not args.grpc:
        skipped.append("gRPC: --no-grpc")
    runs: list[dict[str, Any]] = []
    with store_directory(args.dir, args.keep, "fdb-leaderboard-bench-") as base:
        env = environment()  # before the runs: the source as it was imported
        log(f"generating {args.records:,} records and the operations (seed {args.seed})")
        data = make_data(args.records, args.ops, args.seed)
        log(f"  {data.today:,} records in the current daily window")
        started = time.perf_counter()
        for aggregation in args.aggregation_list:
            path = os.path.join(base, aggregation.lower())
            require_empty(path, "--dir")
            log(f"aggregation {aggregation}: store {path}")
            fdb = StoreUnderTest.foundationdb("fdb", args.fdb) if args.fdb else None
            run = Run(args, aggregation, data, StoreUnderTest.embedded("ours", path), fdb)
            measure(run)
            runs.append(run.figures())
    env["loadavg_at_end"] = list(os.getloadavg())
    for figures_of_run in runs:
        if figures_of_run["environment"].get("redis_server"):
            env["packages"]["redis-server"] = figures_of_run["environment"]["redis_server"]
    figures = {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": command,
        "seconds": round(time.perf_counter() - started, 1),
        "config": {
            "records": args.records,
            "ops": args.ops,
            "threads": args.threads,
            "load_batch": args.load_batch,
            "aggregations": args.aggregation_list,
            "grpc": args.grpc,
            "fdb": args.fdb,
            "redis": args.redis_skip_reason is None,
            "seed": args.seed,
            "dir": base,
            "now": NOW,
        },
        "environment": env,
        "skipped": skipped,
        "runs": runs,
    }
    print("\n".join(report(figures)), flush=True)
    log(f"\ntotal time {figures['seconds']:,.0f} s")
    if args.json:
        write_json(args.json, figures)
    if args.write_docs:
        target = ROOT / "docs" / "benchmarks.md"
        write_docs(figures, target)
        log(f"wrote {target}")
    return 0
