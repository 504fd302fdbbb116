#!/usr/bin/env python3
"""CPU per index operation (client and fdbserver), this checkout side by side with another revision.

What each figure is and how it is measured: the docstring of ``bench/cpu.py``.  For example,
FoundationDB against main, 1 and 8 callers, 3 alternating rounds of 1,000 calls per operation::

    eval "$(../shared/fdb/fdb-local env)"; ../shared/fdb/fdb-local start /tmp/fdb-cpu ssd
    .venv/bin/python tools/bench_cpu.py --store fdb:/tmp/fdb-cpu/fdb.cluster --against main \\
        --records 50000 --threads 1,8 --rounds 3 --calls 1000

and the embedded store (durable) alone: ``--store lmdb:/tmp/cpu-lmdb``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

# tools/ (this script's directory) is on sys.path when run as a script, so ``bench`` is the
# package tools/bench/; importing it first puts an uninstalled checkout on sys.path.
from bench import cpu
from bench.output import markdown, table, write_json


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="CPU per index operation, side by side with another revision.")
    parser.add_argument("--store", required=True, help="store URL: fdb:CLUSTER_FILE or lmdb:PATH")
    parser.add_argument("--against", metavar="REVISION", help="also measure this git revision, taking turns")
    parser.add_argument("--records", type=int, default=50_000, help="records loaded (default: %(default)s)")
    parser.add_argument("--threads", default="1,8", help="comma-separated caller counts (default: %(default)s)")
    parser.add_argument(
        "--ops", default=",".join(cpu.OPERATIONS), help="comma-separated operations (default: all but submit_limited)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds per operation and tree (default: %(default)s)")
    parser.add_argument("--calls", type=int, default=1000, help="calls per measurement (default: %(default)s)")
    parser.add_argument("--no-load", action="store_true", help="use the index a --keep run left")
    parser.add_argument("--keep", action="store_true", help="keep the loaded index")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("--json", metavar="PATH", help="also write every figure as JSON to PATH")
    args = parser.parse_args(argv)
    try:
        args.threads = [int(n) for n in args.threads.split(",")]
    except ValueError:
        parser.error(f"--threads must be comma-separated integers, not {args.threads!r}")
    args.ops = args.ops.split(",")
    known = (*cpu.OPERATIONS, *cpu.EXTRA_OPERATIONS)
    unknown = set(args.ops) - set(known)
    if unknown:
        parser.error(f"unknown operations {sorted(unknown)}; known: {', '.join(known)}")
    if min(args.threads) < 1 or min(args.rounds, args.calls, args.records) < 1:
        parser.error("--threads, --rounds, --records and --calls must be positive")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    figures = cpu.main(args)
    headers, rows = cpu.report_rows(figures)
    print((markdown if args.markdown else table)(headers, rows))
    if args.json:
        write_json(args.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
