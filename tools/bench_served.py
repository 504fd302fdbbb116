#!/usr/bin/env python3
"""The served path, A/B: another revision's server against this checkout's (or another's), side by
side in alternating rounds: p50/p99, server CPU and context switches per call (``/proc``), for
Health.Check, GetRank, Top 10, AddScore and concurrent AddScore writers.  What each figure is and
how it is measured: the docstring of ``bench/served.py``.  For example, against 325c424:

    .venv/bin/python tools/bench_served.py --old 325c424 [--records 20000] [--calls 1500] [--rounds 3]
        [--kinds health,rank,top10,add,writers] [--writers 6] [--callers 1] [--daily 0]
        [--store fdb:CLUSTER_FILE] [--serve-args '--read-processes 0'] [--markdown] [--json PATH]

Run it before landing a change to a served path: ``--old main`` against the working tree.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

# tools/ (this script's directory) is on sys.path when run as a script, so ``bench`` is the
# package tools/bench/; importing it first puts an uninstalled checkout on sys.path.
from bench import served


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="The served path: one revision's server against another's.")
    parser.add_argument("--old", default="main", help="git revision (or checkout directory) compared against")
    parser.add_argument("--new", help="git revision (or checkout directory) measured (default: this working tree)")
    parser.add_argument(
        "--checkouts",
        default=str(Path(tempfile.gettempdir()) / "fdb-leaderboard-revisions"),
        help="where revisions are exported, each with its own .venv (default: %(default)s)",
    )
    parser.add_argument("--records", type=int, default=20_000, help="records loaded (default: %(default)s)")
    parser.add_argument(
        "--calls", type=int, default=1500, help="calls per kind, round and server (default: %(default)s)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds (default: %(default)s)")
    parser.add_argument("--kinds", default=",".join(served.KINDS), help="comma-separated kinds (default: all)")
    parser.add_argument("--writers", type=int, default=6, help="callers of the writers kind (default: %(default)s)")
    parser.add_argument("--callers", type=int, default=1, help="concurrent callers of the other kinds (default: 1)")
    parser.add_argument("--daily", type=int, default=0, help="daily windows besides the all-time one (default: 0)")
    parser.add_argument(
        "--store", help="fdb:CLUSTER_FILE: both servers on this FoundationDB cluster (default: LMDB each)"
    )
    parser.add_argument("--serve-args", default="", help="more options for the new server's serve")
    parser.add_argument("--old-serve-args", default="", help="more options for the old server's serve")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON to PATH")
    args = parser.parse_args(argv)
    args.kinds = args.kinds.split(",")
    unknown = set(args.kinds) - set(served.KINDS)
    if unknown:
        parser.error(f"unknown kinds {sorted(unknown)}; known: {', '.join(served.KINDS)}")
    if min(args.records, args.calls, args.rounds, args.writers, args.callers) < 1 or args.calls < max(
        args.writers, args.callers
    ):
        parser.error("--records, --calls, --rounds, --writers and --callers must be positive, --calls at least both")
    if args.store is not None and not args.store.startswith("fdb:"):
        parser.error("--store must be fdb:CLUSTER_FILE (without it, each server has an embedded store of its own)")
    if args.daily < 0:
        parser.error("--daily must be 0 or more")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return served.main(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
