#!/usr/bin/env python3
"""Conflicts, retries and throughput of 1, 2, 4, 8 writer processes, on one board and on distinct boards.

For each ``--store`` URL (``lmdb:PATH``, ``fdb:CLUSTER_FILE``) it makes fresh SUM boards
(indexes under private key prefixes), each loaded with ``--records`` records whose one entry
falls in all four windows (all-time and fixed-length day, week and 30-day windows).  Then for
each ``--writers`` count W and each layout it starts W writer processes (spawned, each with its
own connection), released together, that submit scores for ``--seconds``:

- *one board*: every writer submits to the same board, each to a uniformly random record of
  it (so two writers rarely pick the same record, but they share the ranked sets' nodes);
- *distinct boards*: writer i submits only to board i (nothing shared but the cluster).

Each submission is ``add_score`` of a random score 1..1000 at one timestamp, acknowledged when
the call returns.  Per run it prints submissions/s (all writers), p50/p99 latency, and from
every writer's ``Database.stats`` the retries and conflicts (FoundationDB ``not_committed``)
per submission.  After each run it checks, for every board written, that nothing was lost or
doubled: SUM adds each acknowledged score exactly once, so each record's all-time value and
daily-window value must equal its loaded score plus the scores acknowledged for it (read back
by a paged scan of the whole window, compared record by record), and the windows' counts must
equal the records loaded.

On FoundationDB every writer sets ``report_conflicting_keys`` on its commits (the seam
``FdbDatabase._commit``): after a conflict it reads which of its read conflict ranges another
commit wrote, and the keys are classified by what the index keeps there (record head,
ranked-set node and its level, primary B-tree, entries, the idempotency marker...).  The
embedded store serializes writers with LMDB's write lock: it has no conflicts; its writers
wait instead.

    tools/bench conflicts --store lmdb:/tmp/conflicts-lmdb --store fdb:/tmp/fdb1/fdb.cluster \\
        --records 20000 --writers 1 --writers 2 --writers 4 --writers 8 --seconds 10 \\
        --json /tmp/conflicts.json --markdown
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import sys
import time
import uuid
from collections import Counter
from typing import Any

import fdb.tuple

from fdb_leaderboard.index import Entry, IndexSettings, LeaderboardIndex, ScanType
from fdb_leaderboard.index.directory import WindowSpec, WindowUpdate
from fdb_leaderboard.store import Database, open_database, strinc

from . import options
from .output import show
from .timing import counter_growth, merge, time_until

DAY, WEEK, MONTH = 86_400, 7 * 86_400, 30 * 86_400
NOW = 1_790_000_000  # inside one window of each type (they are aligned on 0)
DAY_TYPE = 1
WINDOWS = WindowUpdate(
    high_score_first=True,
    specs=[
        WindowSpec(DAY_TYPE, NOW - NOW % DAY, DAY, DAY, 1),
        WindowSpec(2, NOW - NOW % WEEK, WEEK, WEEK, 1),
        WindowSpec(3, NOW - NOW % MONTH, MONTH, MONTH, 1),
    ],
)
SETTINGS = IndexSettings(aggregation="SUM", high_score_first=True)
CONFLICTING_KEYS = b"\xff\xff/transaction/conflicting_keys/"
SCAN_PAGE = 1000
LAYOUTS = ("one board", "distinct boards")


# -- boards -------------------------------------------------------------------------------------


def board_prefix(run_id: bytes, number: int) -> bytes:
    return b"\x15\x7d" + run_id + bytes([number])


def load_board(db: Database, prefix: bytes, records: int, seed: int) -> dict[tuple, int]:
    """A fresh SUM board of ``records`` records (one entry each, in every window); their scores."""
    index = LeaderboardIndex.create(db, prefix, SETTINGS)
    index.update_windows(WINDOWS)
    rng = random.Random(seed)
    scores = {(f"p{i}",): rng.randrange(1, 1001) for i in range(records)}
    loaded = index.bulk_load(((pk, [Entry(score, NOW - 60)]) for pk, score in scores.items()), batch_size=500)
    if loaded != records:
        raise SystemExit(f"loaded {loaded} records, expected {records}")
    return scores


def stored_values(index: LeaderboardIndex, window_type: int, timestamp: int | None) -> dict[tuple, int]:
    """Every record's value in one window, by a paged scan (bounded transactions)."""
    values: dict[tuple, int] = {}
    continuation = None
    scan = ScanType.BY_RANK if window_type == 0 else ScanType.BY_TIME_WINDOW
    while True:
        page = index.scan(
            scan, window_type=window_type, timestamp=timestamp, limit=SCAN_PAGE, continuation=continuation
        )
        for entry in page.entries:
            if entry.pk in values:
                raise SystemExit(f"record {entry.pk} appears twice in window {window_type}")
            values[entry.pk] = int(entry.score)
        continuation = page.continuation
        if continuation is None:
            return values


def check_board(index: LeaderboardIndex, expected: dict[tuple, int]) -> dict[str, int]:
    """Records whose stored value is below (lost) or above (doubled) what was acknowledged."""
    out = Counter()
    for window_type, timestamp in ((0, None), (DAY_TYPE, NOW)):
        stored = stored_values(index, window_type, timestamp)
        if len(stored) != len(expected) or index.count(window_type, timestamp) != len(expected):
            out["wrong_count"] += 1
        for pk, value in expected.items():
            got = stored.get(pk)
            if got is None or got < value:
                out["lost"] += 1
            elif got > value:
                out["doubled"] += 1
    return {"lost": out["lost"], "doubled": out["doubled"], "wrong_count": out["wrong_count"]}


# -- what a conflicting key is --------------------------------------------------------------------

PARTS = {0: "options", 1: "record head", 2: "primary B-tree", 3: "ranked sets", 4: "fill cursor", 5: "entry"}


def leading_items(key: bytes, count: int) -> list[Any]:
    """The first ``count`` tuple items of ``key`` (fewer if it ends or stops being a tuple)."""
    items, position = [], 0
    while len(items) < count and position < len(key):
        try:
            item, position = fdb.tuple._decode(key, position)
        except Exception:  # a range bound need not be a whole tuple
            break
        items.append(item)
    return items


def classify(key: bytes, prefixes: list[bytes]) -> str:
    """What the index keeps at ``key`` (a conflicting read range's first key)."""
    for prefix in prefixes:
        if not key.startswith(prefix):
            continue
        items = leading_items(key[len(prefix) :], 3)  # part, then (ranked sets) window and level
        if not items:
            return "index prefix"
        name = PARTS.get(items[0], f"part {items[0]!r}")
        if items[0] == 2 and len(items) == 1:
            return "latest timestamp"
        if items[0] == 3:
            if len(items) == 1:
                return "directory"
            if len(items) == 3 and isinstance(items[1], int) and isinstance(items[2], int):
                return f"ranked-set node, level {items[2]}"
        return name
    if key.startswith(fdb.tuple.pack(("lb-committed",))):
        return "idempotency marker"
    return "outside the boards"


def report_conflicts(db: Database, found: Counter[str], prefixes: list[bytes]) -> None:
    """Make ``db``'s commits report the read ranges another commit wrote, into ``found``."""
    import fdb as fdb_module

    def commit(tr: Any) -> None:
        tr.options.set_report_conflicting_keys()
        try:
            tr.commit().wait()
        except fdb_module.FDBError as error:
            if error.code == 1020:
                rows = tr.get_range(CONFLICTING_KEYS, CONFLICTING_KEYS + b"\xff")
                for kv in rows:
                    if kv.value == b"1":  # the first key of a conflicting range
                        found[classify(kv.key[len(CONFLICTING_KEYS) :], prefixes)] += 1
                found["(conflicted commits)"] += 1
            raise

    db._commit = commit  # type: ignore[method-assign]


# -- writers --------------------------------------------------------------------------------------


def writer(
    url: str, prefix: bytes, prefixes: list[bytes], records: int, seconds: float, seed: int, start: Any, out: Any
) -> None:
    db = open_database(url)
    found: Counter[str] = Counter()
    if url.startswith("fdb:"):
        report_conflicts(db, found, prefixes)
    index = LeaderboardIndex.open(db, prefix)
    rng = random.Random(seed)
    acked: Counter[tuple] = Counter()
    failures: list[BaseException] = []  # not acknowledged: the check tells whether each was kept anyway

    def submit(_: int) -> None:
        pk, score = (f"p{rng.randrange(records)}",), rng.randrange(1, 1001)
        index.add_score(pk, score, NOW)
        acked[pk] += score

    start.wait()
    before = db.stats.snapshot()
    deadline = time.perf_counter() + seconds
    sample = time_until(submit, lambda: time.perf_counter() >= deadline, failures)
    sample.counters = counter_growth(before, db.stats.snapshot())
    db.close()
    out.put(
        {
            "prefix": prefix,
            "acked": dict(acked),
            "sample": sample,
            "errors": [f"{type(exc).__name__}: {exc}" for exc in failures],
            "conflicting": dict(found),
        }
    )


def run_writers(
    url: str, prefixes: list[bytes], all_prefixes: list[bytes], records: int, seconds: float, seed: int
) -> list[dict[str, Any]]:
    context = multiprocessing.get_context("spawn")
    start, out = context.Event(), context.Queue()
    workers = [
        context.Process(target=writer, args=(url, prefix, all_prefixes, records, seconds, seed * 1000 + i, start, out))
        for i, prefix in enumerate(prefixes)
    ]
    for worker in workers:
        worker.start()
    time.sleep(3 + len(workers))  # every writer opened its store (spawning is slow on a busy machine)
    start.set()
    results = [out.get(timeout=seconds + 600) for _ in workers]
    for worker in workers:
        worker.join(60)
    return results


# -- the benchmark --------------------------------------------------------------------------------


def measure_store(url: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    db = open_database(url)
    run_id = uuid.uuid4().bytes[:4].replace(b"\xff", b"\xfe")
    most = max(args.writers)
    prefixes = [board_prefix(run_id, number) for number in range(most + 1)]  # 0: the shared board
    expected: dict[bytes, dict[tuple, int]] = {}
    started = time.perf_counter()
    for number, prefix in enumerate(prefixes):
        expected[prefix] = load_board(db, prefix, args.records, args.seed + number)
    print(f"{url}: loaded {len(prefixes)} boards of {args.records:,} records in {time.perf_counter() - started:.0f} s")
    rows = []
    try:
        for _ in range(args.rounds):
            for writers in args.writers:
                for layout in LAYOUTS:
                    used = [prefixes[0]] * writers if layout == "one board" else prefixes[1 : writers + 1]
                    seed = args.seed + len(rows)
                    results = run_writers(url, used, prefixes, args.records, args.seconds, seed)
                    for result in results:
                        for pk, score in result["acked"].items():
                            expected[result["prefix"]][pk] += score
                    checked = Counter()
                    for prefix in sorted(set(used)):
                        checked.update(check_board(LeaderboardIndex.open(db, prefix), expected[prefix]))
                    row = summarize(url, layout, writers, args.seconds, results, checked)
                    rows.append(row)
                    print_row(row)
    finally:
        for prefix in prefixes:
            db.run(lambda tr, p=prefix: tr.clear_range(p, strinc(p)))
        db.close()
    return rows


def summarize(
    url: str, layout: str, writers: int, seconds: float, results: list[dict[str, Any]], checked: Counter
) -> dict[str, Any]:
    pooled = merge([r["sample"] for r in results])
    done = pooled.ops
    stats = Counter(pooled.counters)
    conflicting = Counter()
    for result in results:
        conflicting.update(result["conflicting"])
    per = max(done, 1)
    return {
        "store": url.split(":", 1)[0],
        "url": url,
        "layout": layout,
        "writers": writers,
        "seconds": seconds,
        "submissions": done,
        "per_second": done / seconds,
        "p50_ms": pooled.percentile_us(50) / 1000,
        "p99_ms": pooled.percentile_us(99) / 1000,
        "retries_per_submission": stats["retries"] / per,
        "conflicts_per_submission": stats["conflicts"] / per,
        "unknown_results": stats["unknown_results"],
        "errors": sum(len(r["errors"]) for r in results),
        "error_examples": [e for r in results for e in r["errors"]][:3],
        "lost": checked["lost"],
        "doubled": checked["doubled"],
        "wrong_counts": checked["wrong_count"],
        "conflicting_ranges": dict(conflicting),
        "stats": dict(stats),
    }


def print_row(row: dict[str, Any]) -> None:
    print(
        f"{row['store']:<5} {row['layout']:<15} writers {row['writers']}: {row['per_second']:>7,.0f} submissions/s "
        f"p50 {row['p50_ms']:.2f} ms p99 {row['p99_ms']:.2f} ms, retries {row['retries_per_submission']:.3f} "
        f"conflicts {row['conflicts_per_submission']:.3f} per submission; errors {row['errors']}, "
        f"lost {row['lost']}, doubled {row['doubled']}, wrong counts {row['wrong_counts']}",
        flush=True,
    )
    if row["conflicting_ranges"]:
        ranges = sorted(row["conflicting_ranges"].items(), key=lambda kv: -kv[1])
        print("      conflicting read ranges: " + ", ".join(f"{name} {count}" for name, count in ranges), flush=True)


HEADERS = ["store", "layout", "writers", "submissions/s", "p50 ms", "p99 ms", "retries/submission"]
HEADERS += ["conflicts/submission", "lost", "doubled"]


def cells(r: dict[str, Any]) -> list[str]:
    """A row of the closing table."""
    return [
        r["store"],
        r["layout"],
        str(r["writers"]),
        f"{r['per_second']:,.0f}",
        f"{r['p50_ms']:.2f}",
        f"{r['p99_ms']:.2f}",
        f"{r['retries_per_submission']:.3f}",
        f"{r['conflicts_per_submission']:.3f}",
        str(r["lost"]),
        str(r["doubled"]),
    ]


def main() -> None:
    parser = options.parser(__doc__, whole=True)
    parser.add_argument("--store", action="append", required=True, help="a store URL (repeat to compare)")
    parser.add_argument("--writers", action="append", type=int, help="writer processes (repeat; default 1 2 4 8)")
    parser.add_argument("--records", type=int, default=20_000, help="records per board (default: %(default)s)")
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds per run (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=1, help="times every configuration runs (default: 1)")
    parser.add_argument("--seed", type=int, default=1)
    options.add_output(parser)
    args = parser.parse_args()
    args.writers = args.writers or [1, 2, 4, 8]
    if min(args.writers) < 1 or max(args.writers) > 200 or args.records < 10 or args.seconds <= 0:
        parser.error("--writers must be 1..200, --records at least 10, --seconds positive")
    rows = []
    for url in args.store:
        rows += measure_store(url, args)
    print()
    figures = {"command": sys.argv, "loadavg": os.getloadavg(), "rows": rows}
    show(HEADERS, [cells(r) for r in rows], args.markdown, args.json, figures)
    if any(r["lost"] or r["doubled"] or r["wrong_counts"] for r in rows):
        sys.exit("LOST OR DOUBLED WRITES: see the rows above")


if __name__ == "__main__":
    main()
