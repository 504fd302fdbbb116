"""What a new user meets in the first day, when something unusual happens: each door says what
went wrong and what to do, the same way.

- The CLI's errors: a server that answered UNAVAILABLE (an index paused, or moved away) is
  quoted; only a refused connection says no server runs; a TLS certificate made out to another
  name says so.  ``load`` names what it kept and where a JSON line went wrong.
- ``index create`` run again adds the boards asked for (they are policy), or refuses naming what
  differs and the command that changes it.
- The asyncio client's watches are context managers as the blocking client's.
- The demo stops in order on SIGINT or SIGTERM, wherever the signal lands, deleting its temporary
  store and saying so.
- The smaller edges: ``--server`` after the command, a number typed as a key, the API's names
  (``score-for-percentile``, ``score-for-rank``), ``--json`` naming the window, ``top -n`` beyond a
  call pointing at ``export``, no progress bars off a terminal; over HTTP, keys holding ``/``,
  lists of keys without brackets, a method a route does not take (405).
- Nothing is wiped without asking: ``delete-records --all-records`` asks on a terminal and
  needs ``--yes`` elsewhere.

Timestamps at every door are in tests/service/test_timestamps_at_every_door.py, the latest timestamp
found again in tests/index/test_latest_timestamp.py.

Commands run in process through click's CliRunner against real servers on both stores (as
processes where terminals, pipes and signals matter); oracles are the server's own answers through
the Python client, and values computed here.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from fdb_leaderboard.cli import main
from fdb_leaderboard.client import AsyncLeaderboardClient, LeaderboardClient
from fdb_leaderboard.http import HttpServer
from fdb_leaderboard.service import Server, ServerSettings, TlsFiles
from tests.conftest import Cli, ServerPlace, error_line
from tests.support.certificates import make_certificates

pytestmark = pytest.mark.usefixtures("no_unexpected_server_errors")

T = 1_795_420_000  # 2026-11-23 08:46:40 in Paris
CLI = [str(Path(sys.executable).parent / "fdb-leaderboard")]


# -- the CLI's errors -----------------------------------------------------------------------------------------


def test_an_unavailable_index_is_the_servers_message_not_a_server_to_start(
    cli: Cli, client: LeaderboardClient, server_place: ServerPlace, tmp_path: Path
) -> None:
    cli("index", "create", "short")
    cli("add", "short", "amy", "--score", 5, "--at", T)
    cli("index", "pause", "short", "--reason", "a migration")
    refused = error_line(cli("add", "short", "amy", "--score", 6, "--at", T, code=1))
    assert refused == "Error: UNAVAILABLE: writes to index 'short' are refused: a migration; retry later"
    records = tmp_path / "r.jsonl"
    records.write_text(f'{{"pk": "bo", "score": 3, "timestamp": {T}}}\n')
    loaded = error_line(cli("load", "short", records, code=1))
    assert loaded.startswith("Error: UNAVAILABLE: writes to index 'short' are refused: a migration; retry later")
    assert "start one" not in loaded and "cannot reach" not in loaded
    cli("index", "resume", "short")

    # A moved index refuses writes naming where it went: the CLI says that, not "start a server".
    elsewhere_place = ServerPlace(server_place.backend, tmp_path / "elsewhere")
    target = elsewhere_place.start()
    try:
        with LeaderboardClient(target.address) as elsewhere:
            client.move("short", elsewhere, moved_to=target.address)
            moved = error_line(cli("add", "short", "amy", "--score", 7, "--at", T, code=1))
            assert moved == (
                f"Error: UNAVAILABLE: writes to index 'short' are refused: index 'short' moved to {target.address}; "
                "retry later"
            )
            assert elsewhere.rank_and_entry("short", "amy").score == 5
    finally:
        target.stop(grace=0)
        elsewhere_place.clear()


def test_only_a_refused_connection_says_to_start_a_server(cli: Cli, server: Server) -> None:
    address = server.address
    server.stop(grace=0)
    refused = error_line(cli("count", "game", code=1, server_address=address))
    assert refused == (
        f"Error: cannot reach a server at {address} (connection refused): start one with `fdb-leaderboard serve` "
        "(or ./tools/serve), or point at one with --server HOST:PORT or $FDB_LEADERBOARD_SERVER"
    )


@pytest.fixture(scope="module")
def certificate_for_another_name(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A CA and a server certificate made out to lb.example.com only, by openssl."""
    return make_certificates(tmp_path_factory.mktemp("tls"), "DNS:lb.example.com")


def test_a_certificate_for_another_name_says_so(tmp_path: Path, certificate_for_another_name: dict[str, str]) -> None:
    pem = certificate_for_another_name
    settings = ServerSettings(maintain_every=0, tls=TlsFiles(pem["server"], pem["server_key"], None))
    secure = Server(f"lmdb:{tmp_path / 's'}?durable=false", "127.0.0.1:0", settings=settings).start()
    try:
        result = CliRunner().invoke(
            main, ["--server", secure.address, "--ca", pem["ca"], "index", "list", "--timeout", "5s"]
        )
        assert result.exit_code == 1 and result.output == (
            f"Error: TLS: the certificate of the server at {secure.address} is not made out to 127.0.0.1: reach it "
            "by a name its certificate holds (--server NAME:PORT)\n"
        )
    finally:
        secure.stop(grace=0)


def test_load_says_what_it_kept_and_where_a_line_went_wrong(cli: Cli, tmp_path: Path) -> None:
    cli("index", "create", "game")
    first_bad = tmp_path / "first.jsonl"
    first_bad.write_text('{"pk": "a", "score": 1, "timestamp": 5\n{"pk": "b", "score": 2, "timestamp": 5}\n')
    assert error_line(cli("load", "game", first_bad, code=1)) == (
        f"Error: {first_bad}: line 1: not JSON: Expecting ',' delimiter at the end of the line; no record was saved"
    )
    middle = tmp_path / "middle.jsonl"
    middle.write_text('{"pk": "a", "score": 1, "timestamp": 5}\n{"pk": "b" "score": 2}\n')
    assert error_line(cli("load", "game", middle, code=1)) == (
        f"Error: {middle}: line 2: not JSON: Expecting ',' delimiter at column 12; the record before it was saved"
    )
    refused_first = tmp_path / "refused.jsonl"
    refused_first.write_text('{"pk": "a", "entries": [{"score": 1, "timestamp": 5, "group": ["eu"]}]}\n')
    assert error_line(cli("load", "game", refused_first, code=1)) == (
        f"Error: {refused_first}: line 1 refused by the server (INVALID_ARGUMENT: this index groups by 0 element(s); "
        "got group ('eu',)); no record was saved; fix the line and rerun (rerunning the load is safe: each record "
        "replaces what was stored for it)"
    )


def _on_a_terminal(command: list[str], answer: str) -> tuple[int, str]:
    """Run ``command`` with a terminal for its stdin and stderr, typing ``answer``; its status and what it showed."""
    primary, secondary = pty.openpty()
    job = subprocess.Popen(command, stdin=secondary, stdout=subprocess.PIPE, stderr=secondary, text=True)
    os.close(secondary)
    shown = b""
    try:
        while b"[y/N]" not in shown:
            ready, _, _ = select.select([primary], [], [], 60)
            assert ready, f"no question within 60 s: {shown!r}"
            shown += os.read(primary, 1024)
        os.write(primary, answer.encode() + b"\n")
        out, _ = job.communicate(timeout=60)
        with contextlib.suppress(OSError):  # the terminal closes with the process
            while chunk := os.read(primary, 1024):
                shown += chunk
    finally:
        os.close(primary)
    return job.returncode, shown.decode(errors="replace") + out


def test_deleting_every_record_asks_on_a_terminal_and_needs_yes_elsewhere(
    cli: Cli, client: LeaderboardClient, server: Server
) -> None:
    cli("index", "create", "cup")
    for player in ("ann", "bob"):
        cli("add", "cup", player, "--score", 5, "--at", T)
    refused = cli("delete-records", "cup", "--all-records", code=2)
    assert error_line(refused) == (
        "Error: --all-records deletes every record of cup: give --yes to confirm (there is no terminal to ask on) "
        "(see main delete-records --help)"  # (the CliRunner names the program main)
    )
    assert client.count("cup") == 2
    command = [*CLI, "--server", server.address, "delete-records", "cup", "--all-records"]
    status, shown = _on_a_terminal(command, "n")
    assert status == 1 and "Delete every record of cup (its windows stay)? [y/N]:" in shown and "Aborted." in shown
    assert client.count("cup") == 2
    status, shown = _on_a_terminal(command, "y")
    assert status == 0 and "2 record(s) changed, 2 of them deleted whole, 2 entries deleted" in shown
    assert client.count("cup") == 0
    cli("add", "cup", "cat", "--score", 5, "--at", T)
    assert cli("delete-records", "cup", "--all-records", "--yes").output == (
        "1 record(s) changed, 1 of them deleted whole, 1 entries deleted\n"
    )
    assert client.count("cup") == 0


# -- creating an index again -------------------------------------------------------------------------------


def test_creating_an_index_again_adds_the_boards_asked_for_or_says_what_differs(
    cli: Cli, client: LeaderboardClient
) -> None:
    cli("index", "create", "arcade", "--daily", "--timezone", "Europe/Paris")
    cli("add", "arcade", "alice", "--score", 5)
    again = cli("index", "create", "arcade", "--daily", "--timezone", "Europe/Paris")
    assert again.output == "index arcade already exists with these options and boards\n"

    # A board it lacks joins its policy, with this month's window, filled from the stored scores.
    added = cli("index", "create", "arcade", "--monthly", "--timezone", "UTC")
    assert added.output == "index arcade exists: monthly board added (UTC), filled from its stored scores\n"
    policy = next(info.maintenance for info in client.list_indexes() if info.name == "arcade")
    assert [(c.type, c.period, c.timezone) for c in policy.calendar] == [
        (1, "daily", "Europe/Paris"),
        (3, "monthly", "UTC"),
    ]
    now = dt.datetime.now(dt.UTC)
    month = [w for w in client.list_windows("arcade", 3).windows]
    assert [(w.start, w.end) for w in month] == [
        (int(dt.datetime(now.year, now.month, 1, tzinfo=dt.UTC).timestamp()), _next_month(now))
    ]
    client.fill("arcade")
    assert [e.pk for e in client.top("arcade", 5, window_type=3)] == [("alice",)]
    assert cli("index", "create", "arcade", "--monthly").output == (
        "index arcade already exists with these options and boards\n"
    )

    # A board kept otherwise, or other options, are refused, naming the difference and the way.
    other_zone = error_line(cli("index", "create", "arcade", "--daily", "--timezone", "UTC", code=1))
    assert other_zone == (
        "Error: ALREADY_EXISTS: index 'arcade' exists with another policy (window type 1 is daily in Europe/Paris, "
        "not daily in UTC): change an index's boards and policy with `fdb-leaderboard policy set arcade ...` (see "
        "`fdb-leaderboard policy show arcade`)"
    )
    other_options = error_line(cli("index", "create", "arcade", "--aggregation", "SUM", "--low-score-first", code=1))
    assert other_options == (
        "Error: ALREADY_EXISTS: index 'arcade' exists with other options (aggregation BEST, not SUM; high score "
        "first yes, not no): options are fixed when an index is created: drop it first (`fdb-leaderboard index "
        "drop arcade`), or create the new one under another name"
    )
    # The Python client and HTTP meet the same rule (one servicer): the board added, once.
    assert client.create_index("arcade", boards=["weekly"], timezone="Europe/Paris") is False
    assert {c.type for c in next(i for i in client.list_indexes() if i.name == "arcade").maintenance.calendar} == {
        1,
        2,
        3,
    }


def _next_month(now: dt.datetime) -> int:
    year, month = (now.year + 1, 1) if now.month == 12 else (now.year, now.month + 1)
    return int(dt.datetime(year, month, 1, tzinfo=dt.UTC).timestamp())


# -- the asyncio client is the blocking one ---------------------------------------------------------------


def test_the_async_watch_is_a_context_manager_like_the_blocking_one(server: Server, client: LeaderboardClient) -> None:
    client.create_index("arena")

    async def watch() -> tuple[list, list]:
        ranks, ends = [], []
        async with AsyncLeaderboardClient(server.address) as lb:
            async with lb.watch_rank("arena", "ann", timeout=60) as watching:
                async for entry in watching:
                    ranks.append(entry)
                    if entry is not None:
                        watching.close()  # ends the iteration quietly, as the blocking watch's close
                    else:
                        await lb.add_score("arena", "ann", 3)  # no timestamp: now, as the CLI and HTTP
            async with lb.watch_window_ends("arena", after=0, timeout=60) as events:
                events.close()
                ends.extend([event async for event in events])
        return ranks, ends

    ranks, ends = asyncio.run(asyncio.wait_for(watch(), 120))
    assert ranks[0] is None and (ranks[-1].pk, ranks[-1].score, ranks[-1].rank) == (("ann",), 3, 0)
    assert ends == []
    with client.watch_rank("arena", "ann", timeout=60) as watching:  # the blocking one, the same way
        assert next(iter(watching)).score == 3


# -- the demo stops in order, whenever the signal comes --------------------------------------------------


@pytest.mark.parametrize(
    ("signal_number", "when"),
    [(signal.SIGTERM, "first screen"), (signal.SIGINT, "starting"), (signal.SIGTERM, "starting")],
    ids=["sigterm-running", "sigint-starting", "sigterm-starting"],
)
def test_the_demo_stops_cleanly_on_sigterm_or_a_signal_amid_its_start(
    tmp_path: Path, signal_number: int, when: str
) -> None:
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = {**os.environ, "TMPDIR": str(temporary)}
    command = [*CLI, "demo", "--players", "50", "--refresh", "0.2", "--http-address", "127.0.0.1:0", "--no-open"]
    demo = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        if when == "first screen":
            seen = ""
            while "around player-00001" not in seen:
                line = demo.stdout.readline()  # type: ignore[union-attr]
                assert line, f"the demo ended: {seen}{demo.stderr.read()}"  # type: ignore[union-attr]
                seen += line
        else:  # as soon as its store exists: the server starting, or its first calls
            deadline = time.monotonic() + 60
            while not list(temporary.glob("fdb-leaderboard-demo-*")):
                assert time.monotonic() < deadline and demo.poll() is None
                time.sleep(0.01)
        demo.send_signal(signal_number)
        out, errors = demo.communicate(timeout=60)
    finally:
        demo.kill()
    name = signal.Signals(signal_number).name
    assert demo.returncode == 0 and errors == "", errors
    assert out.endswith(f"demo stopped ({name}); its temporary store is deleted\n")
    assert not list(temporary.iterdir())


# -- the smaller edges ----------------------------------------------------------------------------------------


def test_the_command_line_s_smaller_edges(cli: Cli, client: LeaderboardClient, server: Server, tmp_path: Path) -> None:
    cli("index", "create", "short")
    for i, who in enumerate(["ann", "bob", "cat"]):
        cli("add", "short", who, "--score", 10 * (i + 1), "--at", T)
    # --server after the command's name, as before it.
    after = CliRunner().invoke(main, ["count", "short", "--server", server.address])
    assert after.exit_code == 0 and after.output == "3\n"
    # A number typed as a key is a string: the answer says how to name the number.
    assert cli("rank", "short", "42").output == (
        "42 has no score in the all-time window (the key is the string '42'; for the number, give it as a JSON "
        "list: '[42]')\n"
    )
    # The API's names, and a score for a rank as people read ranks.
    assert cli("score-for-percentile", "short", "100").output == "30\n"
    assert cli("score-at-percentile", "short", "100").output == "30\n"  # its former name, still taken
    assert cli("score-for-rank", "short", "1").output == "30\n"
    assert cli("score-for-rank", "short", "#3").output == "10\n"
    assert json.loads(cli("score-for-rank", "short", "2", "--json").output) == {"rank": 1, "score": 20}
    assert cli("score-for-rank", "short", "9").output == "no record at that rank\n"
    assert "is not a rank" in error_line(cli("score-for-rank", "short", "0", code=2))
    # --json of top and count names the window read, as the API does.
    listing = json.loads(cli("top", "short", "-n", 1, "--json").output)
    all_time = {"type": 0, "start": -(2**63), "end": 2**63 - 1}
    assert listing["window"] == all_time and [e["pk"] for e in listing["entries"]] == [["cat"]]
    assert json.loads(cli("count", "short", "--json").output) == {"count": 3, "window": all_time}
    # More rows than a call answers: the whole board is an export.
    assert error_line(cli("top", "short", "-n", 5000, code=1)) == (
        "Error: INVALID_ARGUMENT: Top n asks for 5000 rows; this server returns at most 2000 per call: "
        "`fdb-leaderboard export short` writes a whole board, page by page (or see `fdb-leaderboard page short N`)"
    )
    # No progress bar off a terminal (dump, restore, move), whatever the command.
    dumped = cli("dump", "short", tmp_path / "short.dump")
    restored = cli("restore", tmp_path / "short.dump", "--index", "copy")
    for result in (dumped, restored):
        assert "\r" not in result.output and "it/s" not in result.output and "records/s" not in result.output
    assert client.count("copy") == 3


def test_http_keys_with_a_slash_lists_without_brackets_and_a_method_not_taken(
    server: Server, client: LeaderboardClient
) -> None:
    client.create_index("game")
    client.update_windows("game", windows=[(1, T - 100, T + 100)])
    for who, score in (("a/b", 5), ("c", 7)):
        client.add_score("game", who, score, T)
    front = HttpServer(server, "127.0.0.1:0").start()
    try:
        with httpx.Client(base_url=front.url, timeout=20) as web:
            rank = web.get("/v1/indexes/game/windows/1/records/a%2Fb/rank", params={"at": T})
            assert rank.status_code == 200 and rank.json()["pk"] == ["a/b"] and rank.json()["rank"] == 1
            assert web.get("/v1/indexes/game/records/a%2Fb/metadata").status_code == 200
            assert web.delete("/v1/indexes/game/records/a%2Fb").json() == {"existed": True}
            # As the README writes it, with no brackets for curl to glob: one key a parameter.
            client.add_score("game", "a/b", 5, T)
            ranks = web.get(f"/v1/indexes/game/windows/1/ranks?at={T}&records=c&records=a%2Fb&records=zed")
            found = [e and (e["pk"], e["rank"]) for e in ranks.json()["entries"]]
            assert found == [(["c"], 0), (["a/b"], 1), None]
            # A POST to a route that only reads is the method not taken, whatever its body.
            post = web.post("/v1/indexes/game/windows/1/top", content=b"x", headers={"Content-Type": "text/plain"})
            assert post.status_code == 405 and post.json()["code"] == "UNIMPLEMENTED"
            assert post.headers["Allow"] == "GET, HEAD"
            # A write of a route that takes it still needs JSON.
            untyped = web.post("/v1/indexes/game/scores", content=b"{}", headers={"Content-Type": "text/plain"})
            assert untyped.status_code == 415
    finally:
        front.stop()
