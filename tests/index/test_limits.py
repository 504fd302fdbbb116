"""Limits: large records, large windows, FoundationDB's limits, and the embedded store's durability.

- a record with thousands of entries (added in chunks, then replaced in one save) keeps exact
  ranks in every window and a consistent index;
- a window of 50,000 bulk-loaded records answers count, top, rank, around, score-for-rank,
  rank-for-score and paged scans exactly as a sorted list does;
- work beyond FoundationDB's limits is refused clearly with nothing stored: a write batch over
  10 MB (TransactionTooLarge; INVALID_ARGUMENT through gRPC, RESOURCE_EXHAUSTED above gRPC's
  4 MB message limit), a record whose head would exceed the 100 kB value limit, keys over
  the index's 500-byte bound;
- the embedded store is durable (fsync on commit) unless ``durable=false`` is given.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from fdb_leaderboard.cli import commands as cli
from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.errors import InvalidArgument
from fdb_leaderboard.index import Entry, IfAbsent, IndexSettings, LeaderboardIndex, RankMode, ScanType
from fdb_leaderboard.index.directory import WindowSpec, WindowUpdate
from fdb_leaderboard.proto import service_pb2 as pb
from fdb_leaderboard.service import Server, ServerSettings
from fdb_leaderboard.store import Database, StoreError, TransactionTooLarge, open_database, parse_url
from tests.conftest import store_rows

PREFIX = b"\x15\x20"
DAY = 1000  # a "day" of the type 1 windows here


def snapshot(db: Database) -> list[tuple[bytes, bytes]]:
    """Every key and value in the store (the server processes' own reports aside)."""
    return store_rows(db)


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = open_database(f"lmdb:{tmp_path / 'store'}?durable=false")
    yield database
    database.close()


# -- a record with thousands of entries -------------------------------------------------------------


def values_by_window(
    entries: dict[str, list[tuple[int, int]]], aggregation: str, start: int, end: int
) -> dict[str, int]:
    """Each record's score in [start, end): the lowest (BEST, low score first) or the total (SUM)."""
    out = {}
    for pk, rows in entries.items():
        scores = [score for score, ts in rows if start <= ts < end]
        if scores:
            out[pk] = min(scores) if aggregation == "BEST" else sum(scores)
    return out


def check_board(index: LeaderboardIndex, expected: dict[str, int], window_type: int, ts: int | None) -> None:
    """The window's whole board: the right score per record, in order, with competition ranks."""
    board = index.top(len(expected) + 5, window_type, ts, mode=RankMode.COMPETITION)
    assert {e.pk[0]: e.score for e in board} == expected
    ordered = sorted(expected.values())
    assert [e.score for e in board] == ordered
    for entry in board:  # competition rank: how many records score strictly better
        assert entry.rank == bisect.bisect_left(ordered, entry.score)


@pytest.mark.parametrize("aggregation", ["BEST", "SUM"])
def test_a_record_with_thousands_of_entries(db: Database, aggregation: str) -> None:
    rng = random.Random(3)
    index = LeaderboardIndex.create(db, PREFIX, IndexSettings(aggregation=aggregation, high_score_first=False))
    index.update_windows(WindowUpdate(specs=[WindowSpec(1, 0, DAY, DAY, 10)]))
    entries: dict[str, list[tuple[int, int]]] = {}
    for i in range(60):
        pk = f"other{i:02d}"
        entries[pk] = [(rng.randrange(1, 10**6), rng.randrange(10 * DAY)) for _ in range(3)]
        index.save_record((pk,), [Entry(score, ts) for score, ts in entries[pk]])

    big: list[tuple[int, int]] = []
    for _chunk in range(6):  # 3,000 entries, 500 per transaction
        rows = [(rng.randrange(1, 10**6), rng.randrange(10 * DAY)) for _ in range(500)]
        index.add_entries(("big",), [Entry(score, ts) for score, ts in rows])
        big.extend(rows)
    entries["big"] = big

    def verify() -> None:
        stored = index.read(lambda ops: ops.txn.read_entries(b"\x05\x02big\x00\x00"))
        assert sorted((score, ts) for ts, _seq, (_g, score, _c) in stored) == sorted(entries["big"])
        assert len(stored) == 3000
        check_board(index, values_by_window(entries, aggregation, -(1 << 63), 1 << 63), 0, None)
        for day in range(10):
            check_board(index, values_by_window(entries, aggregation, day * DAY, (day + 1) * DAY), 1, day * DAY)
        assert index.check() == []

    verify()
    # Replace all 3,000 entries in one transaction.
    entries["big"] = [(rng.randrange(1, 10**6), rng.randrange(10 * DAY)) for _ in range(3000)]
    index.save_record(("big",), [Entry(score, ts) for score, ts in entries["big"]])
    verify()


# -- a window with 50,000 records -------------------------------------------------------------------


@pytest.mark.slow
def test_a_window_with_50000_records(tmp_path: Path) -> None:
    n = 50_000
    rng = random.Random(5)
    url = f"lmdb:{tmp_path / 'big'}?durable=false"
    db = open_database(url)
    index = LeaderboardIndex.create(db, PREFIX, IndexSettings(high_score_first=True))
    index.update_windows(WindowUpdate(high_score_first=True, windows=[(1, 0, 5_000)]))
    scores = rng.sample(range(10**9), n)  # distinct: one expected order
    timestamps = [rng.randrange(10_000) for _ in range(n)]
    pks = [f"player{i:05d}" for i in range(n)]
    written = index.bulk_load(((pk,), [Entry(s, t)]) for pk, s, t in zip(pks, scores, timestamps, strict=True))
    assert written == n

    for window_type, ts, members in ((0, None, range(n)), (1, 0, [i for i in range(n) if timestamps[i] < 5_000])):
        ordered = sorted(members, key=lambda i: -scores[i])  # high score first
        position = {pks[i]: r for r, i in enumerate(ordered)}
        assert index.count(window_type, ts) == len(ordered)
        top = index.top(100, window_type, ts)
        assert [(e.pk[0], e.score, e.rank) for e in top] == [
            (pks[i], scores[i], r) for r, i in enumerate(ordered[:100])
        ]
        for i in rng.sample(list(members), 200):
            assert index.rank((pks[i],), window_type, ts) == position[pks[i]]
        for r in rng.sample(range(len(ordered)), 50):
            assert index.score_for_rank(r, window_type, ts) == scores[ordered[r]]
            assert index.rank_for_score(scores[ordered[r]], window_type, ts) == r
        assert index.score_for_rank(len(ordered), window_type, ts) is None
        for i in rng.sample(list(members), 20):
            around = index.around((pks[i],), 3, 4, window_type, ts)
            p = position[pks[i]]
            first = max(0, min(p - 3, len(ordered) - 8))
            assert [e.pk[0] for e in around] == [pks[j] for j in ordered[first : first + 8]]
            assert [e.rank for e in around] == list(range(first, first + 8))
        bottom = index.around(("nobody",), 2, 2, window_type, ts, if_absent=IfAbsent.BOTTOM)
        assert [e.pk[0] for e in bottom] == [pks[j] for j in ordered[-5:]]

    # Rank scans in pages, with continuations, over a stretch deep in the board.
    ordered = sorted(range(n), key=lambda i: -scores[i])
    seen, token = [], None
    while True:
        page = index.scan(ScanType.BY_RANK, low=30_000, high=30_999, limit=128, continuation=token)
        seen.extend((e.pk[0], e.rank) for e in page.entries)
        token = page.continuation
        if token is None:
            break
    assert seen == [(pks[i], 30_000 + r) for r, i in enumerate(ordered[30_000:31_000])]
    # A score range, in natural order.
    low, high = sorted(scores)[1000], sorted(scores)[1099]
    page = index.scan(ScanType.BY_VALUE, low=low, high=high)
    assert [e.score for e in page.entries] == sorted(s for s in scores if low <= s <= high)

    # The checker reads everything in one transaction: give it more than FoundationDB's 5 s.
    unlimited = open_database(f"{url}&transaction_seconds=0")
    try:
        assert LeaderboardIndex.open(unlimited, PREFIX).check() == []
    finally:
        unlimited.close()
        db.close()


# -- FoundationDB's limits --------------------------------------------------------------------------


def test_write_batch_over_10_mb_is_refused_with_nothing_stored(tmp_path: Path) -> None:
    db = open_database(f"lmdb:{tmp_path / 'store'}?durable=false&transaction_seconds=0")
    try:
        index = LeaderboardIndex.create(db, PREFIX, IndexSettings(context_size=1, high_score_first=False))
        index.update_windows(WindowUpdate(specs=[WindowSpec(1, 0, DAY, DAY, 10)]))
        index.add_score(("before",), 1, 1, ("c",))
        before = snapshot(db)
        pk = "k" * 180
        batch = [((pk, i), [Entry(j, j, (f"c{j}",)) for j in range(2000)]) for i in range(40)]
        with pytest.raises(TransactionTooLarge, match="more than FoundationDB's limit of 10000000"):
            index.write_batch(batch)
        assert snapshot(db) == before
        # The same data split into transactions under the limit goes in.
        assert index.bulk_load(batch, batch_size=10) == 40
        assert index.count() == 41
        assert index.check() == []
    finally:
        db.close()


def test_a_record_in_too_many_windows_is_refused_with_nothing_stored(db: Database) -> None:
    index = LeaderboardIndex.create(db, PREFIX, IndexSettings(context_size=1, high_score_first=False))
    # 1,000 windows all containing timestamp 5000: the record's head would pass FoundationDB's 100 kB.
    index.update_windows(WindowUpdate(specs=[WindowSpec(1, 0, 1, 10**6, 1000)]))
    before = snapshot(db)
    with pytest.raises(InvalidArgument, match="too many windows"):
        index.add_score(("a",), 5, 5000, ("x" * 100,))
    assert snapshot(db) == before
    index.add_score(("a",), 5, 5000, ("x",))  # a small context keeps the head under the limit
    assert index.rank(("a",), 1, 5000) == 0
    assert index.check() == []


def test_keys_over_the_index_bound_are_refused(db: Database) -> None:
    index = LeaderboardIndex.create(db, PREFIX, IndexSettings(group_size=1, context_size=1, high_score_first=False))
    index.update_windows(WindowUpdate())
    before = snapshot(db)
    with pytest.raises(InvalidArgument, match="at most 200"):
        index.add_score(("p" * 250,), 1, 1, ("c",), ("g",))
    with pytest.raises(InvalidArgument, match="index key"):
        index.add_score(("p" * 150,), 1, 1, ("c" * 200,), ("g" * 200,))
    assert snapshot(db) == before
    index.add_score(("p" * 150,), 1, 1, ("c" * 60,), ("g" * 60,))  # long, but within 500 bytes
    assert index.check() == []


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    # Its own maintenance off: what the store holds changes only through the test's calls (a pass
    # noticing the ended windows would write their window-end events between two snapshots).
    settings = ServerSettings(maintain_every=0)
    running = Server(f"lmdb:{tmp_path / 's'}?durable=false&transaction_seconds=0", "127.0.0.1:0", settings=settings)
    running.start()
    yield running
    running.stop(grace=1)


def test_grpc_write_batch_over_the_limits(server: Server) -> None:
    with LeaderboardClient(server.address, timeout=60) as lb:
        lb.create_index("big", context_size=1)
        lb.update_windows("big", specs=[(1, 0, DAY, DAY, 10)])
        lb.add_score("big", ("before",), 1, 1, context=("c",))
        before = snapshot(server.db)

        def batch(records: int, entries: int) -> pb.WriteBatchRequest:
            return pb.WriteBatchRequest(
                index="big",
                records=[
                    pb.RecordEntries(
                        pk=[pb.Item(string="k" * 180), pb.Item(int=i)],
                        entries=[
                            pb.Entry(score=pb.Score(int=j), timestamp=j, context=[pb.Item(string=f"c{j}")])
                            for j in range(entries)
                        ],
                    )
                    for i in range(records)
                ],
            )

        # Under gRPC's 4 MB message limit, over FoundationDB's 10 MB once written.
        request = batch(40, 2000)
        assert request.ByteSize() < 4 * 1024 * 1024
        with pytest.raises(grpc.RpcError) as caught:
            lb.stub.WriteBatch(request, timeout=60)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "10000000" in caught.value.details()
        assert snapshot(server.db) == before
        # Over gRPC's own message limit: refused by the transport, before the service.
        request = batch(100, 4000)
        assert request.ByteSize() > 4 * 1024 * 1024
        with pytest.raises(grpc.RpcError) as caught:
            lb.stub.WriteBatch(request, timeout=60)
        assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert snapshot(server.db) == before
        assert lb.count("big") == 1 and lb.verify("big") == []


# -- durability of the embedded store ---------------------------------------------------------------


def test_the_embedded_store_is_durable_by_default(tmp_path: Path) -> None:
    default = open_database(f"lmdb:{tmp_path / 'a'}")
    try:
        assert default.durable is True
        # Every commit's writes are synced in the redo log before LMDB commits them unsynced.
        assert default.redo_log is not None and default._env.flags()["sync"] is False
    finally:
        default.close()
    with open_database(f"lmdb:{tmp_path / 'd'}?redo_log=false") as synced:
        flags = synced._env.flags()  # LMDB syncs data and meta pages on every commit
        assert synced.durable is True and synced.redo_log is None
        assert flags["sync"] is True and flags["metasync"] is True
    for spelled in ("true", "1", "yes"):
        with open_database(f"lmdb:{tmp_path / 'b'}?durable={spelled}") as explicit:
            assert explicit.durable is True
    # The command line's default store and the server it starts are durable too.
    assert parse_url(cli.DEFAULT_STORE) == ("lmdb", "./data", {})
    served = Server(f"lmdb:{tmp_path / 'c'}", "127.0.0.1:0")
    try:
        assert served.db.durable is True
    finally:
        served.stop(grace=0)


def test_durable_false_is_honored(tmp_path: Path) -> None:
    fast = open_database(f"lmdb:{tmp_path / 'a'}?durable=false")
    try:
        assert fast.durable is False
        flags = fast._env.flags()
        assert flags["sync"] is False and flags["metasync"] is False
        # One process opens one store with one durability setting.
        with pytest.raises(StoreError, match="durable=False"):
            open_database(f"lmdb:{tmp_path / 'a'}")
        # Data written without fsync is still there after close and reopen (a process exit loses nothing).
        index = LeaderboardIndex.create(fast, PREFIX, IndexSettings())
        index.update_windows(WindowUpdate())
        index.add_score(("a",), 7, 1)
    finally:
        fast.close()
    with open_database(f"lmdb:{tmp_path / 'a'}") as reopened:
        assert reopened.durable is True
        assert LeaderboardIndex.open(reopened, PREFIX).rank_and_entry(("a",)).score == 7
    with pytest.raises(ValueError, match="durable must be true or false"):
        open_database(f"lmdb:{tmp_path / 'b'}?durable=maybe")
