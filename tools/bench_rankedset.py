#!/usr/bin/env python3
"""Benchmark the ranked set on the embedded LMDB store, and the store beneath it.

One run, on one ranked set of N elements in one LMDB environment (a temporary directory
unless ``--dir`` is given): the load, the ranked-set operations one per transaction and many
per transaction, the raw store operations beneath them, the store operations each ranked-set
operation makes, the cost model that joins the two, and durable single-op commits.  What each
part measures, and how, is in the docstring of ``bench/rankedset.py`` (the raw store rounds:
``bench/rawstore.py``; the counting proxy: ``bench/counting.py``).  Every measurement but the
durable commits uses durable=false (no fsync), so it measures CPU cost, not the disk.  Run for
example::

    /tmp/venv/bin/python tools/bench_rankedset.py --elements 1000000 --json /tmp/bench.json
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

# tools/ (this script's directory) is on sys.path when run as a script, so ``bench`` is the
# package tools/bench/; importing it first puts an uninstalled checkout on sys.path.
from bench import rankedset

from fdb_leaderboard.rankedset import HashFunction


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Benchmark the ranked set and the raw store on the embedded LMDB backend.",
    )
    parser.add_argument(
        "--elements", type=int, default=1_000_000, help="elements loaded into the set (default: %(default)s)"
    )
    parser.add_argument("--dir", help="store directory (must be empty or absent; default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument(
        "--hash", choices=[h.name for h in HashFunction], default="MURMUR3", help="level hash (default: %(default)s)"
    )
    parser.add_argument("--levels", type=int, default=6, help="skip-list levels (default: %(default)s)")
    parser.add_argument("--ops", type=int, default=5000, help="operations per ranked-set phase (default: %(default)s)")
    parser.add_argument(
        "--batch",
        type=int,
        default=100,
        help="ranked-set operations per transaction in the batched mode (default: %(default)s)",
    )
    parser.add_argument(
        "--load-batch", type=int, default=2000, help="elements per load transaction (default: %(default)s)"
    )
    parser.add_argument(
        "--raw-ops", type=int, default=50_000, help="raw store operations per kind and round (default: %(default)s)"
    )
    parser.add_argument(
        "--raw-batch", type=int, default=1000, help="raw store operations per transaction (default: %(default)s)"
    )
    parser.add_argument(
        "--durable-ops",
        type=int,
        default=1000,
        help="durable single-op txns of each kind (0: skip) (default: %(default)s)",
    )
    parser.add_argument("--check", action="store_true", help="check the whole set's consistency at the end")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default: %(default)s)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON to PATH")
    args = parser.parse_args(argv)
    for name in ("elements", "ops", "batch", "load_batch", "raw_ops", "raw_batch"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.durable_ops < 0:
        parser.error("--durable-ops must not be negative")
    if 2 * args.ops + args.durable_ops > args.elements:
        parser.error("--elements must be at least 2 x --ops + --durable-ops (elements to remove)")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return rankedset.main(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
