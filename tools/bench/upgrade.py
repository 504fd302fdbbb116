#!/usr/bin/env python3
"""The upgrade of an index to format 3 (the submission counters recounted), timed.

It loads ``--records`` records (``--entries`` entries each, spread over ``--days`` daily windows
and the all-time window) into a fresh index with ``bulk_load``, makes it what release 0.1.0
leaves (its format not recorded, every head's counters zero: every head is rewritten), then
runs ``LeaderboardIndex.upgrade`` in batches of ``--batch`` records and prints records/s, the
batches' latency and that ``verify`` holds every counter afterwards.  With ``--writers`` threads
writing scores meanwhile (to other records) it prints their p50/p99 during the upgrade, and
for 3 s before it without one.

    tools/bench upgrade --records 100000 --store 'lmdb:/tmp/up?durable=false'
    tools/bench upgrade --records 20000 --store fdb:/tmp/fdb1/fdb.cluster --writers 4
"""

from __future__ import annotations

import random
import sys
import threading
import time

from fdb_leaderboard.index import Entry, IndexSettings, LeaderboardIndex, WindowUpdate
from fdb_leaderboard.index.directory import WindowSpec
from fdb_leaderboard.proto import index_pb2
from fdb_leaderboard.store import strinc

from .options import add_store, parser
from .stores import ScratchStore
from .timing import BatchClock, Sample, Span, merge, time_until

T0, DAY = 1_700_006_400, 86_400


def unrecord(index: LeaderboardIndex) -> None:
    """The index as release 0.1.0 leaves it: no format in its options, no counters in its heads."""
    layout = index.layout

    def options(tr) -> None:
        stored = index_pb2.IndexOptions.FromString(tr.get(layout.options_key))
        stored.format = 0
        tr.set(layout.options_key, stored.SerializeToString())

    index.db.run(options)
    begin = layout.records
    while True:

        def batch(tr, begin: bytes = begin) -> bytes | None:
            rows = tr.get_range(begin, strinc(layout.records), 500)
            for key, raw in rows:
                head = index_pb2.RecordHead.FromString(raw)
                for state in head.windows:
                    state.submissions = 0
                tr.set(key, head.SerializeToString())
            return rows[-1][0] + b"\x00" if len(rows) == 500 else None

        following = index.db.run(batch)
        if following is None:
            return
        begin = following


def main() -> int:
    options = parser(__doc__)
    add_store(options)
    options.add_argument("--records", type=int, default=20_000)
    options.add_argument("--entries", type=int, default=3, help="entries per record")
    options.add_argument("--days", type=int, default=7, help="daily windows")
    options.add_argument("--batch", type=int, default=200, help="records per upgrade transaction")
    options.add_argument("--writers", type=int, default=0, help="threads writing scores during the upgrade")
    args = options.parse_args()
    with ScratchStore(args.store, "upgrade", durable=False) as scratch:
        db, prefix = scratch.db, scratch.prefix()
        index = LeaderboardIndex.create(db, prefix, IndexSettings())
        index.update_windows(WindowUpdate(all_time=True, specs=[WindowSpec(1, T0, DAY, DAY, args.days)]))
        rng = random.Random(1)
        records = (
            (
                (f"p{n}",),
                [Entry(rng.randrange(10**6), T0 + rng.randrange(args.days * DAY)) for _ in range(args.entries)],
            )
            for n in range(args.records)
        )
        with Span() as load:
            index.bulk_load(records)
        print(f"loaded {args.records:,} records in {load.seconds:.1f} s ({scratch.described()})")
        unrecord(index)
        index = LeaderboardIndex.open(db, prefix)
        assert index.format == 2
        stop = threading.Event()

        def writing() -> tuple[list[threading.Thread], list[Sample]]:
            samples: list[Sample] = []

            def write(number: int) -> None:
                submit = lambda n: index.add_score((f"w{number}-{n % 100}",), n, T0 + n % (args.days * DAY))  # noqa: E731
                samples.append(time_until(submit, stop.is_set))

            threads = [threading.Thread(target=write, args=(n,)) for n in range(args.writers)]
            for thread in threads:
                thread.start()
            return threads, samples

        def stopped(threads: list[threading.Thread], samples: list[Sample]) -> Sample:
            stop.set()
            for thread in threads:
                thread.join()
            stop.clear()
            return merge(samples)

        writers: dict[str, Sample] = {}
        if args.writers:  # the writers alone first: their latency without an upgrade
            alone = writing()
            time.sleep(3.0)
            writers["alone, before"] = stopped(*alone)
        during = writing()
        clock = BatchClock("upgrade", args.records)
        done = index.upgrade(3, max_records=args.batch, progress=lambda step: clock.tick(step.records_done))
        seconds = clock.seconds()
        writers["during the upgrade"] = stopped(*during)
        assert done.done and done.format == 3 and LeaderboardIndex.open(db, prefix).format == 3
        batches = clock.sample(done.records_processed)
        print(
            f"upgraded to format {done.format}: {done.records_processed:,} records in {seconds:.1f} s "
            f"({done.records_processed / seconds:,.0f} records/s), {done.heads_changed:,} heads rewritten, "
            f"{len(batches.latencies_ns)} batches of {args.batch}: p50 {batches.percentile_us(50) / 1000:.0f} ms, "
            f"max {max(batches.latencies_ns) / 1e6:.0f} ms"
        )
        for label, sample in writers.items():
            if sample.ops:
                print(
                    f"{args.writers} writers {label}: {sample.ops:,} scores, p50 "
                    f"{sample.percentile_us(50) / 1000:.1f} ms, p99 {sample.percentile_us(99) / 1000:.1f} ms"
                )
        problems = index.check(10)
        print("verify: every counter holds its entries" if not problems else f"verify: {problems}")
        return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
