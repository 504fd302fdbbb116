#!/usr/bin/env python3
"""A board of N records, built, served, verified and moved: what each takes at that size.

What it measures, in which order: ``bench/scale.py``.  For example::

    .venv/bin/python tools/bench_scale.py --records 1000000 --store lmdb:/tmp/scale1m --json /tmp/scale1m.json
    eval "$(../shared/fdb/fdb-local env)"; ../shared/fdb/fdb-local start /tmp/fdb-scale ssd
    .venv/bin/python tools/bench_scale.py --records 1000000 --store fdb:/tmp/fdb-scale/fdb.cluster --parts 16

JSON keys: records, build_seconds, build_records_per_s, bytes_per_record, server_rss_mb,
rank_p50_ms, rank_p99_ms, top10_p99_ms, around_p99_ms, add_p99_ms, fill_seconds, expire_seconds,
verify_seconds, dump_seconds, restore_seconds (and more: the build's keys per second, the
fdbserver processes' peak RSS, the load average...).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

# tools/ (this script's directory) is on sys.path when run as a script, so ``bench`` is the
# package tools/bench/; importing it first puts an uninstalled checkout on sys.path.
from bench import scale
from bench.output import write_json


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Build, serve, verify and move a board of N records.")
    parser.add_argument("--records", type=int, default=1_000_000, help="records (default: %(default)s)")
    parser.add_argument("--store", required=True, help="the store URL (its index 'scale' is dropped afterwards)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON to PATH")
    parser.add_argument(
        "--batch",
        type=int,
        help="records per load transaction (default: 5000 on the embedded store, 500 on FoundationDB)",
    )
    parser.add_argument("--ops", type=int, default=2000, help="calls per read and write kind (default: %(default)s)")
    parser.add_argument("--processes", type=int, default=2, help="server processes (default: %(default)s)")
    parser.add_argument("--parts", type=int, default=8, help="verify's pieces run at once (default: %(default)s)")
    parser.add_argument("--dir", help="where the dump file goes (default: a temporary directory)")
    parser.add_argument("--no-dump", action="store_true", help="skip the dump and restore")
    parser.add_argument(
        "--bare-keys",
        type=int,
        default=20_000_000,
        help="FoundationDB: the bare binding writes as many keys as the build, at most this many (0: not; "
        "default: %(default)s)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the index afterwards")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.batch is None:
        args.batch = 500 if args.store.startswith("fdb:") else 5000
    if args.records < 1000 or args.batch < 1 or args.ops < 1 or args.processes < 1 or args.parts < 1:
        parser.error("--records must be at least 1000; --batch, --ops, --processes and --parts positive")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    figures = scale.run(args)
    print(json.dumps({k: v for k, v in figures.items() if k != "environment"}, indent=1))
    if args.json:
        write_json(args.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
