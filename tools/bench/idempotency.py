#!/usr/bin/env python3
"""What an idempotency key costs a submission: store operations, bytes and CPU, keyed vs not.

    .venv/bin/python tools/bench idempotency                      # the embedded store (durable)
    .venv/bin/python tools/bench idempotency --store fdb:/path/to/fdb.cluster

On two identical indexes of ``--records`` records with four windows (all-time, day, week,
month), it runs the same ``--calls`` submissions on each, unkeyed on one and keyed on the other,
in alternating order round by round (so both make exactly the same changes), and prints per
submission: read rounds, reads, mutations, bytes written (the store's own counters,
``Database.stats``), this process's CPU time and the p50/p99 latency (the range over rounds); then the keyed calls sent
again (each answered from its key, nothing written).
"""

from __future__ import annotations

import argparse
import random
import uuid

from fdb_leaderboard.index import Entry, IndexSettings, LeaderboardIndex, WindowUpdate

from .options import add_output, add_sizes, add_store, parser
from .output import fmt_range, show
from .stores import ScratchStore
from .timing import Sample, time_each, turns

NOW = 1_795_420_000
WINDOWS = [(1, NOW - NOW % 86_400, NOW - NOW % 86_400 + 86_400), (2, NOW - 86_400 * 3, NOW + 86_400 * 4),
           (3, NOW - 86_400 * 20, NOW + 86_400 * 10)]  # fmt: skip
COUNTERS = ("read_rounds", "reads", "writes", "bytes_written")


def measure(index: LeaderboardIndex, calls: list[tuple[str, int, str | None]]) -> Sample:
    """One round: every call timed, with this process's CPU and the store's counters."""

    def submit(call: tuple[str, int, str | None]) -> object:
        pk, score, key = call
        return index.add_score((pk,), score, NOW, idempotency_key=key)

    return time_each(submit, calls, index.db.stats.snapshot)[0]


def options(doc: str) -> argparse.ArgumentParser:
    """The parser idempotency and fair-play share: the store, sizes and output."""
    made = parser(doc)
    add_store(made, "a durable embedded store in a temp dir")
    add_sizes(made, records=20_000, calls=1000, rounds=3)
    add_output(made)
    return made


def prepared(scratch: ScratchStore, records: int, count: int) -> tuple[list[str], list[LeaderboardIndex]]:
    """``count`` identical indexes of ``records`` records (one score each) with the four windows."""
    rng = random.Random(1)
    pks = [f"p{i:06d}" for i in range(records)]
    data = [((pk,), [Entry(rng.randrange(10**6), NOW)]) for pk in pks]
    indexes = [LeaderboardIndex.create(scratch.db, scratch.prefix(), IndexSettings()) for _ in range(count)]
    for index in indexes:
        index.update_windows(WindowUpdate(windows=WINDOWS))
        for start in range(0, len(data), 500):
            index.write_batch(data[start : start + 500])
    return pks, indexes


def main() -> None:
    args = options(__doc__).parse_args()
    rng = random.Random(2)
    rows: dict[str, list[Sample]] = {"plain": [], "keyed": [], "repeat": []}
    with ScratchStore(args.store, "idem") as scratch:
        pks, (plain, keyed) = prepared(scratch, args.records, 2)
        for round_ in range(args.rounds):
            calls = [(rng.choice(pks), rng.randrange(10**6)) for _ in range(args.calls)]
            keys = [uuid.uuid4().hex for _ in calls]
            runs = {
                "plain": (plain, [(pk, score, None) for pk, score in calls]),
                "keyed": (keyed, [(pk, score, key) for (pk, score), key in zip(calls, keys, strict=True)]),
            }
            for kind in turns(list(runs), round_):
                rows[kind].append(measure(*runs[kind]))
            rows["repeat"].append(measure(*runs["keyed"]))
        described = scratch.described()
    print(f"store {described}, {args.records} records, 4 windows, {args.calls} submissions x {args.rounds} rounds")
    print_rows(rows, args)


def print_rows(rows: dict[str, list[Sample]], args: argparse.Namespace) -> None:
    """Each kind's rounds as one row: the mean of the counts per call, the range of the times."""
    headers = ["per submission", *COUNTERS, "cpu_ms", "p50_ms", "p99_ms"]
    table = []
    figures: dict[str, list[dict[str, float]]] = {}
    for kind, rounds in rows.items():
        figures[kind] = [
            {
                **{name: sample.per_op(name) for name in COUNTERS},
                "cpu_ms": sample.cpu_us_per_op / 1000,
                "p50_ms": sample.percentile_us(50) / 1000,
                "p99_ms": sample.percentile_us(99) / 1000,
            }
            for sample in rounds
        ]
        counts = [f"{sum(r[name] for r in figures[kind]) / len(rounds):.2f}" for name in COUNTERS]
        times = [fmt_range([r[name] for r in figures[kind]]) for name in ("cpu_ms", "p50_ms", "p99_ms")]
        table.append([kind, *counts, *times])
    show(headers, table, args.markdown, args.json, {"config": vars(args), "rounds": figures})


if __name__ == "__main__":
    main()
