#!/usr/bin/env python3
"""What ``dense_ranks`` costs: score writes and DENSE rank reads, against the same index without it.

Two indexes of one store get the same windows (all-time, daily, weekly) and the same
``--records`` records (one score each, random timestamps within a week); then each takes the
same ``--writes`` add_score calls (a random record, a random score, a timestamp in the week),
timed one transaction each, in alternating rounds so both see the same store state.  Scores
come from ``--distinct`` values: few distinct scores mean most writes land on a score already
present (the dense set is only read), many mean most add or remove a distinct score (the
dense set is walked and its counters written).  Reported per index: the median and p99
microseconds per write and its CPU, the store keys a write sets or clears (the store's
``writes`` counter: sets, clears, range clears, atomic ops), the keys and bytes of the
distinct-score sets, and the median microseconds of an all-time rank read in each mode.

    python tools/bench dense [--store URL] [--records 20000] [--writes 3000] [--distinct 100 100000] [--markdown]
"""

from __future__ import annotations

import random
from typing import Any

from fdb_leaderboard.index import Entry, IndexSettings, LeaderboardIndex, RankMode, WindowSpec, WindowUpdate
from fdb_leaderboard.store import strinc

from .options import add_output, add_store, parser
from .output import show
from .stores import ScratchStore
from .timing import Sample, merge, time_each, turns

DAY = 86_400
WEEK_START = 1_767_225_600  # a Thursday; the week's windows start here


def make_index(scratch: ScratchStore, dense: bool) -> LeaderboardIndex:
    settings = IndexSettings(high_score_first=True, dense_ranks=dense)
    index = LeaderboardIndex.create(scratch.db, scratch.prefix(), settings)
    index.update_windows(
        WindowUpdate(
            high_score_first=True,
            specs=[WindowSpec(1, WEEK_START, DAY, DAY, 7), WindowSpec(2, WEEK_START, 7 * DAY, 7 * DAY, 1)],
        )
    )
    return index


def run(scratch: ScratchStore, records: int, writes: int, distinct: int, seed: int) -> dict[str, dict[str, Any]]:
    db = scratch.db
    rng = random.Random(seed)
    indexes = {dense: make_index(scratch, dense) for dense in (False, True)}
    data = [((i,), [Entry(rng.randrange(distinct), WEEK_START + rng.randrange(7 * DAY))]) for i in range(records)]
    for index in indexes.values():
        index.bulk_load(iter(data), batch_size=1000)
    plan = [
        ((rng.randrange(records),), rng.randrange(distinct), WEEK_START + rng.randrange(7 * DAY)) for _ in range(writes)
    ]
    calls: dict[bool, list[Sample]] = {False: [], True: []}
    for number, write in enumerate(plan):  # the two take turns write by write
        for dense in turns([False, True], number):
            submit = lambda call, index=indexes[dense]: index.add_score(*call)  # noqa: E731
            calls[dense].append(time_each(submit, [write], db.stats.snapshot)[0])
    out: dict[str, dict[str, Any]] = {}
    for dense, index in indexes.items():
        written = merge(calls[dense])
        reads = {}
        for mode in (RankMode.ORDINAL, RankMode.COMPETITION) + ((RankMode.DENSE,) if dense else ()):
            pks = [(rng.randrange(records),) for _ in range(300)]
            reads[mode.value] = time_each(lambda pk, index=index, mode=mode: index.rank(pk, mode=mode), pks)[0]
        dense_prefix = index.layout.dense
        keys = db.read(lambda tr, p=dense_prefix: tr.get_range(p, strinc(p)))
        out["dense_ranks" if dense else "plain"] = {
            "write_p50_us": written.percentile_us(50),
            "write_p99_us": written.percentile_us(99),
            "write_cpu_us": written.cpu_us_per_op,
            "keys_written_per_write": written.per_op("writes"),
            "dense_keys": len(keys),
            "dense_bytes": sum(len(k) + len(v) for k, v in keys),
            **{f"rank_{mode}_us": sample.percentile_us(50) for mode, sample in reads.items()},
        }
    if records <= 5_000:  # the checker reads everything in one transaction (5 s at most)
        assert indexes[True].check() == [], "the dense index is inconsistent"
    return out


def main() -> None:
    options = parser(__doc__.split("\n")[0])
    add_store(options)
    options.add_argument("--records", type=int, default=20_000)
    options.add_argument("--writes", type=int, default=3_000)
    options.add_argument("--distinct", type=int, nargs="+", default=[100, 100_000])
    options.add_argument("--seed", type=int, default=1)
    add_output(options)
    args = options.parse_args()
    headers = [
        "distinct scores",
        "index",
        "write p50 us",
        "write p99 us",
        "write CPU us",
        "keys written / write",
        "all-time rank us (ORDINAL / COMPETITION / DENSE)",
        "dense-set keys",
        "dense-set bytes",
    ]
    rows = []
    figures = {}
    for distinct in args.distinct:
        with ScratchStore(args.store, "dense", durable=False) as scratch:
            described = scratch.described()
            figures[distinct] = run(scratch, args.records, args.writes, distinct, args.seed)
        for name, row in figures[distinct].items():
            ranks = " / ".join(
                f"{row[k]:.0f}" for k in ("rank_ORDINAL_us", "rank_COMPETITION_us", "rank_DENSE_us") if k in row
            )
            rows.append(
                [
                    str(distinct),
                    name,
                    f"{row['write_p50_us']:.0f}",
                    f"{row['write_p99_us']:.0f}",
                    f"{row['write_cpu_us']:.0f}",
                    f"{row['keys_written_per_write']:.2f}",
                    ranks,
                    str(row["dense_keys"]),
                    str(row["dense_bytes"]),
                ]
            )
    print(f"store {described}, {args.records} records, {args.writes} writes, 9 windows (all-time, 7 days, 1 week)")
    show(headers, rows, args.markdown, args.json, {"config": vars(args), "distinct": figures})


if __name__ == "__main__":
    main()
