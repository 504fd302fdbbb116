"""The operator's CLI: reading and fixing a board, ``--json`` and ``--timeout``,
errors as one line, ``load``'s reports, calendar maintenance policies, ``maintain`` across a
server restart (the README runs as written in tests/docs/test_readme.py).

Commands run in-process through click's CliRunner (``maintain`` across a restart runs as a
process); results are checked through the Python client or against hand-checked instants.
"""

from __future__ import annotations

import datetime as dt
import json
import pathlib
import re
import subprocess
import sys
import time
from zoneinfo import ZoneInfo

import pytest

from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.index import Entry, IndexSettings, WindowUpdate
from fdb_leaderboard.proto import service_pb2 as pb
from fdb_leaderboard.service import LeaderboardService, Server, ServerSettings
from fdb_leaderboard.store import open_database
from tests.conftest import Cli, error_line, start_server

ROOT = pathlib.Path(__file__).resolve().parents[2]
DAY, HOUR = 86_400, 3_600
PARIS = ZoneInfo("Europe/Paris")
OCT_24 = 1_792_792_800  # Saturday 2026-10-24 00:00 +02:00
OCT_25 = 1_792_879_200  # Sunday 2026-10-25 00:00 +02:00: 25 hours long (summer time ends)
OCT_26 = 1_792_969_200  # Monday 2026-10-26 00:00 +01:00
NOV_1 = 1_793_487_600  # 2026-11-01 00:00 +01:00

pytestmark = pytest.mark.usefixtures("no_unexpected_server_errors")

# -- reading and fixing a board ------------------------------------------------------------------------


def test_read_and_fix_a_board(cli: Cli, client: LeaderboardClient, tmp_path: pathlib.Path) -> None:
    cli("index", "create", "game", "--group-size", "1", "--no-all-time")
    assert (
        "warning: the index has no windows yet"
        in cli("add", "game", "early", "--score", 5, "--at", 1, "--group", "eu").output
    )
    cli(
        "windows",
        "apply",
        "game",
        write_spec(
            tmp_path, "calendar:\n  - {type: 1, period: daily, timezone: Europe/Paris, start: 2026-10-24, count: 2}\n"
        ),
    )
    client.fill("game")
    for pk, score, at in [("alice", 1200, OCT_25 + 10), ("bob", 1500, OCT_25 + 20), ("carol", 1200, OCT_25 + 30)]:
        out = cli("add", "game", pk, "--score", score, "--at", at, "--group", "eu").output
        assert out.startswith(f"added {score} at {at} to {pk}: ") and "warning" not in out
    cli("add", "game", '["dave", 7]', "--score", "99.5", "--at", 5, "--group", "eu", code=1)  # INT index: refused
    cli("add", "game", '["dave", 7]', "--score", 900, "--at", OCT_25 + 40, "--group", "eu")
    assert client.rank("game", ("dave", 7), group=("eu",)) == 3

    top = cli("top", "game", "-n", 3, "--group", "eu").output.splitlines()
    assert top == [
        "#1  bob    1500  at 1792879220  group eu",
        "#2  alice  1200  at 1792879210  group eu",
        "#3  carol  1200  at 1792879230  group eu",
    ]
    listing = json.loads(cli("top", "game", "--group", "eu", "--type", 1, "--at", OCT_25, "--json").output)
    day = {"type": 1, "start": OCT_25, "end": OCT_26}
    assert listing["window"] == day  # the window read, as the API names it
    rows = listing["entries"]
    assert [(r["rank"], r["pk"], r["score"], r["group"]) for r in rows] == [
        (0, ["bob"], 1500, ["eu"]),
        (1, ["alice"], 1200, ["eu"]),
        (2, ["carol"], 1200, ["eu"]),
        (3, ["dave", 7], 900, ["eu"]),
    ]
    assert cli("top", "game", "--group", "eu", "--type", 1, "--at", OCT_24).output == "game: no scores in this window\n"
    assert cli("rank", "game", "carol", "--group", "eu", "--mode", "COMPETITION").output.startswith("#2  carol  1200")
    assert json.loads(cli("rank", "game", '["dave", 7]', "--group", "eu", "--json").output)["rank"] == 3
    assert cli("rank", "game", "zoe", "--group", "eu").output == "zoe has no score in the all-time window\n"
    assert json.loads(cli("rank", "game", "zoe", "--group", "eu", "--json").output) is None
    around = cli("around", "game", "carol", "--above", 1, "--below", 1, "--group", "eu").output.splitlines()
    assert [line.split("  ")[1] for line in around] == ["alice", "carol", '["dave", 7]']
    assert cli("count", "game", "--group", "eu").output == "5\n"  # early's score counts all-time
    assert json.loads(cli("count", "game", "--group", "eu", "--type", 1, "--at", OCT_25, "--json").output) == {
        "count": 4,
        "window": day,
    }
    assert "NOT_FOUND" in error_line(cli("count", "game", "--type", 1, "--at", 5, code=1))

    assert cli("delete", "game", "bob").output == "deleted bob\n"
    assert cli("delete", "game", "bob").output == "bob: no such record (nothing to delete)\n"
    assert json.loads(cli("delete", "game", '["dave", 7]', "--json").output) == {"pk": ["dave", 7], "existed": True}
    assert [e.pk for e in client.top("game", 5, group=("eu",))] == [("alice",), ("carol",), ("early",)]
    assert client.verify("game") == []


def write_spec(directory: pathlib.Path, text: str, name: str = "w.yaml") -> pathlib.Path:
    path = directory / name
    path.write_text(text)
    return path


def test_index_drop(cli: Cli, client: LeaderboardClient, server: Server) -> None:
    cli("index", "create", "old")
    client.update_windows("old")
    client.add_score("old", "a", 1, 1)
    prefix = server.catalog.entry("old").prefix
    assert cli("index", "drop", "old", input="n\n", code=1).output.endswith("Aborted.\n")
    assert client.count("old") == 1  # declined: nothing dropped
    assert cli("index", "drop", "old", input="y\n").output.endswith("index old dropped\n")
    assert [i.name for i in client.list_indexes()] == []
    assert server.db.read(lambda tr: tr.get_range(prefix, prefix + b"\xff")) == []
    assert "NOT_FOUND: no index named 'old'" in error_line(cli("index", "drop", "old", "--yes", code=1))
    cli("index", "create", "old", "--low-score-first")  # the name is free again, with other options
    assert [w.type for w in client.list_windows("old").windows] == [0]  # a new index: all-time only
    assert client.count("old") == 0


def test_index_drop_clears_in_bounded_batches(server: Server) -> None:
    index, _ = server.catalog.create("big", IndexSettings())
    index.update_windows(WindowUpdate())
    index.write_batch([((f"p{i}",), [Entry(i, i)]) for i in range(300)])
    prefix = server.catalog.entry("big").prefix
    commits: list[int] = []
    run = server.db.run

    def counting(fn, *args, **kwargs):  # type: ignore[no-untyped-def]
        commits.append(1)
        return run(fn, *args, **kwargs)

    server.db.run = counting  # type: ignore[method-assign]
    try:
        server.catalog.drop("big", batch_keys=100)
    finally:
        server.db.run = run  # type: ignore[method-assign]
    if server.db.clears_ranges_at_once:  # one range clear is one mutation, whatever it holds
        assert len(commits) <= 3
    else:
        assert len(commits) > 3  # the name, then the data in batches of 100 keys
    assert server.db.read(lambda tr: tr.get_range(prefix, prefix + b"\xff")) == []


# -- timeouts and one-line errors --------------------------------------------------------------------------


def test_timeouts_and_one_line_errors(cli: Cli, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cli("index", "create", "game")
    cli("windows", "apply", "game", write_spec(tmp_path, "all_time: true\n"))
    slow = LeaderboardService._index

    def slowly(self: LeaderboardService, name: str) -> object:
        time.sleep(0.5)
        return slow(self, name)

    monkeypatch.setattr(LeaderboardService, "_index", slowly)  # every call on an index takes 0.5 s
    for command in (["count", "game"], ["verify", "game"], ["top", "game"], ["windows", "show", "game"]):
        result = cli(*command, "--timeout", "0.1s", code=1)
        assert "DEADLINE_EXCEEDED" in error_line(result) and "give a longer --timeout" in error_line(result)
    checked = cli("verify", "game", "--timeout", "5m").output.splitlines()
    assert checked[0].startswith("checked 0 records") and checked[1:] == ["game: every window matches the records"]

    refused = cli("count", "game", server_address="127.0.0.1:1", code=1)
    assert error_line(refused) == (
        "Error: cannot reach a server at 127.0.0.1:1 (connection refused): start one with `fdb-leaderboard serve` "
        "(or ./tools/serve), or point at one with --server HOST:PORT or $FDB_LEADERBOARD_SERVER"
    )
    usage = cli("maintain", "--every", "often", code=2)
    assert error_line(usage).startswith("Error: Invalid value for '--every': 'often' is not a duration")
    assert len(usage.output.splitlines()) == 1
    assert "--timeout" in error_line(cli("count", "game", "--timeout", "soon", code=2))
    # (never the default address: the suite must pass beside a running ./tools/serve)
    bad_url = cli("serve", "--store", "bogus:x", "--address", "127.0.0.1:0", code=1)
    assert error_line(bad_url).startswith("Error: cannot serve store bogus:x on 127.0.0.1:0: unknown store URL")
    bind = cli("serve", "--store", f"lmdb:{tmp_path / 'b'}", "--address", "nonsense:abc", code=1)
    assert error_line(bind).startswith("Error: ") and "nonsense:abc" in error_line(bind)
    locked = open_database(f"lmdb:{tmp_path / 'held'}?durable=false")  # open here in another mode
    try:
        result = cli("serve", "--store", f"lmdb:{tmp_path / 'held'}", "--address", "127.0.0.1:0", code=1)
        assert error_line(result).startswith(f"Error: cannot serve store lmdb:{tmp_path / 'held'}")
    finally:
        locked.close()
    assert "Error: " in error_line(cli("windows", "apply", "game", write_spec(tmp_path, "bogus: 1\n"), code=1))


# -- load -----------------------------------------------------------------------------------------------------


def test_load_names_the_refused_line_and_counts_saved_records(
    cli: Cli, client: LeaderboardClient, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli("index", "create", "game")
    cli("windows", "apply", "game", write_spec(tmp_path, "all_time: true\n"))
    lines = [json.dumps({"pk": f"p{i}", "entries": [{"score": i, "timestamp": 1}]}) for i in range(250)]
    lines[7:7] = ["", "  "]  # blank lines: the refused record's line counts them
    lines.insert(230, json.dumps({"pk": "bad", "entries": [{"score": 1, "timestamp": 1, "group": ["eu"]}]}))
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = cli("load", "game", path, "--batch", 100, code=1)
    assert error_line(result) == (
        f"Error: {path}: line 231 refused by the server (INVALID_ARGUMENT: this index groups by 0 element(s); "
        "got group ('eu',)); the 200 records before line 203 were saved; fix the line and rerun "
        "(rerunning the load is safe: each record replaces what was stored for it)"
    )
    assert client.count("game") == 200

    del lines[230]
    path.write_text("\n".join(lines) + "\n")
    done = cli("load", "game", path, "--batch", 100)
    assert done.output == "loaded 250 records into game\n"
    assert client.count("game") == 250 and client.verify("game") == []
    assert json.loads(cli("load", "game", path, "--json").output.splitlines()[-1]) == {
        "index": "game",
        "records_saved": 250,
    }

    def interrupted(self, index, records, batch_size, rank_as_loaded, progress, timeout):  # type: ignore[no-untyped-def]
        progress(100)
        raise KeyboardInterrupt

    monkeypatch.setattr(LeaderboardClient, "bulk_load", interrupted)
    assert error_line(cli("load", "game", path, code=1)) == (
        "Error: interrupted: 100 records were saved; rerunning the load is safe: each record replaces what was stored "
        "for it"
    )


# -- calendar maintenance policies --------------------------------------------------------------------------


def local(ts: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ts, PARIS)


def test_maintain_keeps_calendar_periods_ahead_across_dst(cli: Cli, client: LeaderboardClient) -> None:
    cli("index", "create", "game")
    assert cli("maintain", "--once", "--now", OCT_24).output.startswith("nothing to do: no index has a maintenance")
    shown = cli(
        "policy",
        "set",
        "game",
        "--calendar",
        "1:daily:Europe/Paris",
        "--calendar",
        "3:monthly:Europe/Paris",
        "--horizon",
        "1d",
        "--certain-within",
        "1d",
        "--retain",
        "2d",
    ).output.splitlines()
    assert shown == [
        "game: keep windows starting within 1d ahead (certain within 1d); expire windows ended 2d ago"
        "; writes' idempotency keys kept 1d",
        "  type 1: daily in Europe/Paris",
        "  type 3: monthly in Europe/Paris",
    ]
    assert json.loads(cli("policy", "show", "game", "--json").output)["calendar"][0] == {
        "type": 1,
        "period": "daily",
        "timezone": "Europe/Paris",
    }
    client.update_windows("game")
    for day in range(6):  # 2026-10-24 .. 10-29, noon in Paris, across the 25-hour day
        now = OCT_24 + day * DAY + (12 + (day >= 2)) * HOUR
        first = cli("maintain", "--once", "--now", now).output.splitlines()
        assert first[0].startswith("game: added") and all("nothing" not in line for line in first)
        daily = [(s, e) for t, s, e in windows(client) if t == 1]
        for start, end in daily:
            assert local(start).time() == dt.time(0) and local(end).time() == dt.time(0)
            assert local(end).date() - local(start).date() == dt.timedelta(days=1)
        today = local(now).date()
        starts = {local(s).date() for s, _ in daily}
        assert {today, today + dt.timedelta(days=1)} <= starts  # today's and tomorrow's: certain
        assert all(end > now - 2 * DAY for _, end in daily)  # older ones expired
        assert (OCT_25, OCT_26) in daily or today > dt.date(2026, 10, 27)
        monthly = [(s, e) for t, s, e in windows(client) if t == 3]
        assert (OCT_24 - 23 * DAY, NOV_1) in monthly  # October in Paris: 31 days and an hour
        # Every window within the horizon is certain (certain_within = horizon): a second pass is a no-op.
        again = cli("maintain", "--once", "--now", now).output
        assert again == "nothing to do: 1 index with a maintenance policy checked\n"
        client.add_score("game", f"p{day}", day, now)
        assert [e.pk for e in client.top("game", 5, 1, now)] == [(f"p{day}",)]
    assert client.verify("game") == []
    assert cli("policy", "clear", "game").output == "game: no maintenance policy\n"


def windows(client: LeaderboardClient) -> list[tuple[int, int, int]]:
    return [(w.type, w.start, w.end) for w in client.list_windows("game").windows]


def test_window_file_sets_the_maintenance_policy(cli: Cli, client: LeaderboardClient, tmp_path: pathlib.Path) -> None:
    cli("index", "create", "game")
    out = cli("windows", "apply", "game", ROOT / "examples" / "maintained.yaml").output
    assert "maintenance policy of game set" in out
    policy = {i.name: i.maintenance for i in client.list_indexes()}["game"]
    assert [(c.type, c.period, c.timezone) for c in policy.calendar] == [
        (1, "daily", "Europe/Paris"),
        (2, "iso-weekly", "Europe/Paris"),
        (3, "monthly", "Europe/Paris"),
    ]
    assert (policy.horizon, policy.certain_within, policy.retain) == (2 * DAY, DAY, 60 * DAY)
    again = cli("windows", "apply", "game", ROOT / "examples" / "maintained.yaml").output
    assert again.startswith("added 0, deleted 0, filling 0\n")
    bad = write_spec(tmp_path, "maintenance:\n  calendar:\n    - {type: 1, period: hourly}\n")
    assert "calendar period must be one of daily, iso-weekly, monthly" in error_line(
        cli("windows", "apply", "game", bad, code=1)
    )
    bad = write_spec(tmp_path, "maintenance:\n  horizon: soon\n")
    assert "horizon: 'soon' is not a duration" in error_line(cli("windows", "apply", "game", bad, code=1))


def test_maintain_survives_a_server_restart(tmp_path: pathlib.Path) -> None:
    server = start_server(tmp_path / "s")
    address = server.address
    with LeaderboardClient(address) as client:
        client.create_index("game")
        client.update_windows("game")
        daily = pb.CalendarWindows(type=1, period="daily", timezone="Europe/Paris")
        client.set_maintenance("game", pb.MaintenancePolicy(calendar=[daily], horizon=DAY, certain_within=DAY))
    server.stop(grace=0)
    job = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fdb_leaderboard.cli",
            "--server",
            address,
            "maintain",
            "--every",
            "0.2s",
            "--passes",
            "2",
            "--max-backoff",
            "0.5s",
            "--timeout",
            "2s",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        # Restart the server once the job has said it cannot reach it (however slow its start).
        seen = []
        deadline = time.monotonic() + 60
        while not any("cannot reach a server" in line for line in seen):
            assert time.monotonic() < deadline and job.poll() is None, "".join(seen)
            seen.append(job.stdout.readline())  # type: ignore[union-attr]
        # same store and port; its own maintenance off, so what the job does shows
        server = Server(f"lmdb:{tmp_path / 's'}?durable=false", address, settings=ServerSettings(maintain_every=0))
        server.start()
        job.wait(timeout=60)
        # (not communicate(): with a timeout it reads the pipe itself and loses what readline buffered)
        rest = job.stdout.read()  # type: ignore[union-attr]
        output = "".join(seen) + rest
    finally:
        job.kill()
    try:
        assert job.returncode == 0, output
        assert f"cannot reach a server at {address}" in output and "retrying in 0.5 s" in output
        assert re.search(rf"server at {re.escape(address)} is back after \d+ s", output)
        assert re.search(r"game: added (1 window|2 windows)\n", output)
    finally:
        server.stop(grace=0)


def test_maintain_stopped_by_sigterm_reports_every_window_it_added(tmp_path: pathlib.Path) -> None:
    """A supervisor's SIGTERM lets the pass under way finish and report: the windows the job says it
    added are exactly the ones the index gained, and it exits 0 (one-second windows kept 3 s ahead:
    nearly every pass adds one, so the signal often lands in a pass)."""
    server = start_server(tmp_path / "s")
    try:
        with LeaderboardClient(server.address) as client:
            client.create_index("game")
            policy = pb.MaintenancePolicy(
                windows=[pb.RegularWindows(type=1, base=0, increment=1, duration=1)], horizon=3, certain_within=3
            )
            client.set_maintenance("game", policy)
            before = len(client.list_windows("game").windows)
            command = [sys.executable, "-m", "fdb_leaderboard.cli", "--server", server.address, "maintain"]
            for delay in (0.0, 0.05, 0.13):  # after the first report, at different points of a pass
                job = subprocess.Popen([*command, "--every", "0.1s"], stdout=subprocess.PIPE, text=True)
                try:
                    seen = [job.stdout.readline()]  # type: ignore[union-attr]
                    time.sleep(delay)
                    job.terminate()
                    job.wait(timeout=60)
                    output = "".join(seen) + job.stdout.read()  # type: ignore[union-attr]
                finally:
                    job.kill()
                assert job.returncode == 0, output
                reported = sum(int(n) for n in re.findall(r"game: added (\d+) windows?\n", output))
                after = len(client.list_windows("game").windows)
                assert reported == after - before > 0, output
                before = after
    finally:
        server.stop(grace=0)


def test_window_file_refuses_a_calendar_entry_its_delete_before_removes(cli: Cli, tmp_path: pathlib.Path) -> None:
    cli("index", "create", "game")
    spec = write_spec(
        tmp_path,
        f"delete_before: {OCT_26}\n"
        "windows:\n  - {type: 2, start: 0, end: " + str(NOV_1) + "}\n"
        "calendar:\n  - {type: 1, period: daily, timezone: Europe/Paris, start: 2026-10-24, count: 2}\n",
    )
    message = error_line(cli("windows", "apply", "game", spec, code=1))
    assert "calendar entry" in message and f"every window it adds ends by delete_before {OCT_26}" in message
    for bad, problem in [
        (["--calendar", "daily"], "expected TYPE:PERIOD[:TIMEZONE]"),
        (["--regular", "4:0:1h"], "expected TYPE:BASE:INCREMENT:DURATION"),
    ]:
        assert problem in error_line(cli("policy", "set", "game", *bad, code=2))
    assert "unknown time zone 'Mars/Olympus'" in error_line(
        cli("policy", "set", "game", "--calendar", "1:daily:Mars/Olympus", code=1)
    )
    assert "horizon: 'soon' is not a duration" in error_line(cli("policy", "set", "game", "--horizon", "soon", code=1))
