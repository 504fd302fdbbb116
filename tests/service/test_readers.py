"""Heavy reads on reader processes (``service/readers.py``): the answers a brute-force ranking of
the loaded scores gives, for the index the server resolved, their store work counted by the
server, a dead reader replaced, a server killed outright leaving no reader behind, and readers
sharing the redo log of the default durable store with their server."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import httpx
import pytest

from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.http import HttpServer
from fdb_leaderboard.proto import service_pb2 as pb
from fdb_leaderboard.service import Server, ServerSettings, StartupError
from fdb_leaderboard.service.status import Answer
from tests.conftest import ServerPlace

CLI = str(Path(sys.executable).parent / "fdb-leaderboard")
RECORDS = 300
# Reads of more than 10 rows are heavy here, so a few hundred records exercise the readers.
SETTINGS = ServerSettings(heavy_rows=10, read_processes=1)


def load(lb: LeaderboardClient, name: str = "game", seed: int = 7) -> list[tuple[str, int]]:
    """RECORDS records with distinct scores; returns them best first (the brute-force ranking)."""
    rng = random.Random(seed)
    scores = rng.sample(range(1_000_000), RECORDS)
    lb.create_index(name, high_score_first=True)
    lb.update_windows(name, high_score_first=True)
    lb.write_batch(name, [((f"p{i:03d}",), [(score, i)]) for i, score in enumerate(scores)])
    return sorted(((f"p{i:03d}", score) for i, score in enumerate(scores)), key=lambda row: -row[1])


def rows(entries: list) -> list[tuple[str, int, int]]:
    return [(e.pk[0], e.score, e.rank) for e in entries]


def ranked(expected: list[tuple[str, int]], start: int, stop: int) -> list[tuple[str, int, int]]:
    return [(pk, score, rank) for rank, (pk, score) in enumerate(expected[start:stop], start) if rank < len(expected)]


def test_heavy_reads_on_a_reader_answer_as_the_ranking_does(server_place: ServerPlace) -> None:
    server = server_place.start(SETTINGS)
    try:
        with LeaderboardClient(server.address) as lb:
            expected = load(lb)
            before = server.db.stats.snapshot()
            assert rows(lb.top("game", 250)) == ranked(expected, 0, 250)
            me = expected[150][0]
            assert rows(lb.around("game", (me,), above=40, below=30)) == ranked(expected, 110, 181)
            page = lb.page("game", 3, 50)
            assert (page.total, page.pages, rows(page.entries)) == (RECORDS, 6, ranked(expected, 100, 150))
            by_rank = {pk: rank for rank, (pk, _) in enumerate(expected)}
            wanted = [pk for pk, _ in expected[::-2]]  # 150 records, worst first
            assert [e.rank for e in lb.ranks("game", [(pk,) for pk in wanted])] == [by_rank[pk] for pk in wanted]
            friends = set(wanted)
            assert rows(lb.friends_board("game", [(pk,) for pk in wanted])) == [
                (pk, score, by_rank[pk]) for pk, score in expected if pk in friends
            ]
            # A scan pages through every record with its continuation, across reader calls.
            seen, continuation, scans = [], b"", 0
            while True:
                entries, continuation = lb.scan("game", "BY_RANK", limit=120, continuation=continuation)
                seen, scans = seen + rows(entries), scans + 1
                if not continuation:
                    break
            assert seen == ranked(expected, 0, RECORDS)
        readers = server.dispatcher.readers
        assert readers is not None and readers.served == 5 + scans
        # The readers' store work is the server's: their transactions are in its counters.
        after = server.db.stats.snapshot()
        assert after["transactions"] - before["transactions"] >= readers.served
        assert after["reads"] > before["reads"]
    finally:
        server.stop(grace=1)


def test_a_reader_reads_the_index_its_server_resolved(server_place: ServerPlace) -> None:
    """Dropped and created again under the same name, the index has a new key prefix: the reader
    follows its server, never a cache of its own."""
    server = server_place.start(SETTINGS)
    try:
        with LeaderboardClient(server.address) as lb:
            first = load(lb, seed=1)
            assert rows(lb.top("game", 100)) == ranked(first, 0, 100)
            lb.drop_index("game")
            second = load(lb, seed=2)
            assert rows(lb.top("game", 100)) == ranked(second, 0, 100)
            assert server.dispatcher.readers is not None and server.dispatcher.readers.served == 2
    finally:
        server.stop(grace=1)


def test_heavy_reads_over_http_go_to_the_readers_too(tmp_path: Path) -> None:
    server = Server(f"lmdb:{tmp_path / 's'}?durable=false", "127.0.0.1:0", settings=SETTINGS).start()
    http = HttpServer(server, "127.0.0.1:0").start()
    try:
        with LeaderboardClient(server.address) as lb, httpx.Client(base_url=http.url, timeout=30) as web:
            expected = load(lb)
            answer = web.post("/v1/Top", json={"index": "game", "window": {"type": 0}, "n": 120})
            assert answer.status_code == 200, answer.text
            listed = [
                (e["pk"][0], e["score"], e.get("rank", 0))
                for e in answer.json()["entries"]  # the one JSON shape
            ]
            assert listed == ranked(expected, 0, 120)
            refused = web.post("/v1/Top", json={"index": "nope", "window": {"type": 0}, "n": 120})
            assert refused.status_code == 404 and "nope" in refused.text
        assert server.dispatcher.readers is not None and server.dispatcher.readers.served == 1
    finally:
        server.stop(grace=1)


def test_a_dead_reader_is_replaced(tmp_path: Path) -> None:
    server = Server(f"lmdb:{tmp_path / 's'}?durable=false", "127.0.0.1:0", settings=SETTINGS).start()
    try:
        with LeaderboardClient(server.address) as lb:
            expected = load(lb)
            assert rows(lb.top("game", 50)) == ranked(expected, 0, 50)
            readers = server.dispatcher.readers
            assert readers is not None
            (pid,) = readers.pids()
            os.kill(pid, signal.SIGKILL)
            _wait_gone(pid)
            # The next heavy read starts a new reader; a read the dead one had begun would answer
            # UNAVAILABLE (retry), never hang or answer wrongly.
            for _ in range(3):
                try:
                    assert rows(lb.top("game", 50)) == ranked(expected, 0, 50)
                    break
                except grpc.RpcError as exc:
                    assert exc.code() is grpc.StatusCode.UNAVAILABLE, exc
            else:
                pytest.fail("no new reader answered")
            assert readers.pids() and readers.pids() != [pid]
    finally:
        server.stop(grace=1)


def test_a_heavy_read_past_its_deadline_is_answered_deadline_exceeded(tmp_path: Path) -> None:
    """Whether its deadline passes while it waits for a reader or while the server waits for the
    answer, a reader call ends DEADLINE_EXCEEDED, and the readers serve the next call."""
    server = Server(f"lmdb:{tmp_path / 's'}?durable=false", "127.0.0.1:0", settings=SETTINGS).start()
    try:
        with LeaderboardClient(server.address) as lb:
            expected = load(lb)
            readers = server.dispatcher.readers
            assert readers is not None
            index = server.catalog.get("game")
            top = pb.TopRequest(index="game", n=50).SerializeToString()
            # Its deadline passed before a reader took it: the reader does not begin it.
            with pytest.raises(Answer) as late:
                readers.submit("Top", index, "game", top, time.monotonic() - 1).result(60)
            assert (late.value.code, str(late.value)) == (
                grpc.StatusCode.DEADLINE_EXCEEDED,
                "Top waited past its deadline on the server",
            )
            # Its deadline passes while the server waits for the answer: it stops waiting.
            with pytest.raises(Answer) as waited:
                readers.call("Top", index, "game", top, time.monotonic())
            assert waited.value.code is grpc.StatusCode.DEADLINE_EXCEEDED
            assert str(waited.value).endswith("past its deadline on the server")  # whichever saw it first
            assert readers.served == 0
            assert rows(lb.top("game", 50)) == ranked(expected, 0, 50) and readers.served == 1
    finally:
        server.stop(grace=1)
    # Through gRPC: a server whose calls get a microsecond answers its heavy reads that way.
    hasty = Server(
        f"lmdb:{tmp_path / 's'}?durable=false",
        "127.0.0.1:0",
        settings=ServerSettings(heavy_rows=10, read_processes=1, default_deadline=1e-6),
    ).start()
    try:
        with LeaderboardClient(hasty.address) as lb:
            with pytest.raises(grpc.RpcError) as refused:
                lb.top("game", 50)
            assert refused.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
            assert "Top" in refused.value.details() and "past its deadline on the server" in refused.value.details()
    finally:
        hasty.stop(grace=1)


def test_a_durable_store_is_read_by_readers_that_join_its_redo_log(tmp_path: Path) -> None:
    """The default embedded store makes commits durable through its redo log, which the reader
    processes share with the server: they read what it wrote, before and after their start."""
    url = f"lmdb:{tmp_path / 's'}"
    server = Server(url, "127.0.0.1:0", settings=SETTINGS).start()
    try:
        assert server.db.redo_log is not None and server.dispatcher.readers is not None
        with LeaderboardClient(server.address) as lb:
            expected = load(lb)
            assert rows(lb.top("game", 200)) == ranked(expected, 0, 200)
            lb.add_score("game", ("p-new",), 2_000_000, RECORDS)  # best of all, written after the reader began
            expected.insert(0, ("p-new", 2_000_000))
            assert rows(lb.top("game", 200)) == ranked(expected, 0, 200)
        assert server.dispatcher.readers.served == 2
    finally:
        server.stop(grace=1)


def test_readers_stop_with_their_server_even_when_it_is_killed(tmp_path: Path) -> None:
    """``serve`` starts its readers at once; SIGTERM stops them with it, and so does SIGKILL (they
    watch their parent), so no reader keeps the store open behind a dead server."""
    for how in (signal.SIGTERM, signal.SIGKILL):
        server = subprocess.Popen(
            [CLI, "serve", "--store", f"lmdb:{tmp_path / how.name}?durable=false", "--address", "127.0.0.1:0",
             "--http-address", "off"],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert "serving on" in server.stdout.readline()  # type: ignore[union-attr]
            children = _children(server.pid, wait_for=2)  # the reader, and multiprocessing's resource tracker
            readers = [pid for pid in children if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()]
            assert len(readers) == 1, children
            os.kill(server.pid, how)
            server.wait(timeout=30)
            for pid in children:
                _wait_gone(pid)
        finally:
            if server.poll() is None:
                server.kill()
                server.wait()


def _children(pid: int, wait_for: int, timeout: float = 30.0) -> list[int]:
    """The processes whose parent is ``pid``, once there are ``wait_for`` of them."""
    end = time.monotonic() + timeout
    while True:
        found = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as stat:
                        fields = stat.read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if int(fields[1]) == pid:
                    found.append(int(entry))
        if len(found) >= wait_for or time.monotonic() > end:
            return found
        time.sleep(0.1)


def _wait_gone(pid: int, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return  # ended; its parent has not reaped it yet
        except FileNotFoundError:
            return
        time.sleep(0.1)
    pytest.fail(f"process {pid} still runs {timeout:g} s later")


def test_readers_run_at_the_priority_asked(tmp_path: Path) -> None:
    # A nice level is added to the server's own (a process cannot go below it), up to 19: asked
    # for one that fits above this test's own level, whatever it is, it is exactly that much lower.
    own = os.getpriority(os.PRIO_PROCESS, 0)
    step = max(1, min(12, 19 - own))
    for priority, policy, nice in (("idle", os.SCHED_IDLE, 0), (str(step), os.SCHED_OTHER, min(step, 19 - own))):
        settings = ServerSettings(heavy_rows=10, read_priority=priority)
        server = Server(f"lmdb:{tmp_path / priority}?durable=false", "127.0.0.1:0", settings=settings).start()
        try:
            with LeaderboardClient(server.address) as lb:
                expected = load(lb)
                assert rows(lb.top("game", 20)) == ranked(expected, 0, 20)
            assert server.dispatcher.readers is not None
            (pid,) = server.dispatcher.readers.pids()
            assert os.sched_getscheduler(pid) == policy
            assert os.getpriority(os.PRIO_PROCESS, pid) - own == nice
        finally:
            server.stop(grace=1)
    for wrong in ("20", "-1", "low", ""):
        with pytest.raises(StartupError, match="neither 'idle' nor a nice level from 0 to 19"):
            ServerSettings(read_priority=wrong)
