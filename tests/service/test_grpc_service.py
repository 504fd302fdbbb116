"""The gRPC service end to end: a real server on a local port, the Python client and raw stubs.

Every RPC is called at least once and its answer compared with values worked out by hand
on small data (the status codes a rejected request gets, and that it changes nothing, are in
tests/service/test_rejected_requests.py).  Standard health checking and reflection, graceful
shutdown with writes in flight, concurrent writers and the embedded store's group commit are
exercised too.  The server must never answer UNKNOWN or INTERNAL here: an autouse fixture fails
any test that makes the service log an unexpected exception.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.errors import InvalidArgument
from fdb_leaderboard.proto import service_pb2 as pb
from fdb_leaderboard.service import SERVICE_NAME, Server
from tests.conftest import ServerPlace, wait_until
from tests.support.service_calls import _entry, populate_game, rows, rpc_error, snapshot

DAY = 86_400
Code = grpc.StatusCode


# -- fixtures and helpers ----------------------------------------------------------------------


pytestmark = pytest.mark.usefixtures("no_unexpected_server_errors")


def board(lb: LeaderboardClient, index: str, window_type: int = 0, ts: int | None = None, **kwargs: Any) -> list:
    """A window's whole board as (first pk element, score, timestamp, rank)."""
    return [(e.pk[0], e.score, e.timestamp, e.rank) for e in lb.top(index, 1000, window_type, ts, **kwargs)]


def names(entries: list) -> list:
    return [e.pk[0] for e in entries]


ALL_TIME_BOARD = [
    ("alice", 400, 90_001, 0),
    ("bob", 300, 2000, 1),
    ("eve", 300, 2500, 2),
    ("carol", 100, 3000, 3),
    ("frank", 100, 3000, 3),  # same (score, timestamp, context) as carol: same ORDINAL rank
    ("dave", 50, 90_000, 5),
]
DAY0_BOARD = [
    ("bob", 300, 2000, 0),
    ("eve", 300, 2500, 1),
    ("alice", 100, 1000, 2),
    ("carol", 100, 3000, 3),
    ("frank", 100, 3000, 3),
]
DAY1_BOARD = [("alice", 400, 90_001, 0), ("dave", 50, 90_000, 1)]


# -- admin RPCs ---------------------------------------------------------------------------------


def test_create_and_list_indexes(client: LeaderboardClient) -> None:
    assert client.create_index("game", high_score_first=True) is True
    assert client.create_index("game", high_score_first=True) is False  # same options: not an error
    policy = pb.MaintenancePolicy(
        windows=[pb.RegularWindows(type=1, base=0, increment=DAY, duration=DAY)],
        horizon=2 * DAY,
        certain_within=DAY,
        retain=3 * DAY,
    )
    assert client.create_index(
        "points", aggregation="SUM", group_size=1, context_size=1, hash_function="CRC", maintenance=policy
    )
    assert client.create_index("ref", reference_layout=True, aggregation="LATEST")
    listed = {info.name: info for info in client.list_indexes()}
    assert sorted(listed) == ["game", "points", "ref"]
    game = listed["game"].options
    assert (game.aggregation, game.hash_function, game.high_score_first) == (pb.BEST, pb.MURMUR3, True)
    assert game.count_duplicates  # exact record counts unless the reference layout is asked for
    points = listed["points"]
    assert (points.options.aggregation, points.options.hash_function) == (pb.SUM, pb.CRC)
    assert (points.options.group_size, points.options.context_size) == (1, 1)
    assert points.maintenance == policy
    ref = listed["ref"].options
    assert (ref.aggregation, ref.hash_function, ref.count_duplicates) == (pb.LATEST, pb.JDK, False)
    assert listed["game"].maintenance == pb.MaintenancePolicy()

    client.set_maintenance("game", policy)
    assert {i.name: i.maintenance for i in client.list_indexes()}["game"] == policy
    client.set_maintenance("game", pb.MaintenancePolicy())
    assert {i.name: i.maintenance for i in client.list_indexes()}["game"] == pb.MaintenancePolicy()


def test_update_and_list_windows(client: LeaderboardClient) -> None:
    client.create_index("game", high_score_first=True, all_time=False)
    before = client.list_windows("game")
    assert not before.exists and not before.windows and not before.HasField("latest_timestamp")

    result = client.update_windows(
        "game",
        specs=[(1, 0, DAY, DAY, 3)],
        windows=[(9, 100, 500)],
        high_score_first=True,
        update_timestamp=42,
        nlevels=4,
    )
    assert result.changed
    added = [(w.type, w.start, w.end, w.key, w.nlevels) for w in result.added]
    assert added == [
        (0, -(2**63), 2**63 - 1, 0, 4),
        (1, 0, DAY, 1, 4),
        (1, DAY, 2 * DAY, 2, 4),
        (1, 2 * DAY, 3 * DAY, 3, 4),
        (9, 100, 500, 4, 4),
    ]
    assert not result.deleted and not result.filling

    listing = client.list_windows("game")
    assert listing.exists and listing.high_score_first and listing.update_timestamp == 42
    assert [(w.type, w.start, w.end, w.key, w.filling) for w in listing.windows] == [
        (0, -(2**63), 2**63 - 1, 0, False),
        (1, 0, DAY, 1, False),
        (1, DAY, 2 * DAY, 2, False),
        (1, 2 * DAY, 3 * DAY, 3, False),
        (9, 100, 500, 4, False),
    ]

    # The same update again changes nothing; delete_before drops windows that ended by then.
    again = client.update_windows("game", specs=[(1, 0, DAY, DAY, 3)], high_score_first=True, update_timestamp=42)
    assert not again.changed and not again.added
    client.add_score("game", ("alice",), 7, 1000)
    dropped = client.update_windows("game", high_score_first=True, delete_before=DAY, update_timestamp=43)
    assert [(w.type, w.start, w.end) for w in dropped.deleted] == [(1, 0, DAY), (9, 100, 500)]
    listing = client.list_windows("game")
    assert [w.key for w in listing.windows] == [0, 2, 3]
    assert listing.latest_timestamp == 1000 and listing.update_timestamp == 43
    assert board(client, "game") == [("alice", 7, 1000, 0)]


def test_sub_directories(client: LeaderboardClient) -> None:
    client.create_index("games", group_size=1, high_score_first=True)
    client.update_windows("games", high_score_first=True)
    assert client.sub_directories("games") == {}
    client.save_sub_directory("games", ("golf",), False)
    client.save_sub_directory("games", ("chess",), True)
    assert client.sub_directories("games") == {("golf",): False, ("chess",): True}
    # golf is low-score-first, chess inherits nothing special: high-score-first.
    for pk, score, game in [("ann", 72, "golf"), ("ben", 68, "golf"), ("ann", 1500, "chess"), ("ben", 1700, "chess")]:
        client.add_score("games", (pk,), score, 10, group=(game,))
    assert board(client, "games", group=("golf",)) == [("ben", 68, 10, 0), ("ann", 72, 10, 1)]
    assert board(client, "games", group=("chess",)) == [("ben", 1700, 10, 0), ("ann", 1500, 10, 1)]
    # Saving the same direction again is allowed after scores; flipping is not (see the error tests).
    client.save_sub_directory("games", ("golf",), False)
    assert client.sub_directories("games") == {("golf",): False, ("chess",): True}


def test_keep_ahead_expire_trim_fill_verify(client: LeaderboardClient) -> None:
    policy = pb.MaintenancePolicy(
        windows=[pb.RegularWindows(type=1, base=0, increment=DAY, duration=DAY)],
        horizon=2 * DAY,
        certain_within=DAY,
        retain=3 * DAY,
    )
    client.create_index("game", high_score_first=True, maintenance=policy)
    client.update_windows("game", high_score_first=True)
    # At a midnight: today's window and tomorrow's (within certain_within) are certain; the one
    # starting exactly at the horizon has probability 0.
    added = client.keep_ahead("game", 10 * DAY)
    assert [(w.type, w.start, w.end) for w in added] == [(1, 10 * DAY, 11 * DAY), (1, 11 * DAY, 12 * DAY)]
    assert client.keep_ahead("game", 10 * DAY) == []  # idempotent
    # Half a day later tomorrow's is certain; the day after has probability 1/2: never tomorrow's twice.
    later = client.keep_ahead("game", 10 * DAY + DAY // 2)
    assert {(w.start, w.end) for w in later} <= {(12 * DAY, 13 * DAY)}

    client.add_score("game", ("alice",), 5, 10 * DAY + 1)
    client.add_score("game", ("alice",), 3, 10 * DAY + 2)  # not alice's best anywhere: trimmable
    client.add_score("game", ("bob",), 9, 11 * DAY + 1)
    client.add_score("game", ("alice",), 8, 11 * DAY + 2)
    assert board(client, "game", 1, 10 * DAY) == [("alice", 5, 10 * DAY + 1, 0)]
    assert board(client, "game", 1, 11 * DAY) == [("bob", 9, 11 * DAY + 1, 0), ("alice", 8, 11 * DAY + 2, 1)]

    # Trim: alice's 3 is nobody's value; her 5 is day 10's value and stays.
    assert client.trim("game", 11 * DAY) == 1
    assert client.list_windows("game").trimmed_before == 11 * DAY
    assert client.verify("game") == []
    # Expire day 10; its value entry (alice's 5) can now be trimmed too.
    gone = client.expire("game", 11 * DAY)
    assert [(w.type, w.start, w.end) for w in gone] == [(1, 10 * DAY, 11 * DAY)]
    assert client.expire("game", 11 * DAY) == []
    rpc_error(Code.NOT_FOUND, lambda: client.top("game", 5, 1, 10 * DAY), "no window of type 1", str(10 * DAY))
    assert client.trim("game", 11 * DAY) == 1
    assert board(client, "game") == [("bob", 9, 11 * DAY + 1, 0), ("alice", 8, 11 * DAY + 2, 1)]
    assert client.verify("game") == []

    # Fill: a new window over stored scores fills from the records, then serves.
    result = client.update_windows("game", windows=[(5, 11 * DAY, 12 * DAY)], high_score_first=True)
    assert [(w.type, w.filling) for w in result.filling] == [(5, True)]
    rpc_error(Code.FAILED_PRECONDITION, lambda: client.count("game", 5, 11 * DAY), "still being filled")
    step = client.fill("game", max_records=1, max_batches=1)
    assert not step.done and step.records_processed == 1 and [w.type for w in step.filling] == [5]
    step = client.fill("game")
    assert step.done and step.records_processed == 1 and not step.filling
    assert client.fill("game").done
    assert board(client, "game", 5, 11 * DAY) == [("bob", 9, 11 * DAY + 1, 0), ("alice", 8, 11 * DAY + 2, 1)]
    assert client.verify("game") == []
    assert client.verify("game", max_problems=1) == []


# -- writes and reads ---------------------------------------------------------------------------


def test_reads_on_hand_computed_boards(client: LeaderboardClient) -> None:
    populate_game(client)
    assert board(client, "game") == ALL_TIME_BOARD
    assert board(client, "game", 1, 1000) == DAY0_BOARD
    assert board(client, "game", 1, DAY + 5) == DAY1_BOARD
    assert board(client, "game", 1, 2 * DAY) == []
    assert rows(client.top("game", 2)) == ALL_TIME_BOARD[:2]
    assert client.top("game", 0) == []
    competition = [(pk, score, ts, rank) for pk, score, ts, rank in board(client, "game", mode="COMPETITION")]
    assert [r[3] for r in competition] == [0, 1, 1, 3, 3, 5]
    assert [r[3] for r in board(client, "game", 1, 1000, mode="COMPETITION")] == [0, 0, 2, 2, 2]

    assert [client.count("game", *w) for w in [(0, None), (1, 0), (1, DAY), (1, 3 * DAY - 1)]] == [6, 5, 2, 0]

    ranks = {pk: client.rank("game", (pk,)) for pk in ["alice", "bob", "eve", "carol", "frank", "dave", "zed"]}
    assert ranks == {"alice": 0, "bob": 1, "eve": 2, "carol": 3, "frank": 3, "dave": 5, "zed": None}
    assert client.rank("game", ("eve",), mode="COMPETITION") == 1
    assert client.rank("game", ("alice",), 1, 1000) == 2
    assert client.rank("game", ("alice",), 1, 1000, mode="COMPETITION") == 2
    assert client.rank("game", ("carol",), 1, 0, mode="COMPETITION") == 2
    assert client.rank("game", ("bob",), 1, DAY) is None  # bob has no score on day 1

    entry = client.rank_and_entry("game", ("frank",))
    assert (entry.pk, entry.score, entry.timestamp, entry.rank) == (("frank",), 100, 3000, 3)
    entry = client.rank_and_entry("game", ("alice",), 1, 500, mode="COMPETITION")
    assert (entry.pk, entry.score, entry.timestamp, entry.rank) == (("alice",), 100, 1000, 2)
    assert client.rank_and_entry("game", ("zed",)) is None

    assert names(client.around("game", ("eve",), 1, 1)) == ["bob", "eve", "carol"]
    assert rows(client.around("game", ("alice",), 2, 1)) == ALL_TIME_BOARD[:4]  # shifted down at the top
    assert rows(client.around("game", ("dave",), 1, 2)) == ALL_TIME_BOARD[2:]  # shifted up at the bottom
    assert names(client.around("game", ("frank",), 0, 0)) == ["frank"]
    assert client.around("game", ("zed",), 1, 1) == []
    assert names(client.around("game", ("zed",), 1, 1, if_absent="TOP")) == ["alice", "bob", "eve"]
    assert names(client.around("game", ("zed",), 1, 1, if_absent="BOTTOM")) == ["carol", "frank", "dave"]
    assert [e.rank for e in client.around("game", ("bob",), 1, 1, 1, 1000, mode="COMPETITION")] == [0, 0, 2]
    assert names(client.around("game", ("dave",), 5, 5, 1, DAY)) == ["alice", "dave"]

    assert [client.score_for_rank("game", r) for r in range(7)] == [400, 300, 300, 100, 100, 50, None]
    assert client.score_for_rank("game", 2, 1, 1000) == 100
    assert client.score_for_rank("game", 2**63) is None
    assert [client.rank_for_score("game", s) for s in [1000, 400, 350, 300, 100, 99, 0]] == [0, 0, 1, 1, 3, 5, 6]
    assert client.rank_for_score("game", 200, 1, 1000) == 2
    assert client.verify("game") == []


def test_record_writes(client: LeaderboardClient) -> None:
    populate_game(client)
    # SaveRecord replaces every entry of the record.
    assert client.save_record("game", ("frank",), [(250, 5000)]) == 2
    assert names(client.top("game", 10)) == ["alice", "bob", "eve", "frank", "carol", "dave"]
    assert board(client, "game", 1, 0)[2] == ("frank", 250, 5000, 2)
    # Changed: all-time (moved), day 0 (removed), day 1 and day 2 (added).
    assert client.save_record("game", ("frank",), [(60, DAY + 7), (70, 2 * DAY + 7)]) == 4
    assert names(client.top("game", 10, 1, 0)) == ["bob", "eve", "alice", "carol"]
    assert board(client, "game", 1, DAY) == [DAY1_BOARD[0], ("frank", 60, DAY + 7, 1), ("dave", 50, 90_000, 2)]
    assert board(client, "game", 1, 2 * DAY) == [("frank", 70, 2 * DAY + 7, 0)]
    assert client.save_record("game", ("frank",), []) == 3  # gone from every window, record kept empty
    assert client.rank("game", ("frank",)) is None and client.count("game") == 5

    # DeleteRecord: existed or not.
    assert client.delete_record("game", ("carol",)) is True
    assert client.delete_record("game", ("carol",)) is False
    assert client.delete_record("game", ("nobody",)) is False
    assert names(client.top("game", 10)) == ["alice", "bob", "eve", "dave"]
    assert names(client.top("game", 10, 1, 0)) == ["bob", "eve", "alice"]

    # WriteBatch: add (replace=False) keeps earlier entries, replace=True drops them.
    client.write_batch("game", [(("gina",), [(500, DAY + 9)]), (("dave",), [(60, 100)])], replace=False)
    assert board(client, "game") == [
        ("gina", 500, DAY + 9, 0),
        ("alice", 400, 90_001, 1),
        ("bob", 300, 2000, 2),
        ("eve", 300, 2500, 3),
        ("dave", 60, 100, 4),
    ]
    assert board(client, "game", 1, DAY) == [
        ("gina", 500, DAY + 9, 0),
        ("alice", 400, 90_001, 1),
        ("dave", 50, 90_000, 2),
    ]
    client.write_batch("game", [(("gina",), [(10, 10)]), (("dave",), [(55, 90_500)])], replace=True)
    assert board(client, "game") == [
        ("alice", 400, 90_001, 0),
        ("bob", 300, 2000, 1),
        ("eve", 300, 2500, 2),
        ("dave", 55, 90_500, 3),
        ("gina", 10, 10, 4),
    ]
    assert board(client, "game", 1, DAY) == [("alice", 400, 90_001, 0), ("dave", 55, 90_500, 1)]
    assert names(client.top("game", 10, 1, 0)) == ["bob", "eve", "alice", "gina"]
    assert client.verify("game") == []


def expected_boards(records: dict[str, list[tuple[int, int]]], days: int) -> dict[int | None, list]:
    """Brute force: each window's board (pk, score, timestamp, rank) of BEST, high score first.

    Scores are distinct, so the order is by score alone and ranks are positions.  Key None is
    the all-time window, d the daily window starting at d * DAY.
    """
    boards: dict[int | None, list] = {}
    for day in [None, *range(days)]:
        best = []
        for pk, entries in records.items():
            inside = [(score, ts) for score, ts in entries if day is None or day * DAY <= ts < (day + 1) * DAY]
            if inside:
                score, ts = max(inside)
                best.append((pk, score, ts))
        best.sort(key=lambda row: -row[1])
        boards[day] = [(pk, score, ts, rank) for rank, (pk, score, ts) in enumerate(best)]
    return boards


def full_board(lb: LeaderboardClient, index: str, day: int | None) -> list:
    """A window's whole board, as ``board`` gives it, for the all-time window (None) or a day."""
    window = (0, None) if day is None else (1, day * DAY)
    return [(e.pk[0], e.score, e.timestamp, e.rank) for e in lb.top(index, 2000, *window)]


def loadable(records: dict[str, list[tuple[int, int]]]) -> list[tuple[tuple, list[tuple[int, int]]]]:
    return [((pk,), entries) for pk, entries in records.items()]


def random_records(rng: random.Random, names: range, scores: list[int], days: int) -> dict[str, list[tuple[int, int]]]:
    """Records named p<i> with 1-3 entries each, every score distinct, timestamps over ``days`` days."""
    out = {}
    for i in names:
        out[f"p{i:05d}"] = [(scores.pop(), rng.randrange(days * DAY)) for _ in range(rng.randint(1, 3))]
    return out


def test_bulk_load_streams_records_in_batches(client: LeaderboardClient) -> None:
    rng = random.Random(5)
    days = 3
    scores = rng.sample(range(1_000_000), 4000)
    client.create_index("loaded", high_score_first=True)
    client.update_windows("loaded", specs=[(1, 0, DAY, DAY, days)], high_score_first=True)
    # First load: every window is empty, so each gets its ranked set built after the records.
    first = random_records(rng, range(0, 1200), scores, days)
    sent: list[int] = []
    written = client.bulk_load("loaded", loadable(first), batch_size=150, progress=sent.append)
    assert written == 1200
    assert sent == list(range(150, 1201, 150))  # records saved, after each transaction of 150
    assert not any(window.filling for window in client.list_windows("loaded").windows)
    for day, expected in expected_boards(first, days).items():
        assert full_board(client, "loaded", day) == expected
    # Second load over filled windows (kept entry by entry): new records, and records replaced.
    second = random_records(rng, range(1000, 1500), scores, days)
    assert client.bulk_load("loaded", loadable(second), batch_size=64) == 500
    merged = {**first, **second}
    for day, expected in expected_boards(merged, days).items():
        assert full_board(client, "loaded", day) == expected
        assert client.count("loaded", *((0, None) if day is None else (1, day * DAY))) == len(expected)
    # Ranks as loaded (no deferred build) give the same boards.
    client.create_index("direct", high_score_first=True)
    client.update_windows("direct", specs=[(1, 0, DAY, DAY, days)], high_score_first=True)
    assert client.bulk_load("direct", loadable(merged), batch_size=300, rank_as_loaded=True) == 1500
    for day in [None, *range(days)]:
        assert full_board(client, "direct", day) == full_board(client, "loaded", day)
    assert client.verify("loaded") == [] and client.verify("direct") == []
    assert client.bulk_load("loaded", []) == 0  # an empty load is a no-op


def test_bulk_load_errors(client: LeaderboardClient) -> None:
    client.create_index("loaded", high_score_first=True)
    client.update_windows("loaded", specs=[(1, 0, DAY, DAY, 2)], high_score_first=True)
    rpc_error(Code.INVALID_ARGUMENT, lambda: client.stub.BulkLoad(iter([])), "first message must name the index")
    rpc_error(Code.NOT_FOUND, lambda: client.bulk_load("nope", [(("a",), [(1, 1)])]), "nope")
    other = [pb.BulkLoadRequest(index="loaded"), pb.BulkLoadRequest(index="other")]
    rpc_error(Code.INVALID_ARGUMENT, lambda: client.stub.BulkLoad(iter(other)), "'loaded'", "'other'")
    assert client.count("loaded") == 0
    # A bad record (a group on an index without groups) after 2 transactions of 100: those stay.
    records: list[tuple[tuple, list[tuple]]] = [((f"p{i}",), [(i, i)]) for i in range(250)]
    records[230] = (("bad",), [(1, 1, (), ("g",))])
    rpc_error(
        Code.INVALID_ARGUMENT,
        lambda: client.bulk_load("loaded", records, batch_size=100),
        "groups by 0 element",
        "the 200 records before it were saved",
    )
    assert not any(w.filling for w in client.list_windows("loaded").windows)  # built before the error
    assert board(client, "loaded")[:2] == [("p199", 199, 199, 0), ("p198", 198, 198, 1)]
    assert client.count("loaded") == 200 and client.verify("loaded") == []
    # Failing in the first transaction saves nothing and says nothing about earlier records.
    details = rpc_error(Code.INVALID_ARGUMENT, lambda: client.bulk_load("loaded", [records[230]]), "groups by")
    assert "saved" not in details
    assert client.count("loaded") == 200


def test_bulk_load_whose_source_fails_saves_what_came_before(client: LeaderboardClient) -> None:
    client.create_index("loaded", high_score_first=True)
    client.update_windows("loaded", specs=[(1, 0, DAY, DAY, 2)], high_score_first=True)

    def records() -> Iterator[tuple[tuple, list[tuple[int, int]]]]:
        for i in range(1234):
            yield (f"p{i:04d}",), [(i, i)]
        raise OSError("the client's data source failed")

    with pytest.raises(OSError, match="data source failed") as caught:
        client.bulk_load("loaded", records(), batch_size=100)
    assert caught.value.__notes__ == ["BulkLoad saved the 1234 records before it"]
    assert [e.pk[0] for e in client.top("loaded", 2000)] == [f"p{i:04d}" for i in reversed(range(1234))]
    assert not any(w.filling for w in client.list_windows("loaded").windows)
    # A record the client cannot convert ends the stream the same way.
    bad = [(("q",), [(5, 5)]), (("r",), [("five", 5)])]
    with pytest.raises(
        InvalidArgument, match="record 1 of the load: score must be an integer or a finite float, not str"
    ) as caught:
        client.bulk_load("loaded", bad)
    assert caught.value.__notes__ == ["BulkLoad saved the record before it"]
    assert client.count("loaded") == 1235 and client.verify("loaded") == []


def test_bulk_load_cancelled_midway_keeps_whole_transactions(client: LeaderboardClient, caplog) -> None:
    caplog.set_level(logging.INFO, logger="fdb_leaderboard.service")
    client.create_index("loaded", high_score_first=True)
    client.update_windows("loaded", specs=[(1, 0, DAY, DAY, 2)], high_score_first=True)
    more = threading.Event()

    def requests() -> Iterator[pb.BulkLoadRequest]:
        # Ranks as loaded: the windows stay readable, so the test can watch the count grow.
        yield pb.BulkLoadRequest(index="loaded", batch_size=100, rank_as_loaded=True)
        for start in range(0, 1000, 250):
            yield pb.BulkLoadRequest(
                records=[
                    pb.RecordEntries(pk=[pb.Item(string=f"p{i:04d}")], entries=[_entry(pb.Score(int=i), ts=i)])
                    for i in range(start, start + 250)
                ]
            )
        more.wait(120)  # the stream stays open until the test cancels it

    call = client.stub.BulkLoad.future(requests())
    wait_until(lambda: client.count("loaded") == 1000, "the 1000 records loaded")
    assert call.cancel() and call.cancelled()
    more.set()
    # grpcio reports the cancel either as an error or, racing with it, as the end of the stream.
    messages = {f"BulkLoad of 'loaded' {how} 1000 records" for how in ("cancelled by the client after", "ended after")}
    wait_until(lambda: messages & set(caplog.messages), "the load's end logged")
    assert len(messages & set(caplog.messages)) == 1, caplog.messages
    assert client.count("loaded") == 1000  # the 10 transactions committed before the cancel stay
    assert [e.pk[0] for e in client.top("loaded", 3)] == ["p0999", "p0998", "p0997"]
    assert client.verify("loaded") == []


def test_sum_latest_groups_contexts_and_item_types(client: LeaderboardClient) -> None:
    client.create_index("points", aggregation="SUM", group_size=1, context_size=1, high_score_first=True)
    client.update_windows("points", specs=[(1, 0, DAY, DAY, 2)], high_score_first=True)
    pk_a = (1, "a", b"\x00\xff", 2.5, True, None)  # every Item kind in one key
    pk_b = (2,)
    client.add_score("points", pk_a, 10, 100, context=("lvl1",), group=("g",))
    client.add_score("points", pk_b, 25, 150, context=("lvl2",), group=("g",))
    client.add_score("points", pk_a, 15, DAY + 1, context=("lvl3",), group=("g",))
    client.add_score("points", pk_b, 1, 160, context=("x",), group=("h",))
    top = client.top("points", 10, group=("g",))
    assert [(e.pk, e.score, e.timestamp, e.context, e.group, e.rank) for e in top] == [
        (pk_b, 25, 150, ("lvl2",), ("g",), 0),  # the same total, reached earlier, ranks first
        (pk_a, 25, DAY + 1, ("lvl3",), ("g",), 1),  # SUM: 10 + 15, reached at DAY + 1 with context lvl3
    ]
    assert [e.rank for e in client.top("points", 10, group=("g",), mode="COMPETITION")] == [0, 0]
    assert rows(client.top("points", 10, 1, 0, group=("g",))) == [(2, 25, 150, 0), (1, 10, 100, 1)]
    assert client.count("points", group=("h",)) == 1
    assert client.rank_and_entry("points", pk_a, group=("g",)).pk == pk_a

    client.create_index("latest", aggregation="LATEST", score_type="DOUBLE", high_score_first=False)
    client.update_windows("latest")
    client.add_score("latest", ("x",), 5, 100)
    client.add_score("latest", ("x",), 1, 300)
    client.add_score("latest", ("x",), 9, 200)  # older: not the latest
    client.add_score("latest", ("y",), 2.5, 50)  # a double score
    assert board(client, "latest") == [("x", 1, 300, 0), ("y", 2.5, 50, 1)]  # low score first
    assert client.score_for_rank("latest", 1) == 2.5
    assert client.verify("points") == [] and client.verify("latest") == []


# -- scans ------------------------------------------------------------------------------------


def scan_pages(lb: LeaderboardClient, index: str, scan_type: str, limit: int, **kwargs: Any) -> list[list]:
    pages = []
    continuation = b""
    while True:
        entries, continuation = lb.scan(index, scan_type, limit=limit, continuation=continuation, **kwargs)
        assert len(entries) <= limit
        pages.append(rows(entries))
        if not continuation:
            return pages
        assert len(pages) < 50


def test_scan_by_value(client: LeaderboardClient) -> None:
    populate_game(client)
    # Natural (ascending) score order even though the index is high-score-first; no ranks.
    natural = [("dave", 50), ("frank", 100), ("carol", 100), ("eve", 300), ("bob", 300), ("alice", 400)]
    entries, continuation = client.scan("game", "BY_VALUE")
    assert [(e.pk[0], e.score) for e in entries] == natural and continuation == b""
    assert all(e.rank is None for e in entries)
    entries, _ = client.scan("game", "BY_VALUE", reverse=True)
    assert [(e.pk[0], e.score) for e in entries] == natural[::-1]
    assert names(client.scan("game", "BY_VALUE", low=100, high=300)[0]) == ["frank", "carol", "eve", "bob"]
    assert names(client.scan("game", "BY_VALUE", low=100, high=300, low_exclusive=True)[0]) == ["eve", "bob"]
    assert names(client.scan("game", "BY_VALUE", low=100, high=300, high_exclusive=True)[0]) == ["frank", "carol"]
    assert names(client.scan("game", "BY_VALUE", low=301)[0]) == ["alice"]
    assert client.scan("game", "BY_VALUE", low=300, high=100)[0] == []

    pages = scan_pages(client, "game", "BY_VALUE", 2)
    assert [[r[0] for r in page] for page in pages if page] == [["dave", "frank"], ["carol", "eve"], ["bob", "alice"]]
    pages = scan_pages(client, "game", "BY_VALUE", 4, reverse=True, low=60)
    assert [r[0] for page in pages for r in page] == ["alice", "bob", "eve", "carol", "frank"]
    pages = scan_pages(client, "game", "BY_VALUE", 1, low=100, high=300, high_exclusive=True)
    assert [r[0] for page in pages for r in page] == ["frank", "carol"]

    # A low-score-first index scans in stored order.
    client.create_index("golf")
    client.update_windows("golf")
    for pk, score in [("a", 70), ("b", 68), ("c", 75)]:
        client.add_score("golf", (pk,), score, 1)
    assert names(client.scan("golf", "BY_VALUE", high=70)[0]) == ["b", "a"]
    assert [r[0] for p in scan_pages(client, "golf", "BY_VALUE", 2, reverse=True) for r in p] == ["c", "a", "b"]


def test_scan_by_rank_and_by_time_window(client: LeaderboardClient) -> None:
    populate_game(client)
    pages = scan_pages(client, "game", "BY_RANK", 2)
    assert pages == [ALL_TIME_BOARD[0:2], ALL_TIME_BOARD[2:4], ALL_TIME_BOARD[4:6]]
    assert client.scan("game", "BY_RANK")[0] == client.top("game", 100)
    assert rows(client.scan("game", "BY_RANK", low=1, high=4)[0]) == ALL_TIME_BOARD[1:5]
    exclusive = client.scan("game", "BY_RANK", low=1, high=4, low_exclusive=True, high_exclusive=True)[0]
    assert rows(exclusive) == ALL_TIME_BOARD[2:4]
    assert client.scan("game", "BY_RANK", low=6)[0] == []
    competition = client.scan("game", "BY_RANK", low=1, high=4, mode="COMPETITION")[0]
    assert [(e.pk[0], e.rank) for e in competition] == [("bob", 1), ("eve", 1), ("carol", 3), ("frank", 3)]
    pages = scan_pages(client, "game", "BY_RANK", 3, low=2)
    assert pages == [ALL_TIME_BOARD[2:5], ALL_TIME_BOARD[5:6]]

    pages = scan_pages(client, "game", "BY_TIME_WINDOW", 2, window_type=1, timestamp=1000)
    assert pages == [DAY0_BOARD[0:2], DAY0_BOARD[2:4], DAY0_BOARD[4:5]]
    pages = scan_pages(client, "game", "BY_TIME_WINDOW", 2, window_type=1, timestamp=DAY, mode="COMPETITION")
    assert pages == [DAY1_BOARD]
    entries, _ = client.scan("game", "BY_TIME_WINDOW", window_type=1, timestamp=0, low=1, high=2, mode="COMPETITION")
    assert [(e.pk[0], e.rank) for e in entries] == [("eve", 0), ("alice", 2)]
    # The all-time window through BY_TIME_WINDOW: type 0 with a timestamp.
    assert rows(client.scan("game", "BY_TIME_WINDOW", window_type=0, timestamp=5)[0]) == ALL_TIME_BOARD

    # Continuations survive writes between pages (positions move, the scan keeps going).
    first, continuation = client.scan("game", "BY_RANK", limit=3)
    client.add_score("game", ("zed",), 1, 7)
    rest, continuation = client.scan("game", "BY_RANK", limit=10, continuation=continuation)
    assert names(first) == ["alice", "bob", "eve"] and names(rest) == ["carol", "frank", "dave", "zed"]
    assert continuation == b""


def test_reading_a_window_that_is_filling(client: LeaderboardClient) -> None:
    populate_game(client)
    result = client.update_windows("game", windows=[(4, 0, 3000)], high_score_first=True)
    assert [(w.type, w.start, w.end, w.filling) for w in result.filling] == [(4, 0, 3000, True)]
    assert [w.filling for w in client.list_windows("game").windows if w.type == 4] == [True]
    state = snapshot(client, {"game": [()]})
    reads: list[tuple[str, Callable[[], Any]]] = [
        ("top", lambda: client.top("game", 3, 4, 10)),
        ("count", lambda: client.count("game", 4, 10)),
        ("rank", lambda: client.rank("game", ("bob",), 4, 10)),
        ("rank_and_entry", lambda: client.rank_and_entry("game", ("bob",), 4, 10)),
        ("around", lambda: client.around("game", ("bob",), 1, 1, 4, 10)),
        ("score_for_rank", lambda: client.score_for_rank("game", 0, 4, 10)),
        ("rank_for_score", lambda: client.rank_for_score("game", 5, 4, 10)),
        ("scan", lambda: client.scan("game", "BY_TIME_WINDOW", window_type=4, timestamp=10)),
    ]
    for _, read in reads:
        rpc_error(Code.FAILED_PRECONDITION, read, "window type 4 [0, 3000)", "still being filled")
    rpc_error(Code.FAILED_PRECONDITION, lambda: client.trim("game", 10), "finish the fill")
    # Other windows keep serving, and writes keep the filling window's done part up to date.
    assert board(client, "game") == ALL_TIME_BOARD
    assert snapshot(client, {"game": [()]}) == state
    client.add_score("game", ("gina",), 1, 2999)
    assert client.fill("game").done
    assert board(client, "game", 4, 0) == [
        ("bob", 300, 2000, 0),
        ("eve", 300, 2500, 1),
        ("alice", 100, 1000, 2),
        ("gina", 1, 2999, 3),
    ]
    assert client.verify("game") == []


# -- health, reflection ------------------------------------------------------------------------


def test_health_and_reflection(server: Server) -> None:
    with grpc.insecure_channel(server.address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", "fdb_leaderboard.v1.Leaderboard", SERVICE_NAME):
            status = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=10).status
            assert status == health_pb2.HealthCheckResponse.SERVING
        rpc_error(Code.NOT_FOUND, lambda: health.Check(health_pb2.HealthCheckRequest(service="nope"), timeout=10))

        reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
        responses = list(
            reflection.ServerReflectionInfo(
                iter(
                    [
                        reflection_pb2.ServerReflectionRequest(list_services=""),
                        reflection_pb2.ServerReflectionRequest(file_containing_symbol="fdb_leaderboard.v1.Leaderboard"),
                    ]
                ),
                timeout=10,
            )
        )
        listed = {s.name for s in responses[0].list_services_response.service}
        assert "fdb_leaderboard.v1.Leaderboard" in listed
        assert "grpc.health.v1.Health" in listed
        files = responses[1].file_descriptor_response.file_descriptor_proto
        assert files and not responses[1].HasField("error_response")


# -- shutdown, concurrency, group commit -----------------------------------------------------------


def test_graceful_shutdown_keeps_every_acknowledged_write(server_place: ServerPlace) -> None:
    running = server_place.start()
    lb = LeaderboardClient(running.address, timeout=20)
    lb.create_index("game", aggregation="SUM")
    lb.update_windows("game")

    # One call is certainly in flight when stop() starts: its handler is held until stop() has
    # begun (the server refuses a new call), then writes.
    index = running.catalog.get("game")
    real_write_batch = index.write_batch
    handler_started, release = threading.Event(), threading.Event()
    handler_finished: list[float] = []

    def slow_write_batch(*args: Any, **kwargs: Any) -> None:
        handler_started.set()
        assert release.wait(60)
        real_write_batch(*args, **kwargs)
        handler_finished.append(time.monotonic())

    index.write_batch = slow_write_batch  # type: ignore[method-assign]
    slow_result: list[Any] = []

    def slow_call() -> None:
        try:
            lb.write_batch("game", [(("slow", i), [(7, i)]) for i in range(50)])
            slow_result.append("OK")
        except grpc.RpcError as exc:  # pragma: no cover - reported below
            slow_result.append(exc.code())

    calls: list[tuple[float, tuple, grpc.StatusCode | None]] = []  # start time, pk, error code
    lock = threading.Lock()
    stop_writing = threading.Event()

    def writer(worker: int) -> None:
        with LeaderboardClient(running.address, timeout=20) as own:
            for j in range(100_000):
                if stop_writing.is_set():
                    return
                pk = (f"w{worker}", j)
                began = time.monotonic()
                code = None
                try:
                    own.add_score("game", pk, j + 1, j)
                except grpc.RpcError as exc:
                    code = exc.code()
                with lock:
                    calls.append((began, pk, code))
                if code == Code.UNAVAILABLE:
                    return

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(6)]
    for thread in threads:
        thread.start()
    wait_until(lambda: len(calls) >= 60, "60 writes")
    slow = threading.Thread(target=slow_call)
    slow.start()
    assert handler_started.wait(60)

    def release_once_stopping() -> None:
        wait_until(lambda: any(code == Code.UNAVAILABLE for _, _, code in calls), "a call refused by stop()")
        release.set()

    releaser = threading.Thread(target=release_once_stopping)
    releaser.start()
    running.stop(grace=30)
    stop_ended = time.monotonic()
    releaser.join()
    stop_writing.set()
    for thread in [*threads, slow]:
        thread.join(timeout=20)
    assert not any(thread.is_alive() for thread in [*threads, slow])

    assert slow_result == ["OK"]  # the in-flight call finished before the store closed...
    assert handler_finished and handler_finished[0] < stop_ended  # ...and stop() waited for it
    acknowledged = [pk for _, pk, code in calls if code is None]
    assert len(acknowledged) >= 60
    # A call racing stop() may be CANCELLED (gRPC drops calls not yet handed to a handler);
    # every call begun once stop() returned is UNAVAILABLE.
    assert {code for _, _, code in calls} <= {None, Code.UNAVAILABLE, Code.CANCELLED}
    assert all(code == Code.UNAVAILABLE for began, _, code in calls if began > stop_ended)
    assert all(began < stop_ended for began, _, code in calls if code == Code.CANCELLED)
    rpc_error(Code.UNAVAILABLE, lambda: lb.add_score("game", ("late",), 1, 1))
    rpc_error(Code.UNAVAILABLE, lambda: lb.top("game", 1))
    lb.close()
    running.stop(grace=1)  # stopping twice is harmless

    reopened = server_place.start()
    try:
        with LeaderboardClient(reopened.address) as again:
            stored = {e.pk: e.score for e in again.scan_all("game", "BY_RANK", page=500)}
            for pk in acknowledged:
                assert stored.get(pk) == pk[1] + 1, pk
            assert all(stored.get(("slow", i)) == 7 for i in range(50))
            assert ("late",) not in stored
            assert again.count("game") == len(stored) >= len(acknowledged) + 50
            assert again.verify("game") == []
    finally:
        reopened.stop(grace=1)


def _hammer(address: str, index: str, threads: int = 8, per_thread: int = 100) -> None:
    """Each thread: even calls add 1 point to a shared record, odd ones j points to its own."""
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            with LeaderboardClient(address, timeout=30) as lb:
                for j in range(per_thread):
                    if j % 2 == 0:
                        lb.add_score(index, ("shared", j % 4), 1, worker * 1000 + j)
                    else:
                        lb.add_score(index, ("own", worker, j % 5), j, worker * 1000 + j)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    pool = [threading.Thread(target=work, args=(w,)) for w in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    assert not errors, errors


def _check_hammered(lb: LeaderboardClient, index: str, threads: int = 8, per_thread: int = 100) -> None:
    expected: dict[tuple, int] = {}
    for worker in range(threads):
        for j in range(per_thread):
            pk = ("shared", j % 4) if j % 2 == 0 else ("own", worker, j % 5)
            expected[pk] = expected.get(pk, 0) + (1 if j % 2 == 0 else j)
    stored = {e.pk: e.score for e in lb.scan_all(index, "BY_RANK", page=17)}
    assert stored == expected
    assert lb.count(index) == len(expected)
    assert [e.rank for e in lb.top(index, 100)] == list(range(len(expected)))
    assert lb.verify(index) == []


def test_concurrent_writers_all_land(client: LeaderboardClient, server: Server) -> None:
    client.create_index("points", aggregation="SUM", high_score_first=True)
    client.update_windows("points", high_score_first=True)
    _hammer(server.address, "points")
    _check_hammered(client, "points")


def test_group_commit_with_a_durable_store(tmp_path) -> None:
    running = ServerPlace("lmdb", tmp_path / "durable", durable=True).start()
    try:
        assert running.db.durable
        with LeaderboardClient(running.address) as lb:
            lb.create_index("points", aggregation="SUM", high_score_first=True)
            lb.update_windows("points", high_score_first=True)
            commits_before = running.db.commits
            writes = 8 * 100
            _hammer(running.address, "points")
            commits = running.db.commits - commits_before
            print(f"\ngroup commit: {writes} durable writes in {commits} commits (ratio {commits / writes:.2f})")
            assert 0 < commits <= writes
            _check_hammered(lb, "points")
    finally:
        running.stop(grace=1)
