"""Timestamps at every door (the Python API, gRPC, the client, REST, the CLI): a score sent without one is
made now (the server's clock, in the index's timebase); one that cannot be in the index's timebase
(milliseconds sent to an index of seconds) is refused naming the unit it looks like, a window file
in another timebase too; an index may keep its times in milliseconds."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest

from fdb_leaderboard import errors
from fdb_leaderboard.client import AsyncLeaderboardClient, LeaderboardClient
from fdb_leaderboard.http import HttpServer
from fdb_leaderboard.index import LeaderboardIndex, WindowUpdate
from fdb_leaderboard.service import Server
from fdb_leaderboard.store import open_database
from tests.conftest import Cli, error_line

pytestmark = pytest.mark.usefixtures("no_unexpected_server_errors")

T = 1_795_420_000  # 2026-11-23 08:46:40 in Paris


def test_a_score_without_a_timestamp_is_made_now_through_every_door(
    server: Server, client: LeaderboardClient, cli: Cli, tmp_path: Path
) -> None:
    """The server's clock when it applies the write, in the index's timebase; sent again under its
    idempotency key, the write keeps the time it was first applied at."""
    client.create_index("secs")
    client.create_index("ms", timebase="milliseconds")
    before = time.time()
    client.add_score("secs", "sync", 1)
    client.add_score("ms", "sync", 1)

    async def asynchronous() -> None:
        async with AsyncLeaderboardClient(server.address) as lb:
            await lb.add_score("secs", "async", 2)
            await lb.add_score("ms", "async", 2)

    asyncio.run(asynchronous())
    front = HttpServer(server, "127.0.0.1:0").start()
    try:
        with httpx.Client(base_url=front.url, timeout=20) as web:
            for index in ("secs", "ms"):
                assert web.post(f"/v1/indexes/{index}/scores", json={"pk": "http", "score": 3}).status_code == 200
                sent = {"index": index, "pk": ["rpc"], "entry": {"score": 4}}
                assert web.post("/v1/AddScore", json=sent).status_code == 200, web.post("/v1/AddScore", json=sent).text
    finally:
        front.stop()
    cli("add", "secs", "cli", "--score", 5)
    cli("add", "ms", "cli", "--score", 5)
    once = client.add_score("secs", "once", 6, idempotency_key="k-1")
    first = client.rank_and_entry("secs", "once").timestamp
    time.sleep(1.1)
    assert client.add_score("secs", "once", 6, idempotency_key="k-1") == once  # the first answer, nothing added
    after = time.time()
    for index, scale in (("secs", 1), ("ms", 1000)):
        stamps = {e.pk[0]: e.timestamp for e in client.top(index, 10)}
        assert set(stamps) >= {"sync", "async", "http", "rpc", "cli"}
        for who, stamp in stamps.items():
            assert int(before * scale) <= stamp <= after * scale, (index, who, stamp)
    assert client.rank_and_entry("secs", "once").timestamp == first
    assert len(client.scan("secs", "BY_RANK", limit=100)[0]) == 6

    # In process, an index given a timebase does the same.
    with open_database(f"lmdb:{tmp_path / 'in-process'}?durable=false") as db:
        index = LeaderboardIndex.create(db, b"\x15\x01", timebase="milliseconds")
        index.update_windows(WindowUpdate(all_time=True))
        index.add_score(("alice",), 7)
        assert int(before * 1000) <= index.rank_and_entry(("alice",)).timestamp <= time.time() * 1000


# -- timestamps in the index's timebase ----------------------------------------------------------------------


MS = 1_796_169_700_000  # 2026-12-02 00:01:40 UTC in milliseconds
TOO_LATE_FOR_SECONDS = (
    f"timestamp {MS} is after the year 9999 in seconds, this index's timebase: it looks like milliseconds "
    "(2026-12-02 00:01:40 UTC); send seconds (1796169700), or keep the index's times in milliseconds (create it "
    "with timebase milliseconds)"
)


def test_milliseconds_sent_to_an_index_of_seconds_are_refused_at_every_door(
    server: Server, client: LeaderboardClient, cli: Cli, tmp_path: Path
) -> None:
    cli("index", "create", "arcade", "--daily")
    cli("add", "arcade", "u", "--score", 9, "--at", T)
    refused = error_line(cli("add", "arcade", "u", "--score", 9, "--at", MS, code=1))
    assert refused == f"Error: INVALID_ARGUMENT: {TOO_LATE_FOR_SECONDS}"
    assert error_line(cli("top", "arcade", "--type", 1, "--at", MS, code=1)) == refused
    with pytest.raises(errors.InvalidArgument, match="it looks like milliseconds"):
        client.add_score("arcade", "u", 9, int(time.time() * 1000))
    with pytest.raises(errors.InvalidArgument) as caught:
        client.add_entries("arcade", "u", [(9, MS)])
    assert str(caught.value) == TOO_LATE_FOR_SECONDS

    async def asynchronous() -> str:
        async with AsyncLeaderboardClient(server.address) as lb:
            try:
                await lb.add_score("arcade", "u", 9, MS)
            except errors.InvalidArgument as error:
                return str(error)
        return "accepted"

    assert asyncio.run(asynchronous()) == TOO_LATE_FOR_SECONDS
    front = HttpServer(server, "127.0.0.1:0").start()
    try:
        with httpx.Client(base_url=front.url, timeout=20) as web:
            answer = web.post("/v1/indexes/arcade/scores", json={"pk": "u", "score": 9, "timestamp": MS})
            assert answer.status_code == 400 and answer.json() == {
                "code": "INVALID_ARGUMENT",
                "message": TOO_LATE_FOR_SECONDS,
            }
            read = web.get("/v1/indexes/arcade/windows/1/top", params={"at": MS})
            assert read.status_code == 400 and read.json()["message"] == TOO_LATE_FOR_SECONDS
    finally:
        front.stop()
    records = tmp_path / "r.jsonl"
    records.write_text(f'{{"pk": "v", "score": 3, "timestamp": {T}}}\n{{"pk": "w", "score": 3, "timestamp": {MS}}}\n')
    assert error_line(cli("load", "arcade", records, code=1)) == (
        f"Error: {records}: line 2 refused by the server (INVALID_ARGUMENT: {TOO_LATE_FOR_SECONDS}); no record was "
        "saved; fix the line and rerun (rerunning the load is safe: each record replaces what was stored for it)"
    )
    assert [(e.pk, e.timestamp) for e in client.top("arcade", 5)] == [(("u",), T)]  # nothing refused was stored
    assert client.list_windows("arcade").latest_timestamp == T

    # An index of milliseconds takes them (and refuses microseconds); so does one in process given its timebase.
    cli("index", "create", "fast", "--timebase", "milliseconds", "--daily", "--timezone", "UTC")
    cli("add", "fast", "u", "--score", 9, "--at", MS)
    assert [(e.pk, e.timestamp) for e in client.top("fast", 5, window_type=1, timestamp=MS)] == [(("u",), MS)]
    micro = error_line(cli("add", "fast", "u", "--score", 9, "--at", MS * 1000, code=1))
    assert micro == (
        f"Error: INVALID_ARGUMENT: timestamp {MS * 1000} is after the year 9999 in milliseconds, this index's "
        f"timebase: it looks like microseconds (2026-12-02 00:01:40 UTC); send milliseconds ({MS})"
    )
    day = next(w for w in client.list_windows("fast", 1).windows)
    assert day.start % 86_400_000 == 0 and day.end - day.start == 86_400_000
    with open_database(f"lmdb:{tmp_path / 'in-process'}?durable=false") as db:
        index = LeaderboardIndex.create(db, b"\x15\x02", timebase="seconds")
        index.update_windows(WindowUpdate(all_time=True))
        with pytest.raises(errors.InvalidArgument) as caught:
            index.add_score(("u",), 9, MS)
        assert str(caught.value) == TOO_LATE_FOR_SECONDS
        raw = LeaderboardIndex.create(db, b"\x15\x03")  # no timebase: any int64, as ever
        raw.update_windows(WindowUpdate(all_time=True))
        raw.add_score(("u",), 9, 2**62)


def test_a_window_file_in_another_timebase_than_the_index_is_refused(cli: Cli, tmp_path: Path) -> None:
    cli("index", "create", "arcade")
    spec = tmp_path / "w.yaml"
    spec.write_text("timebase: milliseconds\ncalendar:\n  - {type: 1, period: daily, count: 2}\n")
    assert error_line(cli("windows", "apply", "arcade", spec, code=1)) == (
        "Error: the file's times are in milliseconds, the index's in seconds: create an index with "
        "`index create NAME --timebase milliseconds` for them (or leave timebase out of the file)"
    )
    cli("index", "create", "fast", "--timebase", "milliseconds")
    spec.write_text("calendar:\n  - {type: 1, period: daily, start: 2026-12-02, timezone: UTC, count: 1}\n")
    assert cli("windows", "apply", "fast", spec).output.splitlines()[1] == (
        f"  key    1  type 1 [{1796169600 * 1000}, {(1796169600 + 86400) * 1000})"
    )
    spec.write_text("calendar:\n  - {type: 1, period: daily}\n")
    assert error_line(cli("windows", "apply", "fast", spec, code=1)) == (
        "Error: window-update file: a calendar entry has no count (how many periods, e.g. count: 7): "
        "{type: 1, period: daily}"
    )
