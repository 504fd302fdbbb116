#!/usr/bin/env python3
"""Store operations and round trips per index operation, on several stores side by side.

For each ``--store`` URL (e.g. ``lmdb:/tmp/x`` and ``fdb:/tmp/fdb1/fdb.cluster``) it loads
``--records`` records, each with one score in four windows (all-time, and fixed-length day,
week and 30-day windows), into a fresh index, then runs ``--ops`` calls of each operation
from one caller, in this order: submit a score to a random record (a BEST index: about
half the submissions move the record in every window), rank in the day window and in the
all-time window, top 10 of the week window, around me (5 above, 5 below, all-time), count.

Per operation it prints calls per second, p50 and p99 latency, and from the store's
counters (``Database.stats``) the sequential read rounds, reads, commits and retries per
call: the read rounds are the round trips a call waits for on a network store.  The stores
take turns, operation by operation, so a noisy machine affects them alike.

    tools/bench_store_ops.py --records 20000 --ops 2000 \\
        --store lmdb:/tmp/ops-lmdb --store fdb:/tmp/fdb1/fdb.cluster
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fdb_leaderboard.index import Entry, IndexSettings, LeaderboardIndex
from fdb_leaderboard.index.directory import WindowSpec, WindowUpdate
from fdb_leaderboard.store import open_database

DAY, WEEK, MONTH = 86_400, 7 * 86_400, 30 * 86_400
NOW = 1_790_000_000  # inside one window of each type (they are aligned on 0)
WINDOWS = WindowUpdate(
    high_score_first=True,
    specs=[
        WindowSpec(1, NOW - NOW % DAY, DAY, DAY, 1),
        WindowSpec(2, NOW - NOW % WEEK, WEEK, WEEK, 1),
        WindowSpec(3, NOW - NOW % MONTH, MONTH, MONTH, 1),
    ],
)
COUNTERS = ("read_rounds", "reads", "commits", "retries")


class Subject:
    """One store with a loaded index."""

    def __init__(self, url: str, records: int, seed: int) -> None:
        self.url = url
        self.db = open_database(url)
        self.prefix = b"\x15\x7e" + uuid.uuid4().bytes[:6]
        self.index = LeaderboardIndex.create(self.db, self.prefix, IndexSettings(high_score_first=True))
        self.index.update_windows(WINDOWS)
        rng = random.Random(seed)
        started = time.perf_counter()
        loaded = self.index.bulk_load(
            (((f"p{i}",), [Entry(rng.randrange(1_000_000), NOW - rng.randrange(DAY // 2))]) for i in range(records)),
            batch_size=500,
        )
        self.load_seconds = time.perf_counter() - started
        self.records = loaded

    def close(self) -> None:
        if self.url.startswith("fdb:"):
            self.db.run(lambda tr: tr.clear_range_startswith(self.prefix))
        self.db.close()


def operations(records: int, rng: random.Random) -> dict[str, Callable[[LeaderboardIndex], object]]:
    def player() -> tuple[str]:
        return (f"p{rng.randrange(records)}",)

    return {
        "submit a score": lambda index: index.add_score(player(), rng.randrange(1_000_000), NOW),
        "rank (day)": lambda index: index.rank(player(), 1, NOW),
        "rank (all-time)": lambda index: index.rank(player()),
        "top 10 (week)": lambda index: index.top(10, 2, NOW),
        "around me 5/5": lambda index: index.around(player(), 5, 5),
        "count (month)": lambda index: index.count(3, NOW),
    }


def measure(subject: Subject, call: Callable[[LeaderboardIndex], object], ops: int) -> dict[str, float]:
    latencies = []
    stats = getattr(subject.db, "stats", None)  # older sources have no counters: timings only
    before = stats.snapshot() if stats else None
    started = time.perf_counter()
    for _ in range(ops):
        t0 = time.perf_counter()
        call(subject.index)
        latencies.append(time.perf_counter() - t0)
    wall = time.perf_counter() - started
    after = stats.snapshot() if stats else None
    latencies.sort()
    out = {
        "per_second": ops / wall,
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
    }
    for name in COUNTERS:
        out[name] = (after[name] - before[name]) / ops if stats else float("nan")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", action="append", required=True, help="a store URL (repeat to compare)")
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--ops", type=int, default=1_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    subjects = []
    for url in args.store:
        subject = Subject(url, args.records, args.seed)
        subjects.append(subject)
        print(
            f"{url}: loaded {subject.records} records in {subject.load_seconds:.1f} s "
            f"({subject.records / subject.load_seconds:,.0f} records/s, bulk_load, batches of 500)"
        )
    try:
        print()
        header = f"{'operation':<18} {'store':<6} {'calls/s':>9} {'p50 ms':>8} {'p99 ms':>8}"
        header += "".join(f" {name.replace('_', ' ') + '/call':>15}" for name in COUNTERS)
        print(header)
        names = list(operations(1, random.Random()))
        for name in names:
            for subject in subjects:
                call = operations(subject.records, random.Random(args.seed))[name]
                result = measure(subject, call, args.ops)
                kind = subject.url.split(":", 1)[0]
                line = f"{name:<18} {kind:<6} {result['per_second']:>9,.0f}"
                line += f" {result['p50_ms']:>8.3f} {result['p99_ms']:>8.3f}"
                line += "".join(f" {result[counter]:>15.2f}" for counter in COUNTERS)
                print(line, flush=True)
    finally:
        for subject in subjects:
            subject.close()


if __name__ == "__main__":
    main()
