"""My rank, live: a record's rank watched over gRPC (both clients), Server-Sent Events and the CLI.

Each update is compared with the brute-force model (tests/support/model.py) at the moment of the
writes before it; an update comes only when the rank, score or window changed, at most one a
second; watchers are bounded per server and counted in /metrics; on both stores.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from fdb_leaderboard.access import Tokens
from fdb_leaderboard.client import AsyncLeaderboardClient, CallError, LeaderboardClient
from fdb_leaderboard.http import HttpServer
from fdb_leaderboard.service import Server, ServerSettings
from tests.support.model import Listed, Model

pytestmark = pytest.mark.usefixtures("no_unexpected_server_errors")

CLI = str(Path(sys.executable).parent / "fdb-leaderboard")
WAIT = 30.0  # the longest a test waits for an update it expects


def listed(entry) -> Listed | None:
    if entry is None:
        return None
    return Listed(tuple(entry.pk), entry.score, entry.timestamp, tuple(entry.context), tuple(entry.group), entry.rank)


class Updates:
    """A watch's updates, received on a thread of their own, each with when it arrived."""

    def __init__(self, stream: Iterator) -> None:
        self.stream = stream
        self.received: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=self._receive, daemon=True)
        self.thread.start()

    def _receive(self) -> None:
        try:
            for update in self.stream:
                self.received.put((time.monotonic(), update))
        except Exception as exc:  # the watch was closed, or failed: the test sees which
            self.received.put((time.monotonic(), exc))

    def next(self) -> tuple[float, object]:
        arrived, update = self.received.get(timeout=WAIT)
        assert not isinstance(update, Exception), update
        return arrived, update

    def close(self) -> None:
        self.stream.close()  # type: ignore[attr-defined]


@pytest.fixture
def watched(server_place) -> Iterator[tuple[Server, LeaderboardClient, httpx.Client]]:
    server = server_place.start(ServerSettings(maintain_every=0, max_rank_watchers=2))
    front = HttpServer(server, "127.0.0.1:0").start()
    with LeaderboardClient(server.address, timeout=20) as client, httpx.Client(base_url=front.url, timeout=20) as web:
        yield server, client, web
    front.stop()
    server.stop(grace=1)


def watchers(web: httpx.Client) -> float:
    families = text_string_to_metric_families(web.get("/metrics").text)
    return next(s.value for f in families for s in f.samples if s.name == "fdb_leaderboard_rank_watchers")


def wait_for(condition, what: str) -> None:
    ends = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < ends, f"waited {WAIT} s for {what}"
        time.sleep(0.05)


def test_a_watched_rank_follows_the_board(watched) -> None:
    """An update for each change of bob's rank or score, none for a change that leaves them,
    and a burst of changes coalesced into updates at least a second apart."""
    _, client, _ = watched
    client.create_index("arena")
    model = Model("BEST", high_score_first=True)
    model.update_windows(True, [])
    updates = Updates(client.watch_rank("arena", "bob", mode="COMPETITION"))
    try:
        assert updates.next()[1] is None  # no score yet

        def add(pk: str, score: int, ts: int) -> None:
            client.add_score("arena", pk, score, ts)
            model.add((pk,), [((), score, ts, ())])

        def expected() -> Listed | None:
            return model.rank_and_entry(("bob",), 0, None, (), "COMPETITION")

        for pk, score, ts in [("bob", 10, 1), ("ann", 20, 2)]:
            add(pk, score, ts)
            assert listed(updates.next()[1]) == expected()
        add("cyd", 5, 3)  # below bob: neither his rank nor his score moves
        add("dee", 30, 4)
        assert listed(updates.next()[1]) == expected()  # rank 2: cyd's write sent nothing

        # Eight better scores for bob as fast as they go: updates come at most once a second,
        # and the last shows the last score.
        arrivals = []
        for score in range(31, 39):
            add("bob", score, 10 + score)
        while True:
            arrived, update = updates.next()
            arrivals.append(arrived)
            if update.score == 38:
                break
        assert listed(update) == expected()
        gaps = [later - earlier for earlier, later in itertools.pairwise(arrivals)]
        assert all(gap > 0.5 for gap in gaps), gaps  # a second apart on the server; the network may vary
        assert updates.received.empty()
    finally:
        updates.close()


def test_watches_of_one_record_share_one_read(server_place) -> None:
    """Five gRPC watches of bob's rank (the same request) are served by one read a second: one
    shared read on the server, each watch told each change, the read gone with the last watch."""
    server = server_place.start(ServerSettings(maintain_every=0))
    try:
        with LeaderboardClient(server.address, timeout=20) as client:
            client.create_index("arena")
            client.add_score("arena", "bob", 10, 1)
            watches = [Updates(client.watch_rank("arena", "bob")) for _ in range(5)]
            other = Updates(client.watch_rank("arena", "ann"))
            try:
                assert [listed(w.next()[1]).rank for w in watches] == [0] * 5
                assert other.next()[1] is None
                shared = server.dispatcher.shared_reads
                assert sorted(read.watchers for read in shared.values()) == [1, 5]  # bob's five, ann's one
                client.add_score("arena", "ann", 20, 2)
                assert [listed(w.next()[1]).rank for w in watches] == [1] * 5
                assert listed(other.next()[1]).rank == 0
            finally:
                for watch in [*watches, other]:
                    watch.close()
            wait_for(lambda: not server.dispatcher.shared_reads, "the shared reads to end with their watches")
    finally:
        server.stop(grace=1)


def test_watchers_are_bounded_counted_and_served_as_events(watched) -> None:
    _, client, web = watched
    client.create_index("arena")
    client.add_score("arena", "ann", 7, 1)
    first, second = (Updates(client.watch_rank("arena", pk)) for pk in ("ann", "bob"))
    try:
        assert first.next()[1].rank == 0 and second.next()[1] is None
        assert watchers(web) == 2
        with pytest.raises(CallError) as refused, client.watch_rank("arena", "cyd") as third:
            next(iter(third))
        assert refused.value.code().name == "RESOURCE_EXHAUSTED" and "max_rank_watchers" in str(refused.value)
        answer = web.get("/v1/indexes/arena/windows/0/records/cyd/rank/events")
        assert answer.status_code == 429, answer.text
    finally:
        first.close()
    wait_for(lambda: watchers(web) == 1, "the closed watch to let its slot go")

    with web.stream("GET", "/v1/indexes/arena/windows/0/records/cyd/rank/events") as events:
        assert events.status_code == 200  # the slot the closed watch let go
        lines = events.iter_lines()  # kept: a line iterator closed closes the connection
        first_data = next(line for line in lines if line.startswith("data: "))
        assert json.loads(first_data[6:])["entry"] is None
        assert watchers(web) == 2
    second.close()


def test_events_follow_the_rank(watched) -> None:
    """The SSE stream: the entry (null while absent) and the window, again when they change."""
    _, client, web = watched
    client.create_index("arena")
    with web.stream("GET", "/v1/indexes/arena/windows/0/records/cyd/rank/events") as events:
        assert events.status_code == 200 and events.headers["content-type"].startswith("text/event-stream")
        data = (json.loads(line[6:]) for line in events.iter_lines() if line.startswith("data: "))
        event = next(data)
        assert event["entry"] is None and event["window"]["type"] == 0
        wait_for(lambda: watchers(web) == 1, "the events to count as a watcher")
        client.add_score("arena", "cyd", 12, 5)
        client.add_score("arena", "ann", 20, 6)
        event = next(data)
        while event["entry"]["rank"] != 1:  # one update or two: cyd first at rank 0, then 1
            event = next(data)
        assert (event["entry"]["pk"], event["entry"]["score"]) == (["cyd"], 12)
    wait_for(lambda: watchers(web) == 0, "the closed events to let their slot go")


def test_the_asyncio_client_watches(watched) -> None:
    server, client, _ = watched
    client.create_index("arena")

    async def watch() -> list:
        seen = []
        async with AsyncLeaderboardClient(server.address) as lb:
            async for entry in lb.watch_rank("arena", "ann"):
                seen.append(entry)
                if entry is None:
                    await asyncio.to_thread(client.add_score, "arena", "ann", 3, 9)
                else:
                    return seen
        return seen

    seen = asyncio.run(asyncio.wait_for(watch(), WAIT))
    assert seen[0] is None and (seen[1].pk, seen[1].score, seen[1].rank) == (("ann",), 3, 0)


def test_the_command_line_watches(watched) -> None:
    server, client, _ = watched
    client.create_index("arena")
    command = [CLI, "--server", server.address, "watch", "arena", "bob", "--updates", "2"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as watching:
        try:
            assert watching.stdout.readline() == "bob has no score in the all-time window\n"
            client.add_score("arena", "bob", 40, 3)
            assert watching.stdout.readline().split()[:3] == ["#1", "bob", "40"]
            assert watching.wait(WAIT) == 0, watching.stderr.read()
        finally:
            watching.kill()


def test_watching_takes_a_read_token(server_place) -> None:
    """Each client sends its token on a watch too; none is UNAUTHENTICATED, over HTTP 401."""
    reader, admin = "r" * 20, "a" * 20
    tokens = Tokens.parse(f"read:{reader}\nadmin:{admin}\n")
    server = server_place.start(ServerSettings(maintain_every=0, tokens=tokens))
    front = HttpServer(server, "127.0.0.1:0").start()
    try:
        with LeaderboardClient(server.address, token=admin) as lb:
            lb.create_index("arena")
            lb.add_score("arena", "ann", 4, 1)
        with LeaderboardClient(server.address, token=reader) as lb, lb.watch_rank("arena", "ann") as watch:
            assert next(iter(watch)).score == 4

        async def first() -> object:
            async with AsyncLeaderboardClient(server.address, token=reader) as lb:
                async for entry in lb.watch_rank("arena", "ann"):
                    return entry

        assert asyncio.run(asyncio.wait_for(first(), WAIT)).score == 4
        with (
            LeaderboardClient(server.address) as lb,
            pytest.raises(CallError) as refused,
            lb.watch_rank("arena", "ann") as watch,
        ):
            next(iter(watch))
        assert refused.value.code().name == "UNAUTHENTICATED"
        path = "/v1/indexes/arena/windows/0/records/ann/rank/events"
        with httpx.Client(base_url=front.url, timeout=20) as web:
            assert web.get(path).status_code == 401
            with web.stream("GET", path, headers={"authorization": f"Bearer {reader}"}) as events:
                assert events.status_code == 200
    finally:
        front.stop()
        server.stop(grace=1)
