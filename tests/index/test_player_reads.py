"""The index's reads for players and game backends, against the brute-force model of tests/support/model.py.

DENSE ranks, display metadata, many ranks and friends boards, pages and percentiles, movement
between windows, reverse rank scans, rank for a full score key and the score-trim function.
Each test builds the same random data (small score ranges: many ties) in the index and in the
model, on every store backend, and compares every answer with the model's.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from fdb_leaderboard.errors import FailedPrecondition, InvalidArgument, NotFound
from fdb_leaderboard.index import Entry, IndexSettings, LeaderboardIndex, RankMode, ScanType
from fdb_leaderboard.index.directory import Rebuild, WindowUpdate
from fdb_leaderboard.store import Database
from tests.support.model import Listed, Model

WINDOWS = [(1, 0, 10), (1, 10, 20), (1, 20, 30), (2, 0, 30)]
# (window type, timestamp) of every board of WINDOWS, all-time first
BOARDS = [(0, None), (1, 5), (1, 15), (1, 25), (2, 0)]
MODES = {"ORDINAL": RankMode.ORDINAL, "COMPETITION": RankMode.COMPETITION, "DENSE": RankMode.DENSE}


def listed(entry: Any) -> Listed | None:
    if entry is None:
        return None
    return Listed(tuple(entry.pk), entry.score, entry.timestamp, tuple(entry.context), tuple(entry.group), entry.rank)


def build(
    db: Database,
    prefix: bytes,
    seed: int,
    *,
    aggregation: str = "BEST",
    high_score_first: bool = True,
    dense: bool = True,
    records: int = 24,
    scores: int = 6,
    windows: list[tuple[int, int, int]] = WINDOWS,
) -> tuple[LeaderboardIndex, Model, random.Random]:
    """An index and the model holding the same random records (some rewritten, some deleted)."""
    rng = random.Random(seed)
    settings = IndexSettings(aggregation=aggregation, high_score_first=high_score_first, dense_ranks=dense)
    index = LeaderboardIndex.create(db, prefix, settings)
    model = Model(aggregation, high_score_first)
    index.update_windows(WindowUpdate(high_score_first=high_score_first, windows=windows))
    model.update_windows(high_score_first, windows)
    pks = [(f"p{i:02d}",) for i in range(records)]
    for _ in range(records * 2):
        pk = rng.choice(pks)
        action = rng.random()
        if action < 0.1:
            assert index.delete_record(pk) == model.delete(pk)
            continue
        raws = [((), rng.randrange(scores), rng.randrange(30), ()) for _ in range(rng.randrange(1, 3))]
        entries = [Entry(score, ts) for _, score, ts, _ in raws]
        if action < 0.3:
            index.save_record(pk, entries)
            model.save(pk, raws)
        else:
            index.add_entries(pk, entries)
            model.add(pk, raws)
    return index, model, rng


# -- DENSE ranks ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("aggregation", "high_score_first"), [("BEST", True), ("SUM", False), ("LATEST", True)])
def test_dense_ranks_match_the_model(db: Database, prefix: bytes, aggregation: str, high_score_first: bool) -> None:
    index, model, _ = build(db, prefix, 7, aggregation=aggregation, high_score_first=high_score_first)
    for window_type, ts in BOARDS:
        where = {"window_type": window_type, "timestamp": ts}
        size = model.count(window_type, ts, ())
        assert [listed(e) for e in index.top(size, mode=RankMode.DENSE, **where)] == model.top(
            size, window_type, ts, (), "DENSE"
        )
        for pk in [*model.records, ("absent",)]:
            assert index.rank(pk, mode=RankMode.DENSE, **where) == model.rank(pk, window_type, ts, (), "DENSE")
            got = index.around(pk, 2, 1, mode=RankMode.DENSE, **where)
            assert [listed(e) for e in got] == model.around(pk, 2, 1, window_type, ts, (), "DENSE")
        ranks = [e.rank for e in index.top(size, mode=RankMode.DENSE, **where)]
        assert ranks == sorted(ranks) and all(b - a in (0, 1) for a, b in itertools.pairwise(ranks))
    assert index.check() == []


def test_dense_ranks_share_and_do_not_skip(db: Database, prefix: bytes) -> None:
    index = LeaderboardIndex.create(db, prefix, IndexSettings(high_score_first=True, dense_ranks=True))
    index.update_windows(WindowUpdate(high_score_first=True))
    for pk, score, ts in [("a", 10, 1), ("b", 10, 2), ("c", 8, 3), ("d", 8, 4), ("e", 5, 5)]:
        index.add_score((pk,), score, ts)
    assert [(e.pk[0], e.rank) for e in index.top(5, mode=RankMode.DENSE)] == [
        ("a", 0),
        ("b", 0),
        ("c", 1),
        ("d", 1),
        ("e", 2),
    ]
    assert [e.rank for e in index.top(5, mode=RankMode.COMPETITION)] == [0, 0, 2, 2, 4]
    index.add_score(("e",), 12, 6)  # a new best score: every other dense rank moves down one
    assert [(e.pk[0], e.rank) for e in index.top(5, mode=RankMode.DENSE)] == [
        ("e", 0),
        ("a", 1),
        ("b", 1),
        ("c", 2),
        ("d", 2),
    ]
    index.delete_record(("a",))  # b still holds 10: the distinct score stays
    assert index.rank(("c",), mode=RankMode.DENSE) == 2
    index.delete_record(("b",))  # now 10 is gone
    assert index.rank(("c",), mode=RankMode.DENSE) == 1
    assert index.check() == []


def test_dense_ranks_need_the_setting(db: Database, prefix: bytes) -> None:
    index = LeaderboardIndex.create(db, prefix, IndexSettings())
    index.update_windows(WindowUpdate())
    index.add_score(("a",), 1, 1)
    for read in (
        lambda: index.rank(("a",), mode=RankMode.DENSE),
        lambda: index.top(3, mode=RankMode.DENSE),
        lambda: index.around(("a",), 1, 1, mode=RankMode.DENSE),
        lambda: index.scan(ScanType.BY_RANK, mode=RankMode.DENSE),
    ):
        with pytest.raises(FailedPrecondition, match="dense_ranks"):
            read()


def test_dense_sets_are_built_by_fills_and_rebuilds(db: Database, prefix: bytes) -> None:
    """A window added over stored scores gets its distinct-score set from the fill (phase 2);
    a direction flip rebuilds it; writes between fill steps keep it exact."""
    index, model, rng = build(db, prefix, 11, windows=[])
    index.update_windows(WindowUpdate(high_score_first=True, windows=WINDOWS))
    model.update_windows(True, WINDOWS)
    while not index.fill_step(max_records=3, max_entries=4).done:
        pk = (f"p{rng.randrange(24):02d}",)
        score, ts = rng.randrange(6), rng.randrange(30)
        index.add_score(pk, score, ts)
        model.add(pk, [((), score, ts, ())])
    model.finish_fill()
    assert index.check() == []
    for window_type, ts in BOARDS:
        for pk in model.records:
            assert index.rank(pk, window_type, ts, mode=RankMode.DENSE) == model.rank(pk, window_type, ts, (), "DENSE")
    index.update_windows(WindowUpdate(high_score_first=False, windows=WINDOWS, rebuild=Rebuild.ALWAYS))
    model.update_windows(False, WINDOWS, rebuild="ALWAYS")
    index.fill()
    model.finish_fill()
    assert index.check() == []
    for window_type, ts in BOARDS:
        size = model.count(window_type, ts, ())
        assert [listed(e) for e in index.top(size, window_type, ts, mode=RankMode.DENSE)] == model.top(
            size, window_type, ts, (), "DENSE"
        )


def test_the_checker_finds_a_wrong_distinct_score_set(db: Database, prefix: bytes) -> None:
    index, _model, _ = build(db, prefix, 3)
    window = index.directory().windows[0]
    dense = index.dense_set(window, b"")
    stored = db.read(lambda tr: dense.range(tr))
    db.run(lambda tr: dense.remove(tr, stored[0]))
    problems = index.check()
    assert any("distinct-score set" in p for p in problems), problems


def test_expiring_a_window_clears_its_distinct_scores(db: Database, prefix: bytes) -> None:
    index, _, _ = build(db, prefix, 5)
    index.expire(10)
    gone = index.layout.window_dense(index.directory().windows[0].key_bytes)  # the all-time window is kept
    assert db.read(lambda tr: tr.get_range(gone, gone + b"\xff", 1))
    for key in (1,):  # lb_key 1 is (1, 0, 10), expired
        window_prefix = index.layout.window_dense(bytes([0x15, key]))
        assert db.read(lambda tr, p=window_prefix: tr.get_range(p, p + b"\xff")) == []


# -- display metadata ---------------------------------------------------------------------------------


def test_metadata_comes_with_every_listing(db: Database, prefix: bytes) -> None:
    index, model, rng = build(db, prefix, 21)
    names: dict[tuple, dict[str, str]] = {}
    for pk in list(model.records)[::2]:
        names[pk] = {"name": f"Player {pk[0]}", "country": rng.choice(["FR", "JP", "BR"])}
        assert index.set_metadata(pk, names[pk]) == names[pk]
    heads = db.read(lambda tr: tr.get_range(index.layout.records, index.layout.records + b"\xff"))
    expected = model.top(100, 0, None, (), "ORDINAL")
    top = index.top(100)
    assert [listed(e) for e in top] == expected  # metadata changed no score or rank
    assert [e.metadata for e in top] == [names.get(e.pk, {}) for e in expected]
    assert db.read(lambda tr: tr.get_range(index.layout.records, index.layout.records + b"\xff")) == heads
    for pk in model.records:
        assert index.metadata(pk) == names.get(pk, {})
        entry = index.rank_and_entry(pk)
        assert entry is not None and entry.metadata == names.get(pk, {})
        assert all(e.metadata == names.get(e.pk, {}) for e in index.around(pk, 2, 2, 1, 15))
    for scan_type, where in [
        (ScanType.BY_VALUE, {}),
        (ScanType.BY_RANK, {}),
        (ScanType.BY_TIME_WINDOW, {"window_type": 2, "timestamp": 0}),
    ]:
        page = index.scan(scan_type, limit=5, **where)
        assert page.entries and all(e.metadata == names.get(e.pk, {}) for e in page.entries)
    assert index.metadata(("absent",)) is None


def test_metadata_updates_merge_remove_and_go_with_the_record(db: Database, prefix: bytes) -> None:
    index = LeaderboardIndex.create(db, prefix, IndexSettings())
    index.update_windows(WindowUpdate())
    index.add_score(("a",), 5, 1, metadata={"name": "Ann", "avatar": "a.png"})
    assert index.metadata(("a",)) == {"name": "Ann", "avatar": "a.png"}
    assert index.set_metadata(("a",), {"country": "FR"}, merge=True, remove=["avatar"]) == {
        "name": "Ann",
        "country": "FR",
    }
    assert index.set_metadata(("a",), {"name": "Annie"}) == {"name": "Annie"}  # replaces every field
    index.add_score(("a",), 7, 2, metadata={"level": "3"})  # merged with the write
    assert index.top(1)[0].metadata == {"name": "Annie", "level": "3"}
    assert index.set_metadata(("a",), {}) == {}
    assert db.read(lambda tr: tr.get(index.layout.metadata_key(b"\x05\x02a\x00\x00"))) is None  # nothing stored
    index.set_metadata(("a",), {"name": "Ann"})
    index.delete_record(("a",))
    index.add_score(("a",), 1, 3)
    assert index.metadata(("a",)) == {}  # the deleted record's metadata went with it


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({f"f{i}": "x" for i in range(17)}, "at most 16 fields"),
        ({"": "x"}, "1 to 64"),
        ({"x" * 65: "x"}, "1 to 64"),
        ({"bad name": "x"}, "letters, digits"),
        ({"name": 5}, "must be a string"),
        ({"name": "\ud800"}, "not valid Unicode"),
        ({"name": "x" * 1100}, "at most 1024 bytes"),
        (["name"], "must be a mapping"),
    ],
)
def test_metadata_bounds(db: Database, prefix: bytes, fields: Any, message: str) -> None:
    index = LeaderboardIndex.create(db, prefix, IndexSettings())
    index.update_windows(WindowUpdate())
    index.add_score(("a",), 5, 1, metadata={"name": "Ann"})
    with pytest.raises(InvalidArgument, match=message):
        index.set_metadata(("a",), fields)
    with pytest.raises(InvalidArgument, match=message):  # refused with a score: the score is not written either
        index.add_score(("a",), 9, 2, metadata=fields)
    assert index.top(5)[0].score == 5 and index.metadata(("a",)) == {"name": "Ann"}


def test_metadata_of_a_record_that_does_not_exist(db: Database, prefix: bytes) -> None:
    index = LeaderboardIndex.create(db, prefix, IndexSettings())
    with pytest.raises(NotFound, match="does not exist"):
        index.set_metadata(("ghost",), {"name": "Boo"})
    index.add_score(("a",), 5, 1)
    with pytest.raises(InvalidArgument, match="remove needs merge"):
        index.set_metadata(("a",), {}, remove=["name"])


# -- many ranks, friends boards -------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["ORDINAL", "COMPETITION", "DENSE"])
def test_ranks_of_many_records_and_friends_boards(db: Database, prefix: bytes, mode: str) -> None:
    index, model, rng = build(db, prefix, 31)
    index.set_metadata(next(iter(model.records)), {"name": "first"})
    everyone = [(f"p{i:02d}",) for i in range(24)] + [("stranger",)]
    for window_type, ts in BOARDS:
        friends = [*rng.sample(everyone, 9), everyone[0], everyone[0]]  # one listed twice
        got = index.ranks(friends, window_type, ts, mode=MODES[mode])
        assert [listed(e) for e in got] == model.ranks_of(friends, window_type, ts, (), mode)
        assert all(e is None or e.metadata == index.metadata(e.pk) for e in got)
        board = index.board_of(friends, window_type, ts, mode=MODES[mode])
        assert [listed(e) for e in board] == model.board_of(friends, window_type, ts, (), mode)
    assert index.ranks([]) == [] and index.board_of([("stranger",)]) == []


def test_many_ranks_are_bounded(db: Database, prefix: bytes) -> None:
    index = LeaderboardIndex.create(db, prefix, IndexSettings())
    index.update_windows(WindowUpdate())
    with pytest.raises(InvalidArgument, match="at most 200 records"):
        index.ranks([(i,) for i in range(201)])
    with pytest.raises(InvalidArgument, match="at most 200 records"):
        index.board_of([(i,) for i in range(201)])
    with pytest.raises(InvalidArgument, match="list of primary keys"):
        index.ranks("alice")
    assert index.ranks([(i,) for i in range(200)]) == [None] * 200


# -- pages and percentiles ----------------------------------------------------------------------------


def test_pages_percentiles_and_scores_for_percentiles(db: Database, prefix: bytes) -> None:
    index, model, _ = build(db, prefix, 41)
    for window_type, ts in BOARDS:
        total = model.count(window_type, ts, ())
        for size in (1, 4, 7):
            for number in range(1, total // size + 3):
                got = index.page(number, size, window_type, ts, mode=RankMode.COMPETITION)
                entries, expected_total, pages = model.page(number, size, window_type, ts, (), "COMPETITION")
                assert [listed(e) for e in got.entries] == entries
                assert (got.page, got.size, got.total, got.pages) == (number, size, expected_total, pages)
        for pk in [*model.records, ("absent",)]:
            assert index.percentile(pk, window_type, ts) == model.percentile(pk, window_type, ts, ())
        for percent in (0, 10, 33.3, 50, 90, 99.9, 100):
            got = index.score_for_percentile(percent, window_type, ts)
            assert got == pytest.approx(model.score_for_percentile(percent, window_type, ts, ()))


def test_page_and_percentile_errors(db: Database, prefix: bytes) -> None:
    index = LeaderboardIndex.create(db, prefix, IndexSettings(high_score_first=True))
    index.update_windows(WindowUpdate(high_score_first=True))
    assert index.score_for_percentile(50) is None
    assert index.page(1, 10).entries == [] and index.page(1, 10).pages == 0
    for score, pk in enumerate("abcd"):
        index.add_score((pk,), score, 1)
    assert [index.percentile((pk,)) for pk in "dcba"] == [75.0, 50.0, 25.0, 0.0]
    assert index.score_for_percentile(100) == 3 and index.score_for_percentile(0) == 0
    assert index.score_for_percentile(50) == 1.5
    for call, message in [
        (lambda: index.page(0, 10), "page must be positive"),
        (lambda: index.page(1, 0), "page size must be positive"),
        (lambda: index.page(1, 1001), "at most 1000 records"),
        (lambda: index.score_for_percentile(101), "from 0 to 100"),
        (lambda: index.score_for_percentile(-1), "from 0 to 100"),
        (lambda: index.score_for_percentile("50"), "from 0 to 100"),
    ]:
        with pytest.raises(InvalidArgument, match=message):
            call()


# -- movement and rank history ------------------------------------------------------------------------


def test_movement_and_history(db: Database, prefix: bytes) -> None:
    index, model, _ = build(db, prefix, 51)
    for ts in (5, 15, 25):
        window = model.resolve(1, ts)
        previous = model.previous_window(window)
        for pk in [*model.records, ("absent",)]:
            moved = index.movement(pk, 1, ts, mode=RankMode.DENSE)
            assert (moved.window.start, moved.window.end) == window[1:]
            assert listed(moved.entry) == model.rank_and_entry(pk, 1, ts, (), "DENSE")
            if previous is None:
                assert moved.previous_window is None and moved.previous_entry is None
            else:
                assert (moved.previous_window.start, moved.previous_window.end) == previous[1:]
                assert listed(moved.previous_entry) == model.rank_and_entry(pk, 1, previous[1], (), "DENSE")
            if moved.rank is not None and moved.previous_rank is not None:
                assert moved.change == moved.previous_rank - moved.rank
            else:
                assert moved.change is None
    for pk in [*model.records, ("absent",)]:
        for until, count in [(None, 10), (15, 10), (29, 2), (-1, 5)]:
            got = index.rank_history(pk, 1, until, count)
            expected = model.history(pk, 1, until, count, (), "ORDINAL")
            assert [((w.type, w.start, w.end), listed(e)) for w, e in got.windows] == expected
            ranked = [(w, e) for w, e in expected if e is not None]
            best = min(ranked, key=lambda found: found[1].rank, default=None)
            assert (
                None
                if got.best is None
                else ((got.best[0].type, got.best[0].start, got.best[0].end), listed(got.best[1]))
            ) == best


def test_movement_errors(db: Database, prefix: bytes) -> None:
    index, _, _ = build(db, prefix, 52)
    with pytest.raises(InvalidArgument, match="no previous window"):
        index.movement(("p01",), 0, 0)
    with pytest.raises(InvalidArgument, match="at most 100 windows"):
        index.rank_history(("p01",), 1, None, 101)
    with pytest.raises(InvalidArgument, match="count must be positive"):
        index.rank_history(("p01",), 1, None, 0)


# -- reverse rank scans, pages cut at their limit -----------------------------------------------------


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("count_duplicates", [True, False])
def test_rank_scans_both_ways_never_exceed_their_limit(
    db: Database, prefix: bytes, reverse: bool, count_duplicates: bool
) -> None:
    """Twelve records on four full score keys: with the reference layout (count_duplicates off)
    a position is a key several records share, and a page must still stop at its limit and
    resume inside the position."""
    settings = IndexSettings(count_duplicates=count_duplicates, dense_ranks=True, high_score_first=False)
    index = LeaderboardIndex.create(db, prefix, settings)
    index.update_windows(WindowUpdate(windows=[(1, 0, 100)]))
    model = Model("BEST")
    model.update_windows(False, [(1, 0, 100)])
    for i in range(12):
        score, ts = [(1, 5), (2, 5), (2, 6), (3, 5)][i % 4]
        index.add_score((f"r{i:02d}",), score, ts)
        model.add((f"r{i:02d}",), [((), score, ts, ())])
    rows = model.board(model.resolve(1, 50), ())
    distinct = sorted({row.element for row in rows})
    # Positions: records, or distinct keys in the reference layout (as its ORDINAL ranks are).
    positions = list(range(12)) if count_duplicates else [distinct.index(row.element) for row in rows]
    for scan_type, where in [(ScanType.BY_RANK, {}), (ScanType.BY_TIME_WINDOW, {"window_type": 1, "timestamp": 50})]:
        for low, high in [(None, None), (1, 2), (0, 0), (2, None)]:
            chosen = [
                (row, position)
                for row, position in zip(rows, positions, strict=True)
                if (low is None or position >= low) and (high is None or position <= high)
            ]
            for mode in ("ORDINAL", "COMPETITION", "DENSE"):
                expected = []
                for row, position in chosen:
                    entry = model.listed(rows, row, mode)
                    if mode == "ORDINAL" and not count_duplicates:
                        entry = Listed(entry.pk, entry.score, entry.timestamp, (), (), position)
                    elif mode == "COMPETITION" and not count_duplicates:  # distinct keys with a better score
                        better = sum(1 for element in distinct if element[0] < row.stored)
                        entry = Listed(entry.pk, entry.score, entry.timestamp, (), (), better)
                    expected.append(entry)
                if reverse:
                    expected.reverse()
                for limit in (0, 1, 2, 5):
                    got: list = []
                    continuation = None
                    for _ in range(30):
                        page = index.scan(
                            scan_type,
                            low=low,
                            high=high,
                            limit=limit,
                            continuation=continuation,
                            reverse=reverse,
                            mode=MODES[mode],
                            **where,
                        )
                        assert not limit or len(page.entries) <= limit
                        got.extend(listed(e) for e in page.entries)
                        continuation = page.continuation
                        if continuation is None:
                            break
                    assert got == expected, (scan_type, low, high, mode, limit)


def test_a_reverse_continuation_is_not_a_forward_one(db: Database, prefix: bytes) -> None:
    index, _, _ = build(db, prefix, 61)
    page = index.scan(ScanType.BY_RANK, limit=2, reverse=True)
    with pytest.raises(InvalidArgument, match="another window, group or kind of scan"):
        index.scan(ScanType.BY_RANK, limit=2, continuation=page.continuation)


# -- the Record Layer's rank for a score key, and its score trim ---------------------------------------


def test_rank_for_a_full_score_key(db: Database, prefix: bytes) -> None:
    index, model, _ = build(db, prefix, 71)
    for window_type, ts in BOARDS:
        for score in range(-1, 7):
            assert index.rank_for_score((score,), window_type, ts) == index.rank_for_score(score, window_type, ts)
            for at in (-1, 0, 7, 15, 29, 30):
                key = (score, at)
                assert index.rank_for_score(key, window_type, ts) == model.rank_for_score_key(key, window_type, ts, ())
    for bad, message in [((), "1 to 2 items"), ((1, 2, 3), "1 to 2 items"), ((1, "x"), "timestamp"), (("x",), "score")]:
        with pytest.raises(InvalidArgument, match=message):
            index.rank_for_score(bad)


@pytest.mark.parametrize(
    ("aggregation", "high_score_first"), [("BEST", True), ("BEST", False), ("SUM", True), ("LATEST", False)]
)
def test_score_trim(db: Database, prefix: bytes, aggregation: str, high_score_first: bool) -> None:
    index, model, rng = build(db, prefix, 81, aggregation=aggregation, high_score_first=high_score_first, records=4)
    for _ in range(20):
        raws = [((), rng.randrange(6), rng.randrange(-5, 35), ()) for _ in range(rng.randrange(0, 8))]
        raws += raws[:1]  # an entry listed twice comes back once
        got = index.score_trim([Entry(score, ts) for _, score, ts, _ in raws])
        assert [((), e.score, e.timestamp, ()) for e in got] == model.score_trim(raws)
    with pytest.raises(InvalidArgument, match="at most 1000 entries"):
        index.score_trim([Entry(1, 1)] * 1001)
    with pytest.raises(InvalidArgument, match="expected an Entry"):
        index.score_trim([(1, 1)])


def test_score_trim_keeps_the_best_of_each_window(db: Database, prefix: bytes) -> None:
    """Hand-checked: windows [0,10), [10,20) and all-time, high scores first."""
    index = LeaderboardIndex.create(db, prefix, IndexSettings(high_score_first=True), all_time=False)
    assert index.score_trim([Entry(1, 5), Entry(3, 4)]) == [Entry(3, 4), Entry(1, 5)]  # no directory: all, best first
    index.update_windows(WindowUpdate(high_score_first=True, windows=[(1, 0, 10), (1, 10, 20)]))
    entries = [Entry(5, 1), Entry(7, 2), Entry(7, 3), Entry(6, 12), Entry(2, 15), Entry(9, 30)]
    # [0,10): 7 at 2 (earlier than 7 at 3); [10,20): 6; all-time: 9.
    assert index.score_trim(entries) == [Entry(9, 30), Entry(7, 2), Entry(6, 12)]
