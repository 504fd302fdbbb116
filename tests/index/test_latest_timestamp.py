"""An index's latest timestamp found again when the record holding it goes: at once on a small index, in
batches on a large one, finished by the server's maintenance when a deletion left it to do, and
below index format 4 by the raise of the format."""

from __future__ import annotations

import time

import httpx
import pytest

from fdb_leaderboard import formats
from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.http import HttpServer
from fdb_leaderboard.index import Entry, IndexSettings, LeaderboardIndex
from fdb_leaderboard.index.layout import decode_latest_timestamp
from fdb_leaderboard.service import Server, ServerSettings
from tests.conftest import Cli, ServerPlace, error_line, wait_until

pytestmark = pytest.mark.usefixtures("no_unexpected_server_errors")


def test_the_latest_timestamp_is_found_again_when_the_record_holding_it_goes(
    server: Server, client: LeaderboardClient, cli: Cli
) -> None:
    far = 4_070_908_800  # 2099-01-01: a mistyped time, beyond every window but all-time's
    cli("index", "create", "arcade", "--daily", "--timezone", "UTC")
    today = int(time.time())
    for who, at in (("ann", today - 5), ("bob", today), ("typo", far)):
        cli("add", "arcade", who, "--score", 5, "--at", at)
    assert client.list_windows("arcade").latest_timestamp == far
    assert "NOT_FOUND: no window of type 1 contains timestamp 4070908800" in error_line(
        cli("top", "arcade", "--type", 1, "--at", "latest", code=1)
    )
    cli("delete", "arcade", "typo")
    assert f"latest indexed timestamp: {today}" in cli("windows", "show", "arcade").output
    assert cli("top", "arcade", "--type", 1, "--at", "latest").output.splitlines()[0].split()[:2] == ["#1", "ann"]
    front = HttpServer(server, "127.0.0.1:0").start()
    try:
        with httpx.Client(base_url=front.url, timeout=20) as web:
            read = web.get("/v1/indexes/arcade/windows/1/top", params={"at": "latest"}).json()
            assert [e["pk"] for e in read["entries"]] == [["ann"], ["bob"]]
    finally:
        front.stop()
    # Deleting a group's data or every record finds it again too; with no record left, there is none.
    cli("add", "arcade", "typo", "--score", 5, "--at", far)
    cli("delete-records", "arcade", "--all-records", "--yes")
    assert not client.list_windows("arcade").HasField("latest_timestamp")
    assert "arcade has no scores yet" in error_line(cli("top", "arcade", "--type", 1, "--at", "latest", code=1))


def test_a_large_index_finds_its_latest_timestamp_again_in_batches(server: Server, client: LeaderboardClient) -> None:
    """Beyond what the deleting call scans, the recompute goes on in fills and the server's
    maintenance; meanwhile reads see the value before, and a window added then is filled."""
    client.create_index("big")
    records = [(f"p{i:05}", [(i, 1_000 + i)]) for i in range(5_000)]
    client.bulk_load("big", records)
    client.add_score("big", "typo", 1, 9_000_000)
    client.add_score("big", "late", 2, 7_000)
    assert client.delete_record("big", "typo")
    assert client.list_windows("big").latest_timestamp == 9_000_000  # still recomputing: the value before
    client.add_score("big", "later", 3, 8_000)  # written meanwhile: counted
    added = client.update_windows("big", windows=[(5, 8_500, 9_500)])
    assert [(w.type, w.start) for w in added.filling] == [(5, 8_500)]  # it may overlap a score: filled
    client.fill("big")
    assert client.list_windows("big").latest_timestamp == 8_000
    assert client.verify("big") == []


def test_the_servers_maintenance_finishes_a_recompute_the_deletion_left(server_place: ServerPlace) -> None:
    """A deletion that leaves the recompute unfinished wakes the server's maintenance, which ends it
    (a pass an hour would otherwise leave the value before in place for that long)."""
    server = server_place.start(ServerSettings(maintain_every=3600))
    try:
        with LeaderboardClient(server.address, timeout=60) as client:
            client.create_index("big")
            client.bulk_load("big", [(f"p{i:05}", [(i, 1_000 + i)]) for i in range(3_000)])
            client.add_score("big", "typo", 1, 9_000_000)
            wait_until(lambda: server.housekeeping.passes >= 1, "the first maintenance pass")
            assert client.delete_record("big", "typo")
            wait_until(lambda: client.list_windows("big").latest_timestamp == 3_999, "the recompute ending")
            assert client.verify("big") == []
    finally:
        server.stop(grace=1)


def test_below_index_format_4_a_deletion_leaves_the_latest_and_the_raise_finds_it_again(db, prefix: bytes) -> None:
    """Release 0.2.0 reads P alone: until no process of it may run (format 4), a deletion leaves P
    as 0.2.0 leaves it.  Raising the index to format 4 finds the latest again, in batches, reads
    seeing the value before until the last one; from then on a deletion finds it at once."""
    index = LeaderboardIndex.create(db, prefix, IndexSettings(), format=formats.LATEST_RECOMPUTED - 1)
    layout = index.layout
    index.write_batch([(f"p{i:02}", [Entry(i, 1_000 + i)]) for i in range(30)])
    index.add_score("typo", 1, 9_000_000)

    def stored() -> tuple[int | None, bytes | None]:
        """P as release 0.2.0 reads it, and the recompute's state."""
        raw, state = db.read(lambda tr: (tr.get(layout.latest_timestamp_key), tr.get(layout.latest_recompute_key)))
        return (decode_latest_timestamp(raw) if raw is not None else None), state

    def latest() -> int | None:
        return index.read(lambda ops: ops.txn.latest_timestamp())

    assert index.delete_record("typo")
    assert stored() == (9_000_000, None) and latest() == 9_000_000  # as 0.2.0 left it
    seen = []
    done = index.upgrade(
        to_format=formats.LATEST_RECOMPUTED,
        max_records=1,  # 10 entries a batch
        progress=lambda step: seen.append((step.format, latest())),
    )
    assert (done.format, done.done, done.records_processed) == (formats.LATEST_RECOMPUTED, True, 30)
    assert len(seen) == 4 and seen[:-1] == [(3, 9_000_000)] * 3  # the value before until the end
    assert seen[-1] == (4, 1_029) and stored() == (1_029, None)
    index.add_score("typo", 1, 9_000_000)
    assert index.delete_record("typo") and stored() == (1_029, None)
    assert index.check() == []
