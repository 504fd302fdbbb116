#!/usr/bin/env python3
"""A digest of every key and value a fixed set of writes stores, for indexes of every kind
without columns: two revisions storing the same bytes print the same digest.

    .venv/bin/python tools/dev/layout_digest.py                                   # this checkout
    git archive main | tar -x -C /tmp/main-tree
    PYTHONPATH=/tmp/main-tree .venv/bin/python tools/dev/layout_digest.py          # another revision

Each of 26 indexes (BEST/SUM/LATEST x high/low score first x grouped or not x dense ranks or
not, DOUBLE scores, the JDK hash) gets three windows, 60 scores, entries added, a record saved,
one deleted, metadata, an expiry and a fill, on a fresh embedded store (no durability, no
transaction time limit); the digest covers the whole store in key order.
"""

from __future__ import annotations

import hashlib
import sys
import tempfile

import fdb_leaderboard
from fdb_leaderboard.index import Entry, IndexSettings, LeaderboardIndex, WindowUpdate
from fdb_leaderboard.rankedset import HashFunction
from fdb_leaderboard.store import open_database


def configurations() -> list[dict]:
    kinds = [
        {"aggregation": aggregation, "high_score_first": high_first, "group_size": grouped, "dense_ranks": dense}
        for aggregation in ("BEST", "SUM", "LATEST")
        for high_first in (True, False)
        for grouped in (0, 1)
        for dense in (False, True)
    ]
    return [{**kind, "context_size": 1} for kind in kinds] + [
        {"score_type": "DOUBLE"},
        {"hash_function": HashFunction.JDK},
    ]


def write(index: LeaderboardIndex, options: dict) -> None:
    index.update_windows(WindowUpdate(windows=[(1, 0, 1000), (1, 1000, 2000), (2, 0, 5000)]))
    group = ("eu",) if options.get("group_size") else ()
    context = ("lvl",) if options.get("context_size") else ()
    for i in range(60):
        score: int | float = (i * 37) % 23 - 5
        if options.get("score_type") == "DOUBLE":
            score += 0.5
        index.add_score((f"p{i % 17}",), score, i * 31, context=context, group=group)
    index.add_entries(("q",), [Entry(3, 5, context, group), Entry(9, 1500, context, group)])
    index.save_record(("p1",), [Entry(4, 7, context, group)])
    index.delete_record(("p2",))
    index.set_metadata(("p3",), {"name": "P3"})
    index.expire(1000)
    index.fill()


def main() -> int:
    print(f"fdb_leaderboard from {fdb_leaderboard.__file__}", file=sys.stderr)
    with tempfile.TemporaryDirectory() as directory:
        db = open_database(f"lmdb:{directory}/store?durable=false&transaction_seconds=0")
        try:
            for number, options in enumerate(configurations()):
                write(LeaderboardIndex.create(db, b"L%03d" % number, IndexSettings(**options)), options)
            pairs = db.run(lambda tr: list(tr.get_range(b"", b"\xff")))
        finally:
            db.close()
    digest = hashlib.sha256()
    for key, value in pairs:
        digest.update(len(key).to_bytes(4, "big") + key + len(value).to_bytes(4, "big") + value)
    print(f"{len(pairs)} keys, sha256 {digest.hexdigest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
