"""The groups holding a value in a window (a grouped index's boards): a skip-scan of the window's
B-tree, a bounded page at a time, against the model's groups (every group written, less those
whose records were deleted or hidden), through every door."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable

import httpx
import pytest
from click.testing import CliRunner, Result

from fdb_leaderboard import errors
from fdb_leaderboard.cli.commands import main
from fdb_leaderboard.client import AsyncLeaderboardClient, InvalidArgument, LeaderboardClient
from fdb_leaderboard.http import HttpServer
from fdb_leaderboard.index import ALL_TIME, IndexSettings, LeaderboardIndex, WindowSpec, WindowUpdate
from fdb_leaderboard.service import Server
from fdb_leaderboard.store import Database
from tests.support.model import ALL_TIME as MODEL_ALL_TIME
from tests.support.model import Model

pytestmark = pytest.mark.usefixtures("no_unexpected_server_errors")

DAY = 86_400
D0 = 1_795_392_000
HEADS = ["eu", "us", "", "a", "a\x00", 7, -3, b"\x00\xff"]
WINDOWS = [(ALL_TIME, None, MODEL_ALL_TIME), (1, D0, (1, D0, D0 + DAY)), (1, D0 + DAY, (1, D0 + DAY, D0 + 2 * DAY))]


def all_pages(read: Callable[[int, bytes], tuple[list[tuple], bytes | None]], limit: int) -> list[tuple]:
    found: list[tuple] = []
    continuation = b""
    while True:
        groups, continuation = read(limit, continuation)
        assert len(groups) <= limit
        found += groups
        if not continuation:
            return found


def test_groups_are_those_holding_values(db: Database, prefix: bytes) -> None:
    rng = random.Random(34)
    index = LeaderboardIndex.create(db, prefix, IndexSettings(group_size=2))
    index.update_windows(WindowUpdate(specs=[WindowSpec(1, D0, DAY, DAY, 2)]))
    model = Model("BEST", True, 2)
    model.update_windows(True, [(1, D0, D0 + DAY), (1, D0 + DAY, D0 + 2 * DAY)])
    for _ in range(300):
        pk = (f"p{rng.randrange(60)}",)
        group = (rng.choice(HEADS), rng.choice(HEADS))
        score, ts = rng.randrange(1000), D0 + rng.randrange(2 * DAY)
        index.add_score(pk, score, timestamp=ts, group=group)
        model.add(pk, [(group, score, ts, ())])
    written = sorted(model.records)
    for pk in rng.sample(written, 12):
        assert index.delete_record(pk) == model.delete(pk)
    for pk in rng.sample(sorted(model.records), 4):
        index.hide_record(pk, "test")
        model.hide(pk)
    for window_type, ts, window in WINDOWS:
        expected = model.groups(window)
        assert 10 < len(expected) < 64  # some groups hold nothing in some windows

        def page(limit: int, continuation: bytes, window_type: int = window_type, ts: int | None = ts) -> tuple:
            found = index.groups(window_type, ts, limit, continuation)
            return found.groups, found.continuation

        for limit in (1, 3, 1000):
            assert all_pages(page, limit) == expected, (window, limit)
    with pytest.raises(errors.InvalidArgument, match="limit must be between 1 and 1000"):
        index.groups(limit=0)
    with pytest.raises(errors.InvalidArgument, match="continuation is not one this read gave"):
        index.groups(continuation=b"\x02eu\x00")  # one item: the index groups by two
    with pytest.raises(errors.WindowNotFound):
        index.groups(1, D0 + 5 * DAY)
    with pytest.raises(errors.InvalidArgument, match="continuation"):  # the request is wrong whatever the window
        index.groups(1, D0 + 5 * DAY, continuation=b"\x02eu\x00")


def test_an_index_without_groups_has_the_empty_group_once_it_has_a_value(db: Database, prefix: bytes) -> None:
    index = LeaderboardIndex.create(db, prefix, IndexSettings())
    index.update_windows(WindowUpdate(specs=[WindowSpec(1, D0, DAY, DAY, 2)]))
    assert index.groups().groups == []
    index.add_score(("ann",), 5, timestamp=D0 + 1)
    assert index.groups().groups == [()] and index.groups().continuation is None
    assert index.groups(1, D0 + DAY).groups == []


def test_groups_through_every_door(server: Server, client: LeaderboardClient) -> None:
    client.create_index("cups", group_size=1)
    client.update_windows("cups", specs=[(1, D0, DAY, DAY, 2)])
    written = {"eu": D0 + 5, "us": D0 + 6, "asia": D0 + DAY + 1, "af": D0 + DAY + 2}
    for i, (group, ts) in enumerate(written.items()):
        client.add_score("cups", (f"p{i}",), 10 + i, ts, group=(group,))
    client.add_score("cups", ("p9",), 1, D0 + 9, group=(42,))
    today = [("eu",), ("us",), (42,)]  # strings sort before integers
    today.sort(key=lambda g: (isinstance(g[0], int), g[0]))
    assert client.groups("cups", 1, D0, limit=2) == (today[:2], client.groups("cups", 1, D0, limit=2)[1])
    assert list(client.all_groups("cups", 1, D0)) == today
    assert sorted(client.all_groups("cups"), key=str) == sorted([*[(g,) for g in written], (42,)], key=str)
    with pytest.raises(InvalidArgument, match="limit must be between 1 and 1000"):
        client.groups("cups", limit=5000)

    async def from_async() -> list[tuple]:
        async with AsyncLeaderboardClient(server.address) as lb:
            return [group async for group in lb.all_groups("cups", 1, D0)]

    assert asyncio.run(from_async()) == today
    http = HttpServer(server, "127.0.0.1:0").start()
    with httpx.Client(base_url=http.url, timeout=20) as web:
        listed, continuation = [], ""
        while True:
            answer = web.get(
                "/v1/indexes/cups/windows/1/groups", params={"at": D0, "limit": 1, "continuation": continuation}
            )
            assert answer.status_code == 200, answer.text
            body = answer.json()
            assert body["window"] == {"type": 1, "start": D0, "end": D0 + DAY}
            listed += [g["group"] for g in body["groups"]]
            continuation = body["continuation"]
            if not continuation:
                break
        assert listed == [list(g) for g in today]
        rpc = web.post("/v1/ListGroups", json={"index": "cups", "window": {"type": 1, "timestamp": D0 + DAY}})
        assert rpc.json()["groups"] == [{"group": ["af"]}, {"group": ["asia"]}]
        refused = web.get("/v1/indexes/cups/windows/1/groups", params={"continuation": "!"})
        assert refused.status_code == 400 and "continuation must be the base64 text" in refused.json()["message"]
    runner = CliRunner()

    def cli(*args: object, code: int = 0) -> Result:
        result = runner.invoke(main, ["--server", server.address, *map(str, args)], catch_exceptions=False)
        assert result.exit_code == code, result.output
        return result

    assert cli("groups", "cups", "--type", 1, "--at", D0).output == "eu\nus\n[42]\n"
    assert cli("groups", "cups", "--type", 1, "--at", D0, "-n", 1).output == "eu\n"
    assert json.loads(cli("groups", "cups", "--type", 1, "--at", D0 + DAY, "--json").output) == [["af"], ["asia"]]
    client.delete_record("cups", ("p2",))
    client.delete_record("cups", ("p3",))
    assert cli("groups", "cups", "--type", 1, "--at", D0 + DAY).output == "cups: no scores in this window\n"
