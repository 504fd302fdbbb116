#!/usr/bin/env python3
"""Seed 003's day replayed against a server: Pareto-distributed players submitting scores to a
daily, monthly and all-time board and opening views of them (top 10, their rank, the 4 above and
below them); the rate reached, p50/p99 per kind, CPU per call of the serve process tree and of
``fdbserver``, and the cores seed 003's peak (2,500 submissions/s and the views) needs.  What each
figure is: the docstring of ``bench/season.py``.  For example:

    .venv/bin/python tools/bench_season.py --store fdb:CLUSTER_FILE [--players 20000] [--callers 32]
        [--seconds 30] [--views 3] [--max-staleness 0] [--serve-args '--processes 2']
        [--source DIR] [--markdown] [--json PATH]

``--source DIR`` serves another checkout (one with its own ``.venv``, as bench_served.py makes them).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

# tools/ (this script's directory) is on sys.path when run as a script, so ``bench`` is the
# package tools/bench/; importing it first puts an uninstalled checkout on sys.path.
from bench import season


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Seed 003's day against a server.")
    parser.add_argument("--store", help="lmdb:DIR or fdb:CLUSTER_FILE (default: a fresh embedded store)")
    parser.add_argument("--server", help="the address of a running server (then --server-pid)")
    parser.add_argument("--server-pid", type=int, help="its process, for its CPU")
    parser.add_argument("--source", type=Path, help="the checkout served (default: this one)")
    parser.add_argument("--players", type=int, default=20_000, help="players (default: %(default)s)")
    parser.add_argument("--callers", type=int, default=32, help="concurrent callers (default: %(default)s)")
    parser.add_argument("--seconds", type=float, default=30.0, help="length of the day (default: %(default)s)")
    parser.add_argument("--views", type=float, default=3.0, help="views per submission (default: %(default)s)")
    parser.add_argument("--pareto", type=float, default=1.16, help="activity's Pareto shape (default: %(default)s)")
    parser.add_argument("--max-staleness", type=int, default=0, help="ms the views may lag (default: 0, exact)")
    parser.add_argument("--serve-args", default="", help="more options for serve")
    parser.add_argument("--seed", type=int, default=3, help="random seed (default: %(default)s)")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON to PATH")
    args = parser.parse_args(argv)
    if (args.server is None) != (args.server_pid is None):
        parser.error("--server and --server-pid go together")
    if min(args.players, args.callers) < 1 or args.seconds <= 0 or args.views < 0:
        parser.error("--players and --callers must be positive, --seconds too, --views 0 or more")
    if not 0 <= args.max_staleness <= 5000:
        parser.error("--max-staleness must be from 0 to 5000")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return season.main(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
