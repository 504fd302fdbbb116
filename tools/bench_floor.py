#!/usr/bin/env python3
"""The floors under ``tools/bench.py``'s figures: what this machine charges before our code runs.

Three measurements that involve none of fdb-leaderboard's own work (the third borrows only its
key layout and tuple codec), so the benchmark's figures can be read against them: a gRPC call
that does nothing, a durable write of k pages, and a bulk load's bare writes.  What each
measures, and how, is in the docstring of ``bench/floors.py``.

    python tools/bench_floor.py [--calls 3000] [--threads 8] [--dir DIR] [--load-records N]
                                [--json PATH] [--markdown]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence

# tools/ (this script's directory) is on sys.path when run as a script, so ``bench`` is the
# package tools/bench/; importing it first puts an uninstalled checkout on sys.path.
from bench import floors


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="What a do-nothing gRPC call, a durable page write and a load's bare writes cost here."
    )
    parser.add_argument("--calls", type=int, default=3000, help="gRPC calls per run (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=8, help="concurrent gRPC callers (default: %(default)s)")
    parser.add_argument(
        "--dir", default=tempfile.gettempdir(), help="where the scratch files go (default: %(default)s)"
    )
    parser.add_argument("--file-mib", type=int, default=1024, help="scratch file size in MiB (default: %(default)s)")
    parser.add_argument(
        "--rounds",
        type=int,
        default=200,
        help="rounds per row up to 30 pages; larger k get proportionally fewer, at least 10 (default: %(default)s)",
    )
    parser.add_argument(
        "--pages", default="1,8,30,114,500", help="comma-separated page counts k (default: %(default)s)"
    )
    parser.add_argument(
        "--load-records", type=int, default=1_000_000, help="records of the load floor (default: %(default)s)"
    )
    parser.add_argument("--no-grpc", dest="grpc", action="store_false", help="skip the gRPC floor")
    parser.add_argument("--no-disk", dest="disk", action="store_false", help="skip the durable-write floor")
    parser.add_argument("--no-load", dest="load", action="store_false", help="skip the bulk-load floor")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default: %(default)s)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON to PATH")
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables")
    args = parser.parse_args(argv)
    try:
        args.pages = [int(k) for k in args.pages.split(",")]
    except ValueError:
        parser.error(f"--pages must be comma-separated integers, not {args.pages!r}")
    for name in ("calls", "threads", "file_mib", "rounds", "load_records"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if any(k < 1 for k in args.pages):
        parser.error("--pages counts must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return floors.main(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
