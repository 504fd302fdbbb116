"""Mistakes that must give an error, or the answer meant: defaults, lone keys, ignored scan
arguments, scores ranked nowhere, window updates that are not idempotent.

Each test checks the behaviour through the API a user would call (index, client or gRPC)
and the stored result through another (the board's order, the directory, the raw request).
"""

from __future__ import annotations

import re
import warnings

import grpc
import pytest

from fdb_leaderboard.cli.records_file import RecordsFileError, read_records
from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.errors import InvalidArgument, NoWindowsWarning
from fdb_leaderboard.index import (
    Entry,
    IndexSettings,
    LeaderboardIndex,
    RankMode,
    ScanType,
    WindowSpec,
    WindowUpdate,
)
from fdb_leaderboard.proto import service_pb2 as pb
from fdb_leaderboard.service import Server
from fdb_leaderboard.store import Database

DAY = 86_400
pytestmark = pytest.mark.usefixtures("no_unexpected_server_errors")


def board(client: LeaderboardClient, index: str, *window: int) -> list[tuple[str, int]]:
    return [(e.pk[0], e.score) for e in client.top(index, 10, *window)]


# -- direction: an update keeps the index's, and every API defaults to high score first -----------


def test_update_windows_keeps_the_direction_unless_told(client: LeaderboardClient) -> None:
    client.create_index("game")  # high score first by default
    client.update_windows("game")
    for player, score in [("alice", 1200), ("bob", 1500), ("dave", 900)]:
        client.add_score("game", player, score, 100)
    expected = [("bob", 1500), ("alice", 1200), ("dave", 900)]
    assert board(client, "game") == expected

    result = client.update_windows("game", windows=[(1, 0, DAY)])  # direction not given: kept
    assert ([w.type for w in result.added] == [1] and not result.filling) or result.filling[0].type == 1
    client.fill("game")
    assert client.list_windows("game").high_score_first
    assert board(client, "game") == expected and board(client, "game", 1, 0) == expected
    assert [w.type for w in client.update_windows("game", windows=[(1, 0, DAY)]).added] == []

    # Said explicitly, the direction changes and every window is rebuilt.
    flipped = client.update_windows("game", high_score_first=False)
    assert flipped.changed and not client.list_windows("game").high_score_first
    client.fill("game")
    assert board(client, "game") == expected[::-1]
    assert client.verify("game") == []


def test_create_index_defaults_agree_everywhere(client: LeaderboardClient, server: Server, db: Database) -> None:
    assert IndexSettings().high_score_first
    assert LeaderboardIndex.create(db, b"\x15\x30").settings.high_score_first
    client.create_index("from-client")
    client.stub.CreateIndex(pb.CreateIndexRequest(name="raw-grpc"))  # no options at all
    from click.testing import CliRunner

    from fdb_leaderboard.cli import main

    assert CliRunner().invoke(main, ["--server", server.address, "index", "create", "from-cli"]).exit_code == 0
    options = {info.name: info.options for info in client.list_indexes()}
    assert {name: o.high_score_first for name, o in options.items()} == dict.fromkeys(
        ["from-cli", "from-client", "raw-grpc"], True
    )
    # Low score first stays available, explicitly.
    client.create_index("golf", high_score_first=False)
    assert not {i.name: i.options for i in client.list_indexes()}["golf"].high_score_first


def test_index_window_update_without_direction_keeps_the_index_one(db: Database, prefix: bytes) -> None:
    golf = LeaderboardIndex.create(db, prefix, IndexSettings(high_score_first=False))
    golf.update_windows(WindowUpdate(specs=[WindowSpec(1, 0, DAY, DAY, 1)]))
    assert golf.directory().high_score_first is False
    golf.save_record(("ann",), [Entry(72, 5)])
    golf.save_record(("ben",), [Entry(68, 6)])
    golf.update_windows(WindowUpdate(update_timestamp=9, specs=[WindowSpec(2, 0, DAY, DAY, 1)]))
    golf.fill()
    assert golf.directory().high_score_first is False
    assert [e.pk for e in golf.top(5, 2, 0)] == [("ben",), ("ann",)]
    with pytest.raises(InvalidArgument, match="high_score_first must be True, False or None"):
        golf.update_windows(WindowUpdate(high_score_first="yes"))  # type: ignore[arg-type]


# -- a lone string, bytes or number is one key element ---------------------------------------------


def test_lone_key_values_are_one_element_everywhere(client: LeaderboardClient, db: Database, prefix: bytes) -> None:
    client.create_index("game", group_size=1)
    client.update_windows("game")
    client.add_score("game", "zed", 10, 1, group="eu")
    client.add_score("game", b"\x01\x02", 20, 2, group=("eu",))
    client.add_score("game", 7, 30, 3, group="eu")
    client.save_record("game", "amy", [(5, 4, (), "eu")])  # a lone group in an entry too
    top = client.top("game", 10, group="eu")
    assert [e.pk for e in top] == [(7,), (b"\x01\x02",), ("zed",), ("amy",)]
    assert {e.group for e in top} == {("eu",)}
    assert client.rank("game", "zed", group="eu") == client.rank("game", ("zed",), group=("eu",)) == 2
    assert [e.pk for e in client.around("game", "zed", 0, 0, group="eu")] == [("zed",)]
    assert client.delete_record("game", "zed") and client.rank("game", ("zed",), group="eu") is None
    with pytest.raises(InvalidArgument, match="primary key must be a tuple or list"):
        client.add_score("game", None, 1, 1)  # type: ignore[arg-type]

    index = LeaderboardIndex.create(db, prefix)
    index.update_windows(WindowUpdate())
    index.add_score("zed", 10, 1)
    index.add_score(b"raw", 11, 1)
    assert [e.pk for e in index.top(5)] == [(b"raw",), ("zed",)]
    assert index.rank("zed") == index.rank(("zed",)) == 1
    with pytest.raises(InvalidArgument, match="primary key must be a tuple or list"):
        index.add_score({"zed"}, 1, 1)

    # The loader: the same rule, and a lone null is refused rather than guessed.
    lines = ['{"pk": "xavier", "entries": []}', '{"pk": 5, "entries": []}', '{"pk": ["a", 1], "entries": []}']
    assert [pk for pk, _ in read_records(lines)] == [("xavier",), (5,), ("a", 1)]
    with pytest.raises(RecordsFileError, match="line 1: pk must be a tuple or list"):
        list(read_records(['{"pk": null, "entries": []}']))


# -- scans refuse arguments they do not use --------------------------------------------------------


SCAN_MISTAKES = [
    (ScanType.BY_RANK, {"window_type": 1}, "a BY_RANK scan does not use window_type (given 1)"),
    (ScanType.BY_RANK, {"timestamp": 5}, "a BY_RANK scan does not use timestamp (given 5)"),
    (ScanType.BY_VALUE, {"window_type": 1, "timestamp": 5}, "a BY_VALUE scan does not use window_type"),
    (ScanType.BY_VALUE, {"mode": RankMode.COMPETITION}, "a BY_VALUE scan does not use mode (given COMPETITION)"),
]


@pytest.mark.parametrize(("scan_type", "arguments", "message"), SCAN_MISTAKES)
def test_index_scan_refuses_arguments_it_would_ignore(
    db: Database, prefix: bytes, scan_type: ScanType, arguments: dict, message: str
) -> None:
    index = LeaderboardIndex.create(db, prefix)
    index.update_windows(WindowUpdate(specs=[WindowSpec(1, 0, DAY, DAY, 1)]))
    index.add_score("a", 5, 5)
    with pytest.raises(InvalidArgument, match=re.escape(message)):
        index.scan(scan_type, **arguments)
    # What each scan does use still works, defaults spelled out included.
    assert len(index.scan(ScanType.BY_RANK, window_type=0, timestamp=None, reverse=False).entries) == 1
    assert len(index.scan(ScanType.BY_VALUE, reverse=True, mode=None).entries) == 1
    assert len(index.scan(ScanType.BY_TIME_WINDOW, window_type=1, timestamp=5).entries) == 1


def test_service_scan_refuses_arguments_it_would_ignore(client: LeaderboardClient) -> None:
    client.create_index("game")
    client.update_windows("game", windows=[(1, 0, DAY)])
    client.add_score("game", "a", 5, 5)
    for scan_type, arguments, message in [
        ("BY_RANK", {"window_type": 1, "timestamp": 5}, "a BY_RANK scan does not use window_type (given 1)"),
        ("BY_VALUE", {"mode": "COMPETITION"}, "a BY_VALUE scan does not use mode (given COMPETITION)"),
    ]:
        with pytest.raises(grpc.RpcError) as caught:
            client.scan("game", scan_type, **arguments)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert message in caught.value.details()
    assert [e.pk for e in client.scan("game", "BY_TIME_WINDOW", window_type=1, timestamp=5)[0]] == [("a",)]


# -- a score in an index with no windows is stored, with a warning ----------------------------------


def test_a_score_ranked_nowhere_is_said_so(client: LeaderboardClient, db: Database, prefix: bytes) -> None:
    client.create_index("ranked")  # an index has its all-time window from creation: nothing to warn about
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert client.add_score("ranked", "first", 10, 5) == 1
    client.create_index("game", all_time=False)  # unless told not to
    with pytest.warns(NoWindowsWarning, match="the index has no windows yet"):
        assert client.add_score("game", "early", 10, 5) == 0
    with pytest.warns(NoWindowsWarning):
        assert client.save_record("game", "early", [(12, 6)]) == 0
    response = client.stub.AddScore(
        pb.AddScoreRequest(index="game", pk=[pb.Item(string="raw")], entry=pb.Entry(score=pb.Score(int=1)))
    )
    assert "has no windows yet" in response.warning
    client.update_windows("game")  # the first window update fills from the stored scores
    client.fill("game")
    assert board(client, "game") == [("early", 12), ("raw", 1)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning once there are windows, even when nothing changes
        assert client.add_score("game", "early", 3, 7) == 0

    index = LeaderboardIndex.create(db, prefix, all_time=False)
    with pytest.warns(NoWindowsWarning):
        assert index.add_score("x", 1, 1) == 0
    outcome = index.write_record("y", [Entry(2, 2)])
    assert outcome.windows_changed == 0 and "no windows yet" in outcome.warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert index.save_record("x", []) == 0  # nothing to rank: nothing to warn about


# -- applying one window update twice changes nothing ------------------------------------------------


def test_delete_before_does_not_re_add_what_it_deletes(db: Database, prefix: bytes) -> None:
    index = LeaderboardIndex.create(db, prefix)
    update = WindowUpdate(
        delete_before=10 * DAY,
        specs=[WindowSpec(1, 0, DAY, DAY, 30)],  # days 0..29: the first ten end by delete_before
        windows=[(2, 0, DAY), (2, 9 * DAY, 11 * DAY)],
    )
    first = index.update_windows(update)
    assert sorted((w.type, w.start) for w in first.added if w.type == 1) == [(1, d * DAY) for d in range(10, 30)]
    assert [(w.type, w.start) for w in first.added if w.type == 2] == [(2, 9 * DAY)]
    directory = index.directory()
    again = index.update_windows(update)
    assert not again.changed and again.added == again.deleted == ()
    assert index.directory() == directory

    with pytest.raises(InvalidArgument, match=r"spec WindowSpec\(type=3.*: every window it adds ends by delete_before"):
        index.update_windows(WindowUpdate(delete_before=10 * DAY, specs=[WindowSpec(3, 0, DAY, DAY, 10)]))
    with pytest.raises(InvalidArgument, match="the explicit windows: every window it adds ends by delete_before"):
        index.update_windows(WindowUpdate(delete_before=10 * DAY, windows=[(4, 0, DAY)]))
    assert index.directory() == directory
