"""A check in parts over key ranges (index/check_parts.py), on every store: the parts, run at
once, look at exactly what one whole check looks at and find the same problems, whatever the
number of parts; each part stops where the next one starts."""

from __future__ import annotations

import random

import pytest

from fdb_leaderboard.index import Entry, IndexSettings, LeaderboardIndex, WindowUpdate
from fdb_leaderboard.index import tuplecodec as tuples
from fdb_leaderboard.index.check_parts import merged
from fdb_leaderboard.store import Database

DAY = 86_400


def _board(db: Database, prefix: bytes, settings: IndexSettings, count: int = 1500) -> LeaderboardIndex:
    index = LeaderboardIndex.create(db, prefix, settings)
    index.update_windows(
        WindowUpdate(high_score_first=True, windows=[(1, i * DAY, (i + 1) * DAY) for i in range(3)] + [(2, 0, 3 * DAY)])
    )
    rng = random.Random(count)
    group = (lambda i: (f"g{i % 3}",)) if settings.group_size else (lambda i: ())
    index.bulk_load(
        [((i,), [Entry(rng.randrange(40), rng.randrange(3 * DAY), (), group(i))]) for i in range(count)], 250
    )
    index.hide_record((7,), "test")
    return index


def _counts(report) -> tuple:
    return (report.records, report.entries, report.elements, report.ranked_sets, report.windows)


@pytest.mark.parametrize("grouped", [False, True])
def test_parts_check_what_a_whole_check_checks(db: Database, prefix: bytes, grouped: bool) -> None:
    settings = IndexSettings(dense_ranks=True, group_size=1 if grouped else 0)
    index = _board(db, prefix, settings)
    whole = index.check_report(batch_keys=40)
    assert whole.problems == [] and whole.complete
    for parts in (1, 2, 3, 7, 40):
        tokens = index.check_parts(parts)
        assert 1 <= len(tokens) <= parts
        if not grouped and parts > 1:
            assert len(tokens) > 1  # cut within the records and the windows
        reports = [index.check_report(batch_keys=40, continuation=token) for token in tokens]
        assert all(report.complete for report in reports)
        assert _counts(merged(reports, 100)) == _counts(whole), parts
    assert _counts(index.check_in_parts(5, threads=3)) == _counts(whole)


def test_parts_find_what_a_whole_check_finds(db: Database, prefix: bytes) -> None:
    index = _board(db, prefix, IndexSettings(dense_ranks=True))
    window = next(w for w in index.directory().windows if w.type == 0)
    ranked = index.ranked_set(window, b"")
    middle = db.read(lambda tr: ranked.get_nth(tr, 700))
    ghost = index.layout.window_primary(window.key_bytes) + middle + tuples.pack(("ghost",))
    db.run(lambda tr: ranked.add(tr, tuples.pack((-1000, 5))))  # an element no record has
    db.run(lambda tr: tr.set(ghost, b""))  # a B-tree entry no record has
    node = ranked.prefix + tuples.pack((1,)) + db.read(lambda tr: ranked.node_at_or_before(tr, 1, middle))
    db.run(lambda tr: tr.add(node, (5).to_bytes(8, "little")))  # a count off by 5
    whole = sorted(index.check_report().problems)
    assert len(whole) >= 3
    for parts in (2, 6, 25):
        assert sorted(index.check_in_parts(parts).problems) == whole, parts
