#!/usr/bin/env python3
"""What leagues add to a submission: read rounds, reads and latency, a league index beside a plain one.

Two indexes on one store with the same windows (all-time, days, weeks) and the same ``--records``
records scored in the first day: a plain one, and one with leagues on the day windows (cohorts of
``--cohort-size``, 5 tiers, 3 up and 3 down).  Then, alternating between the two indexes call by
call, ``--calls`` submissions of each kind:

- ``again``: a record scoring again in its day (a league member: its cohort row moves);
- ``new``: a record never seen (a first join, no league history);
- ``next day``: a record of the first day scoring in the second (a first join whose tier comes
  from its rank in its first-day cohort).

Per kind and index: read rounds, reads and commits per call (``Database.stats``), p50 latency.

    .venv/bin/python tools/bench leagues --store fdb:/tmp/fdb1/fdb.cluster --records 5000 --calls 300
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid

from fdb_leaderboard.index import Entry, IndexSettings, LeaderboardIndex, Leagues
from fdb_leaderboard.index.directory import WindowSpec, WindowUpdate
from fdb_leaderboard.store import open_database

DAY, WEEK = 86_400, 7 * 86_400
BASE = 1_790_208_000  # a Monday: days and weeks aligned
WINDOWS = WindowUpdate(specs=[WindowSpec(1, BASE, DAY, DAY, 7), WindowSpec(2, BASE, WEEK, WEEK, 1)])
COUNTERS = ("read_rounds", "reads", "commits")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", required=True)
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--cohort-size", type=int, default=30)
    args = parser.parse_args()
    db = open_database(args.store)
    prefix = b"\x15\x7f" + uuid.uuid4().bytes[:6]
    leagues = Leagues(1, args.cohort_size, 5, 3, 3)
    indexes = {
        "plain": LeaderboardIndex.create(db, prefix + b"p", IndexSettings()),
        "leagues": LeaderboardIndex.create(db, prefix + b"l", IndexSettings(leagues=leagues)),
    }
    for index in indexes.values():
        index.update_windows(WINDOWS)
        for start in range(0, args.records, 200):
            batch = [((f"r{i}",), [Entry(i % 997, BASE + 10)]) for i in range(start, min(start + 200, args.records))]
            index.write_batch(batch)
    kinds = {
        "again": lambda i: (f"r{i}", 2000 + i, BASE + 20),
        "new": lambda i: (f"new{i}", i, BASE + 30),
        "next day": lambda i: (f"r{i}", i, BASE + DAY + 10),
    }
    print(f"{args.store}: {args.records} records, cohorts of {args.cohort_size}, {args.calls} calls per kind")
    print(f"{'kind':<10} {'index':<8} {'rounds':>7} {'reads':>7} {'commits':>8} {'p50 ms':>8}")
    for kind, arguments in kinds.items():
        totals = {name: dict.fromkeys(COUNTERS, 0) for name in indexes}
        times: dict[str, list[float]] = {name: [] for name in indexes}
        for i in range(args.calls):
            for name, index in indexes.items():
                pk, score, ts = arguments(i)
                before = db.stats.snapshot()
                started = time.perf_counter()
                index.add_score(pk, score, ts)
                times[name].append(time.perf_counter() - started)
                after = db.stats.snapshot()
                for counter in COUNTERS:
                    totals[name][counter] += after.get(counter, 0) - before.get(counter, 0)
        for name in indexes:
            per = {counter: totals[name][counter] / args.calls for counter in COUNTERS}
            p50 = statistics.median(times[name]) * 1000
            print(
                f"{kind:<10} {name:<8} {per['read_rounds']:>7.2f} {per['reads']:>7.2f} {per['commits']:>8.2f} "
                f"{p50:>8.2f}"
            )
    for index in indexes.values():
        problems = index.check()
        assert not problems, problems[:3]
    db.run(lambda tr: tr.clear_range_startswith(prefix))
    db.close()


if __name__ == "__main__":
    main()
