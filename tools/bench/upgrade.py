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

import argparse
import random
import statistics
import sys
import tempfile
import threading
import time
import uuid

from fdb_leaderboard.index import Entry, IndexSettings, LeaderboardIndex, WindowUpdate
from fdb_leaderboard.index.directory import WindowSpec
from fdb_leaderboard.proto import index_pb2
from fdb_leaderboard.store import open_database, strinc

from .timing import percentile

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
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", help="store URL (default: a temporary embedded store, durable=false)")
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--entries", type=int, default=3, help="entries per record")
    parser.add_argument("--days", type=int, default=7, help="daily windows")
    parser.add_argument("--batch", type=int, default=200, help="records per upgrade transaction")
    parser.add_argument("--writers", type=int, default=0, help="threads writing scores during the upgrade")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        url = args.store or f"lmdb:{directory}/store?durable=false"
        db = open_database(url)
        prefix = b"\x15\x7e" + uuid.uuid4().bytes[:4]
        try:
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
            started = time.perf_counter()
            index.bulk_load(records)
            print(f"loaded {args.records:,} records in {time.perf_counter() - started:.1f} s ({url})")
            unrecord(index)
            index = LeaderboardIndex.open(db, prefix)
            assert index.format == 2
            latencies: list[float] = []
            stop = threading.Event()
            writer_times: list[float] = []

            def write(number: int) -> None:
                n = 0
                while not stop.is_set():
                    began = time.perf_counter()
                    index.add_score((f"w{number}-{n % 100}",), n, T0 + n % (args.days * DAY))
                    writer_times.append(time.perf_counter() - began)
                    n += 1

            def writing(seconds: float | None) -> list[threading.Thread]:
                threads = [threading.Thread(target=write, args=(n,)) for n in range(args.writers)]
                for thread in threads:
                    thread.start()
                if seconds is not None:  # the writers alone first: their latency without an upgrade
                    time.sleep(seconds)
                    stop.set()
                    for thread in threads:
                        thread.join()
                    stop.clear()
                return threads

            alone: list[float] = []
            if args.writers:
                writing(3.0)
                alone, writer_times[:] = sorted(writer_times), []
            writers = writing(None)
            began = last = time.perf_counter()

            def batch_done(step) -> None:
                nonlocal last
                now = time.perf_counter()
                latencies.append(now - last)
                last = now

            done = index.upgrade(3, max_records=args.batch, progress=batch_done)
            seconds = time.perf_counter() - began
            stop.set()
            for thread in writers:
                thread.join()
            assert done.done and done.format == 3 and LeaderboardIndex.open(db, prefix).format == 3
            print(
                f"upgraded to format {done.format}: {done.records_processed:,} records in {seconds:.1f} s "
                f"({done.records_processed / seconds:,.0f} records/s), {done.heads_changed:,} heads rewritten, "
                f"{len(latencies)} batches of {args.batch}: p50 {statistics.median(latencies) * 1000:.0f} ms, "
                f"max {max(latencies) * 1000:.0f} ms"
            )
            for label, times in (("alone, before", alone), ("during the upgrade", sorted(writer_times))):
                if times:
                    print(
                        f"{args.writers} writers {label}: {len(times):,} scores, p50 "
                        f"{statistics.median(times) * 1000:.1f} ms, p99 {percentile(times, 0.99) * 1000:.1f} ms"
                    )
            problems = index.check(10)
            print("verify: every counter holds its entries" if not problems else f"verify: {problems}")
            return 0 if not problems else 1
        finally:
            db.run(lambda tr: tr.clear_range_startswith(prefix))
            db.close()


if __name__ == "__main__":
    sys.exit(main())
