#!/usr/bin/env python3
"""``verify`` on an index whose ranked set is too large to check in one transaction.

It loads ``--records`` records (each a distinct score, one all-time window: one ranked set of
that many elements) into a fresh index with ``bulk_load``, then:

1. checks the set's structure the old way, ``RankedSet.check_consistency`` in one read
   transaction, and says whether it finished within the store's transaction limit (the
   embedded store enforces FoundationDB's 5 s through ``transaction_seconds``);
2. runs ``verify`` (``LeaderboardIndex.check_report``, as the service does) and prints its read
   transactions, its elapsed time, and for the batches of the structure check (those that read
   ranked-set nodes): how many, their time, the most node keys one read and the longest one;
   with ``--structure-only`` it runs only the batches of the structure check, as verify does.

    tools/bench verify --records 1000000 --structure-only [--hash JDK]
    tools/bench verify --records 200000 --store 'lmdb:/tmp/v?durable=false'
"""

from __future__ import annotations

import time

from fdb_leaderboard.index import CheckReport, Entry, IndexSettings, LeaderboardIndex, WindowUpdate
from fdb_leaderboard.index.checker import BATCH_KEYS, STRUCTURE_KEYS_PER_BATCH_KEY
from fdb_leaderboard.rankedset import HashFunction, StructureCursor
from fdb_leaderboard.store import TransactionTimedOut

from .options import add_store, parser
from .stores import ScratchStore
from .timing import Span


class BatchTimes:
    """What each batch of a check read and how long it took (from the progress callback)."""

    def __init__(self) -> None:
        self.started = self.last = time.perf_counter()
        self.nodes = 0
        self.structure_batches = 0
        self.structure_seconds = 0.0
        self.most_nodes = 0
        self.longest = 0.0  # seconds, of a structure batch

    def batch_done(self, nodes: int) -> None:
        now = time.perf_counter()
        read, seconds = nodes - self.nodes, now - self.last
        self.nodes, self.last = nodes, now
        if read:
            self.structure_batches += 1
            self.structure_seconds += seconds
            self.most_nodes = max(self.most_nodes, read)
            self.longest = max(self.longest, seconds)

    def describe(self) -> str:
        return (
            f"structure: {self.structure_batches:,} batches, {self.nodes:,} node keys read in "
            f"{self.structure_seconds:.1f} s; most node keys in one batch: {self.most_nodes:,}; "
            f"longest batch: {1000 * self.longest:.1f} ms"
        )


def one_transaction(index: LeaderboardIndex, db: object) -> str:
    ranked = index.ranked_set(index.directory().windows[0], b"")
    started = time.perf_counter()
    try:
        problems = db.read(ranked.check_consistency)  # type: ignore[attr-defined]
    except TransactionTimedOut as exc:
        return f"timed out after {time.perf_counter() - started:.1f} s: {exc}"
    return f"finished in {time.perf_counter() - started:.2f} s, {len(problems)} problems"


def structure_only(index: LeaderboardIndex, db: object, batch_keys: int, times: BatchTimes) -> tuple[int, list[str]]:
    """The structure check's batches as verify runs them (one read transaction each)."""
    ranked = index.ranked_set(index.directory().windows[0], b"")
    max_keys = batch_keys * STRUCTURE_KEYS_PER_BATCH_KEY
    problems: list[str] = []
    cursor: StructureCursor | None = StructureCursor()
    batches = 0
    while cursor is not None:
        found: list[str] = []

        def batch(tr, start=cursor, found=found):  # type: ignore[no-untyped-def]
            found.clear()
            return ranked.check_structure(tr, start, max_keys, lambda message: found.append(message) is not None)

        cursor, read = db.read(batch)  # type: ignore[attr-defined]
        problems += found
        batches += 1
        times.batch_done(times.nodes + read)
    return batches, problems


def main() -> None:
    options = parser(__doc__, whole=True)
    add_store(options)
    options.add_argument("--records", type=int, default=200_000)
    options.add_argument("--batch-keys", type=int, default=BATCH_KEYS)
    options.add_argument(
        "--hash", choices=[h.value for h in HashFunction], default="MURMUR3", help="the ranked sets' level hash"
    )
    options.add_argument("--structure-only", action="store_true", help="run only the structure check's batches")
    args = options.parse_args()
    with ScratchStore(args.store, "verify", durable=False, map_size=8 << 30) as scratch:
        db, url = scratch.db, scratch.described()
        index = LeaderboardIndex.create(db, scratch.prefix(), IndexSettings(hash_function=HashFunction(args.hash)))
        index.update_windows(WindowUpdate())
        with Span() as load:
            loaded = index.bulk_load(((f"p{i}",), [Entry(i, i)]) for i in range(args.records))
        print(f"{url}: loaded {loaded:,} records in {load.seconds:.1f} s", flush=True)
        print(f"check_consistency in one transaction: {one_transaction(index, db)}", flush=True)
        times = BatchTimes()
        if args.structure_only:
            batches, problems = structure_only(index, db, args.batch_keys, times)
            print(f"structure check, batch_keys={args.batch_keys}: {batches:,} read transactions, ", end="")
            print(f"{len(problems)} problems")
        else:
            report: CheckReport = index.check_report(
                batch_keys=args.batch_keys, progress=lambda r: times.batch_done(r.nodes)
            )
            print(f"verify, batch_keys={args.batch_keys}: {report.describe()}; {len(report.problems)} problems")
        print(f"elapsed {time.perf_counter() - times.started:.1f} s; {times.describe()}")


if __name__ == "__main__":
    main()
