"""What a new user meets in the first day, when something unusual happens: each door says what
went wrong and what to do, the same way.

- The CLI's errors: a server that answered UNAVAILABLE (an index paused, or moved away) is
  quoted; only a refused connection says no server runs; a TLS certificate made out to another
  name says so.  ``load`` names what it kept and where a JSON line went wrong.
- ``index create`` run again adds the boards asked for (they are policy), or refuses naming what
  differs and the command that changes it.
- Nothing is wiped without asking: ``delete-records --all-records`` asks on a terminal and
  needs ``--yes`` elsewhere.

Commands run in process through click's CliRunner against real servers on both stores (as
processes where terminals, pipes and signals matter); oracles are the server's own answers through
the Python client, and values computed here.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import Cli, ServerPlace, error_line

from fdb_leaderboard.cli import main
from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.service import Server, ServerSettings, TlsFiles

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
    where = tmp_path_factory.mktemp("tls")

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=where, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=test CA",
            "-keyout", "ca.key", "-out", "ca.pem")  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=lb.example.com", "-keyout", "server.key",
            "-out", "server.csr")  # fmt: skip
    (where / "san.cnf").write_text("subjectAltName=DNS:lb.example.com\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "2", "-extfile", "san.cnf", "-out", "server.pem")  # fmt: skip
    return {name: str(where / f"{name}.pem") for name in ("ca", "server")} | {"key": str(where / "server.key")}


def test_a_certificate_for_another_name_says_so(tmp_path: Path, certificate_for_another_name: dict[str, str]) -> None:
    pem = certificate_for_another_name
    settings = ServerSettings(maintain_every=0, tls=TlsFiles(pem["server"], pem["key"], None))
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
