"""The index's stored bytes as the Record Layer writes them, on small hand-checked data: the reference's
keys and values, score types in numeric order, -0.0 tied with 0, distinct score keys, groups and
elements that share a prefix of bytes kept apart, SUM totals beyond int64 and in both directions."""

from __future__ import annotations

import math

import fdb.tuple
import pytest

from fdb_leaderboard.errors import FailedPrecondition, InvalidArgument, WindowNotReady
from fdb_leaderboard.index import Entry, IndexSettings, RankMode, ScanType
from fdb_leaderboard.index.directory import INT64_MAX, INT64_MIN, WindowUpdate
from fdb_leaderboard.rankedset import HashFunction
from fdb_leaderboard.store import Database
from tests.index.conftest import make

COMPETITION = RankMode.COMPETITION

# Several examples store scores before the first window update on purpose; the warning that
# says so is checked in tests/index/test_easy_mistakes.py and by the model test.
pytestmark = pytest.mark.filterwarnings("ignore::fdb_leaderboard.errors.NoWindowsWarning")


# -- byte compatibility with the Record Layer -------------------------------------------------------


def test_reference_bytes(db: Database, prefix: bytes) -> None:
    index = make(db, prefix, hash_function=HashFunction.JDK, count_duplicates=False, group_size=1, context_size=1)
    index.update_windows(
        WindowUpdate(
            update_timestamp=1234,
            high_score_first=True,
            windows=[(2, 50, 150), (1, 100, 200), (1, -10, 50), (1, -10, 100)],
        )
    )
    # keys: all-time 0, then in request order 1..4; listed by type, start, wider first
    directory = bytes.fromhex(
        "08 d2 09"  # 1: update_timestamp 1234
        "10 01"  # 2: high_score_first true
        "18 05"  # 3: next_key 5
        "22 1c"  # 4: the all-time window, 28 bytes
        "   08 00"  # type 0
        "   10 80 80 80 80 80 80 80 80 80 01"  # start -2**63 as uint64 2**63
        "   18 ff ff ff ff ff ff ff ff 7f"  # end 2**63 - 1
        "   2a 01 14"  # subspace_key pack((0,))
        "   30 06"  # nlevels 6
        "22 15 08 01 10 f6 ff ff ff ff ff ff ff ff 01 18 64 2a 02 15 04 30 06"  # (1, -10, 100) key 4
        "22 15 08 01 10 f6 ff ff ff ff ff ff ff ff 01 18 32 2a 02 15 03 30 06"  # (1, -10, 50) key 3
        "22 0d 08 01 10 64 18 c8 01 2a 02 15 02 30 06"  # (1, 100, 200) key 2
        "22 0d 08 02 10 32 18 96 01 2a 02 15 01 30 06"  # (2, 50, 150) key 1
    )
    S = prefix
    P = S + bytes.fromhex("15 02")  # pack((2,))
    X = S + bytes.fromhex("15 03")  # pack((3,))
    assert P[len(S) :] == fdb.tuple.pack((2,))
    assert X[len(S) :] == fdb.tuple.pack((3,))

    def get(key: bytes) -> bytes | None:
        return db.read(lambda tr: tr.get(key))

    assert get(X) == directory

    index.save_sub_directory(("g",), True)
    index.save_sub_directory(("h",), False)
    assert get(X + bytes.fromhex("00 02 67 00")) == bytes.fromhex("08 01")  # X + pack((None, "g"))
    assert get(X + fdb.tuple.pack((None, "h"))) == bytes.fromhex("08 00")  # proto2: false is written

    index.add_score(("p1",), 7, 10, context=("c",), group=("g",))
    # the latest timestamp: 8-byte little endian of 10 - (-2**63)
    assert get(P) == bytes.fromhex("0a 00 00 00 00 00 00 80")
    # primary B-tree: (lb_key, group, -score, ts, context, pk) in windows 0, 3 and 4, empty values
    primary = db.read(lambda tr: tr.get_range(P, P[:-1] + b"\x03"))
    assert primary == [
        (P, bytes.fromhex("0a 00 00 00 00 00 00 80")),
        (P + fdb.tuple.pack((0, "g", -7, 10, "c", "p1")), b""),
        (P + fdb.tuple.pack((3, "g", -7, 10, "c", "p1")), b""),
        (P + fdb.tuple.pack((4, "g", -7, 10, "c", "p1")), b""),
    ]
    assert primary[1][0] == P + bytes.fromhex("14 02 67 00 13 f8 15 0a 02 63 00 02 70 31 00")
    # ranked set of window 4, group g: element pack((-7, 10, "c")), double-encoded as bytes
    element = fdb.tuple.pack((-7, 10, "c"))
    assert element == bytes.fromhex("13 f8 15 0a 02 63 00")
    jdk = 1
    for byte in element:  # java.util.Arrays.hashCode over signed bytes
        jdk = (31 * jdk + (byte - 256 if byte > 127 else byte)) & 0xFFFF_FFFF
    assert jdk & 0xF != 0  # not promoted: only level 0 holds it, the sentinels above count it
    one, zero = bytes.fromhex("01 00 00 00 00 00 00 00"), bytes(8)
    node = X + fdb.tuple.pack((4, "g", 0, element))
    assert node == X + bytes.fromhex("15 04 02 67 00 14 01 13 f8 15 0a 02 63 00 ff 00")
    ranked = db.read(lambda tr: tr.get_range(X + fdb.tuple.pack((4, "g")), X + fdb.tuple.pack((4, "g\x00"))))
    assert ranked == sorted(
        [(X + fdb.tuple.pack((4, "g", 0, b"")), zero), (node, one)]
        + [(X + fdb.tuple.pack((4, "g", level, b"")), one) for level in range(1, 6)]
    )
    # a second record with the same score key is not counted twice (count_duplicates off)
    index.add_score(("p2",), 7, 10, context=("c",), group=("g",))
    assert get(node) == one
    assert index.count(1, 0, ("g",)) == 1
    assert get(X) == directory  # writes never touch the directory


def test_score_types_keep_numeric_order(db: Database, prefix: bytes) -> None:
    """The tuple layer sorts every int before every float, so an index holds one score type."""
    ints = make(db, prefix + b"i")
    ints.update_windows(WindowUpdate())
    with pytest.raises(InvalidArgument, match="integer scores"):
        ints.add_score(("a",), 1.5, 10)
    with pytest.raises(InvalidArgument, match="integer scores"):
        ints.rank_for_score(2.5)
    doubles = make(db, prefix + b"d", score_type="DOUBLE")
    doubles.update_windows(WindowUpdate())
    for pk, score in [("a", 100), ("b", 1.5), ("c", 2), ("d", -0.25)]:
        doubles.add_score((pk,), score, 10)
    assert [(e.pk[0], e.score) for e in doubles.top(10)] == [("d", -0.25), ("b", 1.5), ("c", 2.0), ("a", 100.0)]
    assert doubles.rank_for_score(1.75) == 2 and doubles.rank_for_score(2) == 2
    with pytest.raises(InvalidArgument, match="SUM"):
        IndexSettings(aggregation="SUM", score_type="DOUBLE")


@pytest.mark.parametrize("high_first", [True, False])
def test_negative_zero_ties_with_zero(db: Database, prefix: bytes, high_first: bool) -> None:
    """-0.0 is stored as 0.0: the tuple layer orders the two apart, which would rank equal
    scores by sign instead of by who reached them first."""
    index = make(db, prefix, score_type="DOUBLE", high_score_first=high_first)
    index.update_windows(WindowUpdate(high_score_first=high_first))
    index.add_score(("late",), -0.0, 20)
    index.save_record(("early",), [Entry(0.0, 10)])
    index.add_score(("best",), 1.0 if high_first else -1.0, 30)
    listed = index.top(3)
    assert [(e.pk[0], e.rank) for e in listed] == [("best", 0), ("early", 1), ("late", 2)]
    assert [math.copysign(1, e.score) for e in listed[1:]] == [1, 1]
    assert index.rank_for_score(-0.0) == index.rank_for_score(0.0) == 1


def test_reference_layout_ranks_distinct_score_keys(db: Database, prefix: bytes) -> None:
    """Without duplicate counting (the Record Layer's layout) records with identical
    (score, timestamp, context) share one ranked-set element: ranks and counts are over keys."""
    index = make(db, prefix, hash_function=HashFunction.JDK, count_duplicates=False)
    index.update_windows(WindowUpdate())
    for pk, score, ts in [("a", 5, 1), ("b", 5, 1), ("c", 3, 2), ("d", 7, 0)]:
        index.add_score((pk,), score, ts)
    board = [("c", 0), ("a", 1), ("b", 1), ("d", 2)]
    assert index.count() == 3
    assert [(e.pk[0], e.rank) for e in index.top(2)] == board[:3]  # two keys: every record of each
    assert [(e.pk[0], e.rank) for e in index.top(9, mode=COMPETITION)] == board
    assert [(e.pk[0], e.rank) for e in index.around(("d",), 1, 0)] == board[1:]
    assert [index.rank((pk,)) for pk in "abcd"] == [1, 1, 0, 2]
    index.delete_record(("a",))  # b still holds the shared element
    assert index.count() == 3 and index.rank(("b",)) == 1
    index.delete_record(("b",))
    assert index.count() == 2 and index.rank(("d",)) == 1


@pytest.mark.parametrize("member", ["a", b"a"])
def test_a_group_is_not_mixed_with_a_longer_group_that_shares_its_bytes(
    db: Database, prefix: bytes, member: str | bytes
) -> None:
    # ("a",) packs to 02 61 00, ("a\x00",) to 02 61 00 ff 00: every read of a group must end
    # before the longer group's keys, not at strinc of its own prefix.
    index = make(db, prefix, group_size=1)
    index.update_windows(WindowUpdate())
    nul = "\x00" if isinstance(member, str) else b"\x00"
    short, longer = (member,), (member + nul,)
    index.add_score(("p1",), 10, 1, group=short)
    index.add_score(("p2",), 20, 2, group=longer)
    index.add_score(("p3",), 30, 3, group=longer)
    for group, pks in ((short, ["p1"]), (longer, ["p2", "p3"])):
        assert index.count(group=group) == len(pks)
        assert [e.pk[0] for e in index.top(10, group=group)] == pks
        for scan_type in (ScanType.BY_VALUE, ScanType.BY_RANK):
            assert [e.pk[0] for e in index.scan(scan_type, group=group).entries] == pks
        assert [e.pk[0] for e in index.around((pks[0],), 2, 2, group=group)] == pks
    assert [e.pk[0] for e in index.scan(ScanType.BY_RANK, low=1, group=longer).entries] == ["p3"]
    index.save_sub_directory((member + nul + nul,), True)
    with pytest.raises(FailedPrecondition):  # the short group has scores; the longer one doesn't count
        index.save_sub_directory(short, True)
    index.delete_record(("p1",))
    index.save_sub_directory(short, True)  # now empty, whatever the longer group holds


def test_an_element_is_not_mixed_with_a_longer_one_that_shares_its_bytes(db: Database, prefix: bytes) -> None:
    # One ranked element per (score, timestamp, context): context "x" packs to a prefix of "x\x00".
    index = make(db, prefix, context_size=1, count_duplicates=False)
    index.update_windows(WindowUpdate())
    index.add_score(("p1",), 5, 10, context=("x",))
    index.add_score(("p2",), 5, 10, context=("x\x00",))
    assert [(e.pk[0], e.rank) for e in index.top(1)] == [("p1", 0)]
    index.delete_record(("p1",))  # its element must leave the ranked set: no other record holds it
    assert index.check() == []
    assert [(e.pk[0], e.rank) for e in index.top(5)] == [("p2", 0)]


def test_sum_totals_outside_int64_in_a_later_window_or_a_trim(db: Database, prefix: bytes) -> None:
    # Writes check the totals of the windows that exist.  A window added later can hold a part
    # of the same entries whose total does not fit; its fill names the record.
    index = make(db, prefix, aggregation="SUM")
    index.update_windows(WindowUpdate())
    big = 1 << 62
    for score, ts in ((-big, 10), (big, 1), (big, 3)):
        index.add_score(("p",), score, ts)
    index.add_score(("q",), 5, 20)
    assert index.rank_and_entry(("p",)).score == big
    index.update_windows(WindowUpdate(windows=[(1, 0, 5)]))
    with pytest.raises(FailedPrecondition, match=r"record \('p',\) cannot be filled into .*int64 range"):
        index.fill()
    with pytest.raises(WindowNotReady):
        index.count(1, 0)
    index.delete_record(("p",))
    index.fill()
    assert index.count(1, 0) == 0 and index.count() == 1
    # A trim folds the entries before its time into a carried total.  Partial sums may leave
    # int64 on the way (a: -2**63 - 7, then -8); a carried total that does not fit (c's 2**63 + 4)
    # keeps its record's entries instead.
    index.add_entries(("a",), [Entry(INT64_MIN, INT64_MIN), Entry(INT64_MAX, -21), Entry(-7, INT64_MIN)])
    index.add_entries(("b",), [Entry(4, -30), Entry(6, 30)])
    for score, ts in ((-10, 50), (INT64_MAX, -20), (5, -19)):  # running totals that fit
        index.add_score(("c",), score, ts)
    assert index.trim(-10) == 4  # a's three entries and b's first
    assert [(e.pk[0], e.score) for e in index.top(5)] == [("a", -8), ("q", 5), ("b", 10), ("c", INT64_MAX - 5)]
    assert index.check() == []
    index.add_score(("c",), -100, 60)  # the kept entries still add up
    assert index.rank_and_entry(("c",)).score == INT64_MAX - 105


def test_sum_totals_live_in_the_elements_of_both_directions(db: Database, prefix: bytes) -> None:
    # A SUM head keeps each window's total only as its element's stored score (negated in a
    # high-score-first group).  Heads written before carry the total as field 6 too: it is
    # ignored (here a stale value), kept as an unknown field, and the totals stay exact.
    from fdb_leaderboard.proto import index_pb2

    index = make(db, prefix, aggregation="SUM", group_size=1)
    index.update_windows(WindowUpdate(windows=[(1, 0, 100)]))
    index.save_sub_directory(("hi",), True)
    for group in (("lo",), ("hi",)):
        index.add_entries(("min",), [Entry(INT64_MIN + 5, 1, group=group), Entry(-5, 2, group=group)])
        index.add_entries(("max",), [Entry(INT64_MAX - 5, 1, group=group), Entry(5, 2, group=group)])
        index.add_entries(("mid",), [Entry(7, 1, group=group), Entry(-3, 200, group=group)])

    def totals(window_type: int = 0, ts: int | None = None) -> dict:
        return {
            (group, e.pk[0]): e.score for group in ("lo", "hi") for e in index.top(5, window_type, ts, group=(group,))
        }

    expected_all = {(g, pk): t for g in ("lo", "hi") for pk, t in (("min", INT64_MIN), ("max", INT64_MAX), ("mid", 4))}
    assert totals() == expected_all
    assert totals(1, 0) == {**expected_all, ("lo", "mid"): 7, ("hi", "mid"): 7}

    def head(pk: str) -> index_pb2.RecordHead:
        return index.read(lambda ops: ops.txn.read_head(fdb.tuple.pack(((pk,),))))

    for state in head("mid").windows:
        bare = index_pb2.WindowState(
            lb_key=state.lb_key, group=state.group, element=state.element, seq=state.seq, submissions=state.submissions
        )
        assert state.SerializeToString() == bare.SerializeToString()  # no separate total

    # The earlier format: field 6 (sint64, zigzag 2 -> 1) appended to every state of mid's head.
    old = head("mid")
    stale = index_pb2.RecordHead.FromString(old.SerializeToString())
    del stale.windows[:]
    for state in old.windows:
        stale.windows.add().MergeFromString(state.SerializeToString() + b"\x30\x02")
    raw = stale.SerializeToString()
    assert len(raw) == len(old.SerializeToString()) + 2 * len(old.windows)
    index.run(lambda ops: ops.tr.set(ops.txn.layout.head_key(fdb.tuple.pack((("mid",),))), raw))
    for group in (("lo",), ("hi",)):
        index.add_score(("mid",), 10, 3, group=group)
    assert totals() == {**expected_all, ("lo", "mid"): 14, ("hi", "mid"): 14}
    assert totals(1, 0) == {**expected_all, ("lo", "mid"): 17, ("hi", "mid"): 17}
    assert index.check() == []
