#!/usr/bin/env python3
"""The product benchmark: fdb-leaderboard on the embedded LMDB store (and FoundationDB), next to Redis sorted sets.

``--records`` N records, 4 windows per score (all-time, UTC daily, ISO-weekly, monthly), the
whole benchmark once per ``--aggregations`` entry (default BEST, then SUM), each on a fresh
store and fresh Redis servers; ``--ops`` operations per workload.  Latencies are those of
whole calls, so p50/p99 of one operation, or of one batch for loads and fills; throughput is
operations over wall time.  What each part measures, and how, is in the docstring of its
module in ``tools/bench/``:

- the data and the windows: ``bench/data.py``;
- 1. submit a score, in-process (durable=false, durable by the redo log, durable with synced
  pages), against the floor of a durable commit on the same disk: ``bench/submissions.py``,
  ``bench/floors.py``;
- 2.-4. rank, top 10, around-me: ``bench/reads.py``;
- 5.-6. bulk load and fill in-process, storage after the load: ``bench/bulk.py``;
- the same through the gRPC server in its own process: ``bench/via_grpc.py``;
- with ``--fdb CLUSTER_FILE``, the same on FoundationDB in the same run: ``bench/on_fdb.py``
  (the cluster must not already hold the benchmark's index; it is removed afterwards);
- the same on Redis (``redis-server`` without persistence and with ``appendfsync always``;
  skipped, with a message, when ``redis-server`` or the ``redis`` package is missing, or with
  ``--no-redis``): ``bench/redis_sets.py``;
- store operations per operation and their cost: ``bench/counting.py``, priced by the raw
  store rounds of ``bench/rawstore.py``;
- the order of the phases: ``bench/product.py``; the tables: ``bench/report.py``.

Run for example (``--write-docs`` rewrites ``docs/benchmarks.md``)::

    /tmp/venv/bin/python tools/bench.py --records 100000 --json /tmp/bench.json --write-docs
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

# tools/ (this script's directory) is on sys.path when run as a script, so ``bench`` is the
# package tools/bench/; importing it first puts an uninstalled checkout on sys.path.
from bench import product
from bench.processes import redis_missing

from fdb_leaderboard.index import IndexSettings


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Benchmark fdb-leaderboard (in-process and via gRPC) against Redis sorted sets.",
        epilog="See the module docstring for exactly what each workload measures.",
    )
    parser.add_argument("--records", type=int, default=1_000_000, help="records loaded (default: %(default)s)")
    parser.add_argument("--ops", type=int, default=3000, help="operations per workload (default: %(default)s)")
    parser.add_argument(
        "--aggregations", default="BEST,SUM", help="comma-separated, each a full run (default: %(default)s)"
    )
    parser.add_argument("--threads", type=int, default=8, help="concurrent callers for submissions (default: 8)")
    parser.add_argument(
        "--load-batch", type=int, default=500, help="records per load transaction / RPC / pipeline (default: 500)"
    )
    parser.add_argument("--no-grpc", dest="grpc", action="store_false", help="skip the end-to-end gRPC runs")
    parser.add_argument("--no-redis", dest="redis", action="store_false", help="skip Redis")
    parser.add_argument(
        "--fdb",
        metavar="CLUSTER_FILE",
        help="also run the workloads on this FoundationDB cluster, side by side (needs the foundationdb "
        "package matching libfdb_c)",
    )
    parser.add_argument("--redis-server", default="redis-server", help="the redis-server binary (default: from PATH)")
    parser.add_argument(
        "--dir", help="store directory (one subdirectory per aggregation; must be empty or absent; default: temporary)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the store directory")
    parser.add_argument("--json", metavar="PATH", help="also write every figure as JSON to PATH")
    parser.add_argument("--write-docs", action="store_true", help="rewrite docs/benchmarks.md with this run")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default: %(default)s)")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="cProfile the in-process load and submissions (prints the top 15 by tottime; inflates those figures)",
    )
    args = parser.parse_args(argv)
    if args.records < 1000:
        parser.error("--records must be at least 1000")
    for name in ("ops", "threads", "load_batch"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.fdb and not os.path.isfile(args.fdb):
        parser.error(f"--fdb {args.fdb}: no such cluster file")
    args.aggregation_list = [a.strip().upper() for a in args.aggregations.split(",") if a.strip()]
    for aggregation in args.aggregation_list:
        try:
            IndexSettings(aggregation=aggregation)
        except Exception as exc:
            parser.error(str(exc))
    if args.profile and args.write_docs:
        parser.error("--profile inflates the figures: do not combine it with --write-docs")
    args.redis_skip_reason = redis_missing(args.redis_server) if args.redis else "--no-redis"
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return product.main(parse_args(argv), argv)


if __name__ == "__main__":
    sys.exit(main())
