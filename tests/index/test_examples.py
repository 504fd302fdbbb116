"""Example-based tests of the index on small, hand-checked data.

Every expected value here was worked out by hand from the semantics (ranks are 0-based, 0
is best; ORDINAL ranks count records with a better full score key, COMPETITION ranks count
records with a better score; records tied on the full key are listed by primary key).
Besides every operation, this covers the errors and the fixes of the reference's defects
listed at the end of ``semantics.md``; the byte-compatibility vectors built by hand from the
tuple layer and the protobuf wire format are in tests/index/test_reference_bytes.py.
"""

from __future__ import annotations

import math
import random

import fdb.tuple
import pytest

from fdb_leaderboard.errors import FailedPrecondition, InvalidArgument, WindowNotFound, WindowNotReady
from fdb_leaderboard.index import Entry, IfAbsent, IndexSettings, LeaderboardIndex, RankMode, ScanType
from fdb_leaderboard.index.directory import INT64_MAX, INT64_MIN, Rebuild, WindowSpec, WindowUpdate
from fdb_leaderboard.store import Database
from tests.index.conftest import make

ORDINAL, COMPETITION = RankMode.ORDINAL, RankMode.COMPETITION
WINDOWS = WindowUpdate(specs=[WindowSpec(1, 0, 10, 10, 2)], windows=[(2, 0, 20)])  # with the all-time window

# The ungrouped data set: pk -> [(score, ts)]
DATA = {
    "a": [(5, 3), (2, 12)],
    "b": [(2, 5)],
    "c": [(2, 5), (7, 15)],
    "d": [(4, 1), (1, 18)],
    "e": [(9, 25)],
    "f": [(4, 7)],
}
# Expected boards: (window type, timestamp) -> [(pk, score, ts, ORDINAL rank, COMPETITION rank)]
LOW_FIRST = {
    (0, None): [
        ("d", 1, 18, 0, 0),
        ("b", 2, 5, 1, 1),
        ("c", 2, 5, 1, 1),
        ("a", 2, 12, 3, 1),
        ("f", 4, 7, 4, 4),
        ("e", 9, 25, 5, 5),
    ],
    (1, 5): [("b", 2, 5, 0, 0), ("c", 2, 5, 0, 0), ("d", 4, 1, 2, 2), ("f", 4, 7, 3, 2), ("a", 5, 3, 4, 4)],
    (1, 15): [("d", 1, 18, 0, 0), ("a", 2, 12, 1, 1), ("c", 7, 15, 2, 2)],
    (2, 0): [("d", 1, 18, 0, 0), ("b", 2, 5, 1, 1), ("c", 2, 5, 1, 1), ("a", 2, 12, 3, 1), ("f", 4, 7, 4, 4)],
}
HIGH_FIRST = {
    (0, None): [
        ("e", 9, 25, 0, 0),
        ("c", 7, 15, 1, 1),
        ("a", 5, 3, 2, 2),
        ("d", 4, 1, 3, 3),
        ("f", 4, 7, 4, 3),
        ("b", 2, 5, 5, 5),
    ],
    (1, 5): [("a", 5, 3, 0, 0), ("d", 4, 1, 1, 1), ("f", 4, 7, 2, 1), ("b", 2, 5, 3, 3), ("c", 2, 5, 3, 3)],
    (1, 15): [("c", 7, 15, 0, 0), ("a", 2, 12, 1, 1), ("d", 1, 18, 2, 2)],
    (2, 19): [("c", 7, 15, 0, 0), ("a", 5, 3, 1, 1), ("d", 4, 1, 2, 2), ("f", 4, 7, 3, 2), ("b", 2, 5, 4, 4)],
}

# Several examples store scores before the first window update on purpose; the warning that
# says so is checked in tests/index/test_easy_mistakes.py and by the model test.
pytestmark = pytest.mark.filterwarnings("ignore::fdb_leaderboard.errors.NoWindowsWarning")


def load(index: LeaderboardIndex, data: dict[str, list[tuple]] = DATA) -> None:
    for pk, entries in data.items():
        index.save_record((pk,), [Entry(score, ts) for score, ts in entries])


def rows(entries, mode: RankMode | None = ORDINAL) -> list[tuple]:
    """Listed entries as (pk, score, ts, rank) with single-string primary keys."""
    return [(e.pk[0], e.score, e.timestamp, e.rank) for e in entries]


def expected(board: list[tuple], mode: RankMode) -> list[tuple]:
    return [
        (pk, score, ts, ordinal if mode is ORDINAL else competition) for pk, score, ts, ordinal, competition in board
    ]


def where(key: tuple) -> dict:
    window_type, ts = key
    return {"window_type": window_type, "timestamp": ts}


def scan_all(index: LeaderboardIndex, scan_type: ScanType, limit: int = 0, **kwargs) -> tuple[list, int]:
    """Every entry of a scan, following continuations; also returns the number of pages."""
    out, pages, continuation = [], 0, None
    while True:
        page = index.scan(scan_type, limit=limit, continuation=continuation, **kwargs)
        pages += 1
        out.extend(page.entries)
        continuation = page.continuation
        if continuation is None:
            return out, pages
        assert pages < 50


@pytest.fixture
def low_first(db: Database, prefix: bytes) -> LeaderboardIndex:
    index = make(db, prefix)
    index.update_windows(WINDOWS)
    load(index)
    return index


@pytest.fixture
def high_first(db: Database, prefix: bytes) -> LeaderboardIndex:
    index = make(db, prefix + b"\x01", high_score_first=True)
    update = WindowUpdate(high_score_first=True, specs=WINDOWS.specs, windows=WINDOWS.windows)
    index.update_windows(update)
    load(index)
    return index


# -- reads of every window, low and high score first --------------------------------------------


@pytest.mark.parametrize("hsf", [False, True])
def test_boards(db: Database, prefix: bytes, hsf: bool) -> None:
    index = make(db, prefix, high_score_first=hsf)
    index.update_windows(WindowUpdate(high_score_first=hsf, specs=WINDOWS.specs, windows=WINDOWS.windows))
    load(index)
    boards = HIGH_FIRST if hsf else LOW_FIRST
    for key, board in boards.items():
        for mode in (ORDINAL, COMPETITION):
            assert rows(index.top(10, mode=mode, **where(key))) == expected(board, mode), (key, mode)
            assert rows(index.top(2, mode=mode, **where(key))) == expected(board, mode)[:2]
            for pk, score, ts, ordinal, competition in board:
                rank = ordinal if mode is ORDINAL else competition
                assert index.rank((pk,), mode=mode, **where(key)) == rank
                entry = index.rank_and_entry((pk,), mode=mode, **where(key))
                assert (entry.pk, entry.score, entry.timestamp, entry.rank) == ((pk,), score, ts, rank)
            missing = set(DATA) - {row[0] for row in board}
            for pk in missing:
                assert index.rank((pk,), mode=mode, **where(key)) is None
                assert index.rank_and_entry((pk,), mode=mode, **where(key)) is None
        assert index.count(**where(key)) == len(board)
        assert [index.score_for_rank(r, **where(key)) for r in range(len(board) + 1)] == [
            *[row[1] for row in board],
            None,
        ]
        assert index.top(0, **where(key)) == []


def test_boards_of_groups_and_sub_directories(db: Database, prefix: bytes) -> None:
    index = make(db, prefix, group_size=1, context_size=1)
    index.save_sub_directory(("y",), True)  # group y ranks high scores first, x low first
    index.update_windows(WindowUpdate(specs=[WindowSpec(1, 0, 10, 10, 2)]))
    index.save_record(("p",), [Entry(3, 2, ("k",), ("x",)), Entry(8, 4, ("k",), ("y",))])
    index.save_record(("q",), [Entry(3, 2, ("j",), ("x",)), Entry(1, 11, ("k",), ("y",)), Entry(9, 3, ("k",), ("y",))])
    index.save_record(("r",), [Entry(6, 13, ("k",), ("x",)), Entry(3, 2, ("k",), ("x",))])

    def board(window_type, ts, group, mode=ORDINAL):
        return [
            (e.pk[0], e.score, e.timestamp, e.context[0], e.group, e.rank)
            for e in index.top(10, window_type, ts, group, mode)
        ]

    # x, low first: ties on score and timestamp are broken by context, then by primary key
    assert board(0, None, ("x",)) == [
        ("q", 3, 2, "j", ("x",), 0),
        ("p", 3, 2, "k", ("x",), 1),
        ("r", 3, 2, "k", ("x",), 1),
    ]
    assert board(0, None, ("x",), COMPETITION) == [
        ("q", 3, 2, "j", ("x",), 0),
        ("p", 3, 2, "k", ("x",), 0),
        ("r", 3, 2, "k", ("x",), 0),
    ]
    assert board(1, 15, ("x",)) == [("r", 6, 13, "k", ("x",), 0)]
    # y, high first
    assert board(0, None, ("y",)) == [("q", 9, 3, "k", ("y",), 0), ("p", 8, 4, "k", ("y",), 1)]
    assert board(1, 0, ("y",)) == [("q", 9, 3, "k", ("y",), 0), ("p", 8, 4, "k", ("y",), 1)]
    assert board(1, 10, ("y",)) == [("q", 1, 11, "k", ("y",), 0)]
    assert index.rank(("r",), 0, None, ("y",)) is None
    assert index.count(0, None, ("x",)) == 3
    assert index.count(1, 19, ("y",)) == 1
    assert index.count(0, None, ("z",)) == 0  # a group without scores is an empty board
    assert index.top(5, 0, None, ("z",)) == []
    assert index.rank_for_score(8, 0, None, ("y",)) == 1  # 9 beats it
    assert index.rank_for_score(8, 0, None, ("x",)) == 3
    assert index.score_for_rank(1, 0, None, ("y",)) == 8
    assert index.sub_directories() == {("y",): True}
    # the same direction again is harmless; the opposite is refused once the group has scores
    index.save_sub_directory(("y",), True)
    with pytest.raises(FailedPrecondition):
        index.save_sub_directory(("y",), False)
    with pytest.raises(FailedPrecondition):
        index.save_sub_directory(("x",), True)
    index.save_sub_directory(("z",), True)  # no scores yet: allowed
    assert index.sub_directories() == {("y",): True, ("z",): True}


def test_rank_for_score(low_first: LeaderboardIndex, high_first: LeaderboardIndex) -> None:
    # low first, all-time scores 1 2 2 2 4 9: how many score strictly better
    assert [low_first.rank_for_score(s) for s in (0, 1, 2, 3, 4, 5, 9, 10)] == [0, 0, 1, 4, 4, 5, 5, 6]
    # high first, all-time scores 9 7 5 4 4 2
    assert [high_first.rank_for_score(s) for s in (10, 9, 8, 7, 5, 4, 3, 2, 1)] == [0, 0, 1, 1, 2, 3, 5, 5, 6]
    assert low_first.rank_for_score(3, 1, 5) == 2  # window (1, 0, 10): 2 2 4 4 5
    assert high_first.rank_for_score(3, 2, 0) == 4  # window (2, 0, 20): 7 5 4 4 2


def test_around(low_first: LeaderboardIndex) -> None:
    # all-time low first: d b c a f e
    def around(pk, above, below, **kwargs):
        return [e.pk[0] for e in low_first.around((pk,), above, below, **kwargs)]

    assert around("c", 1, 1) == ["b", "c", "a"]
    assert around("a", 0, 0) == ["a"]
    assert around("d", 1, 1) == ["d", "b", "c"]  # shifted down at the top
    assert around("e", 2, 0) == ["a", "f", "e"]
    assert around("e", 0, 2) == ["a", "f", "e"]  # shifted up at the bottom
    assert around("f", 1, 3) == ["b", "c", "a", "f", "e"]
    assert around("b", 10, 10) == ["d", "b", "c", "a", "f", "e"]
    assert around("e", 1, 1, window_type=1, timestamp=5) == []  # no value in that window
    assert around("e", 1, 1, window_type=1, timestamp=5, if_absent=IfAbsent.TOP) == ["b", "c", "d"]
    assert around("e", 1, 1, window_type=1, timestamp=5, if_absent=IfAbsent.BOTTOM) == ["d", "f", "a"]
    assert around("zz", 1, 1) == []
    entries = low_first.around(("a",), 1, 1, mode=COMPETITION)
    assert rows(entries) == [("c", 2, 5, 1), ("a", 2, 12, 1), ("f", 4, 7, 4)]
    assert rows(low_first.around(("a",), 1, 1)) == [("c", 2, 5, 1), ("a", 2, 12, 3), ("f", 4, 7, 4)]


# -- scans -----------------------------------------------------------------------------------------


def test_scan_by_value(low_first: LeaderboardIndex, high_first: LeaderboardIndex) -> None:
    def scan(index, **kwargs):
        entries, _ = scan_all(index, ScanType.BY_VALUE, **kwargs)
        assert all(e.rank is None for e in entries)
        return [(e.pk[0], e.score) for e in entries]

    everything = [("d", 1), ("b", 2), ("c", 2), ("a", 2), ("f", 4), ("e", 9)]
    assert scan(low_first) == everything
    assert scan(low_first, reverse=True) == everything[::-1]
    assert scan(low_first, low=2, high=4) == everything[1:5]
    assert scan(low_first, low=2, high=4, low_inclusive=False) == [("f", 4)]
    assert scan(low_first, low=2, high=4, high_inclusive=False) == everything[1:4]
    assert scan(low_first, low=1, high=9, low_inclusive=False, high_inclusive=False) == everything[1:5]
    assert scan(low_first, high=2, reverse=True) == everything[:4][::-1]
    assert scan(low_first, low=3) == everything[4:]
    assert scan(low_first, low=5, high=8) == []
    for limit in (1, 2, 4, 6, 7):
        assert scan(low_first, limit=limit) == everything
        assert scan(low_first, limit=limit, reverse=True) == everything[::-1]
        assert scan(low_first, limit=limit, low=2, high=4, high_inclusive=False) == everything[1:4]
    _, pages = scan_all(low_first, ScanType.BY_VALUE, limit=2)
    assert pages in (3, 4)  # a final empty page is allowed after a full one

    # High score first: still ascending natural score going forward.  The stored keys are
    # read backwards, so records tied on score come out in reverse key order (f before d:
    # d's earlier timestamp ranks it better).
    high = [("b", 2), ("f", 4), ("d", 4), ("a", 5), ("c", 7), ("e", 9)]
    assert scan(high_first) == high
    assert scan(high_first, reverse=True) == high[::-1]
    assert scan(high_first, low=4, high=7) == high[1:5]
    assert scan(high_first, low=4, high=7, low_inclusive=False) == high[3:5]
    assert scan(high_first, low=4, high=7, high_inclusive=False) == high[1:4]
    assert scan(high_first, low=5) == high[3:]
    assert scan(high_first, high=4, reverse=True) == high[:3][::-1]
    for limit in (1, 2, 5):
        assert scan(high_first, limit=limit) == high
        assert scan(high_first, limit=limit, reverse=True, low=4) == high[1:][::-1]


def test_scan_by_rank_and_time_window(low_first: LeaderboardIndex) -> None:
    def scan(scan_type, mode=ORDINAL, **kwargs):
        entries, _ = scan_all(low_first, scan_type, mode=mode, **kwargs)
        return rows(entries)

    board = expected(LOW_FIRST[(0, None)], ORDINAL)
    assert scan(ScanType.BY_RANK) == board
    assert scan(ScanType.BY_RANK, low=1, high=3) == board[1:4]
    assert scan(ScanType.BY_RANK, low=1, high=4, low_inclusive=False, high_inclusive=False) == board[2:4]
    assert scan(ScanType.BY_RANK, low=4) == board[4:]
    assert scan(ScanType.BY_RANK, high=0) == board[:1]
    assert scan(ScanType.BY_RANK, low=2, high=2, low_inclusive=False) == []
    assert scan(ScanType.BY_RANK, low=6) == []
    assert scan(ScanType.BY_RANK, low=3, high=100) == board[3:]
    assert scan(ScanType.BY_RANK, mode=COMPETITION, low=1, high=3) == expected(LOW_FIRST[(0, None)], COMPETITION)[1:4]
    for limit in (1, 2, 3, 5, 6, 10):
        assert scan(ScanType.BY_RANK, limit=limit) == board
        assert (
            scan(ScanType.BY_RANK, limit=limit, low=1, high=4, mode=COMPETITION)
            == expected(LOW_FIRST[(0, None)], COMPETITION)[1:5]
        )
    _, pages = scan_all(low_first, ScanType.BY_RANK, limit=2)
    assert pages == 3

    window = expected(LOW_FIRST[(1, 5)], ORDINAL)
    assert scan(ScanType.BY_TIME_WINDOW, window_type=1, timestamp=5) == window
    assert scan(ScanType.BY_TIME_WINDOW, window_type=1, timestamp=9, low=1, high=2) == window[1:3]
    assert (
        scan(ScanType.BY_TIME_WINDOW, window_type=1, timestamp=9, low=1, high=2, mode=COMPETITION)
        == expected(LOW_FIRST[(1, 5)], COMPETITION)[1:3]
    )
    assert scan(ScanType.BY_TIME_WINDOW, window_type=1, timestamp=5, limit=2, low=1) == window[1:]
    assert scan(ScanType.BY_TIME_WINDOW, window_type=2, timestamp=19) == expected(LOW_FIRST[(2, 0)], ORDINAL)
    low_first.clock = lambda: 5.0  # no timestamp: the window holding now
    assert scan(ScanType.BY_TIME_WINDOW, window_type=1) == window
    # a continuation only resumes the scan it came from
    page = low_first.scan(ScanType.BY_RANK, limit=2)
    with pytest.raises(InvalidArgument):
        low_first.scan(ScanType.BY_TIME_WINDOW, window_type=1, timestamp=5, continuation=page.continuation)
    with pytest.raises(InvalidArgument):
        low_first.scan(ScanType.BY_VALUE, continuation=page.continuation)
    with pytest.raises(InvalidArgument):
        low_first.scan(ScanType.BY_RANK, continuation=b"junk")


# -- aggregations ----------------------------------------------------------------------------------


def test_sum(db: Database, prefix: bytes) -> None:
    index = make(db, prefix, aggregation="SUM", context_size=1)
    index.update_windows(WindowUpdate(windows=[(1, 0, 10)]))
    index.add_entries(("a",), [Entry(3, 2, ("k",)), Entry(4, 8, ("k",)), Entry(1, 12, ("k",))])
    index.add_entries(("b",), [Entry(5, 1, ("k",)), Entry(3, 11, ("k",))])
    index.add_score(("c",), 8, 12, ("k",))
    index.add_entries(("d",), [Entry(2, 9, ("x",)), Entry(5, 9, ("y",))])  # same time: the later one's context

    def board(window_type=0, ts=None, mode=ORDINAL):
        return [
            (e.pk[0], e.score, e.timestamp, e.context[0], e.rank) for e in index.top(10, window_type, ts, mode=mode)
        ]

    # totals a 8 (reached at 12), b 8 (at 11), c 8 (at 12), d 7 (at 9)
    assert board() == [("d", 7, 9, "y", 0), ("b", 8, 11, "k", 1), ("a", 8, 12, "k", 2), ("c", 8, 12, "k", 2)]
    assert board(mode=COMPETITION) == [
        ("d", 7, 9, "y", 0),
        ("b", 8, 11, "k", 1),
        ("a", 8, 12, "k", 1),
        ("c", 8, 12, "k", 1),
    ]
    assert board(1, 3) == [("b", 5, 1, "k", 0), ("a", 7, 8, "k", 1), ("d", 7, 9, "y", 2)]
    # a score added in the window's past still counts, the timestamp stays the latest
    index.add_score(("b",), 1, 0, ("z",))
    assert index.rank_and_entry(("b",), 1, 3).score == 6
    assert index.rank_and_entry(("b",), 1, 3).timestamp == 1
    assert index.rank_and_entry(("b",), 1, 3).context == ("k",)
    index.save_record(("a",), [Entry(-1, 3, ("k",))])  # replaces: negative scores are fine
    assert board(1, 3)[0] == ("a", -1, 3, "k", 0)
    with pytest.raises(InvalidArgument):
        index.add_score(("a",), 1.5, 3, ("k",))  # SUM takes integers only
    with pytest.raises(InvalidArgument):
        index.add_entries(("a",), [Entry(INT64_MAX, 3, ("k",)), Entry(INT64_MAX, 4, ("k",))])  # total overflows


def test_latest(db: Database, prefix: bytes) -> None:
    index = make(db, prefix, aggregation="LATEST")
    index.update_windows(WindowUpdate(windows=[(1, 0, 5)]))
    index.add_entries(("a",), [Entry(5, 3), Entry(2, 7)])
    index.add_entries(("b",), [Entry(1, 7), Entry(4, 7)])  # same timestamp: the last added
    index.add_score(("c",), 9, 2)
    index.add_score(("d",), 3, 8)
    assert index.add_score(("d",), 6, 4) == 1  # older than its latest: only the window (1, 0, 5) changes
    assert rows(index.top(10)) == [("a", 2, 7, 0), ("d", 3, 8, 1), ("b", 4, 7, 2), ("c", 9, 2, 3)]
    assert rows(index.top(10, 1, 0)) == [("a", 5, 3, 0), ("d", 6, 4, 1), ("c", 9, 2, 2)]
    index.add_score(("c",), 0, 30)
    assert index.rank(("c",)) == 0
    assert index.score_for_rank(0) == 0


def test_best_write_results(low_first: LeaderboardIndex) -> None:
    # d's best is 1 at 18 in the all-time window, (1, 10, 20) and (2, 0, 20)
    assert low_first.add_score(("d",), 3, 16) == 0  # not better anywhere
    assert low_first.add_score(("d",), 0, 16) == 3  # better in three windows
    assert low_first.add_score(("g",), 6, 40) == 1  # only the all-time window holds ts 40
    assert low_first.add_score(("h",), 6, -5) == 1
    assert rows(low_first.top(3)) == [("d", 0, 16, 0), ("b", 2, 5, 1), ("c", 2, 5, 1)]


# -- writes ----------------------------------------------------------------------------------------


def test_save_delete_and_batches(low_first: LeaderboardIndex) -> None:
    index = low_first
    index.save_record(("a",), [Entry(1, 4)])  # replaces both entries of a
    assert rows(index.top(10, 1, 15)) == [("d", 1, 18, 0), ("c", 7, 15, 1)]
    assert rows(index.top(2, 1, 5)) == [("a", 1, 4, 0), ("b", 2, 5, 1)]
    assert index.rank(("a",)) == 0  # a (1, 4) beats d (1, 18)
    index.save_record(("c",), [])  # a record without entries is on no board
    assert index.rank(("c",)) is None
    assert index.count() == 5
    assert index.delete_record(("c",)) is True
    assert index.delete_record(("c",)) is False
    assert index.delete_record(("zz",)) is False
    assert index.delete_record(("e",)) is True
    assert [e.pk[0] for e in index.top(10)] == ["a", "d", "b", "f"]
    index.write_batch([(("e",), [Entry(0, 1)]), (("a",), [Entry(9, 9)])])  # replaces
    assert [e.pk[0] for e in index.top(10)] == ["e", "d", "b", "f", "a"]
    index.write_batch([(("e",), [Entry(5, 2)]), (("a",), [Entry(-1, 30)])], replace=False)  # adds
    assert rows(index.top(10)) == [("a", -1, 30, 0), ("e", 0, 1, 1), ("d", 1, 18, 2), ("b", 2, 5, 3), ("f", 4, 7, 4)]
    assert rows(index.top(10, 1, 0)) == [("e", 0, 1, 0), ("b", 2, 5, 1), ("d", 4, 1, 2), ("f", 4, 7, 3), ("a", 9, 9, 4)]
    assert index.bulk_load([((f"p{i}",), [Entry(100 + i, 50)]) for i in range(5)], batch_size=2) == 5
    assert index.count() == 10
    assert index.score_for_rank(9) == 104


def test_bulk_load_refusing_a_record_keeps_earlier_batches_and_builds_the_windows(db: Database, prefix: bytes) -> None:
    index = make(db, prefix)
    index.update_windows(WindowUpdate(specs=[WindowSpec(1, 0, 100, 100, 2)]))
    records: list = [((f"p{i:02d}",), [Entry(i % 7, 10 + i)]) for i in range(25)]
    records[21] = (("bad",), [Entry(1, 1, group=("g",))])  # this index has no groups
    seen: list[int] = []
    with pytest.raises(InvalidArgument, match="groups by 0"):
        index.bulk_load(records, batch_size=10, progress=seen.append)
    assert seen == [10, 20]
    # Built before the error: every window answers, holding exactly the first 20 records.
    assert not any(window.filling for window in index.directory().windows)
    expected = sorted((i % 7, 10 + i, f"p{i:02d}") for i in range(20))  # low score first, then earliest
    assert rows(index.top(100)) == [(pk, score, ts, rank) for rank, (score, ts, pk) in enumerate(expected)]
    assert index.count(1, 0) == 20 and index.count(1, 100) == 0
    # A load refused in its first batch changes nothing.
    with pytest.raises(InvalidArgument):
        index.bulk_load([records[21]])
    assert index.count() == 20 and not any(window.filling for window in index.directory().windows)


def test_primary_keys_of_several_elements(db: Database, prefix: bytes) -> None:
    """Primary keys whose packed bytes extend each other sort by those bytes."""
    index = make(db, prefix)
    index.update_windows(WindowUpdate())
    for pk in [("b", 1), ("b",), ("a", "z"), ("b", 0), (1,), ("b", 1, 2)]:
        index.add_score(pk, 4, 1)
    order = [("a", "z"), ("b",), ("b", 0), ("b", 1), ("b", 1, 2), (1,)]  # strings sort before integers
    assert [e.pk for e in index.top(10)] == order
    assert [e.rank for e in index.top(10)] == [0] * 6
    assert [e.pk for e in index.around(("b", 1), 1, 1)] == [("b", 0), ("b", 1), ("b", 1, 2)]
    assert [e.pk for e in index.scan(ScanType.BY_VALUE, limit=4).entries] == order[:4]
    assert index.delete_record(("b",))
    assert [e.pk for e in index.top(10)] == [("a", "z"), ("b", 0), ("b", 1), ("b", 1, 2), (1,)]


# -- windows ---------------------------------------------------------------------------------------


def test_window_updates_and_expiry(db: Database, prefix: bytes) -> None:
    index = make(db, prefix)
    result = index.update_windows(
        WindowUpdate(update_timestamp=7, specs=[WindowSpec(1, 0, 10, 10, 3), WindowSpec(2, 0, 20, 20, 2)])
    )
    windows = [(w.type, w.start, w.end) for w in result.added]
    assert windows == [(0, INT64_MIN, INT64_MAX), (1, 0, 10), (1, 10, 20), (1, 20, 30), (2, 0, 20), (2, 20, 40)]
    assert result.filling == ()
    directory = index.directory()
    assert directory.update_timestamp == 7
    assert directory.next_key == 6
    assert [(w.type, w.start, w.end, w.lb_key) for w in directory.windows] == [
        (0, INT64_MIN, INT64_MAX, 0),
        (1, 0, 10, 1),
        (1, 10, 20, 2),
        (1, 20, 30, 3),
        (2, 0, 20, 4),
        (2, 20, 40, 5),
    ]
    load(index)
    # the same update again changes nothing
    assert not index.update_windows(
        WindowUpdate(update_timestamp=8, specs=[WindowSpec(1, 0, 10, 10, 3), WindowSpec(2, 0, 20, 20, 2)])
    ).changed
    # deletions run before additions, never touch the all-time window
    result = index.update_windows(WindowUpdate(delete_before=20, windows=[(1, 30, 40)]))
    assert sorted((w.type, w.start, w.end) for w in result.deleted) == [(1, 0, 10), (1, 10, 20), (2, 0, 20)]
    assert [(w.type, w.start, w.end, w.lb_key) for w in result.added] == [(1, 30, 40, 6)]
    assert result.filling == ()  # starts after the latest stored timestamp (25)
    with pytest.raises(WindowNotFound):
        index.count(1, 5)
    assert rows(index.top(10, 1, 25)) == [("e", 9, 25, 0)]
    assert index.count(2, 35) == 1
    assert index.count() == 6
    index.add_score(("a",), 3, 33)
    assert rows(index.top(10, 1, 30)) == [("a", 3, 33, 0)]
    assert [(w.type, w.start) for w in index.expire(30)] == [(1, 20)]
    assert index.expire(30) == ()
    assert [(w.type, w.start, w.end) for w in index.directory().windows] == [
        (0, INT64_MIN, INT64_MAX),
        (1, 30, 40),
        (2, 20, 40),
    ]
    assert [(w.type, w.start) for w in index.expire(INT64_MAX)] == [(1, 30), (2, 20)]
    assert [w.type for w in index.directory().windows] == [0]
    assert index.count() == 6


def test_keep_ahead(db: Database, prefix: bytes) -> None:
    index = make(db, prefix)
    index.update_windows(WindowUpdate())
    index.add_score(("a",), 1, 22)
    # windows open at 25 or starting within the horizon; all certain (certain_within covers it)
    added = index.keep_ahead(25, [(1, 0, 10, 10), (2, 5, 20, 20)], horizon=20, certain_within=20)
    assert sorted((w.type, w.start, w.end) for w in added) == [
        (1, 20, 30),
        (1, 30, 40),
        (1, 40, 50),
        (2, 25, 45),
        (2, 45, 65),
    ]
    assert index.keep_ahead(25, [(1, 0, 10, 10), (2, 5, 20, 20)], horizon=20, certain_within=20) == ()
    # (1, 20, 30) overlaps the stored score at 22: it is filled like any other new window
    assert [(w.type, w.start) for w in index.directory().filling()] == [(1, 20)]
    index.fill()
    assert rows(index.top(5, 1, 25)) == [("a", 1, 22, 0)]
    assert index.count(2, 30) == 0


class _Always(random.Random):
    """A generator whose every draw is ``u``: keep-ahead then adds exactly the windows whose chance exceeds it."""

    def __init__(self, u: float) -> None:
        super().__init__()
        self.u = u

    def random(self) -> float:
        return self.u


# Type 1: [10k, 10k + 10); type 2: [5 + 20k, 25 + 20k).  At now=25 with a horizon of 100, the
# candidates are those still open at 25 and starting by 125: type 1 from 20 to 120 (leads -5 to
# 95), type 2 from 25 to 125 (leads 0 to 100).  Within certain_within=20 they are certain; beyond,
# a window of lead L is added when the draw u < 1 - (L - 20) / 80.
AHEAD_TYPES = [(1, 0, 10, 10), (2, 5, 20, 20)]


@pytest.mark.parametrize(
    ("u", "starts"),
    [
        (0.0, {1: list(range(20, 121, 10)), 2: [25, 45, 65, 85, 105]}),  # all but lead 100 (chance 0)
        (0.7, {1: [20, 30, 40, 50, 60], 2: [25, 45, 65]}),  # leads under 44
        (0.999, {1: [20, 30, 40], 2: [25, 45]}),  # the certain ones only
    ],
)
def test_keep_ahead_adds_a_later_window_when_its_chance_beats_the_draw(
    db: Database, prefix: bytes, u: float, starts: dict[int, list[int]]
) -> None:
    index = make(db, prefix)
    index.update_windows(WindowUpdate())
    added = index.keep_ahead(25, AHEAD_TYPES, horizon=100, certain_within=20, rng=_Always(u))
    expected = sorted((t, start, start + (10 if t == 1 else 20)) for t, begins in starts.items() for start in begins)
    assert sorted((w.type, w.start, w.end) for w in added) == expected
    assert sorted((w.type, w.start, w.end) for w in index.directory().windows if w.type) == expected


def test_keep_ahead_with_a_seeded_generator_adds_exactly_the_windows_its_draws_choose(
    db: Database, prefix: bytes
) -> None:
    """Each uncertain candidate takes the generator's next draw, regular types in the order given and
    each type's windows by start: replaying the seed tells which windows appear (the certain ones
    among them, so a pass taking only those adds nothing more)."""
    index = make(db, prefix)
    index.update_windows(WindowUpdate())
    draws = random.Random(39)
    expected = []
    for window_type, duration, begins in ((1, 10, range(20, 121, 10)), (2, 20, range(25, 126, 20))):
        for start in begins:
            lead = start - 25
            if lead <= 20 or draws.random() < 1 - (lead - 20) / 80:
                expected.append((window_type, start, start + duration))
    assert 8 < len(expected) < 17  # some later windows taken, some not: the draws decided
    added = index.keep_ahead(25, AHEAD_TYPES, horizon=100, certain_within=20, rng=random.Random(39))
    assert [(w.type, w.start, w.end) for w in added] == expected
    assert sorted((w.type, w.start, w.end) for w in index.directory().windows if w.type) == sorted(expected)
    assert index.keep_ahead(25, AHEAD_TYPES, horizon=100, certain_within=20, rng=_Always(0.999)) == ()


def test_oldest_window_is_read(db: Database, prefix: bytes) -> None:
    index = make(db, prefix)
    index.update_windows(WindowUpdate(all_time=False, windows=[(2, 10, 30), (2, 0, 20), (2, 0, 30), (1, 0, 10)]))
    index.add_score(("a",), 1, 5)
    index.add_score(("b",), 2, 15)
    index.add_score(("c",), 3, 25)
    # at 15: (2, 0, 20), (2, 0, 30) and (2, 10, 30) hold it; the earliest start, then the wider, wins
    assert [e.pk[0] for e in index.top(5, 2, 15)] == ["a", "b", "c"]
    assert [e.pk[0] for e in index.top(5, 2, 29)] == ["a", "b", "c"]
    assert [e.pk[0] for e in index.top(5, 1, 9)] == ["a"]
    index.expire(30)  # every window ends by 30
    with pytest.raises(WindowNotFound):
        index.top(5, 2, 15)
    index.update_windows(WindowUpdate(all_time=False, windows=[(2, 10, 30), (2, 0, 20)]))
    index.fill()
    assert [e.pk[0] for e in index.top(5, 2, 15)] == ["a", "b"]  # (2, 0, 20)
    assert [e.pk[0] for e in index.top(5, 2, 20)] == ["b", "c"]  # (2, 10, 30)
    with pytest.raises(WindowNotFound):
        index.top(5, 2, 30)
    with pytest.raises(WindowNotFound):
        index.top(5)  # no all-time window


def test_rebuild_policies(db: Database, prefix: bytes) -> None:
    index = make(db, prefix)
    index.update_windows(WINDOWS)
    load(index)
    # NEVER refuses a window that overlaps stored scores, and changes nothing
    with pytest.raises(FailedPrecondition):
        index.update_windows(WindowUpdate(windows=[(3, 0, 100)], rebuild=Rebuild.NEVER))
    # ... but takes one after every stored timestamp (the latest is 25)
    result = index.update_windows(WindowUpdate(windows=[(3, 26, 100)], rebuild=Rebuild.NEVER))
    assert result.filling == () and len(result.added) == 1
    with pytest.raises(FailedPrecondition):
        index.update_windows(WindowUpdate(high_score_first=True, rebuild=Rebuild.NEVER))
    assert not index.directory().high_score_first
    # IF_OVERLAPPING_CHANGED flips high_score_first by refilling every overlapping window
    result = index.update_windows(WindowUpdate(high_score_first=True))
    assert sorted((w.type, w.start) for w in result.filling) == [(0, INT64_MIN), (1, 0), (1, 10), (2, 0)]
    with pytest.raises(WindowNotReady):
        index.top(3)
    assert index.count(3, 30) == 0  # (3, 26, 100) had nothing to refill
    index.fill(max_records=4)
    for key, board in HIGH_FIRST.items():
        assert rows(index.top(10, **where(key))) == expected(board, ORDINAL)


def test_trim(db: Database, prefix: bytes) -> None:
    for n, aggregation in enumerate(["BEST", "LATEST", "SUM"]):
        index = make(db, prefix + bytes([n]), aggregation=aggregation)
        index.update_windows(WINDOWS)
        load(index)
        index.add_entries(("a",), [Entry(1, 2), Entry(3, 4), Entry(0, 11), Entry(4, -5)])
        keys = [(0, None), (1, 5), (1, 15), (2, 0)]
        before = {key: rows(index.top(10, **where(key))) for key in keys}
        scanned = index.scan(ScanType.BY_VALUE).entries
        removed = index.trim(12, max_records=2)
        assert removed > 0, aggregation
        assert {key: rows(index.top(10, **where(key))) for key in keys} == before, aggregation
        assert index.scan(ScanType.BY_VALUE).entries == scanned
        # the windows still work from what was kept
        index.expire(10)
        index.update_windows(WindowUpdate(high_score_first=False, rebuild=Rebuild.ALWAYS))
        index.fill()
        for key in [(0, None), (1, 15), (2, 0)]:
            assert rows(index.top(10, **where(key))) == before[key], (aggregation, key)
        with pytest.raises(FailedPrecondition):
            index.update_windows(WindowUpdate(windows=[(1, 11, 21)]))
        index.update_windows(WindowUpdate(windows=[(1, 12, 22)]))  # at the horizon: allowed
        index.fill()
        assert index.count(1, 21) == 3  # a 2 at 12 (0 at 11 is outside), c 7 at 15, d 1 at 18
    # SUM: the all-time totals keep the trimmed scores
    assert index.rank_and_entry(("a",)).score == 5 + 2 + 1 + 3 + 0 + 4
    index.add_score(("a",), 10, 40)
    assert index.rank_and_entry(("a",)).score == 25
    assert index.rank_and_entry(("a",), 1, 15).score == 2


# -- errors ----------------------------------------------------------------------------------------


def test_invalid_arguments(db: Database, prefix: bytes) -> None:
    index = make(db, prefix, group_size=1, context_size=1)
    index.update_windows(WindowUpdate(windows=[(1, 0, 10)]))
    good = {"context": ("c",), "group": ("g",)}
    index.add_score(("p",), 1, 1, **good)
    for pk in [(), math.nan, ["p", object()], (math.nan,), (2**63,), None, (("x", math.inf),)]:
        with pytest.raises(InvalidArgument):
            index.add_score(pk, 1, 1, **good)
    with pytest.raises(InvalidArgument):
        index.rank((), 0, None, ("g",))
    for score in [math.nan, math.inf, -math.inf, 2**63, -(2**63) - 1, "1", None, True]:
        with pytest.raises(InvalidArgument):
            index.add_score(("p",), score, 1, **good)
    for ts in [2**63, -(2**63) - 1, 1.5, "1"]:  # (None is now: the index's clock)
        with pytest.raises(InvalidArgument):
            index.add_score(("p",), 1, ts, **good)
    for group in [(), ("g", "h")]:
        with pytest.raises(InvalidArgument):
            index.add_score(("p",), 1, 1, ("c",), group)
        with pytest.raises(InvalidArgument):
            index.top(3, 0, None, group)
        with pytest.raises(InvalidArgument):
            index.save_sub_directory(group, True)
    for context in [(), ("c", "d"), (math.nan,)]:
        with pytest.raises(InvalidArgument):
            index.add_score(("p",), 1, 1, context, ("g",))
    with pytest.raises(InvalidArgument):
        index.save_record(("p",), [Entry(1, 1, ("c",), ("g",)), Entry(1, 1, (), ("g",))])
    with pytest.raises(InvalidArgument):
        index.add_score(("p" * 300,), 1, 1, **good)  # index keys would be too long
    for update in [
        WindowUpdate(windows=[(1, 10, 10)]),
        WindowUpdate(windows=[(1, 10, 5)]),
        WindowUpdate(windows=[(0, 0, 10)]),
        WindowUpdate(specs=[WindowSpec(1, 0, 10, 0, 1)]),
        WindowUpdate(specs=[WindowSpec(1, INT64_MAX - 5, 10, 10, 1)]),
        WindowUpdate(nlevels=1),
        WindowUpdate(delete_before=2**63),
    ]:
        with pytest.raises(InvalidArgument):
            index.update_windows(update)
    group = {"group": ("g",)}
    for read in [
        lambda: index.scan(ScanType.BY_RANK, low=3, high=1, **group),
        lambda: index.scan(ScanType.BY_RANK, low=-1, **group),
        lambda: index.scan(ScanType.BY_RANK, limit=-1, **group),
        lambda: index.scan(ScanType.BY_TIME_WINDOW, window_type=1, timestamp=5, low=2, high=0, **group),
        lambda: index.scan(ScanType.BY_VALUE, low=math.nan, **group),
        lambda: index.top(-1, **group),
        lambda: index.around(("p",), -1, 0, **group),
        lambda: index.around(("p",), 0, -1, **group),
        lambda: index.score_for_rank(-1, **group),
        lambda: index.rank_for_score(math.inf, **group),
        lambda: index.top(1, -1, 5, **group),
        lambda: index.top(1.5, **group),
    ]:
        with pytest.raises(InvalidArgument):
            read()
    with pytest.raises(InvalidArgument):
        IndexSettings(aggregation="MAX")


def test_window_not_found(db: Database, prefix: bytes) -> None:
    index = make(db, prefix)
    with pytest.raises(WindowNotFound):
        index.top(1)  # no directory at all
    index.update_windows(WindowUpdate(windows=[(1, 0, 10)]))
    index.add_score(("a",), 1, 5)
    for window_type, ts in [(7, 5), (1, 10), (1, -1), (2, 5)]:
        with pytest.raises(WindowNotFound):
            index.count(window_type, ts)
        with pytest.raises(WindowNotFound):
            index.rank(("a",), window_type, ts)
        with pytest.raises(WindowNotFound):
            index.scan(ScanType.BY_TIME_WINDOW, window_type=window_type, timestamp=ts)
    assert index.count(1, 9) == 1


def test_failed_preconditions(db: Database, prefix: bytes) -> None:
    index = make(db, prefix, group_size=1)
    index.update_windows(WindowUpdate(windows=[(1, 0, 10)]))
    index.add_score(("a",), 1, 5, group=("g",))
    with pytest.raises(FailedPrecondition):  # NEVER, overlapping data
        index.update_windows(WindowUpdate(windows=[(1, 5, 15)], rebuild=Rebuild.NEVER))
    with pytest.raises(FailedPrecondition):  # NEVER, high_score_first changes
        index.update_windows(WindowUpdate(high_score_first=True, rebuild=Rebuild.NEVER))
    with pytest.raises(FailedPrecondition):  # the group has scores the other way round
        index.save_sub_directory(("g",), True)
    index.save_sub_directory(("g",), False)
    index.trim(3)
    with pytest.raises(FailedPrecondition):  # starts before the trim horizon
        index.update_windows(WindowUpdate(windows=[(1, 2, 12)]))
    with pytest.raises(FailedPrecondition):
        index.update_windows(WindowUpdate(windows=[(1, 2, 12)], rebuild=Rebuild.ALWAYS))
    index.update_windows(WindowUpdate(windows=[(1, 3, 13)]))
    index.fill()
    assert index.count(1, 12, ("g",)) == 1  # the window (1, 3, 13)
    # a filling window refuses trims until it is complete
    index.update_windows(WindowUpdate(windows=[(1, 4, 14)]))
    with pytest.raises(FailedPrecondition):
        index.trim(4)
    index.fill()
    index.trim(4)


# -- the reference's defects, fixed ------------------------------------------------------------------


def keys_under(db: Database, begin: bytes) -> list[bytes]:
    end = begin[:-1] + bytes([begin[-1] + 1])
    return [key for key, _ in db.read(lambda tr: tr.get_range(begin, end))]


def test_deleting_a_window_clears_all_its_keys(db: Database, prefix: bytes) -> None:
    index = make(db, prefix, group_size=1)
    index.update_windows(WindowUpdate(windows=[(1, 0, 10), (1, 10, 20), (2, 0, 20)]))
    for i in range(40):
        index.add_score((f"p{i}",), i % 7, i % 20, group=(f"g{i % 3}",))
    key = {(w.type, w.start): w.lb_key for w in index.directory().windows}
    primary, secondary = prefix + fdb.tuple.pack((2,)), prefix + fdb.tuple.pack((3,))
    for lb_key in key.values():
        assert keys_under(db, primary + fdb.tuple.pack((lb_key,)))
        assert keys_under(db, secondary + fdb.tuple.pack((lb_key,)))
    index.expire(10)
    index.update_windows(WindowUpdate(delete_before=20))
    for window in [(1, 0), (1, 10), (2, 0)]:
        assert keys_under(db, primary + fdb.tuple.pack((key[window],))) == [], window
        assert keys_under(db, secondary + fdb.tuple.pack((key[window],))) == [], window
    assert index.count(0, None, ("g1",)) == 13
    assert len(keys_under(db, primary + fdb.tuple.pack((key[(0, INT64_MIN)],)))) == 40
    for i in range(40):  # removals still work for every record
        assert index.delete_record((f"p{i}",))
    assert index.count(0, None, ("g1",)) == 0


def test_rebuilds_keep_sub_directories(db: Database, prefix: bytes) -> None:
    index = make(db, prefix, group_size=1)
    index.save_sub_directory(("hi",), True)
    index.update_windows(WindowUpdate())
    for group in [("hi",), ("lo",)]:
        index.add_score(("a",), 1, 1, group=group)
        index.add_score(("b",), 2, 2, group=group)
    index.update_windows(WindowUpdate(rebuild=Rebuild.ALWAYS))
    index.fill()
    assert index.sub_directories() == {("hi",): True}
    assert [e.pk for e in index.top(2, 0, None, ("hi",))] == [("b",), ("a",)]
    assert [e.pk for e in index.top(2, 0, None, ("lo",))] == [("a",), ("b",)]
    index.update_windows(WindowUpdate(high_score_first=True, rebuild=Rebuild.ALWAYS))  # flips the default
    index.fill()
    assert index.sub_directories() == {("hi",): True}
    assert [e.pk for e in index.top(2, 0, None, ("hi",))] == [("b",), ("a",)]
    assert [e.pk for e in index.top(2, 0, None, ("lo",))] == [("b",), ("a",)]


def test_fills_are_bounded_and_resumable(db: Database, prefix: bytes) -> None:
    index = make(db, prefix)
    for i in range(7):
        index.add_score((f"p{i}",), 10 - i, i)
    result = index.update_windows(WindowUpdate(windows=[(1, 0, 4)]))
    assert len(result.filling) == 2
    progress = index.fill_step(max_records=3)
    assert (progress.done, progress.records_processed) == (False, 3)
    assert {last for _, last in progress.windows} == {fdb.tuple.pack((("p2",),))}
    with pytest.raises(WindowNotReady):
        index.top(10)
    # writes go on while filling, before and after the fill position
    index.add_score(("p1",), 0, 1)
    index.add_score(("p5",), 0, 5)
    assert index.delete_record(("p0",))
    index.add_score(("p9",), 20, 3)
    reopened = LeaderboardIndex.open(db, prefix)  # another process could carry on
    progress = reopened.fill_step(max_records=3)
    assert (progress.done, progress.records_processed) == (False, 3)
    with pytest.raises(WindowNotReady):
        reopened.count(1, 0)
    progress = LeaderboardIndex.open(db, prefix).fill_step(max_records=3)
    assert (progress.done, progress.records_processed) == (True, 2)  # p6 and p9
    assert index.fill_step(max_records=3).done
    assert rows(index.top(10)) == [
        ("p1", 0, 1, 0),
        ("p5", 0, 5, 1),
        ("p6", 4, 6, 2),
        ("p4", 6, 4, 3),
        ("p3", 7, 3, 4),
        ("p2", 8, 2, 5),
        ("p9", 20, 3, 6),
    ]
    assert rows(index.top(10, 1, 0)) == [("p1", 0, 1, 0), ("p3", 7, 3, 1), ("p2", 8, 2, 2), ("p9", 20, 3, 3)]
    progress_seen = []
    index.update_windows(WindowUpdate(windows=[(1, 4, 8)]))
    assert index.fill(max_records=2, progress=progress_seen.append) == 7
    assert [p.records_processed for p in progress_seen] == [2, 2, 2, 1]
    assert rows(index.top(10, 1, 4)) == [("p5", 0, 5, 0), ("p6", 4, 6, 1), ("p4", 6, 4, 2)]


def test_a_window_added_while_another_is_half_filled(db: Database, prefix: bytes) -> None:
    index = make(db, prefix)
    for i in range(6):
        index.add_score((f"p{i}",), i, i)
    index.update_windows(WindowUpdate())
    assert index.fill_step(max_records=3).records_processed == 3  # the all-time window is at p2
    index.add_score(("p2",), -1, 9)  # maintained: the fill has passed p2
    index.update_windows(WindowUpdate(windows=[(1, 0, 10)]))
    progress = index.fill_step(max_records=2)  # the new window starts over at p0
    assert {(w.type, last) for w, last in progress.windows} == {
        (0, fdb.tuple.pack((("p1",),))),
        (1, fdb.tuple.pack((("p1",),))),
    }
    index.add_score(("p4",), -2, 8)  # ahead of both fills
    index.fill(max_records=2)
    board = [("p4", -2, 8, 0), ("p2", -1, 9, 1), ("p0", 0, 0, 2), ("p1", 1, 1, 3), ("p3", 3, 3, 4), ("p5", 5, 5, 5)]
    assert rows(index.top(10)) == board
    assert rows(index.top(10, 1, 0)) == board
    assert index.count() == 6


def test_always_keeps_unlisted_windows_and_keys(db: Database, prefix: bytes) -> None:
    index = make(db, prefix)
    index.update_windows(WindowUpdate(windows=[(1, 0, 10), (1, 10, 20)]))
    load(index)
    before = {(w.type, w.start, w.end): w.lb_key for w in index.directory().windows}
    result = index.update_windows(WindowUpdate(windows=[(2, 0, 20)], rebuild=Rebuild.ALWAYS))
    assert [(w.type, w.lb_key) for w in result.added] == [(2, 3)]
    directory = index.directory()
    assert directory.next_key == 4
    assert {(w.type, w.start, w.end): w.lb_key for w in directory.windows} == {**before, (2, 0, 20): 3}
    index.fill()
    for key in [(0, None), (1, 5), (1, 15), (2, 0)]:
        assert rows(index.top(10, **where(key))) == expected(LOW_FIRST[key], ORDINAL)


def test_adding_the_all_time_window_fills_only_it(db: Database, prefix: bytes) -> None:
    index = make(db, prefix)
    index.update_windows(WindowUpdate(all_time=False, windows=[(1, 0, 10)]))
    result = index.update_windows(WindowUpdate(windows=[(1, 10, 20)]))  # and the all-time window
    assert [w.type for w in result.added] == [0, 1]
    assert result.filling == ()  # nothing stored yet: nothing to fill
    assert index.count() == 0
    other = make(db, prefix + b"\x01")
    other.update_windows(WindowUpdate(all_time=False, windows=[(1, 0, 10), (1, 10, 20)]))
    load(other)
    result = other.update_windows(WindowUpdate())
    assert [(w.type, w.start) for w in result.filling] == [(0, INT64_MIN)]  # only the new window
    assert rows(other.top(10, 1, 5)) == expected(LOW_FIRST[(1, 5)], ORDINAL)  # never stopped serving
    with pytest.raises(WindowNotReady):
        other.top(10)
    other.fill()
    assert rows(other.top(10)) == expected(LOW_FIRST[(0, None)], ORDINAL)


def test_a_filling_window_is_never_served(db: Database, prefix: bytes) -> None:
    index = make(db, prefix)
    index.update_windows(WindowUpdate(all_time=False, windows=[(1, 0, 10)]))
    load(index)
    index.update_windows(WindowUpdate(windows=[(1, 0, 20), (2, 0, 20)]))
    for read in [
        lambda: index.top(1),
        lambda: index.count(),
        lambda: index.rank(("a",)),
        lambda: index.rank_and_entry(("a",)),
        lambda: index.around(("a",), 1, 1),
        lambda: index.score_for_rank(0),
        lambda: index.rank_for_score(1),
        lambda: index.scan(ScanType.BY_VALUE),
        lambda: index.scan(ScanType.BY_RANK),
        lambda: index.scan(ScanType.BY_TIME_WINDOW, window_type=2, timestamp=3),
        lambda: index.top(1, 1, 5),  # (1, 0, 20) is older than (1, 0, 10) and filling
        lambda: index.count(1, 15),
    ]:
        with pytest.raises(WindowNotReady):
            read()
    # removals of records the fill has not reached yet are fine
    assert index.delete_record(("a",))
    index.save_record(("b",), [Entry(0, 19)])
    index.fill(max_records=1)
    assert rows(index.top(2, 1, 5)) == [("b", 0, 19, 0), ("d", 1, 18, 1)]
    assert rows(index.top(10)) == [("b", 0, 19, 0), ("d", 1, 18, 1), ("c", 2, 5, 2), ("f", 4, 7, 3), ("e", 9, 25, 4)]
    assert index.delete_record(("b",))
    assert index.count(2, 0) == 3


def test_first_window_update_fills_from_stored_records(db: Database, prefix: bytes) -> None:
    index = make(db, prefix)
    load(index)  # no directory: stored, not indexed
    with pytest.raises(WindowNotFound):
        index.top(1)
    index.add_score(("a",), 0, 30)
    assert index.delete_record(("e",))
    result = index.update_windows(WINDOWS)
    assert len(result.filling) == 4
    index.fill(max_records=2)
    assert rows(index.top(10)) == [("a", 0, 30, 0), ("d", 1, 18, 1), ("b", 2, 5, 2), ("c", 2, 5, 2), ("f", 4, 7, 4)]
    assert rows(index.top(10, 1, 15)) == expected(LOW_FIRST[(1, 15)], ORDINAL)
