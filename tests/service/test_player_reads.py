"""Players' reads and display data end to end: a real server, the Python client, hand-checked answers.

Display metadata (set, merge, with a score, in every listing), DENSE ranks, many ranks and
friends boards, pages, percentiles, movement and rank history, reverse rank scans, rank for a
score key and the score trim; and the status code of each refusal.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
import pytest

from fdb_leaderboard.client import LeaderboardClient

pytestmark = pytest.mark.usefixtures("no_unexpected_server_errors")
Code = grpc.StatusCode
DAY = 86_400
# high score first; (player, score, timestamp): day 0 then day 1
SCORES = [
    ("ann", 50, 10),
    ("bob", 70, 20),
    ("cat", 70, 30),
    ("dan", 40, 40),
    ("ann", 90, DAY + 10),
    ("dan", 60, DAY + 20),
    ("eve", 60, DAY + 30),
]


def rpc_error(code: grpc.StatusCode, call: Callable[[], Any], needle: str) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    assert caught.value.code() == code, caught.value.details()
    assert needle in caught.value.details()


@pytest.fixture
def game(client: LeaderboardClient) -> LeaderboardClient:
    client.create_index("game", high_score_first=True, dense_ranks=True)
    client.update_windows("game", specs=[(1, 0, DAY, DAY, 3)], high_score_first=True)
    for player, score, ts in SCORES:
        client.add_score("game", (player,), score, ts, metadata={"name": player.title()})
    return client


def rows(entries: list) -> list:
    return [None if e is None else (e.pk[0], e.score, e.rank) for e in entries]


def test_metadata(game: LeaderboardClient) -> None:
    assert game.metadata("game", ("ann",)) == {"name": "Ann"}
    assert game.set_metadata("game", ("ann",), {"country": "FR"}, merge=True) == {"name": "Ann", "country": "FR"}
    assert game.set_metadata("game", ("bob",), {"avatar": "b.png"}) == {"avatar": "b.png"}
    top = game.top("game", 2)
    assert [(e.pk[0], e.metadata) for e in top] == [
        ("ann", {"name": "Ann", "country": "FR"}),
        ("bob", {"avatar": "b.png"}),
    ]
    assert game.rank_and_entry("game", ("cat",)).metadata == {"name": "Cat"}
    assert [e.metadata["name"] for e in game.around("game", ("dan",), 1, 0)] == ["Cat", "Dan"]
    entries, _ = game.scan("game", "BY_RANK", limit=1, reverse=True)
    assert entries[0].metadata == {"name": "Eve"}  # the bottom of the board
    assert game.metadata("game", ("nobody",)) is None
    rpc_error(Code.NOT_FOUND, lambda: game.set_metadata("game", ("nobody",), {"name": "X"}), "does not exist")
    rpc_error(Code.INVALID_ARGUMENT, lambda: game.set_metadata("game", ("ann",), {"bad name": "x"}), "letters")
    rpc_error(Code.INVALID_ARGUMENT, lambda: game.add_score("game", ("ann",), 1, 1, metadata={"x": "y" * 2000}), "1024")
    assert game.rank_and_entry("game", ("ann",)).score == 90  # the refused write changed nothing


def test_dense_ranks(game: LeaderboardClient, client: LeaderboardClient) -> None:
    assert rows(game.top("game", 5, mode="DENSE")) == [
        ("ann", 90, 0),
        ("bob", 70, 1),
        ("cat", 70, 1),
        ("dan", 60, 2),
        ("eve", 60, 2),
    ]
    assert game.rank("game", ("eve",), mode="DENSE") == 2
    client.create_index("plain")
    client.update_windows("plain")
    client.add_score("plain", ("a",), 1, 1)
    rpc_error(Code.FAILED_PRECONDITION, lambda: client.top("plain", 3, mode="DENSE"), "dense_ranks")
    assert [i.options.dense_ranks for i in client.list_indexes()] == [True, False]


def test_many_ranks_and_friends(game: LeaderboardClient) -> None:
    friends = [("eve",), ("nobody",), ("bob",)]
    assert rows(game.ranks("game", friends)) == [("eve", 60, 4), None, ("bob", 70, 1)]
    assert rows(game.ranks("game", friends, 1, 5, mode="COMPETITION")) == [None, None, ("bob", 70, 0)]
    board = game.friends_board("game", friends)
    assert rows(board) == [("bob", 70, 1), ("eve", 60, 4)]
    assert board[1].metadata == {"name": "Eve"}
    rpc_error(Code.INVALID_ARGUMENT, lambda: game.ranks("game", [(i,) for i in range(201)]), "at most 200")


def test_pages_and_percentiles(game: LeaderboardClient) -> None:
    page = game.page("game", 2, 2)
    assert rows(page.entries) == [("cat", 70, 2), ("dan", 60, 3)]
    assert (page.page, page.size, page.total, page.pages) == (2, 2, 5, 3)
    assert game.page("game", 4, 2).entries == []
    assert game.percentile("game", ("ann",)) == 80.0
    assert game.percentile("game", ("eve",)) == 0.0
    assert game.percentile("game", ("nobody",)) is None
    assert game.score_for_percentile("game", 100) == 90
    assert game.score_for_percentile("game", 50) == 70
    assert game.score_for_percentile("game", 12.5) == 60.0
    rpc_error(Code.INVALID_ARGUMENT, lambda: game.page("game", 1, 1001), "at most 1000")
    rpc_error(Code.INVALID_ARGUMENT, lambda: game.score_for_percentile("game", 150), "from 0 to 100")


def test_movement_and_history(game: LeaderboardClient) -> None:
    moved = game.movement("game", ("dan",), 1, DAY + 1)
    assert (moved.window.start, moved.previous_window.start) == (DAY, 0)
    assert (moved.previous_rank, moved.rank, moved.change) == (3, 1, 2)  # day 0: 4th; day 1: 2nd
    first = game.movement("game", ("ann",), 1, 5)
    assert first.previous_window is None and first.change is None
    history = game.rank_history("game", ("dan",), 1)
    assert [(w.start, None if e is None else e.rank) for w, e in history.windows] == [(2 * DAY, None), (DAY, 1), (0, 3)]
    assert history.best[0].start == DAY and history.best[1].rank == 1
    rpc_error(Code.INVALID_ARGUMENT, lambda: game.movement("game", ("dan",), 0, 0), "no previous window")
    rpc_error(Code.INVALID_ARGUMENT, lambda: game.rank_history("game", ("dan",), 1, count=101), "at most 100")


def test_reverse_scans_rank_for_a_key_and_score_trim(game: LeaderboardClient) -> None:
    bottom = [e.pk[0] for e in game.scan_all("game", "BY_RANK", page=2, reverse=True)]
    assert bottom == ["eve", "dan", "cat", "bob", "ann"]
    day = [e.pk[0] for e in game.scan_all("game", "BY_TIME_WINDOW", page=1, reverse=True, window_type=1, timestamp=5)]
    assert day == ["dan", "ann", "cat", "bob"]
    assert game.rank_for_score("game", 70) == 1
    assert game.rank_for_score("game", (70, 25)) == 2  # bob reached 70 at 20, before 25
    assert game.rank_for_score("game", (70, 20)) == 1
    kept = game.score_trim("game", [(10, 5), (30, 6), (20, DAY + 5), (5, 3 * DAY)])
    assert [(e.score, e.timestamp) for e in kept] == [(30, 6), (20, DAY + 5)]
