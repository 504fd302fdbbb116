"""The CLI as a new user meets it: one vocabulary for every read command, times and
keys as people type them, one row format, usage mistakes, files from standard input, closed
pipes, TLS, help texts, loads of flat lines and CSV, exports.

Commands run in-process through click's CliRunner against a real server (on both stores), and
as real processes where exit codes, pipes and terminals matter.  Oracles: timestamps computed
here with zoneinfo, standings sorted here from the scores written, the server's own answers
through the Python client.
"""

from __future__ import annotations

import base64
import csv
import datetime as dt
import fcntl
import io
import json
import os
import pty
import signal
import struct
import subprocess
import sys
import termios
from pathlib import Path
from zoneinfo import ZoneInfo

import click
import pytest
from click.testing import CliRunner

from fdb_leaderboard.cli import main
from fdb_leaderboard.cli.options import parse_time
from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.service import Server, ServerSettings, TlsFiles
from tests.conftest import Cli, error_line

pytestmark = pytest.mark.usefixtures("no_unexpected_server_errors")

PARIS = ZoneInfo("Europe/Paris")
DAY = 86_400
NOV_23 = int(dt.datetime(2026, 11, 23, tzinfo=PARIS).timestamp())  # a Monday, 00:00 in Paris
CLI = [str(Path(sys.executable).parent / "fdb-leaderboard")]

# Every command that reads a window, and whether it reads ranks (and so takes --mode).
READS = {
    "top": True,
    "rank": True,
    "around": True,
    "count": False,
    "ranks": True,
    "page": True,
    "percentile": False,
    "score-for-percentile": False,
    "movement": True,
    "bottom": True,
    "rank-for-score": False,
    "score-for-rank": False,
    "export": True,
}


@pytest.fixture
def game(cli: Cli, client: LeaderboardClient) -> list[tuple[str, int, int, str]]:
    """Index ``game``: Paris days (type 1) and all-time, dense ranks, groups of one element; scores
    on 2026-11-23 in group eu, with display names.  Returns (pk, score, timestamp, name) rows."""
    cli("index", "create", "game", "--daily", "--timezone", "Europe/Paris", "--dense-ranks", "--group-size", 1)
    client.update_windows("game", windows=[(1, NOV_23, NOV_23 + DAY), (1, NOV_23 + DAY, NOV_23 + 2 * DAY)])
    rows = [("alice", 1200, NOV_23 + 10, "Alice"), ("bob", 1500, NOV_23 + 20, "Bob"), ("carol", 1200, NOV_23 + 30, "")]
    for pk, score, ts, name in rows:
        client.add_score("game", pk, score, ts, group="eu", metadata={"name": name} if name else None)
    client.add_score("game", "bob", 700, NOV_23 + DAY + 5, group="eu")
    return rows


# -- one vocabulary ----------------------------------------------------------------------------------


def test_every_read_command_takes_the_same_window_options() -> None:
    """Names, defaults and types of --type, --at, --group (and --mode where ranks are read)."""
    seen = {}
    for name, ranked in READS.items():
        command = main.commands[name]
        options = {param.name: param for param in command.params if isinstance(param, click.Option)}
        assert options["window_type"].opts == ["-t", "--type"], name
        assert options["at"].opts == ["--at"] and options["at"].default == "now", name
        assert options["group"].opts == ["--group"] and not options["group"].multiple, name
        assert ("mode" in options) is ranked, name
        shown = [(p.name, p.opts, p.default, p.help, type(p.type).__name__) for p in options.values()]
        seen[name] = [s for s in shown if s[0] in ("at", "group", "mode")]
    assert len({json.dumps(entry, default=str) for entry in seen.values() if len(entry) == 3}) == 1
    movement_type = next(p for p in main.commands["movement"].params if p.name == "window_type")
    assert movement_type.required  # a previous window is one of a type: the all-time window has none


def test_every_read_command_reads_the_window_the_options_name(cli: Cli, client: LeaderboardClient, game) -> None:
    """The same options, on each read command: Paris's 23 November, group eu, DENSE ranks."""
    where = ["--type", "1", "--at", "2026-11-23", "--group", "eu"]
    arguments = {
        "top": [],
        "rank": ["carol"],
        "around": ["carol"],
        "count": [],
        "ranks": ["carol", "bob"],
        "page": ["1"],
        "percentile": ["carol"],
        "score-for-percentile": ["100"],
        "movement": ["bob"],
        "bottom": [],
        "rank-for-score": ["1300"],
        "score-for-rank": ["2"],
        "export": [],
    }
    for name, ranked in READS.items():
        mode = ["--mode", "dense"] if ranked else []
        out = cli(name, "game", *arguments[name], *where, *mode).output
        assert out.strip() and "Error" not in out, (name, out)
    # What they read is that day's board (bob's 700 of the next day is not in it).
    assert cli("top", "game", *where, "--mode", "DENSE").output.splitlines() == [
        "#1  bob    Bob    1500  at 1795388420  group eu",
        "#2  alice  Alice  1200  at 1795388410  group eu",
        "#2  carol         1200  at 1795388430  group eu",
    ]
    assert cli("count", "game", *where).output == "3\n"
    assert cli("count", "game", "--type", "1", "--at", "2026-11-24", "--group", "eu").output == "1\n"
    assert cli("rank-for-score", "game", "1300", *where).output == "#2\n"  # bob alone scores more
    moved = cli("movement", "game", "bob", "--type", "1", "--at", "2026-11-24", "--group", "eu").output
    assert moved.splitlines()[:3] == [
        "now [1795474800, 1795561200)     #1  bob  Bob   700  at 1795474805  group eu",
        "before [1795388400, 1795474800)  #1  bob  Bob  1500  at 1795388420  group eu",
        "change: +0 places",
    ]


def test_at_takes_what_people_type(cli: Cli, client: LeaderboardClient, game) -> None:
    cases = {
        "2026-11-23": NOV_23,  # the policy's time zone: Paris
        "2026-11-23T08:46:40": int(dt.datetime(2026, 11, 23, 8, 46, 40, tzinfo=PARIS).timestamp()),
        "2026-11-23T08:46:40Z": int(dt.datetime(2026, 11, 23, 8, 46, 40, tzinfo=dt.UTC).timestamp()),
        "2026-11-23 08:46:40+09:00": int(
            dt.datetime(2026, 11, 23, 8, 46, 40, tzinfo=dt.timezone(dt.timedelta(hours=9))).timestamp()
        ),
        "2026-11-23[America/New_York]": int(dt.datetime(2026, 11, 23, tzinfo=ZoneInfo("America/New_York")).timestamp()),
        "2026-11-23 UTC": int(dt.datetime(2026, 11, 23, tzinfo=dt.UTC).timestamp()),
        "1795420000": 1795420000,
    }
    for typed, expected in cases.items():
        added = json.loads(cli("add", "game", "probe", "--score", 1, "--at", typed, "--group", "eu", "--json").output)
        assert added["timestamp"] == expected, typed
    before = int(dt.datetime.now(dt.UTC).timestamp())
    now = json.loads(cli("add", "game", "probe", "--score", 1, "--group", "eu", "--json").output)["timestamp"]
    assert before <= now <= int(dt.datetime.now(dt.UTC).timestamp())
    # latest: the window holding the index's latest score (now's, after the write just made)
    assert cli("top", "game", "-t", 1, "--at", "latest", "--group", "eu").output.split()[1] == "probe"
    for bad, problem in [
        ("yesterday", "'yesterday' is not a time: use now, latest"),
        ("2026-13-01", "is not a time"),
        ("2026-11-23[Mars/Olympus]", "unknown time zone 'Mars/Olympus'"),
        ("2026-11-23T08:00+01:00[Europe/Paris]", "gives both an offset and a time zone"),
    ]:
        assert problem in error_line(cli("top", "game", "-t", 1, "--at", bad, code=2)), bad
    assert parse_time(" NOW ").is_now and parse_time("Latest").is_latest


def test_one_row_format_with_the_display_name(cli: Cli, client: LeaderboardClient, game) -> None:
    """top, rank, around, ranks, page, bottom: the same columns; names beside keys; #1 the best."""
    client.set_metadata("game", "alice", {"name": "Alice", "country": "FR"})
    at = ["--group", "eu", "-t", 1, "--at", NOV_23]
    rows = {
        "bob": "#1  bob    Bob    1500  at 1795388420  group eu",
        "alice": "#2  alice  Alice  1200  at 1795388410  group eu  country=FR",
        "carol": "#3  carol         1200  at 1795388430  group eu",
    }
    assert cli("top", "game", *at).output.splitlines() == list(rows.values())
    assert cli("page", "game", 1, *at).output.splitlines()[1:] == list(rows.values())
    assert cli("around", "game", "alice", "--above", 1, "--below", 1, *at).output.splitlines() == list(rows.values())
    assert cli("ranks", "game", "bob", "alice", "carol", *at, "--board").output.splitlines() == list(rows.values())
    assert cli("bottom", "game", *at).output.splitlines() == list(reversed(rows.values()))
    assert cli("rank", "game", "alice", *at).output == "#2  alice  Alice  1200  at 1795388410  group eu  country=FR\n"
    # --json: the API's shape, 0-based
    entry = json.loads(cli("rank", "game", "alice", *at, "--json").output)
    assert entry["rank"] == 1 and entry["metadata"] == {"country": "FR", "name": "Alice"}


# -- usage mistakes ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["top", "game", "-n", "-1"], "Invalid value for '-n' / '--count': -1 is not in the range x>=1"),
        (["top", "game", "-n", "0"], "Invalid value for '-n' / '--count': 0 is not in the range x>=1"),
        (["bottom", "game", "-n", "0"], "Invalid value for '-n' / '--count'"),
        (["page", "game", "0"], "Invalid value for 'NUMBER'"),
        (["page", "game", "1", "--size", "0"], "Invalid value for '--size'"),
        (["around", "game", "a", "--above", "-2"], "Invalid value for '--above'"),
        (["top", "game", "--type", "-1"], "Invalid value for '-t' / '--type'"),
        (["top", "game", "--mode", "best"], "Invalid value for '--mode'"),
        (["rank", "game", "carol", "smith"], "one PK, not 2 words: several elements go in one JSON list, "
                                             "e.g. '[\"carol\", \"smith\"]'"),
        (["add", "game", "", "--score", "5"], "Invalid value for PK: empty"),
        (["add", "game", "[]", "--score", "5"], "Invalid value for PK: [] has no element"),
        (["add", "game", "[1, [2]]", "--score", "5"], "a JSON list of strings, numbers, booleans, null or"),
        (["add", "game", "[{\"base64\": \"!\"}]", "--score", "5"], "a base64 item is not base64"),
        (["top", "game", "--group", ""], "Invalid value for --group: empty"),
        (["score-for-percentile", "game", "101"], "Invalid value for 'PERCENT'"),
        (["load", "game", "-", "--batch", "0"], "Invalid value for '--batch'"),
        (["export", "game", "--page-size", "5000"], "Invalid value for '--page-size'"),
    ],
)  # fmt: skip
def test_usage_mistakes_exit_2_naming_the_option(cli: Cli, client: LeaderboardClient, args: list, problem: str) -> None:
    client.create_index("game")
    client.add_score("game", "alice", 5, 5)
    result = cli(*args, code=2)
    assert problem in error_line(result) and len(result.output.splitlines()) == 1, result.output
    assert [e.pk for e in client.top("game", 5)] == [("alice",)]  # nothing written


def test_usage_mistakes_exit_2_from_a_real_process(server: Server) -> None:
    done = subprocess.run([*CLI, "--server", server.address, "top", "game", "-n", "-1"], capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        "Error: Invalid value for '-n' / '--count': -1 is not in the range x>=1. (see fdb-leaderboard top --help)\n"
    )


def test_index_drop_of_nothing_asks_nothing(cli: Cli, client: LeaderboardClient) -> None:
    result = cli("index", "drop", "nosuch", input="y\n", code=1)
    assert result.output == "Error: NOT_FOUND: no index named 'nosuch'\n"  # no question asked
    client.create_index("kept")
    assert cli("index", "drop", "kept", input="n\n", code=1).output.startswith("Delete index kept")
    assert [i.name for i in client.list_indexes()] == ["kept"]


# -- files, pipes, TLS ------------------------------------------------------------------------------------


def test_window_files_from_standard_input_and_their_errors(cli: Cli, client: LeaderboardClient) -> None:
    client.create_index("game", all_time=False)
    spec = "calendar:\n  - {type: 1, period: daily, timezone: Europe/Paris, start: 2026-11-23, count: 2}\n"
    assert cli("windows", "apply", "game", "-", input=spec).output.startswith("added 3, deleted 0, filling 0\n")
    assert [(w.type, w.start) for w in client.list_windows("game").windows][1:] == [(1, NOV_23), (1, NOV_23 + DAY)]
    bad_date = spec.replace("2026-11-23", "23/11/2026")
    assert "start '23/11/2026' is not a date: use YYYY-MM-DD (e.g. 2026-11-23) or today" in error_line(
        cli("windows", "apply", "game", "-", input=bad_date, code=1)
    )
    broken = "all_time: true\ncalendar:\n  - {type: 1, period: daily\n"
    assert "<stdin>: not valid YAML: line 4, column 1: while parsing a flow mapping" in error_line(
        cli("windows", "apply", "game", "-", input=broken, code=1)
    )
    assert len(client.list_windows("game").windows) == 3


def _write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text)
    return path


def test_a_json_window_file_error_names_the_line(cli: Cli, client: LeaderboardClient, tmp_path: Path) -> None:
    client.create_index("game")
    result = cli("windows", "apply", "game", _write(tmp_path, "w.json", '{"all_time": true,\n}'), code=1)
    assert "w.json: not valid JSON: line 2, column 1: Expecting property name" in error_line(result)


def test_a_closed_pipe_ends_the_command_quietly(server: Server, client: LeaderboardClient) -> None:
    client.create_index("game")
    job = subprocess.Popen(
        [*CLI, "--server", server.address, "windows", "show", "game"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    job.stdout.close()  # type: ignore[union-attr]  # the reader is gone before the command writes (| head)
    stderr = job.stderr.read()  # type: ignore[union-attr]
    assert job.wait() == 0 and stderr == b""  # not a word, and success: the reader had what it wanted
    # A read command cut off by `| head`: the same, however much it would have written.
    for i in range(300):
        client.add_score("game", f"p{i:03}", i, 1)
    piped = subprocess.run(
        f'{CLI[0]} --server {server.address} top game -n 300 | head -n 2; echo "status ${{PIPESTATUS[0]}}"',
        shell=True,
        executable="/bin/bash",
        capture_output=True,
        text=True,
    )
    assert piped.stdout.splitlines()[-1] == "status 0" and len(piped.stdout.splitlines()) == 3, piped
    assert piped.stderr == ""


def test_tls_mismatches_say_tls_and_ca(server: Server, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    pem = request.getfixturevalue("certificates")
    tls = TlsFiles(pem["server"], pem["server_key"], None)
    secure = Server(
        f"lmdb:{tmp_path / 's'}?durable=false", "127.0.0.1:0", settings=ServerSettings(maintain_every=0, tls=tls)
    )
    secure.start()
    runner = CliRunner()
    try:
        plain = runner.invoke(main, ["--server", secure.address, "index", "list", "--timeout", "5s"])
        assert plain.exit_code == 1 and plain.output == (
            f"Error: the server at {secure.address} speaks TLS: "
            "give the CA that signed its certificate with --ca FILE\n"
        )
        ca = pem["ca"]
        assert runner.invoke(main, ["--server", secure.address, "--ca", ca, "index", "list"]).exit_code == 0
        wrong = runner.invoke(main, ["--server", server.address, "--ca", ca, "index", "list", "--timeout", "5s"])
        assert wrong.exit_code == 1 and wrong.output == (
            f"Error: the server at {server.address} does not speak TLS: leave out --ca "
            "(or serve it with --tls-cert/--tls-key)\n"
        )
    finally:
        secure.stop(grace=0)


# -- help, -v -------------------------------------------------------------------------------------------


def _commands(command: click.Command, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    found = [(path, command)]
    for name, sub in getattr(command, "commands", {}).items():
        found += _commands(sub, (*path, name))
    return found


def test_every_help_text_is_plain_and_every_option_explained() -> None:
    runner = CliRunner()
    commands = _commands(main)
    assert len(commands) > 35
    for path, command in commands:
        result = runner.invoke(main, [*path, "--help"])
        assert result.exit_code == 0, path
        assert "``" not in result.output and ":class:" not in result.output and ":func:" not in result.output, path
        assert "-v, --verbose" in result.output, path  # -v after the command too
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                assert param.help, (path, param.opts)


def test_verbose_after_the_command(
    cli: Cli, server: Server, client: LeaderboardClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    client.create_index("game")

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a defect")

    monkeypatch.setattr(LeaderboardClient, "count", broken)
    quiet = cli("count", "game", code=1)
    assert error_line(quiet) == "Error: unexpected RuntimeError: a defect (run with -v for the traceback)"
    for args in (["-v", "count", "game"], ["count", "game", "-v"], ["count", "-v", "game"]):
        result = CliRunner().invoke(main, ["--server", server.address, *args])
        assert isinstance(result.exception, RuntimeError), args  # the traceback, not one line


# -- policy show ------------------------------------------------------------------------------------------


def test_policy_show_prints_durations_as_typed(cli: Cli, client: LeaderboardClient) -> None:
    client.create_index("game")
    cli("policy", "set", "game", "--calendar", "1:daily", "--horizon", "2d", "--certain-within", "90m",
        "--retain", "36h", "--idempotency-retention", "45s")  # fmt: skip
    assert cli("policy", "show", "game").output.splitlines() == [
        "game: keep windows starting within 2d ahead (certain within 90m); expire windows ended 36h ago; "
        "writes' idempotency keys kept 45s",
        "  type 1: daily in UTC",
    ]
    cli("policy", "set", "game", "--regular", "4:0:1h:250ms", "--timebase", "milliseconds")
    assert cli("policy", "show", "game").output.splitlines() == [
        "game: keep windows starting within 2d ahead (certain within 1d); keep old windows; "
        "writes' idempotency keys kept 1d; times in milliseconds",
        "  type 4: every 1h from 0, lasting 250ms",
    ]


# -- load: flat lines, CSV, progress on terminals ------------------------------------------------------


def _standings(records: dict[str, list[tuple[int, int]]]) -> list[tuple[str, int]]:
    """The all-time board of BEST records, by hand: best score first, the earlier time on ties."""
    best = {pk: max(entries, key=lambda e: (e[0], -e[1])) for pk, entries in records.items()}
    return [(pk, score) for pk, (score, _) in sorted(best.items(), key=lambda kv: (-kv[1][0], kv[1][1]))]


def test_load_takes_flat_lines_and_csv(cli: Cli, client: LeaderboardClient, tmp_path: Path) -> None:
    client.create_index("game")
    flat = [
        {"pk": "alice", "score": 10, "timestamp": 1},
        {"pk": "alice", "score": 30, "timestamp": 2},  # one record: its lines follow each other
        {"pk": ["bob", 7], "score": 20, "timestamp": 3, "group": []},
        {"pk": "carol", "entries": [{"score": 25, "timestamp": 4}]},  # the whole-record form, mixed in
    ]
    path = _write(tmp_path, "flat.jsonl", "".join(json.dumps(line) + "\n" for line in flat))
    assert cli("load", "game", path).output == "loaded 3 records into game\n"
    assert [(e.pk, e.score) for e in client.top("game", 5)] == [(("alice",), 30), (("carol",), 25), (("bob", 7), 20)]
    assert client.rank_and_entry("game", "alice").timestamp == 2

    rows = {"dave": [(5, 10), (9, 11)], "erin": [(9, 12)], "fay, jr": [(7, 13)], '["gus", 2]': [(1, 14)]}
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(["pk", "score", "timestamp"])
    for pk, entries in rows.items():
        for score, ts in entries:
            writer.writerow([pk, score, ts])
    assert cli("load", "game", "-", input="\n" + text.getvalue()).output == "loaded 4 records into game\n"
    expected = _standings({k: v for k, v in rows.items()})
    got = [(e.pk[0] if len(e.pk) == 1 else json.dumps(list(e.pk)), e.score) for e in client.top("game", 10)]
    assert [row for row in got if row[0] in rows] == expected
    assert client.rank_and_entry("game", ("gus", 2)).score == 1
    csv_file = _write(tmp_path, "scores.csv", "PK,Score,Timestamp,Group\nzed,3.5,9,\n")
    assert "INVALID_ARGUMENT" in error_line(cli("load", "game", csv_file, code=1))  # an INT index: 3.5 refused


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"pk": "a", "score": 1, "timestamp": 1}\n{"pk": "b", "score": 1, "timestamp": 1}\n'
         '{"pk": "a", "score": 2, "timestamp": 2}\n',
         "line 3: the lines of pk ['a'] are not together: a record's flat lines (or rows) must follow each other"),
        ("pk,score,when\na,1,1\n", "line 1: CSV header: unknown column(s) ['when']; columns: pk, score, timestamp"),
        ("pk,score\na,1\n", "line 1: CSV header: missing column(s) ['timestamp']"),
        ("pk,score,timestamp\na,1,soon\n", "line 2: timestamp must be an integer, not 'soon'"),
        ("pk,score,timestamp\n,1,1\n", "line 2: pk is empty"),
        ('{"pk": "a", "score": 1}\n', "line 1: an entry needs score and timestamp"),
    ],
)  # fmt: skip
def test_load_names_the_line_of_a_bad_record(cli: Cli, client: LeaderboardClient, text: str, problem: str) -> None:
    client.create_index("game")
    assert problem in error_line(cli("load", "game", "-", input=text, code=1))


def test_the_progress_bar_is_for_terminals(server: Server, client: LeaderboardClient, tmp_path: Path) -> None:
    client.create_index("game")
    path = _write(tmp_path, "r.jsonl", "".join(f'{{"pk": "p{i}", "score": {i}, "timestamp": 1}}\n' for i in range(30)))
    command = [*CLI, "--server", server.address, "load", "game", str(path), "--batch", "10"]
    piped = subprocess.run(command, capture_output=True, text=True)
    assert piped.returncode == 0 and piped.stdout == "loaded 30 records into game\n" and piped.stderr == ""
    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))  # an 80x24 terminal
    on_terminal = subprocess.run(command, stdout=subprocess.PIPE, stderr=secondary, text=True)
    os.close(secondary)
    drawn = b""
    try:
        while chunk := os.read(primary, 4096):
            drawn += chunk
    except OSError:  # the terminal's other end is closed: all read
        pass
    os.close(primary)
    assert on_terminal.returncode == 0 and on_terminal.stdout == "loaded 30 records into game\n"
    assert b"saving into game" in drawn and b"30/30" in drawn


# -- export -----------------------------------------------------------------------------------------------


def test_export_streams_a_windows_standings(cli: Cli, client: LeaderboardClient, monkeypatch) -> None:
    client.create_index("game", group_size=1)
    records = {f"p{i:02d}": [((i * 37) % 23, 100 + i)] for i in range(25)}
    for pk, [(score, ts)] in records.items():
        client.add_score("game", pk, score, ts, group="eu", metadata={"name": pk.upper()})
    expected = _standings(records)
    exported = cli("export", "game", "--group", "eu", "--page-size", 7)
    assert exported.stderr == "exported 25 rows of game\n"
    rows = [json.loads(line) for line in exported.stdout.splitlines()]
    assert [(r["pk"][0], r["score"]) for r in rows] == expected
    assert [r["rank"] for r in rows] == list(range(25)) and rows[0]["metadata"] == {"name": rows[0]["pk"][0].upper()}
    table = list(csv.DictReader(io.StringIO(cli("export", "game", "--group", "eu", "--format", "csv").stdout)))
    assert [(row["pk"], int(row["score"]), int(row["rank"])) for row in table] == [
        (pk, score, rank) for rank, (pk, score) in enumerate(expected)
    ]
    assert json.loads(table[0]["metadata"]) == {"name": table[0]["pk"].upper()} and table[0]["group"] == "eu"

    # Cut off after two pages: it says how to resume, and the resumed export holds the rest.
    scan = LeaderboardClient.scan
    pages = []

    def failing(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        pages.append(1)
        if len(pages) == 3:
            raise KeyboardInterrupt
        return scan(self, *args, **kwargs)

    monkeypatch.setattr(LeaderboardClient, "scan", failing)
    cut = cli("export", "game", "--group", "eu", "--page-size", 5, code=1)
    message = error_line(cut)
    assert message.startswith("Error: interrupted; 10 rows written: resume with --resume ")
    token = message.rsplit(" ", 1)[1]
    assert base64.urlsafe_b64decode(token)
    monkeypatch.setattr(LeaderboardClient, "scan", scan)
    rest = cli("export", "game", "--group", "eu", "--page-size", 5, "--resume", token).stdout
    rows = [json.loads(line) for line in (cut.stdout + rest).splitlines()]
    assert [r["pk"][0] for r in rows] == [pk for pk, _ in expected]
    assert "is not a resume token" in error_line(cli("export", "game", "--resume", "!!", code=2))


# -- the demo ---------------------------------------------------------------------------------------------


def test_the_demo_fits_a_terminal_says_where_it_serves_and_leaves_nothing_behind(tmp_path: Path) -> None:
    """Stopped with Ctrl-C after its first screen; a browser that cannot open says nothing."""
    tools = tmp_path / "bin"
    tools.mkdir()
    opener = tools / "xdg-open"
    opener.write_text("#!/bin/sh\necho 'xdg-open: no method available for opening' >&2\nexit 3\n")
    opener.chmod(0o755)
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = {**os.environ, "TMPDIR": str(temporary), "DISPLAY": ":99", "PATH": f"{tools}:{os.environ['PATH']}"}
    demo = subprocess.Popen(
        [*CLI, "demo", "--players", "50", "--refresh", "0.2", "--http-address", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        seen = ""
        while "around player-00001" not in seen:  # the first screen, whole
            line = demo.stdout.readline()  # type: ignore[union-attr]
            assert line, f"the demo ended: {seen}{demo.stderr.read()}"  # type: ignore[union-attr]
            seen += line
        assert list(temporary.glob("fdb-leaderboard-demo-*"))  # its store, while it runs
        demo.send_signal(signal.SIGINT)
        rest, errors = demo.communicate(timeout=120)
    finally:
        demo.kill()
    assert demo.returncode == 0 and errors == ""
    screens = [s for s in (seen + rest).split("\x1b[2J\x1b[H") if s.strip()]
    stopped = "demo stopped (SIGINT); its temporary store is deleted\n"
    assert screens and rest.endswith(stopped)
    for screen in [*screens[:-1], screens[-1].replace(stopped, "")]:
        lines = screen.rstrip("\n").split("\n")
        assert len(lines) <= 24 and max(len(line) for line in lines) <= 80, screen
    header = screens[0].splitlines()[1]
    assert header.startswith("gRPC 127.0.0.1:") and ", live page http://127.0.0.1:" in header
    assert not list(temporary.iterdir())  # the temporary store is gone
