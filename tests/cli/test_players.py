"""The players' CLI commands (cli/players.py) against a real server, output checked by hand."""

from __future__ import annotations

import json
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
    assert "NOT_FOUND: no record zed in arena" in cli("meta", "get", "arena", "zed", code=1).output
    assert "NOT_FOUND" in cli("meta", "set", "arena", "zed", "-f", "name=Z", code=1).output
    assert "is not NAME=VALUE" in cli("meta", "set", "arena", "ann", "-f", "oops", code=2).output


def test_ranks_friends_page_percentile(cli: Callable[..., Result]) -> None:
    assert cli("ranks", "arena", "cat", "zed", "ann").output.splitlines() == [
        "#3  cat  Cat  12  at 12",
        " -  zed  no score in this window",
        "#1  ann  Ann  17  at 86400",
    ]
    assert cli("ranks", "arena", "cat", "bob", "--board", "--mode", "dense").output.splitlines() == [
        "#2  bob  Bob  15  at 11",
        "#3  cat  Cat  12  at 12",
    ]
    assert cli("page", "arena", "2", "--size", "2").output.splitlines() == [
        "page 2 of 2 (3 records, 2 per page)",
        "#3  cat  Cat  12  at 12",
    ]
    assert cli("percentile", "arena", "bob").output == "33.33\n"
    assert cli("score-for-percentile", "arena", "50").output == "15\n"
    assert "at most 1000" in cli("page", "arena", "1", "--size", "5000", code=1).output


def test_movement_bottom_rank_for_score_score_trim(cli: Callable[..., Result]) -> None:
    out = cli("movement", "arena", "bob", "--type", "1", "--at", DAY, "--history", "2").output
    assert out.splitlines() == [
        "now [86400, 172800)  #2  bob  Bob   9  at 86401",
        "before [0, 86400)    #1  bob  Bob  15  at 11",
        "change: -1 place",
        "[86400, 172800)      #2  bob  Bob   9  at 86401",
        "[0, 86400)           #1  bob  Bob  15  at 11",
        "best: #1 in [0, 86400)",
    ]
    assert cli("bottom", "arena", "-n", "2").output.splitlines() == [
        "#3  cat  Cat  12  at 12",
        "#2  bob  Bob  15  at 11",
    ]
    assert cli("rank-for-score", "arena", "12").output == "#3\n"  # ann and bob score more
    assert cli("rank-for-score", "arena", "12", "--key-timestamp", "13").output == "#4\n"
    assert cli("score-trim", "arena", "5@1", "7@2", "3@86400").output == "7@2 3@86400\n"
    assert "SCORE@TIMESTAMP" in cli("score-trim", "arena", "7", code=2).output


def _text_line(entry: dict, label: str = "") -> str:
    """An entry of the --json output as the text output writes it, 1-based and unaligned (the oracle for both)."""
    fields = dict(entry["metadata"])
    cells = [label, f"#{entry['rank'] + 1}", entry["pk"][0], fields.pop("name", ""), str(entry["score"])]
    cells += [f"at {entry['timestamp']}", *(f"{k}={v}" for k, v in sorted(fields.items()))]
    return " ".join(cell for cell in cells if cell)


def _unaligned(lines: list[str]) -> list[str]:
    return [" ".join(line.split()) for line in lines]


def test_json_output_holds_the_text_outputs_data(cli: Callable[..., Result]) -> None:
    found = json.loads(cli("ranks", "arena", "cat", "zed", "ann", "--json").output)
    assert found[1] is None
    assert [(e["pk"], e["rank"], e["metadata"]) for e in (found[0], found[2])] == [
        (["cat"], 2, {"name": "Cat"}),
        (["ann"], 0, {"name": "Ann"}),
    ]
    text = _unaligned(cli("ranks", "arena", "cat", "zed", "ann").output.splitlines())
    assert text == [_text_line(found[0]), "- zed no score in this window", _text_line(found[2])]

    board = json.loads(cli("ranks", "arena", "cat", "bob", "--board", "--mode", "DENSE", "--json").output)
    assert [(e["pk"], e["rank"]) for e in board] == [(["bob"], 1), (["cat"], 2)]
    text = _unaligned(cli("ranks", "arena", "cat", "bob", "--board", "--mode", "DENSE").output.splitlines())
    assert text == [_text_line(e) for e in board]

    page = json.loads(cli("page", "arena", "2", "--size", "2", "--json").output)
    assert {k: v for k, v in page.items() if k != "entries"} == {"page": 2, "pages": 2, "total": 3, "size": 2}
    assert [(e["pk"], e["rank"], e["score"], e["timestamp"]) for e in page["entries"]] == [(["cat"], 2, 12, 12)]
    text = _unaligned(cli("page", "arena", "2", "--size", "2").output.splitlines())
    assert text == ["page 2 of 2 (3 records, 2 per page)", *map(_text_line, page["entries"])]

    args = ("movement", "arena", "bob", "--type", "1", "--at", DAY, "--history", "2")
    moved = json.loads(cli(*args, "--json").output)
    assert moved["window"] == {"type": 1, "start": DAY, "end": 2 * DAY}
    assert moved["previous_window"] == {"type": 1, "start": 0, "end": DAY}
    assert (moved["entry"]["rank"], moved["previous_entry"]["rank"], moved["change"]) == (1, 0, -1)
    assert [(row["window"]["start"], row["entry"]["score"]) for row in moved["history"]] == [(DAY, 9), (0, 15)]
    assert (moved["best"]["window"]["start"], moved["best"]["entry"]["rank"]) == (0, 0)
    assert _unaligned(cli(*args).output.splitlines()) == [
        _text_line(moved["entry"], f"now [{DAY}, {2 * DAY})"),
        _text_line(moved["previous_entry"], f"before [0, {DAY})"),
        "change: -1 place",
        *(_text_line(row["entry"], f"[{row['window']['start']}, {row['window']['end']})") for row in moved["history"]),
        "best: #1 in [0, 86400)",
    ]
    alone = json.loads(cli("movement", "arena", "cat", "--type", "1", "--at", DAY, "--json").output)
    assert (alone["entry"], alone["previous_entry"]["rank"], alone["change"]) == (None, 2, None)
    assert "history" not in alone

    bottom = json.loads(cli("bottom", "arena", "-n", "2", "--json").output)
    assert _unaligned(cli("bottom", "arena", "-n", "2").output.splitlines()) == [_text_line(e) for e in bottom]
    assert [e["pk"] for e in bottom] == [["cat"], ["bob"]]

    assert json.loads(cli("meta", "get", "arena", "ann", "--json").output) == {
        "pk": ["ann"],
        "metadata": {"name": "Ann"},
    }
    assert json.loads(cli("percentile", "arena", "bob", "--json").output)["percentile"] == pytest.approx(100 / 3)
    assert json.loads(cli("percentile", "arena", "zed", "--json").output) == {"percentile": None}
    assert json.loads(cli("score-for-percentile", "arena", "50", "--json").output) == {"score": 15}
    assert json.loads(cli("rank-for-score", "arena", "12", "--key-timestamp", "13", "--json").output) == {"rank": 3}
    trimmed = json.loads(cli("score-trim", "arena", "5@1", "7@2", "3@86400", "--json").output)
    assert [(e["score"], e["timestamp"]) for e in trimmed] == [(7, 2), (3, 86400)]


@pytest.mark.parametrize(
    "args",
    [
        ("meta", "get", "arena", "ann"),
        ("meta", "set", "arena", "cat", "-f", "name=Cat"),
        ("ranks", "arena", "cat", "zed"),
        ("page", "arena", "1"),
        ("percentile", "arena", "bob"),
        ("score-for-percentile", "arena", "50"),
        ("movement", "arena", "bob", "--type", "1", "--at", DAY),
        ("bottom", "arena"),
        ("rank-for-score", "arena", "12"),
        ("score-trim", "arena", "5@1"),
    ],
)
def test_every_command_takes_timeout(cli: Callable[..., Result], args: tuple) -> None:
    assert cli(*args, "--timeout", "10s").output == cli(*args).output
    assert "is not a duration" in cli(*args, "--timeout", "soon", code=2).output


def test_keys_as_strings_or_json_lists(cli: Callable[..., Result], client: LeaderboardClient) -> None:
    """A key is typed, and shown, as a string for one string element and as a JSON list otherwise."""
    client.create_index("ints", high_score_first=True)
    client.add_score("ints", (7,), 40, 5, metadata={"name": "Seven"})
    client.add_score("ints", ("x", 2), 30, 6)
    client.add_score("ints", ("[odd",), 20, 7)
    assert cli("ranks", "ints", "[7]").output == "#1  [7]  Seven  40  at 5\n"
    assert cli("ranks", "ints", "7").output == (  # the string "7", and how to name the number
        "-  7  no score in this window (the key is the string '7'; for the number, give it as a JSON list: '[7]')\n"
    )
    assert cli("meta", "get", "ints", "[7]", "--json").output == '{"pk": [7], "metadata": {"name": "Seven"}}\n'
    assert cli("ranks", "ints", '["x", 2]').output == '#2  ["x", 2]  30  at 6\n'
    assert cli("rank", "ints", '["[odd"]').output == '#3  ["[odd"]  20  at 7\n'  # shown as it is typed
    assert "is not a JSON list" in cli("ranks", "ints", "[seven", code=2).output
    # Bytes as the API shows them ({"base64": ...}): shown so, typed back so.
    client.add_score("ints", ("b", b"\x00\xff"), 10, 8)
    shown = '["b", {"base64": "AP8="}]'
    assert cli("rank", "ints", shown).output == f"#4  {shown}  10  at 8\n"
    assert json.loads(cli("rank", "ints", shown, "--json").output)["pk"] == ["b", {"base64": "AP8="}]
