"""Long jobs on a real FoundationDB cluster stay inside its per-transaction limits.

A scale model of the 10 MB limit: the store here refuses transactions over LIMIT bytes
(FoundationDB's own ``size_limit`` transaction option, so the cluster enforces it), and the
jobs run with their step sizes scaled down by the same factor as the limit (10 MB / LIMIT).
Each job's data is several times LIMIT: done in one transaction it is refused (shown first,
with nothing stored), while in its bounded, resumable steps it completes, every commit under
LIMIT, and its results match the brute-force model.  Expiry is different by design: it
clears a window's ranges whatever they hold, so it is one small transaction.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from fdb_leaderboard.index import Entry, IndexSettings, LeaderboardIndex
from fdb_leaderboard.index.directory import WindowSpec, WindowUpdate
from fdb_leaderboard.store import TransactionTooLarge
from fdb_leaderboard.store.fdb_backend import FdbDatabase
from tests.conftest import fdb_url, private_prefix
from tests.index.test_against_model import listed
from tests.support.model import Model

LIMIT = 250_000  # bytes per transaction: FoundationDB's 10 MB / 40
SCALE = 10_000_000 // LIMIT
BATCH = 500 // SCALE + 1  # bulk_load's default batch_size, scaled
MAX_RECORDS = 200 // SCALE + 1  # fill and trim steps' default max_records, scaled
MAX_ENTRIES = 20_000 // SCALE  # fill steps' default max_entries, scaled
RECORDS = 400
DAY = 1000


class LimitedDatabase(FdbDatabase):
    """FoundationDB refusing transactions over ``limit`` bytes; notes each commit's size."""

    def __init__(self, cluster_file: str, limit: int) -> None:
        super().__init__(cluster_file)
        self.limit = limit
        self.sizes: list[int] = []

    def _commit(self, tr: Any) -> None:
        tr.options.set_size_limit(self.limit)
        size = tr.get_approximate_size().wait()
        super()._commit(tr)
        self.sizes.append(size)


@pytest.fixture
def limited() -> Iterator[tuple[LimitedDatabase, bytes]]:
    db = LimitedDatabase(fdb_url().removeprefix("fdb:"), LIMIT)
    prefix = private_prefix()
    yield db, prefix
    db.run(lambda tr: tr.clear_range(prefix, prefix + b"\xff"))  # a clear is small whatever it covers


def records(seed: int) -> list[tuple[tuple, list[Entry]]]:
    """RECORDS records of four entries over eight days (the windows cover the first four)."""
    rng = random.Random(seed)
    return [
        ((f"player{i:04d}", "x" * 20), [Entry(rng.randrange(10**6), rng.randrange(8 * DAY)) for _ in range(4)])
        for i in range(RECORDS)
    ]


def assert_boards(index: LeaderboardIndex, model: Model) -> None:
    """Each ready window: the count, the top 20, the bottom 5 and sampled ranks, as the model."""
    rng = random.Random(1)
    for window, filling in (model.windows or {}).items():
        assert not filling
        window_type, start, _ = window
        ts = None if window_type == 0 else start
        expected = model.top(RECORDS, window_type, ts, (), "ORDINAL")
        assert index.count(window_type, ts) == len(expected)
        assert [listed(e) for e in index.top(20, window_type, ts)] == expected[:20]
        for row in rng.sample(expected, min(10, len(expected))):
            assert index.rank(row.pk, window_type, ts) == row.rank


def job(db: LimitedDatabase, run: Any) -> list[int]:
    """The commit sizes of ``run()``: several, each under the limit, together over it."""
    db.sizes.clear()
    run()
    sizes = list(db.sizes)
    assert len(sizes) > 1 and max(sizes) <= LIMIT < sum(sizes), sizes
    return sizes


def loaded(db: LimitedDatabase, prefix: bytes, aggregation: str) -> tuple[LeaderboardIndex, Model]:
    """An index with its windows (all-time, four days), bulk loaded in scaled batches."""
    index = LeaderboardIndex.create(db, prefix, IndexSettings(high_score_first=False, aggregation=aggregation))
    model = Model(aggregation)
    windows = [(1, day * DAY, (day + 1) * DAY) for day in range(4)]
    index.update_windows(WindowUpdate(specs=[WindowSpec(1, 0, DAY, DAY, 4)]))
    model.update_windows(False, windows)
    data = records(7)
    with pytest.raises(TransactionTooLarge):  # the whole load in one transaction
        index.write_batch(data)
    assert index.count() == 0
    sizes = job(db, lambda: index.bulk_load(data, batch_size=BATCH, max_entries=MAX_ENTRIES))
    assert sum(sizes) > 2 * LIMIT  # (the windows' build writes each of their keys once, in chunks of its own)
    for pk, entries in data:
        model.save(pk, [((), e.score, e.timestamp, ()) for e in entries])
    return index, model


def test_bulk_load_in_bounded_batches(limited: tuple[LimitedDatabase, bytes]) -> None:
    db, prefix = limited
    index, model = loaded(db, prefix, "BEST")
    assert_boards(index, model)


def test_fill_of_new_windows_over_a_large_index_in_bounded_steps(limited: tuple[LimitedDatabase, bytes]) -> None:
    db, prefix = limited
    index, model = loaded(db, prefix, "BEST")
    weeks = [(2, 0, 4 * DAY), (2, 4 * DAY, 8 * DAY)]
    result = index.update_windows(
        WindowUpdate(specs=[WindowSpec(1, 0, DAY, DAY, 4), WindowSpec(2, 0, 4 * DAY, 4 * DAY, 2)])
    )
    assert sorted((w.type, w.start, w.end) for w in result.filling) == weeks
    model.update_windows(False, [*(w for w in model.windows if w[0] == 1), *weeks])
    with pytest.raises(TransactionTooLarge):  # the whole fill in one step
        index.fill_step(max_records=10**6, max_entries=10**6)
    assert [(w.type, w.start) for w in index.directory().filling()] == [(2, 0), (2, 4 * DAY)]
    job(db, lambda: index.fill(max_records=MAX_RECORDS, max_entries=MAX_ENTRIES))
    model.finish_fill()
    assert_boards(index, model)


def test_trim_in_bounded_steps(limited: tuple[LimitedDatabase, bytes]) -> None:
    """SUM: trimming folds each record's entries outside every window but all-time (days 4-7
    here) into its carried total; the totals, so every board, stay as they were."""
    db, prefix = limited
    index, model = loaded(db, prefix, "SUM")
    with pytest.raises(TransactionTooLarge):  # the whole trim in one step
        index.trim(8 * DAY, max_records=10**6)
    sizes = job(db, lambda: index.trim(8 * DAY, max_records=MAX_RECORDS))
    assert len(sizes) >= RECORDS // MAX_RECORDS
    model.trim(8 * DAY)
    assert_boards(index, model)


def test_expiry_of_a_window_with_many_entries_is_one_small_transaction(limited: tuple[LimitedDatabase, bytes]) -> None:
    db, prefix = limited
    index, model = loaded(db, prefix, "BEST")
    first_day = model.top(RECORDS, 1, 0, (), None)
    assert len(first_day) > RECORDS / 3
    db.sizes.clear()
    gone = index.expire(2 * DAY)
    assert [(w.type, w.start, w.end) for w in gone] == [(1, 0, DAY), (1, DAY, 2 * DAY)]
    assert len(db.sizes) == 1 and db.sizes[0] < 5_000, db.sizes  # range clears, whatever they hold
    model.expire(2 * DAY)
    assert_boards(index, model)
