"""Exactly-once writes: a write sent again under its idempotency key is applied once.

The oracle is arithmetic on a SUM index: a record's total is the sum of the scores applied, so
a repeat applied twice shows as a doubled total.  In the index (every store), through the
service with answers lost after the commit (a proxy cutting the connection: the client cannot
know and must retry), across a server restart and through another server of the same store,
over REST, and from the CLI.
"""

from __future__ import annotations

import threading
from pathlib import Path

import grpc
import httpx
import pytest
from click.testing import CliRunner

from fdb_leaderboard.cli import main
from fdb_leaderboard.client import LeaderboardClient, RetryPolicy
from fdb_leaderboard.errors import AlreadyExists, InvalidArgument, NotFound, ResourceExhausted
from fdb_leaderboard.http import HttpServer
from fdb_leaderboard.index import Entry, IndexSettings, LeaderboardIndex
from fdb_leaderboard.index.idempotency import MAX_KEY_LENGTH
from fdb_leaderboard.store import Database
from tests.support.faults import AnswerCutter

SUM = IndexSettings(aggregation="SUM")
T = 1_000


def total(index: LeaderboardIndex, pk: str) -> int | None:
    found = index.rank_and_entry((pk,))
    return None if found is None else found.score


# -- the index, on every store -------------------------------------------------------------------


def test_a_repeated_write_is_applied_once_and_answered_as_the_first(db: Database, prefix: bytes) -> None:
    index = LeaderboardIndex.create(db, prefix, SUM)
    assert index.add_score(("alice",), 10, T, idempotency_key="score-1") == 1
    assert index.add_score(("alice",), 10, T, idempotency_key="score-1") == 1  # the first answer
    assert total(index, "alice") == 10
    assert index.add_score(("alice",), 10, T, idempotency_key="score-2") == 1  # a new write
    assert total(index, "alice") == 20
    assert index.idempotency_keys() == 2
    with pytest.raises(AlreadyExists, match="'score-1'"):
        index.add_score(("alice",), 11, T, idempotency_key="score-1")
    with pytest.raises(AlreadyExists, match="'score-1'"):  # another operation is another request
        index.save_record(("alice",), [Entry(10, T)], idempotency_key="score-1")
    # (AddScore and AddEntries of that one entry are the same write: its repeat, whichever door)
    assert index.add_entries(("alice",), [Entry(10, T)], idempotency_key="score-1") == 1
    assert total(index, "alice") == 20
    index.add_score(("alice",), 10, T)  # unkeyed writes apply each time
    assert total(index, "alice") == 30


def test_every_write_takes_a_key(db: Database, prefix: bytes) -> None:
    index = LeaderboardIndex.create(db, prefix, SUM)
    for _ in range(2):
        index.add_entries(("bob",), [Entry(1, T), Entry(2, T + 1)], idempotency_key="entries")
        index.save_record(("carol",), [Entry(5, T)], idempotency_key="save")
        index.write_batch([(("dave",), [Entry(7, T)]), (("erin",), [Entry(8, T)])], False, idempotency_key="batch")
        assert index.set_metadata(("bob",), {"name": "Bob"}, idempotency_key="meta") == {"name": "Bob"}
    assert [total(index, pk) for pk in ("bob", "carol", "dave", "erin")] == [3, 5, 7, 8]
    assert index.delete_record(("carol",), idempotency_key="delete") is True
    index.save_record(("carol",), [Entry(6, T)])
    assert index.delete_record(("carol",), idempotency_key="delete") is True  # answered, not applied
    assert total(index, "carol") == 6
    # A repeat answers the first answer even when the state since would refuse it: the record
    # is gone, so a new SetMetadata would be NOT_FOUND.
    index.delete_record(("bob",))
    assert index.set_metadata(("bob",), {"name": "Bob"}, idempotency_key="meta") == {"name": "Bob"}
    with pytest.raises(NotFound):
        index.set_metadata(("bob",), {"name": "Bob"}, idempotency_key="meta-2")


def test_a_keyed_load_sent_again_saves_only_what_it_had_not(db: Database, prefix: bytes) -> None:
    index = LeaderboardIndex.create(db, prefix, SUM)
    records = [((f"p{i:03d}",), [Entry(i, T)]) for i in range(25)]
    # The first try of the load dies after two of its five transactions ...
    assert index.bulk_load(records[:10], batch_size=5, idempotency_key="load") == 10
    # ... and is sent again whole: its first two transactions are answered, the rest applied.
    index.add_score(("p000",), 100, T + 1)  # a write between the tries stays counted once
    assert index.bulk_load(records, batch_size=5, idempotency_key="load") == 25
    assert [total(index, f"p{i:03d}") for i in range(25)] == [100, *range(1, 25)]
    assert index.count() == 25 and index.check() == []
    with pytest.raises(AlreadyExists, match="'load#0'"):  # other records under the same load key
        index.bulk_load(records[5:], batch_size=5, idempotency_key="load")


def test_keys_are_bounded_in_length_and_number(db: Database, prefix: bytes) -> None:
    index = LeaderboardIndex.create(db, prefix, SUM)
    for bad in ("", "has space", "x" * (MAX_KEY_LENGTH + 1), "é", 7):
        with pytest.raises(InvalidArgument, match="idempotency key"):
            index.add_score(("alice",), 1, T, idempotency_key=bad)  # type: ignore[arg-type]
    index.add_score(("alice",), 1, T, idempotency_key="k" * MAX_KEY_LENGTH)
    index.max_idempotency_keys = 3
    index.add_score(("alice",), 1, T, idempotency_key="two")
    index.add_score(("alice",), 1, T, idempotency_key="three")
    with pytest.raises(ResourceExhausted, match="3 idempotency keys"):
        index.add_score(("alice",), 1, T, idempotency_key="four")
    index.add_score(("alice",), 1, T, idempotency_key="three")  # repeats are still answered
    index.add_score(("alice",), 1, T)  # and unkeyed writes still applied
    assert total(index, "alice") == 4


def test_expiry_forgets_keys_oldest_first_in_bounded_batches(db: Database, prefix: bytes) -> None:
    index = LeaderboardIndex.create(db, prefix, SUM)
    clock = [1_000_000.0]
    index.clock = lambda: clock[0]
    for i in range(7):
        clock[0] += 10
        index.add_score(("alice",), 1, T, idempotency_key=f"k{i}")  # applied at 1_000_010 .. 1_000_070
    assert index.expire_idempotency_keys(1_000_045, max_keys=2, keep_going=lambda: False) == (2, False)
    # k0-k3: applied before
    assert index.expire_idempotency_keys(1_000_045, max_keys=2, keep_going=lambda: False) == (2, True)
    assert index.expire_idempotency_keys(1_000_045, max_keys=2, keep_going=lambda: False) == (0, True)
    assert index.idempotency_keys() == 3
    index.add_score(("alice",), 1, T, idempotency_key="k4")  # still kept: a repeat
    index.add_score(("alice",), 1, T, idempotency_key="k0")  # forgotten: a new write
    assert total(index, "alice") == 8


def test_concurrent_calls_with_one_key_apply_once(db: Database, prefix: bytes) -> None:
    index = LeaderboardIndex.create(db, prefix, SUM)
    start = threading.Barrier(8)
    answers: list[int] = []

    def send(key: str) -> None:
        start.wait()
        answers.append(index.add_score(("alice",), 5, T, idempotency_key=key))

    for round_ in range(5):
        threads = [threading.Thread(target=send, args=(f"same-{round_}",)) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert total(index, "alice") == 25 and len(answers) == 40 and index.check() == []


# -- through the service ---------------------------------------------------------------------


def test_answers_lost_after_the_commit_are_retried_and_counted_once(server_place, no_unexpected_server_errors) -> None:
    server = server_place.start()
    try:
        with AnswerCutter(server.address) as cutter, LeaderboardClient(cutter.address, timeout=5) as lb:
            lb.create_index("game", aggregation="SUM")
            for i in range(5):
                cutter.lose_answers(2)  # this score's answer is lost twice: the third try hears back
                assert lb.add_score("game", "alice", 10, T + i) == 1
            assert cutter.lost == 10
            cutter.lose_answers(1, stall=1.5)  # the deadline runs out first, then the connection goes
            with LeaderboardClient(cutter.address, timeout=0.5) as impatient:
                impatient.add_score("game", "alice", 10, T + 9)
            cutter.lose_answers(1)
            assert lb.delete_record("game", "nobody") is False
            cutter.lose_answers(1)
            lb.write_batch("game", [("bob", [(3, T)]), ("carol", [(4, T)])], replace=False)
            assert lb.top("game", 5) and lb.rank_and_entry("game", "alice").score == 60
            assert [lb.rank_and_entry("game", pk).score for pk in ("bob", "carol")] == [3, 4]
            # Without retries the caller is left not knowing; the write was applied.
            with LeaderboardClient(cutter.address, timeout=5, retry=None) as once:
                cutter.lose_answers(1)
                with pytest.raises(grpc.RpcError) as lost:
                    once.add_score("game", "alice", 1, T)
                assert lost.value.code() == grpc.StatusCode.UNAVAILABLE
            assert lb.rank_and_entry("game", "alice").score == 61
            assert lb.verify("game") == []
    finally:
        server.stop(grace=1)


def test_a_load_cut_off_midway_is_sent_again_and_saved_once(server_place) -> None:
    server = server_place.start()
    try:
        with AnswerCutter(server.address) as cutter, LeaderboardClient(cutter.address, timeout=10) as lb:
            lb.create_index("game", aggregation="SUM")
            records = [(f"p{i:04d}", [(i, T)]) for i in range(1200)]
            cutter.lose_answers(1)  # the first progress report (after the first transaction) is lost
            assert lb.bulk_load("game", records, batch_size=200) == 1200
            assert cutter.lost == 1
            assert lb.count("game") == 1200
            assert sum(e.score for e in lb.scan_all("game", page=500)) == sum(range(1200))
            # An iterator cannot be sent again: the loss is the caller's to see.
            cutter.lose_answers(1)
            with pytest.raises(grpc.RpcError):
                lb.bulk_load("game", iter(records), batch_size=200)
            assert lb.verify("game") == []
    finally:
        server.stop(grace=1)


def test_a_repeat_is_answered_after_a_restart_and_by_another_server(server_place) -> None:
    first = server_place.start()
    try:
        with LeaderboardClient(first.address) as lb:
            lb.create_index("game", aggregation="SUM")
            lb.add_score("game", "alice", 10, T, idempotency_key="once")
    finally:
        first.stop(grace=1)
    second, third = server_place.start(), server_place.start()
    try:
        for server in (second, third):
            with LeaderboardClient(server.address) as lb:
                assert lb.add_score("game", "alice", 10, T, idempotency_key="once") == 1
                with pytest.raises(grpc.RpcError) as other:
                    lb.add_score("game", "alice", 99, T, idempotency_key="once")
                assert other.value.code() == grpc.StatusCode.ALREADY_EXISTS and "'once'" in other.value.details()
                assert lb.rank_and_entry("game", "alice").score == 10
                assert lb.expire_idempotency_keys("game") == 0  # kept for the policy's 24 hours
        with LeaderboardClient(third.address) as lb:
            assert lb.expire_idempotency_keys("game", before=2**40) == 1
            lb.add_score("game", "alice", 10, T, idempotency_key="once")  # forgotten: applied anew
            assert lb.rank_and_entry("game", "alice").score == 20
    finally:
        second.stop(grace=1)
        third.stop(grace=1)


def test_rest_scores_take_an_idempotency_key(server_place) -> None:
    server = server_place.start()
    http = HttpServer(server, "127.0.0.1:0").start()
    try:
        with LeaderboardClient(server.address) as lb:
            lb.create_index("game", aggregation="SUM")
        with httpx.Client(base_url=http.url) as web:
            score = {"pk": "alice", "score": 10, "timestamp": T}
            for _ in range(2):
                answer = web.post("/v1/indexes/game/scores", json=score, headers={"Idempotency-Key": "web-1"})
                assert answer.status_code == 200 and answer.json() == {"windows_changed": 1}
            again = web.post("/v1/indexes/game/scores", json={**score, "idempotency_key": "web-1"})
            assert again.status_code == 200
            other = web.post(
                "/v1/indexes/game/scores", json={**score, "score": 11}, headers={"Idempotency-Key": "web-1"}
            )
            assert other.status_code == 409 and other.json()["code"] == "ALREADY_EXISTS"
            assert "'web-1'" in other.json()["message"]
            both = web.post(
                "/v1/indexes/game/scores", json={**score, "idempotency_key": "a"}, headers={"Idempotency-Key": "b"}
            )
            assert both.status_code == 400
            rpc = {"index": "game", "pk": [{"string": "alice"}], "entry": {"score": {"int": 10}, "timestamp": T}}
            assert web.post("/v1/AddScore", json={**rpc, "idempotency_key": "web-1"}).status_code == 200
            top = web.get("/v1/indexes/game/windows/0/top").json()
            assert [(e["pk"], e["score"]) for e in top["entries"]] == [(["alice"], 10)]
    finally:
        http.stop(1)
        server.stop(grace=1)


def test_the_cli_retries_its_writes_under_one_key(tmp_path: Path, server_place) -> None:
    server = server_place.start()
    try:
        with AnswerCutter(server.address) as cutter:
            runner = CliRunner()

            def cli(*args: str) -> str:
                result = runner.invoke(main, ["--server", cutter.address, *args], catch_exceptions=False)
                assert result.exit_code == 0, result.output
                return result.output

            cli("index", "create", "game", "--aggregation", "SUM")
            cutter.lose_answers(1)
            cli("add", "game", "alice", "--score", "10", "--at", str(T))
            lines = tmp_path / "records.jsonl"
            lines.write_text(
                "".join(f'{{"pk": ["p{i}"], "entries": [{{"score": {i}, "timestamp": {T}}}]}}\n' for i in range(30))
            )
            cutter.lose_answers(1)
            assert "loaded 30 records" in cli("load", "game", str(lines), "--batch", "10")
            assert cutter.lost == 2
        with LeaderboardClient(server.address) as lb:
            assert lb.rank_and_entry("game", "alice").score == 10
            assert sum(e.score for e in lb.scan_all("game")) == 10 + sum(range(30))
    finally:
        server.stop(grace=1)


def test_the_client_retries_within_its_policy() -> None:
    policy = RetryPolicy(attempts=3, initial_backoff=0.2, max_backoff=0.3)
    waits = [policy.backoff(n) for n in (1, 2, 3) for _ in range(50)]
    assert all(0.1 <= wait <= 0.2 for wait in waits[:50]) and all(0.15 <= wait <= 0.3 for wait in waits[50:])
    with pytest.raises(ValueError):
        RetryPolicy(attempts=0)
