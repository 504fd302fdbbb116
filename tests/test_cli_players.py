"""The players' CLI commands (cli/players.py) against a real server, output checked by hand."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from click.testing import CliRunner, Result

from fdb_leaderboard.cli import main
from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.service import Server

pytestmark = pytest.mark.usefixtures("no_unexpected_server_errors")
DAY = 86_400


@pytest.fixture
def cli(server: Server, client: LeaderboardClient) -> Callable[..., Result]:
    client.create_index("arena", high_score_first=True, dense_ranks=True)
    client.update_windows("arena", specs=[(1, 0, DAY, DAY, 3)], high_score_first=True)
    for player, score, ts in [("ann", 12, 10), ("bob", 15, 11), ("cat", 12, 12), ("ann", 17, DAY), ("bob", 9, DAY + 1)]:
        client.add_score("arena", (player,), score, ts, metadata={"name": player.title()})
    runner = CliRunner()

    def invoke(*args: object, code: int = 0) -> Result:
        result = runner.invoke(main, ["--server", server.address, *map(str, args)], catch_exceptions=False)
        assert result.exit_code == code, result.output
        return result

    return invoke


def test_meta(cli: Callable[..., Result]) -> None:
    assert cli("meta", "set", "arena", "ann", "-f", "country=FR", "--merge").output == "country=FR name=Ann\n"
    assert cli("meta", "set", "arena", "ann", "-f", "name=Annie").output == "name=Annie\n"
    assert cli("meta", "get", "arena", "ann").output == "name=Annie\n"
    assert "no record 'zed'" in cli("meta", "get", "arena", "zed", code=1).output
    assert "NOT_FOUND" in cli("meta", "set", "arena", "zed", "-f", "name=Z", code=1).output
    assert "is not NAME=VALUE" in cli("meta", "set", "arena", "ann", "-f", "oops", code=2).output


def test_ranks_friends_page_percentile(cli: Callable[..., Result]) -> None:
    assert cli("ranks", "arena", "cat", "zed", "ann").output == (
        "    2  ('cat',)  12  @12  name=Cat\n('zed',): absent\n    0  ('ann',)  17  @86400  name=Ann\n"
    )
    assert cli("ranks", "arena", "cat", "bob", "--board", "--mode", "DENSE").output == (
        "    1  ('bob',)  15  @11  name=Bob\n    2  ('cat',)  12  @12  name=Cat\n"
    )
    assert cli("page", "arena", "2", "--size", "2").output == (
        "page 2 of 2 (3 records, 2 per page)\n    2  ('cat',)  12  @12  name=Cat\n"
    )
    assert cli("percentile", "arena", "bob").output == "33.33\n"
    assert cli("score-at-percentile", "arena", "50").output == "15\n"
    assert "at most 1000" in cli("page", "arena", "1", "--size", "5000", code=1).output


def test_movement_bottom_rank_for_score_score_trim(cli: Callable[..., Result]) -> None:
    out = cli("movement", "arena", "bob", "--window-type", "1", "--at", DAY, "--history", "2").output
    assert out.splitlines() == [
        "now [86400, 172800): 1  ('bob',)  9  @86401  name=Bob",
        "before [0, 86400): 0  ('bob',)  15  @11  name=Bob",
        "change: -1",
        "[86400, 172800): 1  ('bob',)  9  @86401  name=Bob",
        "[0, 86400): 0  ('bob',)  15  @11  name=Bob",
        "best: 0 in [0, 86400)",
    ]
    assert (
        cli("bottom", "arena", "-n", "2").output
        == "    2  ('cat',)  12  @12  name=Cat\n    1  ('bob',)  15  @11  name=Bob\n"
    )
    assert cli("rank-for-score", "arena", "12").output == "2\n"
    assert cli("rank-for-score", "arena", "12", "--key-timestamp", "13").output == "3\n"
    assert cli("score-trim", "arena", "5@1", "7@2", "3@86400").output == "7@2 3@86400\n"
    assert "SCORE@TIMESTAMP" in cli("score-trim", "arena", "7", code=2).output
