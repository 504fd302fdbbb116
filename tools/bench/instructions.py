#!/usr/bin/env python3
"""Instructions per single-column submission and read (callgrind: noise-free), this checkout
against another revision.

    .venv/bin/python tools/bench instructions --against main --iterations 300

One iteration: a submission, an all-time rank, a daily rank, a weekly top 10, an around-me of
5 above and 5 below, and the protobuf encoding of the top's entries and of a score (the wire path
the server and the clients share), on an embedded store in process (3,000 records bulk-loaded,
four windows: all-time, day, week, month).  Each tree runs under ``valgrind --tool=callgrind``
twice, with no iterations and with ``--iterations``; the difference divided by the iterations
is the cost of one, start-up and loading left out; hashing is seeded alike for every run.  Slow:
a few minutes per run.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from .trees import export

ROOT = Path(__file__).resolve().parents[2]
WORKLOAD = """
import sys, tempfile
from fdb_leaderboard import wire
from fdb_leaderboard.index import Entry, IndexSettings, LeaderboardIndex, WindowUpdate
from fdb_leaderboard.proto import service_pb2 as pb
from fdb_leaderboard.store import open_database

iterations = int(sys.argv[1])
directory = tempfile.mkdtemp()
# valgrind cannot map LMDB's default address space, and runs far past the 5 s transaction limit
db = open_database(f"lmdb:{directory}/s?durable=false&map_size=1073741824&transaction_seconds=0")
index = LeaderboardIndex.create(db, b"B", IndexSettings(aggregation="BEST", high_score_first=True))
DAY, NOW = 86400, 1_795_420_000
D = NOW - NOW % DAY
windows = [(1, D, D + DAY), (2, D - 3 * DAY, D + 4 * DAY), (3, D - 20 * DAY, D + 10 * DAY)]
index.update_windows(WindowUpdate(windows=windows))
index.bulk_load((((i,), [Entry((i * 7919) % 100000, D + i % 1000)]) for i in range(3000)), 500)
for i in range(iterations):
    index.add_score((i % 3000,), 100000 + i, D + 5000 + i)
    index.rank((i * 13 % 3000,))
    index.rank((i * 17 % 3000,), 1, D + 5)
    entries = index.top(10, 2, D + 5)
    index.around((i * 29 % 3000,), 5, 5)
    message = pb.EntriesResponse()
    for entry in entries:
        wire.fill_ranked_entry(message.entries.add(), entry)
    (getattr(wire, "score_to_proto", None) or wire.python_to_score)(i)  # python_to_score before the rename
"""


def instructions(tree: Path, iterations: int) -> int:
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}  # the same dict layouts every run
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c", WORKLOAD]
    done = subprocess.run(
        [*command, str(iterations)], env=env, capture_output=True, text=True, cwd=tempfile.gettempdir()
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode or not found:
        raise SystemExit(f"the workload failed in {tree}:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", required=True, metavar="REVISION", help="the git revision to compare with")
    parser.add_argument("--iterations", type=int, default=300, help="iterations measured (default: %(default)s)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-instructions-") as other:
        export(args.against, Path(other))
        per_iteration = {}
        for name, tree in (("this checkout", ROOT), (args.against, Path(other))):
            per_iteration[name] = (instructions(tree, args.iterations) - instructions(tree, 0)) / args.iterations
            print(f"{name:>15}: {per_iteration[name]:,.0f} instructions per iteration", flush=True)
    ours, theirs = per_iteration.values()
    print(f"this checkout / {args.against}: {ours / theirs:.4f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
