"""Fair play through every door (gRPC, the sync and asyncio clients, HTTP, the CLI), on each store.

- Hiding a record takes it out of every window's listings, ranks and counts at once; writes to it
  while hidden are stored, and restoring it shows it with them; the consistency check passes
  throughout.  Hidden records are listed with the name of the token that hid them, when and why;
  only the admin role may hide, restore or list.
- Score rules, set from the CLI and read back by the client: a score out of range is refused
  INVALID_ARGUMENT (HTTP 400) naming its rule; past a submission limit RESOURCE_EXHAUSTED (HTTP
  429 with Retry-After); the refused write changes nothing; the metrics count refusals by rule.

The expected boards are written out by hand from the scores sent (three records, one window).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import httpx
import pytest
from click.testing import CliRunner

from fdb_leaderboard.access import Tokens
from fdb_leaderboard.cli import main
from fdb_leaderboard.client import (
    AsyncLeaderboardClient,
    LeaderboardClient,
    PermissionDenied,
    ScoreOutOfRange,
    SubmissionLimited,
)
from fdb_leaderboard.http import HttpServer
from fdb_leaderboard.index import ScoreRules
from fdb_leaderboard.service import Server, ServerSettings
from tests.conftest import ServerPlace

pytestmark = pytest.mark.usefixtures("no_unexpected_server_errors")

READER = "reader-token-0123456789"
WRITER = "writer-token-0123456789"
ADMIN = "admin-token-01234567890"
T0 = 1_795_420_000
NOW = 1_800_000_030.0  # the server's clock, pinned: 30 s into a minute


@pytest.fixture
def served(server_place: ServerPlace) -> Iterator[tuple[Server, HttpServer]]:
    tokens = Tokens.parse(f"read:{READER} write:{WRITER} alice:admin:{ADMIN}")
    server = server_place.start(ServerSettings(maintain_every=0, tokens=tokens))
    http = HttpServer(server, "127.0.0.1:0").start()
    with LeaderboardClient(server.address, token=ADMIN, timeout=20) as admin:
        admin.create_index("game")
        admin.update_windows("game", all_time=True)
    server.catalog.get("game").clock = lambda: NOW
    yield server, http
    server.stop(grace=1)


def _cli(server: Server, token: str, *args: object, code: int = 0) -> str:
    result = CliRunner().invoke(
        main, ["--server", server.address, *map(str, args)], env={"FDB_LEADERBOARD_TOKEN": token}
    )
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    return result.output


def _board(client: LeaderboardClient) -> list[tuple[str, int]]:
    return [(entry.pk[0], entry.score) for entry in client.top("game", 10)]  # type: ignore[misc]


def test_hide_and_restore_through_every_door(served: tuple[Server, HttpServer]) -> None:
    server, http = served
    with (
        LeaderboardClient(server.address, token=WRITER, timeout=20) as writer,
        LeaderboardClient(server.address, token=ADMIN, timeout=20) as admin,
        httpx.Client(base_url=http.url, timeout=20) as web,
    ):
        for pk, score in (("ann", 30), ("bob", 50), ("cat", 10)):
            writer.add_score("game", pk, score, T0)
        assert _board(writer) == [("bob", 50), ("ann", 30), ("cat", 10)]

        with pytest.raises(PermissionDenied):
            writer.hide_record("game", "bob", "aimbot")
        assert admin.hide_record("game", "bob", "aimbot") is True
        assert admin.hide_record("game", "bob", "again") is False  # hidden already: the first note stays
        assert _board(writer) == [("ann", 30), ("cat", 10)]
        assert writer.count("game") == 2
        assert writer.rank("game", "bob") is None
        assert writer.rank("game", "cat") == 1

        writer.add_score("game", "bob", 70, T0 + 1)  # stored while hidden, ranked nowhere
        assert _board(writer) == [("ann", 30), ("cat", 10)]

        (record,), following = admin.hidden_records("game")
        assert following is None
        assert admin.hidden_records("game", 10, b"\xff\xff") == ([], None)  # a made-up continuation: past the end
        assert (record.pk, record.actor, record.hidden_at, record.reason) == (("bob",), "alice", int(NOW), "aimbot")
        listed = json.loads(_cli(server, ADMIN, "hidden-records", "game", "--json"))
        assert listed == {"records": [{"pk": ["bob"], "actor": "alice", "hidden_at": int(NOW), "reason": "aimbot"}]}
        assert "bob  hidden by alice at" in _cli(server, ADMIN, "hidden-records", "game")
        assert "PERMISSION_DENIED" in _cli(server, READER, "hidden-records", "game", code=1)
        answer = web.post("/v1/ListHiddenRecords", json={"index": "game"}, headers={"authorization": f"Bearer {ADMIN}"})
        assert answer.status_code == 200, answer.text
        assert answer.json()["records"][0]["actor"] == "alice"
        refused = web.post("/v1/RestoreRecord", json={"index": "game", "pk": [{"string": "bob"}]})
        assert refused.status_code == 401

        restored = web.post(
            "/v1/RestoreRecord",
            json={"index": "game", "pk": [{"string": "bob"}]},
            headers={"authorization": f"Bearer {ADMIN}"},
        )
        assert restored.status_code == 200 and restored.json() == {"changed": True}
        assert _board(writer) == [("bob", 70), ("ann", 30), ("cat", 10)]  # with the score sent while hidden
        assert admin.hidden_records("game") == ([], None)
        assert admin.verify("game") == []

        async def hide_and_restore_async() -> tuple[bool, list[str], bool]:
            async with AsyncLeaderboardClient(server.address, token=ADMIN, timeout=20) as lb:
                hidden = await lb.hide_record("game", "ann", "smurf")
                top = [entry.pk[0] for entry in await lb.top("game", 10)]  # type: ignore[misc]
                return hidden, top, await lb.restore_record("game", "ann")

        assert asyncio.run(hide_and_restore_async()) == (True, ["bob", "cat"], True)
        assert "cat hidden" in _cli(server, ADMIN, "hide-record", "game", "cat", "--reason", "bot")
        assert _board(writer) == [("bob", 70), ("ann", 30)]
        restored_cat = json.loads(_cli(server, ADMIN, "restore-record", "game", "cat", "--json"))
        assert restored_cat == {"pk": ["cat"], "changed": True}
        assert _board(writer) == [("bob", 70), ("ann", 30), ("cat", 10)]
        assert "NOT_FOUND" in _cli(server, ADMIN, "hide-record", "game", "nobody", code=1)
        assert admin.verify("game") == []


def test_score_rules_through_every_door(served: tuple[Server, HttpServer]) -> None:
    server, http = served
    with (
        LeaderboardClient(server.address, token=WRITER, timeout=20) as writer,
        httpx.Client(base_url=http.url, timeout=20, headers={"authorization": f"Bearer {WRITER}"}) as web,
    ):
        assert writer.score_rules("game") == ScoreRules()
        assert "PERMISSION_DENIED" in _cli(server, WRITER, "rules", "set", "game", "--max-score", "100", code=1)
        shown = _cli(
            server, ADMIN, "rules", "set", "game", "--min-score", "0", "--max-score", "100", "--max-per-minute", 2
        )
        assert shown.strip() == "scores from 0, scores up to 100, 2 submissions per record and minute"
        assert writer.score_rules("game") == ScoreRules(0, 100, 0, 2)
        assert json.loads(_cli(server, READER, "rules", "show", "game", "--json")) == {
            "min_score": 0,
            "max_score": 100,
            "max_per_window": 0,
            "max_per_minute": 2,
        }

        with pytest.raises(ScoreOutOfRange) as high:
            writer.add_score("game", "ann", 101, T0)
        assert high.value.rule == "max_score"
        out_of_range = web.post("/v1/indexes/game/scores", json={"pk": "ann", "score": -1, "timestamp": T0})
        assert out_of_range.status_code == 400
        assert (out_of_range.json()["code"], out_of_range.json()["rule"]) == ("INVALID_ARGUMENT", "min_score")
        assert writer.count("game") == 0  # refused writes changed nothing

        writer.add_score("game", "ann", 10, T0)
        writer.add_score("game", "ann", 20, T0 + 1)
        with pytest.raises(SubmissionLimited) as limited:
            writer.add_score("game", "ann", 90, T0 + 2)
        assert (limited.value.rule, limited.value.retry_after) == ("max_per_minute", 30.0)
        over = web.post("/v1/indexes/game/scores", json={"pk": "ann", "score": 95, "timestamp": T0 + 3})
        assert over.status_code == 429
        assert over.headers["retry-after"] == "30"
        assert (over.json()["rule"], over.json()["retry_after"]) == ("max_per_minute", 30.0)
        assert "RESOURCE_EXHAUSTED" in _cli(server, WRITER, "add", "game", "ann", "--score", 99, "--at", T0, code=1)
        assert _board(writer) == [("ann", 20)]
        writer.add_score("game", "bob", 5, T0)  # the limit is per record

        server.catalog.get("game").clock = lambda: NOW + 30  # the next minute
        writer.add_score("game", "ann", 90, T0 + 4)
        assert _board(writer) == [("ann", 90), ("bob", 5)]

        metrics = web.get("/metrics").text
        refusals = {
            line.split("{")[1].split("}")[0]: float(line.rsplit(" ", 1)[1])
            for line in metrics.splitlines()
            if line.startswith("fdb_leaderboard_score_rule_refusals_total{")
        }
        assert refusals == {
            'method="AddScore",rule="max_score"': 1.0,
            'method="AddScore",rule="min_score"': 1.0,
            'method="AddScore",rule="max_per_minute"': 3.0,
        }

        cleared = _cli(server, ADMIN, "rules", "set", "game")
        assert cleared.strip() == "no score rules"
        writer.add_score("game", "ann", 1000, T0 + 5)
        assert _board(writer) == [("ann", 1000), ("bob", 5)]
    with LeaderboardClient(server.address, token=ADMIN, timeout=20) as admin:
        assert admin.verify("game") == []


def test_deleting_a_groups_records_and_every_record_through_every_door(served: tuple[Server, HttpServer]) -> None:
    server, http = served
    with (
        LeaderboardClient(server.address, token=ADMIN, timeout=20) as admin,
        httpx.Client(base_url=http.url, timeout=20, headers={"authorization": f"Bearer {ADMIN}"}) as web,
    ):
        admin.create_index("seasons", group_size=1)
        admin.update_windows("seasons", windows=[(1, T0, T0 + 86_400)], all_time=True, update_timestamp=1)
        for pk, season, score in (
            ("ann", "s1", 5),
            ("ann", "s2", 7),
            ("bob", "s1", 9),
            ("cat", "s1", 3),
            ("dan", "s2", 4),
        ):
            admin.add_score("seasons", pk, score, T0, group=season)

        def board(season: str, window_type: int = 0) -> list[tuple[str, int]]:
            top = admin.top("seasons", 10, window_type, T0, group=season)
            return [(entry.pk[0], entry.score) for entry in top]  # type: ignore[misc]

        with LeaderboardClient(server.address, token=WRITER, timeout=20) as writer, pytest.raises(PermissionDenied):
            writer.delete_records("seasons", "s1")
        assert "--group GROUP or --all-records" in _cli(server, ADMIN, "delete-records", "seasons", code=2)

        shown = json.loads(_cli(server, ADMIN, "delete-records", "seasons", "--group", "s1", "--batch", 1, "--json"))
        assert shown == {"records_changed": 3, "records_deleted": 2, "entries_deleted": 3}
        assert board("s1") == [] and board("s1", 1) == []
        assert board("s2") == [("ann", 7), ("dan", 4)] == board("s2", 1)
        assert admin.metadata("seasons", "bob") is None  # left with nothing: deleted whole
        assert admin.metadata("seasons", "ann") == {}  # keeps its other season

        totals = []
        done = admin.delete_records("seasons", all_records=True, max_records=1, progress=totals.append)
        assert (done.done, done.records_changed, done.records_deleted, done.entries_deleted) == (True, 2, 2, 2)
        assert totals[-1] == done
        assert board("s2") == [] and admin.count("seasons", 0, None, "s2") == 0
        assert [w.type for w in admin.list_windows("seasons").windows] == [0, 1]  # the index and its windows stay

        admin.add_score("seasons", "eve", 8, T0, group="s3")
        answer = web.post("/v1/DeleteRecords", json={"index": "seasons", "all_records": True})
        assert answer.status_code == 200, answer.text
        assert answer.json()["done"] is True and int(answer.json()["records_deleted"]) == 1
        refused = web.post("/v1/DeleteRecords", json={"index": "seasons"})
        assert (refused.status_code, refused.json()["code"]) == (400, "INVALID_ARGUMENT")
        assert admin.verify("seasons") == []


def test_a_window_files_rules_section_sets_the_score_rules(served: tuple[Server, HttpServer], tmp_path) -> None:
    server, _ = served
    spec = tmp_path / "windows.yaml"
    spec.write_text("all_time: true\nrules: {min_score: 1, max_per_window: 3}\n")
    applied = json.loads(_cli(server, ADMIN, "windows", "apply", "game", spec, "--json"))
    assert applied["rules_set"] is True
    with LeaderboardClient(server.address, token=READER, timeout=20) as reader:
        assert reader.score_rules("game") == ScoreRules(1, None, 3, 0)
    spec.write_text("rules: {max_per_hour: 3}\n")
    assert "unknown key(s) in rules: max_per_hour" in _cli(server, ADMIN, "windows", "apply", "game", spec, code=1)


def test_a_per_window_limit_refuses_past_its_count_and_says_when_to_retry(served: tuple[Server, HttpServer]) -> None:
    server, http = served
    day = int(NOW) - int(NOW) % 86_400  # today's window of the server's clock, and yesterday's
    with (
        LeaderboardClient(server.address, token=ADMIN, timeout=20) as admin,
        httpx.Client(base_url=http.url, timeout=20, headers={"authorization": f"Bearer {WRITER}"}) as web,
    ):
        admin.update_windows("game", windows=[(1, day - 86_400, day), (1, day, day + 86_400)], update_timestamp=1)
        admin.set_score_rules("game", ScoreRules(max_per_window=2))
        for score in (1, 2):
            admin.add_score("game", "ann", score, day + 10)
        with pytest.raises(SubmissionLimited) as today:
            admin.add_score("game", "ann", 3, day + 20)
        assert (today.value.rule, today.value.retry_after) == ("max_per_window", day + 86_400 - NOW)
        admin.add_score("game", "ann", 4, day - 10)  # yesterday's window counts apart
        admin.add_score("game", "bob", 5, day + 20)  # and each record apart
        admin.add_score("game", "ann", 6, day - 20)
        over = web.post("/v1/indexes/game/scores", json={"pk": "ann", "score": 7, "timestamp": day - 30})
        assert over.status_code == 429 and "retry-after" not in over.headers  # that window has ended
        assert (over.json()["rule"], "retry_after" in over.json()) == ("max_per_window", False)
        top = admin.top("game", 5, 1, day + 20)
        assert [(entry.pk[0], entry.score) for entry in top] == [("bob", 5), ("ann", 2)]
        assert admin.verify("game") == []
