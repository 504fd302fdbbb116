#!/usr/bin/env python3
"""What ``dense_ranks`` costs: score writes and DENSE rank reads, against the same index without it.

Two indexes of one store get the same windows (all-time, daily, weekly) and the same
``--records`` records (one score each, random timestamps within a week); then each takes the
same ``--writes`` add_score calls (a random record, a random score, a timestamp in the week),
timed one transaction each, in alternating rounds so both see the same store state.  Scores
come from ``--distinct`` values: few distinct scores mean most writes land on a score already
present (the dense set is only read), many mean most add or remove a distinct score (the
dense set is walked and its counters written).  Reported per index: the median and p99
microseconds per write, the store keys a write sets or clears (counted through a wrapper of
the transaction), the keys and bytes of the distinct-score sets, and the median microseconds of
an all-time rank read in each mode.

    python tools/bench dense [--store URL] [--records 20000] [--writes 3000] [--distinct 100 100000]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

from fdb_leaderboard.index import Entry, IndexSettings, LeaderboardIndex, RankMode, WindowSpec, WindowUpdate
from fdb_leaderboard.store import Database, open_database, strinc

from .timing import percentile

DAY = 86_400
WEEK_START = 1_767_225_600  # a Thursday; the week's windows start here


class CountingTransaction:
    """A transaction that counts the keys its caller writes (set, clear, atomic ops)."""

    def __init__(self, tr: Any, counts: dict[str, int]) -> None:
        self._tr = tr
        self._counts = counts

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._tr, name)
        if name in ("set", "clear", "add", "max", "min", "clear_range"):

            def counted(*args: Any) -> Any:
                self._counts["writes"] += 1
                return attribute(*args)

            return counted
        return attribute


class CountingDatabase:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.counts = {"writes": 0}

    def run(self, fn: Callable[..., Any]) -> Any:
        return self.db.run(lambda tr: fn(CountingTransaction(tr, self.counts)))

    def read(self, fn: Callable[..., Any]) -> Any:
        return self.db.read(fn)


def make_index(db: Database, prefix: bytes, dense: bool) -> LeaderboardIndex:
    index = LeaderboardIndex.create(db, prefix, IndexSettings(high_score_first=True, dense_ranks=dense))
    index.update_windows(
        WindowUpdate(
            high_score_first=True,
            specs=[WindowSpec(1, WEEK_START, DAY, DAY, 7), WindowSpec(2, WEEK_START, 7 * DAY, 7 * DAY, 1)],
        )
    )
    return index


def run(url: str, records: int, writes: int, distinct: int, seed: int) -> dict[str, dict[str, float]]:
    db = open_database(url)
    rng = random.Random(seed)
    tag = rng.randrange(1 << 30).to_bytes(4, "big")
    prefixes = {False: b"\x15\x60" + tag, True: b"\x15\x61" + tag}
    try:
        indexes = {dense: make_index(db, prefix, dense) for dense, prefix in prefixes.items()}
        data = [((i,), [Entry(rng.randrange(distinct), WEEK_START + rng.randrange(7 * DAY))]) for i in range(records)]
        for index in indexes.values():
            index.bulk_load(iter(data), batch_size=1000)
        plan = [
            ((rng.randrange(records),), rng.randrange(distinct), WEEK_START + rng.randrange(7 * DAY))
            for _ in range(writes)
        ]
        times: dict[bool, list[float]] = {False: [], True: []}
        written: dict[bool, int] = {False: 0, True: 0}
        counting = CountingDatabase(db)
        counted = {
            dense: LeaderboardIndex(counting, prefix, indexes[dense].settings) for dense, prefix in prefixes.items()
        }  # type: ignore[arg-type]
        for pk, score, ts in plan:
            for dense in (False, True) if rng.random() < 0.5 else (True, False):
                before = counting.counts["writes"]
                start = time.perf_counter()
                counted[dense].add_score(pk, score, ts)
                times[dense].append((time.perf_counter() - start) * 1e6)
                written[dense] += counting.counts["writes"] - before
        out: dict[str, dict[str, float]] = {}
        for dense, index in indexes.items():
            reads = {}
            for mode in (RankMode.ORDINAL, RankMode.COMPETITION) + ((RankMode.DENSE,) if dense else ()):
                samples = []
                for _ in range(300):
                    start = time.perf_counter()
                    index.rank((rng.randrange(records),), mode=mode)
                    samples.append((time.perf_counter() - start) * 1e6)
                reads[mode.value] = statistics.median(samples)
            dense_prefix = index.layout.dense
            keys = db.read(lambda tr, p=dense_prefix: tr.get_range(p, strinc(p)))
            out["dense_ranks" if dense else "plain"] = {
                "write_p50_us": statistics.median(times[dense]),
                "write_p99_us": percentile(times[dense], 0.99),
                "keys_written_per_write": written[dense] / writes,
                "dense_keys": len(keys),
                "dense_bytes": sum(len(k) + len(v) for k, v in keys),
                **{f"rank_{mode}_us": value for mode, value in reads.items()},
            }
        if records <= 5_000:  # the checker reads everything in one transaction (5 s at most)
            assert indexes[True].check() == [], "the dense index is inconsistent"
        return out
    finally:
        for prefix in prefixes.values():
            db.run(lambda tr, p=prefix: tr.clear_range(p, strinc(p)))
        db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", default=None, help="store URL (default: a temporary embedded store, durable=false)")
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--writes", type=int, default=3_000)
    parser.add_argument("--distinct", type=int, nargs="+", default=[100, 100_000])
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        url = args.store or f"lmdb:{scratch}/store?durable=false"
        print(
            f"store {url.split('?')[0] if args.store else 'lmdb (temporary, durable=false)'}, "
            f"{args.records} records, {args.writes} writes, 9 windows (all-time, 7 days, 1 week)"
        )
        print(
            "| distinct scores | index | write p50 us | write p99 us | keys written / write "
            "| all-time rank us (ORDINAL / COMPETITION / DENSE) | dense-set keys | dense-set bytes |"
        )
        print("|" + "---|" * 8)
        for distinct in args.distinct:
            figures = run(url, args.records, args.writes, distinct, args.seed)
            for name, row in figures.items():
                ranks = " / ".join(
                    f"{row[k]:.0f}" for k in ("rank_ORDINAL_us", "rank_COMPETITION_us", "rank_DENSE_us") if k in row
                )
                print(
                    f"| {distinct} | {name} | {row['write_p50_us']:.0f} | {row['write_p99_us']:.0f} | "
                    f"{row['keys_written_per_write']:.2f} | {ranks} | {row['dense_keys']} | {row['dense_bytes']} |"
                )


if __name__ == "__main__":
    main()
