"""How fresh reads are: exact by default, bounded staleness when asked, and one's own writes.

A read may say how stale it may be (``max_staleness``, milliseconds: the client's option and
each read's argument, ``max-staleness-ms`` call metadata or HTTP header, ``serve
--max-staleness`` as the server's default, the CLI's ``--max-staleness``).  On FoundationDB such
a read may use a read version the process saw that recently; on every store, identical reads
that arrive while a shared answer is that young take it.  A score write's answer gives its
commit version (trailing metadata ``commit-version``), and a client's stale reads ask to see at
least the newest of its own (``min-version``), so it reads its own writes through any server.

Each test runs on both stores (FoundationDB: two server processes' worth, two servers on one
catalog), through every door: the Python API (``fdb_leaderboard.store.read_bounds``), gRPC, both
clients, REST (headers of the same names; a write's answer has the header ``commit-version``) and
the CLI.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import grpc
import httpx
import pytest
from click.testing import CliRunner

from fdb_leaderboard.cli import main
from fdb_leaderboard.client import AsyncLeaderboardClient, InvalidArgument, LeaderboardClient
from fdb_leaderboard.errors import InvalidArgument as InvalidArgumentError
from fdb_leaderboard.http import HttpServer
from fdb_leaderboard.index import IndexSettings, LeaderboardIndex
from fdb_leaderboard.proto import service_pb2 as pb
from fdb_leaderboard.service import ServerSettings
from fdb_leaderboard.store import open_database, read_bounds
from tests.conftest import ServerPlace, private_prefix


@pytest.fixture
def servers(server_place: ServerPlace) -> Iterator[list]:
    """Two servers of one store (on the embedded store, one serves as both)."""
    first = server_place.start()
    started = [first]
    if server_place.backend == "fdb":
        started.append(server_place.start())
    yield [started[0], started[-1]]
    for server in started:
        server.stop(grace=1)


def names(entries: list) -> list[str]:
    return [entry.pk[0] for entry in entries]


def test_a_client_reads_its_own_writes_through_another_server_even_when_reads_may_be_stale(servers: list) -> None:
    """The writer's reads ask for its writes' commit version, through whichever server."""
    one, other = servers
    with (
        LeaderboardClient(one.address, max_staleness=5000) as writer,
        LeaderboardClient(other.address, max_staleness=5000) as reader_side,
    ):
        writer.create_index("game", high_score_first=True)
        assert names(reader_side.top("game", 5)) == []  # the other server has now seen a version
        writer.add_score("game", "alice", 5, 10)
        for _ in range(5):
            assert "alice" in names(writer.top("game", 10))
            writer.add_score("game", f"p{_}", 1, 10)
            with LeaderboardClient(other.address, max_staleness=5000) as same_writer:
                same_writer.freshness.seen = writer.freshness.seen  # the writer's session, on another host
                assert f"p{_}" in names(same_writer.top("game", 10))


def test_exact_reads_see_every_acknowledged_write(servers: list) -> None:
    one, other = servers
    with LeaderboardClient(one.address) as writer, LeaderboardClient(other.address) as reader:
        writer.create_index("game", high_score_first=True)
        for i in range(10):
            writer.add_score("game", f"p{i}", i, 10)
            assert reader.count("game") == i + 1
            assert names(reader.top("game", 1)) == [f"p{i}"]


def test_identical_stale_reads_share_one_answer_while_it_is_young_enough(server_place: ServerPlace) -> None:
    server = server_place.start()
    try:
        # Another client writes: these reads do not ask for its versions.
        with LeaderboardClient(server.address) as lb, LeaderboardClient(server.address) as writer:
            writer.create_index("game", high_score_first=True)
            writer.add_score("game", "alice", 5, 10)
            transactions = server.db.stats.snapshot()["transactions"]
            assert names(lb.top("game", 3, max_staleness=2000)) == ["alice"]
            computed = server.db.stats.snapshot()["transactions"]
            assert computed > transactions
            writer.add_score("game", "bob", 9, 10)
            after_write = server.db.stats.snapshot()["transactions"]
            if server_place.backend == "lmdb":  # no versions: every read sees the latest commit
                assert names(lb.top("game", 3, max_staleness=2000)) == ["bob", "alice"]
                return
            for _ in range(5):  # taken from the shared answer: no transaction, and bob not yet in it
                assert names(lb.top("game", 3, max_staleness=2000)) == ["alice"]
            assert server.db.stats.snapshot()["transactions"] == after_write
            assert names(lb.top("game", 3)) == ["bob", "alice"]  # exact: read now
            assert names(lb.top("game", 3, max_staleness=1)) == ["bob", "alice"]  # too old for 1 ms
            time.sleep(0.05)
            assert names(lb.top("game", 3, max_staleness=20)) == ["bob", "alice"]
    finally:
        server.stop(grace=1)


def test_identical_stale_reads_arriving_together_share_the_one_being_computed(server_place: ServerPlace) -> None:
    """A hot board read by many callers at once is computed once: reads that arrive while an
    identical one is being computed take its answer (its read is at least at the newest version
    the server has seen, which is young enough for them)."""
    server = server_place.start()

    async def burst() -> tuple[int, list[list[str]]]:
        async with AsyncLeaderboardClient(server.address) as lb:
            await lb.create_index("game", high_score_first=True)
            await lb.add_score("game", "alice", 5, 10)
            await lb.top("game", 3, max_staleness=2000)  # a version seen, and a first answer
            await asyncio.sleep(0.01)
            before = server.db.stats.snapshot()["transactions"]
            # A different request (n=4), so the first answer cannot serve it: computed once, shared.
            answers = await asyncio.gather(*(lb.top("game", 4, max_staleness=2000) for _ in range(30)))
            return server.db.stats.snapshot()["transactions"] - before, [names(a) for a in answers]

    try:
        transactions, answers = asyncio.run(burst())
        assert answers == [["alice"]] * 30
        if server_place.backend == "fdb":
            assert transactions <= 2, f"30 identical stale reads arriving together ran {transactions} transactions"
    finally:
        server.stop(grace=1)


def test_a_read_version_seen_again_later_holds_from_later(store_url: str) -> None:
    """A cluster that commits nothing answers every read version with the same version; each time
    it does, that version holds every write acknowledged before it was asked for, so stale reads
    may go on reusing it instead of asking for a version per read."""
    db = open_database(store_url)
    try:
        if not store_url.startswith("fdb"):
            assert db.newest_seen() is None  # no versions: every read sees the latest commit
            return
        with read_bounds(max_staleness=1):
            db.read(lambda tr: tr.get(b"\xfe-nothing"))
        time.sleep(0.01)  # the version seen is now too old for a 1-ms bound: the next read asks again
        asked = time.monotonic()
        with read_bounds(max_staleness=1):
            db.read(lambda tr: tr.get(b"\xfe-nothing"))
        version, since = db.newest_seen()
        assert version > 0 and since >= asked
    finally:
        db.close()


def test_the_servers_default_staleness_and_a_calls_own(server_place: ServerPlace) -> None:
    server = server_place.start(ServerSettings(maintain_every=0, max_staleness=5000))
    try:
        with LeaderboardClient(server.address) as lb, LeaderboardClient(server.address) as writer:
            writer.create_index("game", high_score_first=True)
            writer.add_score("game", "alice", 5, 10)
            assert names(lb.top("game", 3)) == ["alice"]
            writer.add_score("game", "bob", 9, 10)
            shared = ["alice"] if server_place.backend == "fdb" else ["bob", "alice"]
            assert names(lb.top("game", 3)) == shared  # the server's default: the shared answer
            assert names(lb.top("game", 3, max_staleness=0)) == ["bob", "alice"]  # the call's own: exact
    finally:
        server.stop(grace=1)


def test_freshness_is_checked_at_every_door(server_place: ServerPlace) -> None:
    server = server_place.start()
    http = HttpServer(server, "127.0.0.1:0").start()
    try:
        with LeaderboardClient(server.address) as lb:
            lb.create_index("game", high_score_first=True)
            lb.add_score("game", "alice", 5, 10)
            with pytest.raises(InvalidArgument, match="max_staleness must be from 0 to 5000"):
                lb.top("game", 3, max_staleness=6000)
            with pytest.raises(InvalidArgument):
                LeaderboardClient(server.address, max_staleness=-1)
            top = lb.stub.Top
            request = pb.TopRequest(index="game", n=3)
            with pytest.raises(grpc.RpcError) as refused:
                top(request, metadata=(("max-staleness-ms", "soon"),))
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "max-staleness-ms" in refused.value.details()
            _, call = lb.stub.AddScore.with_call(
                pb.AddScoreRequest(index="game", pk=[pb.Item(string="bob")], entry=pb.Entry(score=pb.Score(int=9)))
            )
            versions = [value for key, value in call.trailing_metadata() if key == "commit-version"]
            if server_place.backend == "fdb":
                assert len(versions) == 1 and int(versions[0]) > 0
                assert len(top(request, metadata=(("min-version", versions[0]),)).entries) == 2
        with httpx.Client(base_url=http.url, timeout=20) as web:
            path = "/v1/indexes/game/windows/0/top"
            assert web.get(path, headers={"max-staleness-ms": "100"}).status_code == 200
            bad = web.get(path, headers={"max-staleness-ms": "-5"})
            assert bad.status_code == 400 and "max-staleness-ms" in bad.json()["message"]
    finally:
        server.stop(grace=1)


def test_the_async_client_reads_its_own_writes(server_place: ServerPlace) -> None:
    server = server_place.start()

    async def session() -> tuple[list[str], list[str], int]:
        async with AsyncLeaderboardClient(server.address, max_staleness=5000) as lb:
            await lb.create_index("game", high_score_first=True)
            before = names(await lb.top("game", 3))
            await lb.add_score("game", "alice", 5, 10)
            return before, names(await lb.top("game", 3)), lb.freshness.seen

    try:
        before, after, seen = asyncio.run(session())
        assert (before, after) == ([], ["alice"])
        assert (seen > 0) == (server_place.backend == "fdb")
    finally:
        server.stop(grace=1)


def test_the_python_api_bounds_reads_by_staleness_and_by_a_commit_version(store_url: str) -> None:
    """In process: ``read_bounds(max_staleness=, min_version=)`` around a read, the version a
    write committed at from ``Database.last_commit_versions()``; two stores' handles on
    FoundationDB (two processes' worth), one on the embedded store (its reads see the latest)."""
    fdb = store_url.startswith("fdb")
    writer_db = open_database(store_url)
    reader_db = open_database(store_url) if fdb else writer_db
    prefix = private_prefix()
    try:
        index = LeaderboardIndex.create(writer_db, prefix, IndexSettings(high_score_first=True))
        reader = LeaderboardIndex.open(reader_db, prefix)
        index.add_score(("alice",), 5, 10)
        with read_bounds(max_staleness=5000):
            assert names(reader.top(5)) == ["alice"]  # nothing seen yet: a version asked for now
        index.add_score(("bob",), 9, 10)
        versions = writer_db.last_commit_versions()
        assert (len(versions) == 1 and versions[0] > 0) if fdb else versions == []
        with read_bounds(max_staleness=5000):  # the version the reader saw: bob not yet in it
            assert names(reader.top(5)) == (["alice"] if fdb else ["bob", "alice"])
        with read_bounds(max_staleness=5000, min_version=versions[0] if fdb else 0):
            assert names(reader.top(5)) == ["bob", "alice"]
        assert names(reader.top(5)) == ["bob", "alice"]  # exact, the default
        with (
            pytest.raises(InvalidArgumentError, match="max_staleness must be from 0 to 5000"),
            read_bounds(max_staleness=6000),
        ):
            pass
        with pytest.raises(InvalidArgumentError, match="min_version"), read_bounds(min_version=-1):
            pass
    finally:
        writer_db.run(lambda tr: tr.clear_range_startswith(prefix))
        if fdb:
            reader_db.close()
        writer_db.close()


def test_the_cli_reads_with_its_max_staleness(server_place: ServerPlace) -> None:
    """``fdb-leaderboard --max-staleness MS``: its reads may take a shared answer that young;
    without it they are exact; a bound out of range is a usage mistake (exit 2)."""
    server = server_place.start()
    runner = CliRunner()

    def cli(*args: str, code: int = 0) -> str:
        result = runner.invoke(main, ["--server", server.address, *args], catch_exceptions=False)
        assert result.exit_code == code, result.output
        return result.output

    try:
        with LeaderboardClient(server.address) as writer:
            writer.create_index("game", high_score_first=True)
            writer.add_score("game", "alice", 5, 10)
            assert "alice" in cli("--max-staleness", "3000", "top", "game", "-n", "3")
            writer.add_score("game", "bob", 9, 10)
            stale = cli("--max-staleness", "3000", "top", "game", "-n", "3")
            assert "alice" in stale and ("bob" in stale) == (server_place.backend == "lmdb")
            assert "bob" in cli("top", "game", "-n", "3")
            assert "bob" in cli("--max-staleness", "0", "top", "game", "-n", "3")
        refused = cli("--max-staleness", "6000", "top", "game", code=2)
        assert "--max-staleness" in refused and "0<=x<=5000" in refused
    finally:
        server.stop(grace=1)


def test_rest_writes_answer_their_commit_version_and_reads_take_it(server_place: ServerPlace) -> None:
    """Over HTTP: a score write's answer has the header ``commit-version`` (FoundationDB); a read
    through another server with ``max-staleness-ms`` sees it when sent it as ``min-version``."""
    servers = [server_place.start()]
    if server_place.backend == "fdb":
        servers.append(server_place.start())
    webs = [HttpServer(server, "127.0.0.1:0").start() for server in servers]
    top = "/v1/indexes/game/windows/0/top"
    stale = {"max-staleness-ms": "5000"}
    try:
        with LeaderboardClient(servers[0].address) as lb:
            lb.create_index("game", high_score_first=True)
        with (
            httpx.Client(base_url=webs[0].url, timeout=20) as one,
            httpx.Client(base_url=webs[-1].url, timeout=20) as other,
        ):

            def board(**headers: str) -> list[str]:
                answer = other.get(top, headers=headers)
                assert answer.status_code == 200, answer.text
                return [entry["pk"][0] for entry in answer.json().get("entries", [])]

            assert board(**stale) == []  # the other server has now seen a version
            written = one.post("/v1/indexes/game/scores", json={"pk": "alice", "score": 5, "timestamp": 10})
            assert written.status_code == 200, written.text
            version = written.headers.get("commit-version")
            if server_place.backend == "lmdb":  # no versions: no header, and reads see the latest
                assert version is None and board(**stale) == ["alice"]
                return
            assert int(version) > 0
            assert board(**stale) == []  # the version it saw: alice not yet in it
            assert board(**stale, **{"min-version": version}) == ["alice"]
            assert board() == ["alice"]
    finally:
        for server in servers:
            server.stop(grace=1)
