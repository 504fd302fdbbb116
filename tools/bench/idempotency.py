#!/usr/bin/env python3
"""What an idempotency key costs a submission: store operations, bytes and CPU, keyed vs not.

    .venv/bin/python tools/bench idempotency                      # the embedded store (durable)
    .venv/bin/python tools/bench idempotency --store fdb:/path/to/fdb.cluster

On two identical indexes of ``--records`` records with four windows (all-time, day, week,
month), it runs the same ``--calls`` submissions on each, unkeyed on one and keyed on the other,
in alternating order round by round (so both make exactly the same changes), and prints per
submission: read rounds, reads, mutations, bytes written (the store's own counters,
``Database.stats``), this process's CPU time and the p50/p99 latency; then the keyed calls sent
again (each answered from its key, nothing written).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
import uuid

from fdb_leaderboard.index import Entry, IndexSettings, LeaderboardIndex, WindowUpdate
from fdb_leaderboard.store import open_database

from .timing import percentile

NOW = 1_795_420_000
WINDOWS = [(1, NOW - NOW % 86_400, NOW - NOW % 86_400 + 86_400), (2, NOW - 86_400 * 3, NOW + 86_400 * 4),
           (3, NOW - 86_400 * 20, NOW + 86_400 * 10)]  # fmt: skip


def measure(index: LeaderboardIndex, calls: list[tuple[str, int, str | None]]) -> dict[str, float]:
    before = index.db.stats.snapshot()
    cpu = time.process_time()
    latencies = []
    for pk, score, key in calls:
        started = time.perf_counter()
        index.add_score((pk,), score, NOW, idempotency_key=key)
        latencies.append(time.perf_counter() - started)
    cpu = time.process_time() - cpu
    after = index.db.stats.snapshot()
    n = len(calls)
    row = {name: (after[name] - before[name]) / n for name in ("read_rounds", "reads", "writes", "bytes_written")}
    latencies.sort()
    row["cpu_ms"] = 1000 * cpu / n
    row["p50_ms"] = 1000 * statistics.median(latencies)
    row["p99_ms"] = 1000 * percentile(latencies, 0.99)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default=None, help="store URL (default: a durable embedded store in a temp dir)")
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--calls", type=int, default=1000, help="submissions per round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    url = args.store or f"lmdb:{tempfile.mkdtemp(prefix='bench-idem-')}"
    db = open_database(url)
    rng = random.Random(1)
    pks = [f"p{i:06d}" for i in range(args.records)]
    records = [((pk,), [Entry(rng.randrange(10**6), NOW)]) for pk in pks]
    prefixes = [b"\x15\x7d" + os.urandom(4) for _ in range(2)]
    plain, keyed = (LeaderboardIndex.create(db, prefix, IndexSettings()) for prefix in prefixes)
    for index in (plain, keyed):
        index.update_windows(WindowUpdate(windows=WINDOWS))
        for start in range(0, len(records), 500):
            index.write_batch(records[start : start + 500])
    rows: dict[str, list[dict[str, float]]] = {"plain": [], "keyed": [], "repeat": []}
    try:
        for round_ in range(args.rounds):
            calls = [(rng.choice(pks), rng.randrange(10**6)) for _ in range(args.calls)]
            keys = [uuid.uuid4().hex for _ in calls]
            runs = [
                ("plain", plain, [(pk, score, None) for pk, score in calls]),
                ("keyed", keyed, [(pk, score, key) for (pk, score), key in zip(calls, keys, strict=True)]),
            ]
            for kind, index, made in runs if round_ % 2 == 0 else runs[::-1]:
                rows[kind].append(measure(index, made))
            rows["repeat"].append(measure(keyed, runs[1][2]))
    finally:
        for prefix in prefixes:
            db.run(lambda tr, prefix=prefix: tr.clear_range(prefix, prefix + b"\xff"))
        db.close()
    print(f"store {url}, {args.records} records, 4 windows, {args.calls} submissions x {args.rounds} rounds")
    print_rows(rows)


def print_rows(rows: dict[str, list[dict[str, float]]]) -> None:
    """Each kind's rows as one line: the mean of the counts, the range of the times."""
    columns = ("read_rounds", "reads", "writes", "bytes_written", "cpu_ms", "p50_ms", "p99_ms")
    print(f"{'per submission':<16}" + "".join(f"{c:>15}" for c in columns))
    for kind, measured in rows.items():
        cells = []
        for column in columns:
            values = [row[column] for row in measured]
            cells.append(
                f"{min(values):.2f}-{max(values):.2f}" if column.endswith("ms") else f"{statistics.mean(values):.2f}"
            )
        print(f"{kind:<16}" + "".join(f"{cell:>15}" for cell in cells))


if __name__ == "__main__":
    main()
