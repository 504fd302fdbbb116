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

import argparse
import os
import random
import sys
import tempfile


def _code_dir() -> str:
    if "--code" in sys.argv:
        return sys.argv[sys.argv.index("--code") + 1]
    return os.path.join(os.path.dirname(__file__), "..", "..")


sys.path.insert(0, _code_dir())

from fdb_leaderboard.index import Entry, IndexSettings, LeaderboardIndex, WindowUpdate  # noqa: E402
from fdb_leaderboard.store import open_database  # noqa: E402

# isort: split
# The package is imported already (from --code): bench.idempotency's own path does not change it.
from .idempotency import NOW, WINDOWS, measure, print_rows  # noqa: E402


def prepare(kind: str, index: LeaderboardIndex, pks: list[str]) -> None:
    if kind == "rules":
        from fdb_leaderboard.index import ScoreRules

        index.set_score_rules(ScoreRules(0, 10**9, 1_000_000, 1_000_000))
    elif kind == "hidden":
        for pk in pks:
            index.hide_record((pk,), "benchmark")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default=None, help="store URL (default: a durable embedded store in a temp dir)")
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--calls", type=int, default=1000, help="submissions per round and kind")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--kinds", default="plain,rules,hidden", help="comma-separated: plain, rules, hidden")
    parser.add_argument("--code", default=None, help="import the package from this directory")
    args = parser.parse_args()
    kinds = args.kinds.split(",")
    url = args.store or f"lmdb:{tempfile.mkdtemp(prefix='bench-fair-')}"
    db = open_database(url)
    rng = random.Random(1)
    pks = [f"p{i:06d}" for i in range(args.records)]
    records = [((pk,), [Entry(rng.randrange(10**6), NOW)]) for pk in pks]
    targets = pks[: args.records // 10]  # the records submissions go to (hidden, for "hidden")
    indexes = {kind: LeaderboardIndex.create(db, b"\x15\x7d" + os.urandom(4), IndexSettings()) for kind in kinds}
    for kind, index in indexes.items():
        index.update_windows(WindowUpdate(windows=WINDOWS))
        for start in range(0, len(records), 500):
            index.write_batch(records[start : start + 500])
        prepare(kind, index, targets)
    rows: dict[str, list[dict[str, float]]] = {kind: [] for kind in kinds}
    try:
        for round_ in range(args.rounds):
            calls = [(rng.choice(targets), rng.randrange(10**6)) for _ in range(args.calls)]
            order = kinds[round_ % len(kinds) :] + kinds[: round_ % len(kinds)]
            for kind in order:
                rows[kind].append(measure(indexes[kind], [(pk, score, None) for pk, score in calls]))
    finally:
        for index in indexes.values():
            db.run(lambda tr, prefix=index.prefix: tr.clear_range(prefix, prefix + b"\xff"))
        db.close()
    print(f"store {url}, {args.records} records, 4 windows, {args.calls} submissions x {args.rounds} rounds")
    print_rows(rows)


if __name__ == "__main__":
    main()
