#!/usr/bin/env python3
"""The FoundationDB floor: what the ``fdb`` binding and our store layer cost per get, range read,
set, add and commit, in client and fdbserver CPU.  What each row measures: ``bench/fdb_floor.py``.

    eval "$(../shared/fdb/fdb-local env)"; ../shared/fdb/fdb-local start /tmp/fdb-floor ssd
    .venv/bin/python tools/bench_fdb_floor.py --cluster-file /tmp/fdb-floor/fdb.cluster --markdown
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

# tools/ (this script's directory) is on sys.path when run as a script, so ``bench`` is the
# package tools/bench/; importing it first puts an uninstalled checkout on sys.path.
from bench import fdb_floor
from bench.output import markdown, table, write_json


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="What the fdb binding and the store layer cost per operation.")
    parser.add_argument("--cluster-file", required=True, help="the cluster (its scratch keys are cleared afterwards)")
    parser.add_argument("--keys", type=int, default=20_000, help="scratch keys written (default: %(default)s)")
    parser.add_argument("--batch", type=int, default=100, help="operations per transaction (default: %(default)s)")
    parser.add_argument("--seconds", type=float, default=2.0, help="seconds per measurement (default: %(default)s)")
    parser.add_argument(
        "--rounds", type=int, default=3, help="rounds, the two ways taking turns (default: %(default)s)"
    )
    parser.add_argument("--seed", type=int, default=1, help="random seed (default: %(default)s)")
    parser.add_argument(
        "--bulk-keys", type=int, default=300_000, help="keys of the bulk write row (0: none; default: %(default)s)"
    )
    parser.add_argument("--bulk-key-bytes", type=int, default=40, help="their size (default: %(default)s)")
    parser.add_argument("--bulk-value-bytes", type=int, default=8, help="their values' size (default: %(default)s)")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON to PATH")
    args = parser.parse_args(argv)
    if args.keys < 2 * args.batch + max(fdb_floor.RANGES) or args.rounds < 1 or args.seconds <= 0:
        parser.error("--keys must exceed twice --batch plus 64; --rounds and --seconds must be positive")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    figures = fdb_floor.measure(f"fdb:{args.cluster_file}", args.keys, args.batch, args.seconds, args.rounds, args.seed)
    headers, rows = fdb_floor.report_rows(figures)
    print((markdown if args.markdown else table)(headers, rows))
    if args.bulk_keys:
        url = f"fdb:{args.cluster_file}"
        bulk = figures["bulk_write"] = fdb_floor.bulk_write(
            url, args.bulk_keys, args.bulk_key_bytes, args.bulk_value_bytes, args.seed
        )
        heads = ["bulk write, bare binding", "keys", "keys/s", "client CPU us/key", "fdbserver CPU us/key"]
        row = [
            f"{bulk['key_bytes']}-byte keys, {bulk['value_bytes']}-byte values, 10 kB transactions, 50 in flight",
            f"{bulk['keys']:,}",
            f"{bulk['keys_per_s']:,.0f}",
            f"{bulk['client_cpu_us']:.2f}",
            f"{bulk.get('server_cpu_us', float('nan')):.2f}",
        ]
        print((markdown if args.markdown else table)(heads, [row]))
    if args.json:
        write_json(args.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
