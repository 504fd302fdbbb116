"""Stores written by earlier releases serve under this one.

Each fixture of ``tests/compat/`` holds a small store as an earlier release's own code wrote it
(``tools/dev/compat_fixture.py``, run in that release's tree) and the answers that release gave.  Each
is loaded into a fresh store of each backend (the embedded store, and FoundationDB under a
catalog root of its own) and served by this release, which must:

1. give every answer the release gave, and find no problem in any index (``verify``);
2. take writes of every kind: scores into heads written before the submission counters (and
   refuse, under ``max_per_window``, what those records submitted already), whole records,
   batches, loads, deletions, metadata, hiding, score rules, idempotency keys sent again (the
   first answers), windows added and filled, the release's half-filled window finished, expiry,
   trims, leagues, columns, groups deleted; webhooks' pending events kept and ends not noticed
   twice; then verify clean again;
3. upgrade every index in small batches with each index's reads exact after each batch, and the
   store; then verify clean once more, now holding every head's counters to its entries.
"""

from __future__ import annotations

from typing import Any

import pytest

from fdb_leaderboard import formats
from fdb_leaderboard.client import LeaderboardClient
from tests.conftest import ServerPlace
from tests.support.compat_stores import compat, limits_hold, load_into, verify_all

RELEASES = sorted(compat.RELEASES)
T0, DAY = compat.T0, compat.DAY

pytestmark = pytest.mark.usefixtures("no_unexpected_server_errors")


def ask(client: LeaderboardClient, query: dict) -> Any:
    return compat.plain(getattr(client, query["op"])(*query["args"], **query["kwargs"]))


def answers_differ(client: LeaderboardClient, queries: list[dict]) -> list[str]:
    return [
        f"{q['op']}{tuple(q['args'])} {q['kwargs']}: {got!r} != {q['answer']!r}"
        for q in queries
        if (got := ask(client, q)) != q["answer"]
    ]


@pytest.fixture(params=RELEASES)
def upgraded(request: pytest.FixtureRequest, server_place: ServerPlace) -> Any:
    """(fixture, server, client): this release serving a store the fixture's release wrote."""
    fixture = compat.load(request.param)
    load_into(server_place.url, server_place.root, fixture)
    server = server_place.start()
    try:
        with LeaderboardClient(server.address, timeout=60) as client:
            yield fixture, server, client
    finally:
        server.stop(grace=1)


def test_a_store_an_earlier_release_wrote_serves_is_written_and_upgrades(upgraded: Any) -> None:
    fixture, _, client = upgraded
    status = client.store_status()
    assert (status.format.version, status.format.recorded) == (formats.UNRECORDED_STORE, False)
    assert {entry.format.version for entry in status.indexes} == {formats.UNRECORDED_INDEX}

    # 1. The release's answers, and no problem anywhere.
    assert answers_differ(client, fixture["queries"]) == []
    assert verify_all(client) == {}

    # 2. Writes of every kind.
    write_every_kind(client, fixture)
    assert verify_all(client) == {}

    # 3. Every index upgraded, each read exact after every batch; the store too.
    snapshots = {info.name: board_reads(client, info.name) for info in client.list_indexes()}
    for name, queries in snapshots.items():
        seen = []

        def exact(step: Any, name: str = name, queries: list[dict] = queries, seen: list = seen) -> None:
            seen.append(step.format.upgrading_to or step.format.version)
            assert answers_differ(client, queries) == [], f"{name} after {len(seen)} upgrade calls"

        answer = client.upgrade_index(name, max_records=10, max_batches=1, progress=exact)
        assert answer.done and answer.format.version == formats.NEWEST_INDEX and answer.format.recorded
        assert len(seen) > 1 or answer.records_processed < 10, name  # in batches, the reads checked between
    assert client.upgrade_store().format.version == formats.NEWEST_STORE
    assert verify_all(client) == {}  # now holding each counter to the entries it counts
    assert {e.format.version for e in client.store_status().indexes} == {formats.NEWEST_INDEX}
    # Counters exact from now on: a limited write needs no look at the record's entries.
    limits_hold(client, "daily", day=2)


def board_reads(client: LeaderboardClient, name: str) -> list[dict]:
    """Queries of each complete window's top and count (with their answers now)."""
    out = []
    listing = client.list_windows(name)
    groups = [()]
    info = next(i for i in client.list_indexes() if i.name == name)
    if info.options.group_size:
        groups = [(g,) for g in (*compat.GROUPS, "live", "old")]
    for window in listing.windows:
        if not window.filling:
            for group in groups:
                at = None if window.type == 0 else window.start
                for op, args in (("top", [name, 50]), ("count", [name])):
                    query = {
                        "op": op,
                        "args": args,
                        "kwargs": {"window_type": window.type, "timestamp": at, "group": group},
                    }
                    query["answer"] = ask(client, query)
                    out.append(query)
    return out


def write_every_kind(client: LeaderboardClient, fixture: dict) -> None:
    names = {info.name for info in client.list_indexes()}
    # Submission limits count what records submitted before their heads counted it.
    limits_hold(client, "daily", day=1)
    # Scores into heads written by the release, and their ranks.
    before = client.rank("daily", "p02")
    client.add_score("daily", "p02", 5000, T0 + 4 * DAY + 5)
    assert client.rank("daily", "p02") == 0 and before != 0
    client.add_entries("low_context", "p03", [(1, T0 + 1, (2,)), (2, T0 + DAY + 1, (0,))])
    client.save_record("sum_groups", "p04", [(7, T0 + 5, ("a",), ("eu",)), (9, T0 + DAY + 5, ("b",), ("golf",))])
    assert client.delete_record("dense", "p05")
    assert client.rank("dense", "p05") is None
    client.write_batch("reference", [("p06", [(3, T0 + 7)]), ("new", [(4, T0 + 8)])], replace=False)
    assert client.bulk_load("latest_double", [("loaded", [(1.5, T0 + 9)])]) == 1
    client.set_metadata("daily", "p07", {"name": "Seven"})
    assert client.metadata("daily", "p07") == {"name": "Seven"}
    # Hiding and restoring a record the release wrote.
    leader = tuple(client.top("daily", 1)[0].pk)
    assert client.hide_record("daily", leader, reason="checked")
    assert tuple(client.top("daily", 1)[0].pk) != leader
    assert client.restore_record("daily", leader)
    assert tuple(client.top("daily", 1)[0].pk) == leader
    # Writes the release made with idempotency keys, sent again: the first answers, nothing changed.
    for write in fixture["keyed_writes"]:
        index = write["args"][0]
        board = {"group": ("live",)} if index == "fair" else {}
        before = client.top(index, 100, **board)
        assert compat.plain(getattr(client, write["op"])(*write["args"], **write["kwargs"])) == write["answer"]
        assert client.top(index, 100, **board) == before
    assert client.add_score("daily", "keyed", 1, T0 + 11, idempotency_key="new-key") == client.add_score(
        "daily", "keyed", 1, T0 + 11, idempotency_key="new-key"
    )
    # Windows: one added over the stored scores and filled; the half-filled ones finished.
    client.update_windows("daily", windows=[(5, T0, T0 + 5 * DAY)], all_time=True)
    for name in sorted(names & {"daily", "filling", "filling2"}):
        while not client.fill(name).done:
            pass
    assert all(not w.filling for name in names for w in client.list_windows(name).windows)
    assert client.count("filling", window_type=1, timestamp=T0) > 0
    assert client.expire("trimmed", T0 + DAY)
    assert client.trim("daily", T0 + DAY) >= 0
    client.delete_records("sum_groups", group=("us",))
    assert client.count("sum_groups", group=("us",)) == 0
    if "leagues" in names:
        client.add_score("leagues", "joiner", 50, T0 + 3 * DAY + 5)
        assert client.cohort("leagues", "joiner", timestamp=T0 + 3 * DAY + 5) is not None
        client.add_score("columns", "p01", (9, 1), T0 + DAY + 9)
        # The webhooks' pending events are kept, and ended windows are not noticed twice.
        hooks = [h for name in ("daily", "columns") for h in client.webhooks(name)]
        assert [h.pending for h in hooks] == [1, 1]
        assert client.notice_window_ends("daily").events == 0
        client.delete_records("fair", group=("live",))
        assert client.count("fair", group=("live",)) == 0
        assert client.audit_events(action="DeleteRecords", limit=10)[0]
