"""The audit trail through every door (gRPC, the sync and asyncio clients, HTTP, the CLI), on each store.

- Each admin action leaves exactly one event (a long job: its start and end when it takes more
  than one batch), named after the token that asked (two admins, two names), with its index and
  arguments; score writes leave none; an action that changes nothing (hiding a hidden record, a
  keyed call sent again) leaves none.  The oracle is the list of calls made here, in order.
- Events of a dropped index stay, listed by its name.
- Listing filters (index, action, time), pages (a continuation) and newest-first agree with the
  whole list filtered here; REST's answer is gRPC's in JSON; the CLI prints the same events.
- Retention: expiry in bounded batches clears only events older than the retention (their times
  pinned here), through the RPC, ``maintain`` and the server's own maintenance.
- The REST resource routes of hiding, hidden records, score rules and deletions answer what
  gRPC answers.
"""

from __future__ import annotations

import asyncio
import base64
import getpass
import json
import time
from collections.abc import Iterator

import httpx
import pytest
from click.testing import CliRunner

from fdb_leaderboard.access import Tokens
from fdb_leaderboard.cli import main
from fdb_leaderboard.client import AsyncLeaderboardClient, LeaderboardClient, PermissionDenied
from fdb_leaderboard.http import HttpServer
from fdb_leaderboard.http.rest import plain_message
from fdb_leaderboard.index import AuditEvent, AuditTrail, IndexSettings, LeaderboardIndex, ScoreRules
from fdb_leaderboard.proto import service_pb2 as pb
from fdb_leaderboard.service import Server, ServerSettings
from fdb_leaderboard.service.housekeeping import Housekeeping
from tests.conftest import ServerPlace

pytestmark = pytest.mark.usefixtures("no_unexpected_server_errors")

WRITER = "writer-token-0123456789"
ALICE = "alice-admin-token-0123456"
BOB = "bob-admin-token-012345678"
T0 = 1_795_420_000
DAY = 86_400


@pytest.fixture
def served(server_place: ServerPlace) -> Iterator[tuple[Server, HttpServer]]:
    tokens = Tokens.parse(f"write:{WRITER} alice:admin:{ALICE} bob:admin:{BOB}")
    server = server_place.start(ServerSettings(maintain_every=0, tokens=tokens))
    http = HttpServer(server, "127.0.0.1:0").start()
    yield server, http
    server.stop(grace=1)


def _cli(server: Server, token: str | None, *args: object, code: int = 0) -> str:
    env = {"FDB_LEADERBOARD_TOKEN": token} if token else {}
    result = CliRunner().invoke(main, ["--server", server.address, *map(str, args)], env=env)
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    return result.output


def _all_events(client: LeaderboardClient, **filters: object) -> list[AuditEvent]:
    events: list[AuditEvent] = []
    continuation = None
    while True:
        page, continuation = client.audit_events(**filters, continuation=continuation)  # type: ignore[arg-type]
        events.extend(page)
        if continuation is None:
            return events


def _seen(events: list[AuditEvent]) -> list[tuple[str, str, str]]:
    return [(event.actor, event.action, event.index) for event in events]


def test_each_admin_action_leaves_one_event_naming_its_token(served: tuple[Server, HttpServer]) -> None:
    server, _ = served
    expected: list[tuple[str, str, str]] = []
    with (
        LeaderboardClient(server.address, token=ALICE, timeout=20) as alice,
        LeaderboardClient(server.address, token=BOB, timeout=20) as bob,
        LeaderboardClient(server.address, token=WRITER, timeout=20) as writer,
    ):
        alice.create_index("game", group_size=1)
        expected.append(("alice", "CreateIndex", "game"))
        assert alice.create_index("game", group_size=1) is False  # exists: nothing changed, nothing recorded
        bob.set_maintenance("game", pb.MaintenancePolicy(retain=30 * DAY))
        expected.append(("bob", "SetMaintenancePolicy", "game"))
        alice.update_windows("game", windows=[(1, T0, T0 + DAY), (1, T0 + DAY, T0 + 2 * DAY)], update_timestamp=1)
        expected.append(("alice", "UpdateWindows", "game"))
        alice.update_windows("game", windows=[(1, T0, T0 + DAY)], update_timestamp=1)  # the same: no change
        bob.save_sub_directory("game", ("s1",), True)
        expected.append(("bob", "SaveSubDirectory", "game"))
        for pk, score, season in (("ann", 5, "s1"), ("bob", 7, "s1"), ("cat", 3, "s2")):
            writer.add_score("game", pk, score, T0 + 10, group=season)  # score writes: no events
        writer.add_score("game", "ann", 6, T0 + 11, group="s1", idempotency_key="k-1")

        assert bob.hide_record("game", "bob", "aimbot", idempotency_key="hide-1") is True
        assert bob.hide_record("game", "bob", "aimbot", idempotency_key="hide-1") is True  # a repeat: replayed
        assert alice.hide_record("game", "bob", "again") is False  # hidden already: changes nothing
        expected.append(("bob", "HideRecord", "game"))
        assert "cat hidden" in _cli(server, ALICE, "hide-record", "game", "cat", "--reason", "smurf")
        expected.append(("alice", "HideRecord", "game"))
        assert alice.restore_record("game", "bob") is True
        expected.append(("alice", "RestoreRecord", "game"))

        async def restore_async() -> bool:
            async with AsyncLeaderboardClient(server.address, token=BOB, timeout=20) as lb:
                return await lb.restore_record("game", "cat")

        assert asyncio.run(restore_async()) is True
        expected.append(("bob", "RestoreRecord", "game"))
        alice.set_score_rules("game", ScoreRules(0, 100))
        expected.append(("alice", "SetScoreRules", "game"))
        assert [w.start for w in alice.expire("game", T0 + DAY)] == [T0]
        expected.append(("alice", "Expire", "game"))
        bob.trim("game", T0)
        expected.append(("bob", "Trim", "game"))
        assert alice.expire_idempotency_keys("game", before=2**40) >= 2  # k-1, hide-1 and the client's own
        expected.append(("alice", "ExpireIdempotencyKeys", "game"))
        bob.set_writes_paused("game", True, "moving")
        bob.set_writes_paused("game", False)
        expected += [("bob", "SetWritesPaused", "game")] * 2
        deleted = bob.delete_records("game", "s1", max_records=1)  # two records: two batches
        assert deleted.records_changed == 2
        expected += [("bob", "DeleteRecords", "game")] * 2  # started, finished
        alice.delete_records("game", all_records=True)  # one batch: one event
        expected.append(("alice", "DeleteRecords", "game"))
        alice.create_index("other")
        expected.append(("alice", "CreateIndex", "other"))
        bob.drop_index("game")
        expected.append(("bob", "DropIndex", "game"))

        events = _all_events(alice)
        assert _seen(events) == expected
        assert [e.at_us for e in events] == sorted(e.at_us for e in events)
        hide = events[4]
        assert (hide.action, hide.details) == ("HideRecord", {"pk": "('bob',)", "reason": "aimbot"})
        phases = [e.details["phase"] for e in events if e.action == "DeleteRecords"]
        assert phases == ["started", "finished", "finished"]
        assert events[-4].details["records_changed"] == "2" and events[-4].details["group"] == "('s1',)"
        assert events[1].details["policy"] == "retain: 2592000"
        # The dropped index's events stay, found by its name; writers may not read them.
        assert _seen(_all_events(bob, index="game")) == [seen for seen in expected if seen[2] == "game"]
        with pytest.raises(PermissionDenied):
            writer.audit_events()


def test_listing_filters_pages_and_every_door_agree(served: tuple[Server, HttpServer]) -> None:
    server, http = served
    with (
        LeaderboardClient(server.address, token=ALICE, timeout=20) as alice,
        httpx.Client(base_url=http.url, timeout=20) as web,
    ):
        for name in ("a", "b", "c"):
            alice.create_index(name)
            alice.set_score_rules(name, ScoreRules(max_per_minute=5))
        everything = _all_events(alice)
        assert _seen(everything) == [
            ("alice", action, name) for name in "abc" for action in ("CreateIndex", "SetScoreRules")
        ]
        pages = []
        continuation = None
        while True:
            page, continuation = alice.audit_events(limit=2, continuation=continuation)
            pages.append(page)
            if continuation is None:
                break
        assert [len(page) for page in pages] == [2, 2, 2, 0] or [len(page) for page in pages] == [2, 2, 2]
        assert [event for page in pages for event in page] == everything
        assert _all_events(alice, index="b") == [e for e in everything if e.index == "b"]
        assert _all_events(alice, action="SetScoreRules") == [e for e in everything if e.action == "SetScoreRules"]
        middle = everything[2].at_us
        assert _all_events(alice, since_us=middle) == everything[2:]
        assert _all_events(alice, until_us=middle) == everything[:2]
        assert _all_events(alice, newest_first=True) == everything[::-1]
        newest, following = alice.audit_events(limit=4, newest_first=True)
        rest, _ = alice.audit_events(newest_first=True, continuation=following)
        assert newest + rest == everything[::-1]

        # REST answers gRPC's answer as JSON; the CLI prints the same events.
        grpc_answer = server.service.ListAuditEvents(pb.ListAuditEventsRequest(index="b"), _AdminCall())
        answer = web.get("/v1/audit", params={"index": "b"}, headers={"authorization": f"Bearer {ALICE}"})
        assert answer.status_code == 200, answer.text
        assert answer.json() == plain_message(grpc_answer)
        assert answer.json()["retention"] == 90 * DAY
        assert [e["action"] for e in answer.json()["events"]] == ["CreateIndex", "SetScoreRules"]
        paged = web.get("/v1/audit", params={"limit": 4}, headers={"authorization": f"Bearer {ALICE}"}).json()
        following_page = web.get(
            "/v1/audit",
            params={"continuation": paged["continuation"], "limit": 10},
            headers={"authorization": f"Bearer {ALICE}"},
        ).json()
        assert len(paged["events"]) + len(following_page["events"]) == 6 and following_page["continuation"] == ""
        assert web.get("/v1/audit", headers={"authorization": f"Bearer {WRITER}"}).status_code == 403
        assert web.get("/v1/audit").status_code == 401
        shown = json.loads(_cli(server, ALICE, "audit", "--index", "c", "--json"))
        assert [(e["actor"], e["action"], e["index"]) for e in shown["events"]] == _seen(
            [e for e in everything if e.index == "c"]
        )
        assert shown["events"][1]["details"] == {"rules": "5 submissions per record and minute"}
        lines = _cli(server, ALICE, "audit", "--action", "CreateIndex").splitlines()
        assert [line.split("  ")[1:4] for line in lines] == [["alice", "CreateIndex", name] for name in "abc"]
        first = CliRunner().invoke(
            main, ["--server", server.address, "audit", "--limit", "5"], env={"FDB_LEADERBOARD_TOKEN": ALICE}
        )
        assert first.exit_code == 0 and len(first.stdout.splitlines()) == 5
        shown_continuation = first.stderr.strip().removeprefix("more: --continuation ")
        assert base64.urlsafe_b64decode(shown_continuation)
        last = _cli(server, ALICE, "audit", "--continuation", shown_continuation, "--json")
        assert [e["index"] for e in json.loads(last)["events"]] == ["c"]
        assert "--since" in _cli(server, ALICE, "audit", "--since", "yesterday-ish", code=2)


class _AdminCall:
    """A handler's call context for calling the service directly."""

    actor = "test"

    def is_active(self) -> bool:
        return True

    def time_remaining(self) -> float:
        return 30.0


def test_retention_clears_only_old_events_in_bounded_batches(served: tuple[Server, HttpServer], tmp_path) -> None:
    server, http = served
    trail = server.catalog.audit
    now = trail.clock()
    with LeaderboardClient(server.address, token=ALICE, timeout=20) as alice:
        trail.clock = lambda: now - 10 * DAY  # events of ten days ago
        alice.create_index("old")
        for low in range(4):
            alice.set_score_rules("old", ScoreRules(low))
        trail.clock = lambda: now - 2 * DAY
        alice.set_score_rules("old", ScoreRules(10))
        trail.clock = time.time  # later than now
        alice.create_index("new")
        before = _all_events(alice)
        assert len(before) == 7

        assert "kept 7d" in _cli(server, ALICE, "audit-retention", "7d")
        assert json.loads(_cli(server, BOB, "audit-retention", "--json")) == {"retention": 7 * DAY}
        assert "PERMISSION_DENIED" in _cli(server, WRITER, "audit-retention", "1d", code=1)
        # Bounded batches: two events per transaction, one transaction per call.
        assert server.catalog.expire_audit_events(max_events=2, keep_going=lambda: False) == (2, False)
        assert server.catalog.expire_audit_events(max_events=2, keep_going=lambda: False) == (2, False)
        assert server.catalog.expire_audit_events(max_events=2, keep_going=lambda: False) == (1, True)
        assert server.catalog.expire_audit_events(max_events=2) == (0, True)
        after = _all_events(alice)
        kept = [e for e in after if e.action not in ("SetAuditRetention", "ExpireAuditEvents")]
        assert kept == before[5:]  # the events of ten days ago went; two days ago and now stay
        jobs = [(e.actor, e.action, e.details.get("phase")) for e in after if e not in kept]
        assert jobs == [
            ("alice", "SetAuditRetention", None),
            ("local", "ExpireAuditEvents", "started"),
            ("local", "ExpireAuditEvents", "stopped"),
            ("local", "ExpireAuditEvents", "started"),
            ("local", "ExpireAuditEvents", "stopped"),
            ("local", "ExpireAuditEvents", "finished"),
        ]

        # The window file's maintenance section sets the retention; maintain clears past it.
        spec = tmp_path / "windows.yaml"
        spec.write_text("all_time: true\nmaintenance: {audit_retention: 1d}\n")
        applied = json.loads(_cli(server, ALICE, "windows", "apply", "new", spec, "--json"))
        assert applied["audit_retention"] == DAY and applied["maintenance_set"] is False
        assert "cleared 1 event past its retention" in _cli(server, ALICE, "maintain", "--once")
        assert [e.details for e in _all_events(alice, action="SetScoreRules")] == []
        # The server's own maintenance clears too, as "maintenance".
        trail.clock = lambda: now - 3 * DAY
        alice.set_score_rules("new", ScoreRules(1))
        trail.clock = time.time
        done = Housekeeping(server.catalog).run_pass(now)
        assert "audit trail: cleared 1 event(s) past its retention" in done
        assert _all_events(alice, action="ExpireAuditEvents")[-1].actor == "maintenance"
        assert _all_events(alice, action="SetScoreRules") == []
        web = httpx.post(
            f"{http.url}/v1/audit/retention", json={"retention": 0}, headers={"authorization": f"Bearer {BOB}"}
        )
        assert web.status_code == 200 and web.json() == {"retention": 90 * DAY}
        refused = httpx.post(
            f"{http.url}/v1/audit/retention", json={"retention": -1}, headers={"authorization": f"Bearer {BOB}"}
        )
        assert refused.status_code == 400


def test_without_tokens_the_cli_names_its_local_user(server_place: ServerPlace) -> None:
    server = server_place.start(ServerSettings(maintain_every=0))
    try:
        _cli(server, None, "index", "create", "game")
        with LeaderboardClient(server.address, timeout=20) as anonymous:
            anonymous.drop_index("game")
            events = _all_events(anonymous)
        assert _seen(events) == [
            (f"anonymous:{getpass.getuser()}", "CreateIndex", "game"),
            ("anonymous", "DropIndex", "game"),
        ]
    finally:
        server.stop(grace=1)


def test_rest_resource_routes_answer_as_grpc(served: tuple[Server, HttpServer]) -> None:
    server, http = served
    call = _AdminCall()
    service = server.service
    admin = {"authorization": f"Bearer {ALICE}"}
    with (
        LeaderboardClient(server.address, token=ALICE, timeout=20) as alice,
        httpx.Client(base_url=http.url, timeout=20, headers=admin) as web,
    ):
        alice.create_index("seasons", group_size=1)
        for pk, season, score in (("ann", "s1", 5), ("bob", "s1", 9), ("cat", "s2", 3), ("dan", "s2", 4)):
            alice.add_score("seasons", pk, score, T0, group=season)

        hidden = web.post("/v1/indexes/seasons/records/bob/hide", json={"reason": "aimbot"})
        assert hidden.status_code == 200 and hidden.json() == {"changed": True}
        again = service.HideRecord(pb.HideRecordRequest(index="seasons", pk=[pb.Item(string="bob")]), call)
        assert web.post("/v1/indexes/seasons/records/bob/hide", json={}).json() == plain_message(again)
        listed = web.get("/v1/indexes/seasons/hidden-records")
        grpc_listed = service.ListHiddenRecords(pb.ListHiddenRecordsRequest(index="seasons"), call)
        assert listed.json() == plain_message(grpc_listed)
        assert listed.json()["records"][0]["pk"] == ["bob"] and listed.json()["records"][0]["actor"] == "alice"
        assert web.post("/v1/indexes/seasons/records/bob/restore", json={}).json() == {"changed": True}
        assert web.post("/v1/indexes/seasons/records/nobody/hide", json={}).status_code == 404
        assert web.post("/v1/indexes/seasons/records/bob/hide", json={"why": 1}).status_code == 400
        forbidden = httpx.post(
            f"{http.url}/v1/indexes/seasons/records/bob/hide", json={}, headers={"authorization": f"Bearer {WRITER}"}
        )
        assert forbidden.status_code == 403

        assert web.get("/v1/indexes/seasons/rules").json() == {"rules": {"max_per_window": 0, "max_per_minute": 0}}
        set_rules = web.post("/v1/indexes/seasons/rules", json={"min_score": 0, "max_score": 1000, "max_per_minute": 9})
        assert set_rules.status_code == 200, set_rules.text
        grpc_rules = service.GetScoreRules(pb.GetScoreRulesRequest(index="seasons"), call)
        assert set_rules.json() == plain_message(grpc_rules) == web.get("/v1/indexes/seasons/rules").json()
        assert set_rules.json()["rules"] == {
            "min_score": 0,
            "max_score": 1000,
            "max_per_window": 0,
            "max_per_minute": 9,
        }
        assert alice.score_rules("seasons") == ScoreRules(0, 1000, 0, 9)
        assert web.post("/v1/indexes/seasons/rules", json={"max_per_minute": -1}).status_code == 400

        group = web.delete("/v1/indexes/seasons/groups/s1/records", params={"max_records": 1})
        assert group.status_code == 200, group.text
        assert group.json() == {
            "done": True,
            "records_changed": 2,
            "records_deleted": 2,
            "entries_deleted": 2,
            "continuation": "",
        }
        assert alice.count("seasons", group="s1") == 0 and alice.count("seasons", group="s2") == 2
        everything = web.delete("/v1/indexes/seasons/records")
        assert everything.json()["records_deleted"] == 2 and everything.json()["done"] is True
        grpc_none = service.DeleteRecords(pb.DeleteRecordsRequest(index="seasons", all_records=True), call)
        assert web.delete("/v1/indexes/seasons/records").json() == plain_message(grpc_none)
        actions = [e.action for e in _all_events(alice, index="seasons")]
        # The group's deletion took batches (started, finished), each other deletion one.
        assert actions == ["CreateIndex", "HideRecord", "RestoreRecord", "SetScoreRules"] + ["DeleteRecords"] * 5
        document = web.get("/openapi.json").json()["paths"]
        assert {"post"} <= set(document["/v1/indexes/{index}/records/{pk}/hide"])
        assert set(document["/v1/indexes/{index}/rules"]) == {"get", "post"}
        assert set(document["/v1/indexes/{index}/records"]) == {"delete"}
        assert set(document["/v1/audit"]) == {"get"}


def test_loads_dumps_and_restores_are_recorded(served: tuple[Server, HttpServer]) -> None:
    server, _ = served
    with LeaderboardClient(server.address, token=ALICE, timeout=20) as alice:
        alice.create_index("cup")
        records = [((f"p{i}",), [(i, T0 + i)]) for i in range(7)]
        assert alice.bulk_load("cup", records, batch_size=3) == 7
        parts = list(alice.dump("cup"))
        with LeaderboardClient(server.address, token=BOB, timeout=20) as bob:
            assert list(bob.restore(parts, "cup-copy"))[-1].phase == "done"
        assert alice.count("cup-copy") == 7
        events = _all_events(alice)
    assert [(e.actor, e.action, e.index, e.details.get("phase")) for e in events] == [
        ("alice", "CreateIndex", "cup", None),
        ("alice", "BulkLoad", "cup", "started"),  # its windows built from sorted data: no fill of its own
        ("alice", "BulkLoad", "cup", "finished"),
        ("alice", "Dump", "cup", "started"),
        ("bob", "Restore", "cup-copy", None),
    ]
    assert events[2].details["records_written"] == "7"
    assert events[4].details["source"].startswith("cup (")


def test_a_long_job_records_its_start_progress_at_most_once_a_minute_and_end(db, prefix: bytes) -> None:
    """A deletion of six batches on an index whose trail's clock moves 40 s per event taken:
    started, then progress whenever a minute has passed since the last event, then finished."""
    ticks = iter(range(1_000_000, 2_000_000, 40))
    index = LeaderboardIndex.create(db, prefix, IndexSettings())
    # (the trail beside the index's keys, under the test's prefix, which is cleared afterwards)
    index.audit, index.name = AuditTrail(prefix + b"\xfe", clock=lambda: next(ticks)), "cup"
    for i in range(5):
        index.add_score((f"p{i}",), i, T0)
    done = index.delete_records(None, max_records=1, actor="ann")
    assert (done.done, done.records_deleted) == (True, 5)
    events = db.read(lambda tr: index.audit.events(tr))[0]
    assert [(e.details["phase"], e.details["records_deleted"]) for e in events] == [
        ("started", "1"),
        ("progress", "3"),
        ("progress", "5"),
        ("finished", "5"),
    ]
    assert {(e.actor, e.action, e.index) for e in events} == {("ann", "DeleteRecords", "cup")}
