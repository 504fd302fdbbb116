#!/usr/bin/env python3
"""Durable submissions side by side: the embedded store's two durable modes, Redis's AOF with
``appendfsync always`` and ``everysec``, and this disk's floor, in one short run.

    .venv/bin/python tools/bench durable [--records 20000] [--ops 400] [--rounds 3] [--threads 8]

Each round times, in turn (the first to go changing every round, as the shared disk's mood changes by
the second):

- the floor: a bare 1-KB ``write`` + ``fdatasync`` appended to a file in the store's directory
  (``bench.floors.sync_floor``), the least one durable commit costs here;
- ``add_score`` in process on the default store (the redo log), with ``redo_log=false``
  (every commit's pages synced) and with ``durable=false`` (nothing synced: the ceiling that no
  durable mode passes, what the index's own work allows), an index of ``--records`` records with
  daily, weekly and all-time windows (BEST), one caller and ``--threads`` concurrent callers
  (group commit);
- Redis (``redis-server``, redis-py): three ``ZADD GT`` in one pipeline per submission (the same
  three boards), one client and ``--threads`` clients, with ``appendfsync always`` and ``everysec``.

Then an untimed counting pass under ``strace -f -c`` (every thread: the store's checkpoints and
Redis's background fsyncs included) gives the fsync/fdatasync calls per submission of each.
Prints the medians of the rounds: submissions/s, p50 and p99, and the ratios to Redis and to the
floor (the floor's rate: one commit per floor time).
"""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from fdb_leaderboard.index import Entry, IndexSettings, LeaderboardIndex
from fdb_leaderboard.index.directory import WindowSpec, WindowUpdate
from fdb_leaderboard.store import open_database

from .floors import floor_us, sync_floor
from .options import add_output, parser
from .output import show
from .processes import RedisServer, redis_missing
from .timing import Sample, merge, time_callers, turns

DAY, WEEK = 86_400, 7 * 86_400
NOW = (int(time.time()) // DAY) * DAY + DAY // 2
PREFIX = b"\x15\x01"
MODES = {
    "ours, redo log (default)": "",
    "ours, pages synced (redo_log=false)": "?redo_log=false",
    "ours, not durable (durable=false)": "?durable=false",
}
REDIS = {"Redis AOF always": "always", "Redis AOF everysec": "everysec"}


def counted_syncs(pid: int, work: Callable[[], None]) -> int:
    """fsync + fdatasync calls made by every thread of ``pid`` while ``work`` runs."""
    out = tempfile.mktemp(prefix="bench-strace-")
    tracer = subprocess.Popen(
        ["strace", "-f", "-c", "-e", "trace=fsync,fdatasync", "-o", out, "-p", str(pid)],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert tracer.stderr is not None
    tracer.stderr.readline()  # "Process N attached": tracing from here on
    time.sleep(0.2)
    try:
        work()
        time.sleep(1.2)  # everysec's background fsync, the store's next checkpoint
    finally:
        tracer.send_signal(signal.SIGINT)
        tracer.wait()
    text = Path(out).read_text()
    os.unlink(out)
    return sum(
        int(m.group(1))
        for m in re.finditer(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?f(?:data)?sync$", text, re.M)
    )


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--records", type=int, default=20_000)
    options.add_argument("--ops", type=int, default=400, help="submissions per timed run")
    options.add_argument("--rounds", type=int, default=3)
    options.add_argument("--threads", type=int, default=8)
    options.add_argument(
        "--dir", default="bench-results", help="where the stores and the floor's files go (this disk; made if missing)"
    )
    options.add_argument("--seed", type=int, default=47)
    add_output(options)
    args = options.parse_args()
    missing = redis_missing("redis-server") or (None if shutil.which("strace") else "strace is missing")
    if missing:
        raise SystemExit(missing)
    rng = random.Random(args.seed)
    total = (args.rounds + len(MODES) + len(REDIS)) * 2 * args.ops
    subs = [
        (rng.randrange(args.records), rng.randrange(1, 10**6), NOW + rng.randrange(-DAY // 2, DAY // 2))
        for _ in range(total)
    ]
    os.makedirs(args.dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="bench-durable-", dir=args.dir)
    try:
        indexes, dbs = {}, {}
        for name, options in MODES.items():
            db = open_database(f"lmdb:{work}/{len(dbs)}{options}")
            index = LeaderboardIndex.create(db, PREFIX, IndexSettings(aggregation="BEST", high_score_first=True))
            index.update_windows(
                WindowUpdate(
                    specs=[WindowSpec(1, NOW - 14 * DAY, DAY, DAY, 28), WindowSpec(2, NOW - 14 * DAY, WEEK, WEEK, 4)]
                )
            )
            index.bulk_load(
                ((pk,), [Entry(rng.randrange(1, 10**6), NOW - rng.randrange(DAY), ())]) for pk in range(args.records)
            )
            dbs[name], indexes[name] = db, index
        servers = {
            name: RedisServer("redis-server", ["--save", "", "--appendonly", "yes", "--appendfsync", fsync]).__enter__()
            for name, fsync in REDIS.items()
        }
        day_key = lambda ts: f"day:{ts // DAY}"  # noqa: E731
        week_key = lambda ts: f"week:{ts // WEEK}"  # noqa: E731

        def redis_call(client) -> Callable[[int], object]:
            def submit(i: int) -> object:
                pk, score, ts = subs[i]
                pipe = client.pipeline(transaction=False)
                for key in ("all", day_key(ts), week_key(ts)):
                    pipe.zadd(key, {str(pk): score}, gt=True)
                return pipe.execute()

            return submit

        def ours_call(index: LeaderboardIndex) -> Callable[[int], object]:
            return lambda i: index.add_score((subs[i][0],), subs[i][1], subs[i][2])

        for server in servers.values():
            client = server.client()
            pipe = client.pipeline(transaction=False)
            for pk in range(args.records):
                pipe.zadd("all", {str(pk): rng.randrange(1, 10**6)})
            pipe.execute()

        results: dict[tuple[str, int], list[Sample]] = {}
        floors = []
        split: dict[int, list[tuple[int, float, float]]] = {}  # callers -> (commits, log seconds, seconds)
        offset = 0
        for round_ in range(args.rounds):
            floors.append(floor_us(sync_floor(work, 300, args.seed + round_)))
            for callers in (1, args.threads):
                for name in turns([*MODES, *REDIS], round_):
                    if name in MODES:
                        calls = [ours_call(indexes[name])] * callers
                        log_ = dbs[name].redo_log
                        before = (dbs[name].commits, log_.append_seconds) if log_ is not None else None
                    else:
                        calls = [redis_call(servers[name].client()) for _ in range(callers)]
                    results.setdefault((name, callers), []).append(
                        time_callers(calls, range(offset, offset + args.ops))
                    )
                    if name in MODES and before is not None:
                        seconds = results[(name, callers)][-1].seconds
                        commits = dbs[name].commits - before[0]
                        split.setdefault(callers, []).append(
                            (commits, dbs[name].redo_log.append_seconds - before[1], seconds)
                        )
                offset += args.ops

        syncs = {}
        for callers in (1, args.threads):
            for name in list(MODES) + list(REDIS):
                if name in MODES:
                    calls, pid = [ours_call(indexes[name])] * callers, os.getpid()
                else:
                    calls = [redis_call(servers[name].client()) for _ in range(callers)]
                    pid = servers[name].process.pid
                # Fresh submissions: a ZADD GT that changes nothing writes nothing to Redis's AOF.
                items = range(offset, offset + args.ops)
                syncs[(name, callers)] = counted_syncs(pid, lambda c=calls, i=items: time_callers(c, i)) / args.ops
                offset += args.ops

        floor = statistics.median(floors)
        print(
            f"\nfloor (1-KB write + fdatasync, appended or preallocated, median of {args.rounds} rounds): "
            f"{floor:.0f} us = {1e6 / floor:,.0f} commits/s"
        )
        print(f"{args.records:,} records, {args.ops} submissions per run, median of {args.rounds} alternating rounds\n")
        headers = ["system", "callers", "subs/s", "p50 ms", "p99 ms", "fsyncs/sub"]
        headers += ["vs always", "vs everysec", "vs floor"]
        rows, figures = [], {}
        for callers in (1, args.threads):
            rate = {name: statistics.median(s.rate for s in results[(name, callers)]) for name in [*MODES, *REDIS]}
            for name in [*MODES, *REDIS]:
                pooled = merge(results[(name, callers)])
                p50, p99 = pooled.percentile_us(50) / 1e3, pooled.percentile_us(99) / 1e3
                figures[f"{name}, {callers} callers"] = {"subs_per_s": rate[name], "p50_ms": p50, "p99_ms": p99}
                rows.append(
                    [
                        name,
                        str(callers),
                        f"{rate[name]:,.0f}",
                        f"{p50:.2f}",
                        f"{p99:.2f}",
                        f"{syncs[(name, callers)]:.2f}",
                        f"{rate[name] / rate['Redis AOF always']:.2f}x",
                        f"{rate[name] / rate['Redis AOF everysec']:.2f}x",
                        f"{rate[name] * floor / 1e6:.2f}x",
                    ]
                )
        show(headers, rows, args.markdown, args.json, {"config": vars(args), "floor_us": floor, "systems": figures})
        print(
            "\nfsyncs/sub: an untimed pass of as many submissions under strace -f -c (every thread; the "
            "store's checkpoints and "
            "Redis's background fsync included); vs floor: submissions/s over the floor's commits/s"
        )
        for callers, runs in split.items():
            per_commit = statistics.median(args.ops / c for c, _, _ in runs)
            log_ms = statistics.median(s / c for c, s, _ in runs) * 1e3
            all_ms = statistics.median(s / c for c, _, s in runs) * 1e3
            print(
                f"redo log, {callers} callers (medians of the rounds): {per_commit:.2f} submissions per commit; per "
                f"commit {log_ms:.3f} ms writing and syncing the log ({log_ms * 1e3 / floor:.2f}x the floor), "
                f"{all_ms:.3f} ms in all ({all_ms * 1e3 / floor:.2f}x)"
            )
        for number, name in enumerate(dbs):
            # The redo log's pin keeps LMDB from reusing any page until the next checkpoint.
            size = os.path.getsize(os.path.join(work, str(number), "data.mdb"))
            print(f"{name}: data file {size / 2**20:,.1f} MiB after the run")
        for server in servers.values():
            server.__exit__()
        for db in dbs.values():
            db.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
