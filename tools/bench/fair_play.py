#!/usr/bin/env python3
"""What score rules and hidden records cost a submission: store operations, bytes and CPU.

    .venv/bin/python tools/bench fair-play                      # the embedded store (durable)
    .venv/bin/python tools/bench fair-play --store fdb:/path/to/fdb.cluster
    .venv/bin/python tools/bench fair-play --code /tmp/base --kinds plain   # another revision's code

On identical indexes of ``--records`` records with four windows (all-time, day, week, month), it
runs the same ``--calls`` submissions on each, in rotating order round by round, and prints per
submission: read rounds, reads, mutations, bytes written (``Database.stats``), this process's
CPU time and the p50/p99 latency.  The kinds:

- ``plain``: no score rules, nothing hidden (what every index is unless an admin sets rules);
- ``rules``: every rule set (score range, per-window and per-minute limits) but none refusing;
- ``hidden``: no rules, and every submission goes to a hidden record (stored, ranked nowhere).

``--code DIR`` imports the package from DIR (e.g. an older revision unpacked there) to compare
revisions with the same script; kinds that revision lacks cannot run there.
"""

from __future__ import annotations

import os
import random
import sys


def _code_dir() -> str:
    if "--code" in sys.argv:
        return sys.argv[sys.argv.index("--code") + 1]
    return os.path.join(os.path.dirname(__file__), "..", "..")


sys.path.insert(0, _code_dir())

from fdb_leaderboard.index import LeaderboardIndex  # noqa: E402

# isort: split
# The package is imported already (from --code): the harness's own path does not change it.
from .idempotency import measure, options, prepared, print_rows  # noqa: E402
from .stores import ScratchStore  # noqa: E402
from .timing import Sample, turns  # noqa: E402


def prepare(kind: str, index: LeaderboardIndex, pks: list[str]) -> None:
    if kind == "rules":
        from fdb_leaderboard.index import ScoreRules

        index.set_score_rules(ScoreRules(0, 10**9, 1_000_000, 1_000_000))
    elif kind == "hidden":
        for pk in pks:
            index.hide_record((pk,), "benchmark")


def main() -> None:
    parser = options(__doc__)
    parser.add_argument("--kinds", default="plain,rules,hidden", help="comma-separated: plain, rules, hidden")
    parser.add_argument("--code", default=None, help="import the package from this directory")
    args = parser.parse_args()
    kinds = args.kinds.split(",")
    rng = random.Random(2)
    rows: dict[str, list[Sample]] = {kind: [] for kind in kinds}
    with ScratchStore(args.store, "fair") as scratch:
        pks, made = prepared(scratch, args.records, len(kinds))
        indexes = dict(zip(kinds, made, strict=True))
        targets = pks[: args.records // 10]  # the records submissions go to (hidden, for "hidden")
        for kind, index in indexes.items():
            prepare(kind, index, targets)
        for round_ in range(args.rounds):
            calls = [(rng.choice(targets), rng.randrange(10**6)) for _ in range(args.calls)]
            for kind in turns(kinds, round_):
                rows[kind].append(measure(indexes[kind], [(pk, score, None) for pk, score in calls]))
        described = scratch.described()
    print(f"store {described}, {args.records} records, 4 windows, {args.calls} submissions x {args.rounds} rounds")
    print_rows(rows, args)


if __name__ == "__main__":
    main()
