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

Per kind and index: read rounds, reads and commits per call (``Database.stats``), this process's
CPU per call, p50 and p99 latency.

    .venv/bin/python tools/bench leagues --store fdb:/tmp/fdb1/fdb.cluster --records 5000 --calls 300
"""

from __future__ import annotations

from fdb_leaderboard.index import Entry, IndexSettings, LeaderboardIndex, Leagues
from fdb_leaderboard.index.directory import WindowSpec, WindowUpdate

from .options import add_output, add_sizes, add_store, parser
from .output import show
from .stores import ScratchStore
from .timing import Sample, merge, time_each

DAY, WEEK = 86_400, 7 * 86_400
BASE = 1_790_208_000  # a Monday: days and weeks aligned
WINDOWS = WindowUpdate(specs=[WindowSpec(1, BASE, DAY, DAY, 7), WindowSpec(2, BASE, WEEK, WEEK, 1)])
COUNTERS = ("read_rounds", "reads", "commits")


def main() -> None:
    options = parser(__doc__, whole=True)
    add_store(options, "a durable embedded store in a temp dir")
    add_sizes(options, records=5000, calls=300)
    options.add_argument("--cohort-size", type=int, default=30)
    add_output(options)
    args = options.parse_args()
    leagues = Leagues(1, args.cohort_size, 5, 3, 3)
    with ScratchStore(args.store, "leagues") as scratch:
        db = scratch.db
        indexes = {
            "plain": LeaderboardIndex.create(db, scratch.prefix(), IndexSettings()),
            "leagues": LeaderboardIndex.create(db, scratch.prefix(), IndexSettings(leagues=leagues)),
        }
        for index in indexes.values():
            index.update_windows(WINDOWS)
            for start in range(0, args.records, 200):
                batch = [
                    ((f"r{i}",), [Entry(i % 997, BASE + 10)]) for i in range(start, min(start + 200, args.records))
                ]
                index.write_batch(batch)
        kinds = {
            "again": lambda i: (f"r{i}", 2000 + i, BASE + 20),
            "new": lambda i: (f"new{i}", i, BASE + 30),
            "next day": lambda i: (f"r{i}", i, BASE + DAY + 10),
        }
        print(
            f"{scratch.described()}: {args.records} records, cohorts of {args.cohort_size}, {args.calls} calls per kind"
        )
        samples: dict[tuple[str, str], Sample] = {}
        for kind, arguments in kinds.items():
            calls: dict[str, list[Sample]] = {name: [] for name in indexes}
            for i in range(args.calls):  # the indexes take turns call by call
                for name, index in indexes.items():
                    submit = lambda call, index=index: index.add_score(*call)  # noqa: E731
                    calls[name].append(time_each(submit, [arguments(i)], db.stats.snapshot)[0])
            for name in indexes:
                samples[kind, name] = merge(calls[name])
        for index in indexes.values():
            problems = index.check()
            assert not problems, problems[:3]
    headers = ["kind", "index", "rounds", "reads", "commits", "cpu ms", "p50 ms", "p99 ms"]
    rows = [
        [
            kind,
            name,
            *(f"{sample.per_op(counter):.2f}" for counter in COUNTERS),
            f"{sample.cpu_us_per_op / 1000:.2f}",
            f"{sample.percentile_us(50) / 1000:.2f}",
            f"{sample.percentile_us(99) / 1000:.2f}",
        ]
        for (kind, name), sample in samples.items()
    ]
    figures = {
        f"{kind}/{name}": {**sample.to_json(), "per_call": {c: sample.per_op(c) for c in COUNTERS}}
        for (kind, name), sample in samples.items()
    }
    show(headers, rows, args.markdown, args.json, {"config": vars(args), "kinds": figures})


if __name__ == "__main__":
    main()
