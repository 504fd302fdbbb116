"""``/metrics`` scraped after real calls over gRPC and HTTP: each figure is what the calls made.

Counts are compared exactly (calls by transport, method and code; routes by path template and
status; fill, trim, expiry and keep-ahead progress; windows per index); store transactions and
group commits are checked against what the store itself counted.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import grpc
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.http import HttpServer
from fdb_leaderboard.service import Server
from fdb_leaderboard.service.metrics import MeasuredDatabase, Metrics
from fdb_leaderboard.store import open_database
from tests.conftest import ServerPlace, start_server, wait_until

pytestmark = pytest.mark.usefixtures("no_unexpected_server_errors")

DAY = 86_400
T0 = 1_795_420_000
D0 = T0 - T0 % DAY


def scrape(web: httpx.Client) -> dict[tuple[str, frozenset], float]:
    """Every sample of /metrics, by (name, labels)."""
    response = web.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


@pytest.fixture
def running(tmp_path) -> Iterator[tuple[Server, HttpServer]]:
    server = start_server(tmp_path / "s", durable=True)  # group commit needs durable commits
    http = HttpServer(server, "127.0.0.1:0").start()
    yield server, http
    server.stop(grace=1)


def test_metrics_count_what_real_calls_did(running: tuple[Server, HttpServer]) -> None:
    server, http = running
    with LeaderboardClient(server.address, timeout=20) as lb, httpx.Client(base_url=http.url, timeout=20) as web:
        before = scrape(web)
        lb.create_index("game", high_score_first=True)
        lb.update_windows("game", high_score_first=True)  # the all-time window
        records = 30
        threads = [
            threading.Thread(target=lambda k=k: [lb.add_score("game", (f"p{k}-{i}",), i, T0 + i) for i in range(5)])
            for k in range(records // 5)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for _ in range(3):
            lb.top("game", 5)
        with pytest.raises(grpc.RpcError):
            lb.top("nope", 5)
        for _ in range(2):
            assert web.get("/v1/indexes/game/windows/0/top", params={"n": 3}).status_code == 200
        assert web.post("/v1/Count", json={"index": "game", "window": {"type": 0}}).json()["count"] == records
        assert web.get("/v1/indexes/nope/windows/0/top").status_code == 404
        # Two daily windows over the stored scores: filled, then trimmed and expired.
        lb.update_windows("game", high_score_first=True, specs=[(1, D0, DAY, DAY, 2)])
        # The fill in steps of 7 records: each step's ratio, against how far ListWindows says
        # each window's fill got (phase 1: records of the index put in, the first half).
        ratios = []
        while True:
            step = lb.fill("game", max_records=7, max_batches=1)
            if step.done:
                break
            progress = {w.start: w for w in lb.list_windows("game").windows if w.filling}
            shown = fill_ratios(scrape(web))
            assert shown.keys() == {("game", "1", str(start)) for start in progress}
            for (_, _, start), ratio in shown.items():
                window = progress[int(start)]
                if window.records_processed < window.records_total:
                    assert ratio == 0.5 * window.records_processed / window.records_total
                else:  # phase 2: entries ranked, of those put in (this day's records)
                    assert ratio >= 0.5
            ratios.append(max(shown.values()))
        assert ratios == sorted(ratios) and len(ratios) >= 4 and 0 < ratios[0] < 0.5
        assert fill_ratios(scrape(web)) == {}  # no fill runs
        fill = lb.fill("game")
        assert fill.done
        removed = web.post("/v1/Trim", json={"index": "game", "before": T0 + 2}).json()["entries_removed"]
        lb.expire("game", D0 + DAY)
        samples = scrape(web)

    def delta(name: str, **labels: str) -> float:
        return value(samples, name, **labels) - value(before, name, **labels)

    calls = "fdb_leaderboard_calls_total"
    assert delta(calls, transport="grpc", method="Top", code="OK") == 3
    assert delta(calls, transport="grpc", method="Top", code="NOT_FOUND") == 1
    assert delta(calls, transport="grpc", method="AddScore", code="OK") == records
    assert delta(calls, transport="http", method="Top", code="OK") == 2
    assert delta(calls, transport="http", method="Top", code="NOT_FOUND") == 1
    assert delta(calls, transport="http", method="Count", code="OK") == 1
    assert delta("fdb_leaderboard_call_seconds_count", transport="grpc", method="AddScore", code="OK") == records
    route = "/v1/indexes/{index}/windows/{type}/top"
    assert delta("fdb_leaderboard_http_requests_total", route=route, method="GET", status="200") == 2
    assert delta("fdb_leaderboard_http_requests_total", route=route, method="GET", status="404") == 1
    assert delta("fdb_leaderboard_http_request_seconds_count", route="/v1/Count", method="POST", status="200") == 1
    # The scrapes before count as /metrics requests: the first, one per fill step, one after.
    scrapes = 1 + len(ratios) + 1
    metrics_route = {"route": "/metrics", "method": "GET", "status": "200"}
    assert value(samples, "fdb_leaderboard_http_requests_total", **metrics_route) == scrapes
    # Progress, from the calls' answers.
    assert delta("fdb_leaderboard_fill_records_total", index="game") == records
    assert delta("fdb_leaderboard_fill_entries_ranked_total", index="game") > 0
    assert delta("fdb_leaderboard_trim_entries_removed_total", index="game") == removed
    assert delta("fdb_leaderboard_windows_added_total", index="game") == 3
    assert delta("fdb_leaderboard_windows_expired_total", index="game") == 1
    assert value(samples, "fdb_leaderboard_windows", index="game") == 2  # all time and the second day
    assert value(samples, "fdb_leaderboard_windows_filling", index="game") == 0
    # Store transactions: every write the store committed went through a timed transaction, and
    # each group commit's size was observed (their sum is the transactions committed).
    writes = delta("fdb_leaderboard_store_transaction_seconds_count", kind="write", outcome="ok")
    assert writes >= records + 2
    commits = delta("fdb_leaderboard_store_group_commit_transactions_count")
    assert commits == server.db.commits - value(before, "fdb_leaderboard_store_group_commit_transactions_count")
    assert delta("fdb_leaderboard_store_group_commit_transactions_sum") == writes
    assert delta("fdb_leaderboard_store_transaction_seconds_count", kind="read", outcome="ok") > 0
    # The process's own metrics.
    assert value(samples, "process_cpu_seconds_total") > 0
    assert value(samples, "process_resident_memory_bytes") > 0
    assert any(name == "python_gc_collections_total" for name, _ in samples)


def fill_ratios(samples: dict) -> dict[tuple[str, str, str], float]:
    found = {}
    for (name, labels), sample in samples.items():
        if name == "fdb_leaderboard_window_fill_ratio":
            labels = dict(labels)
            found[labels["index"], labels["type"], labels["start"]] = sample
    return found


def test_calls_in_flight_against_the_cap(running: tuple[Server, HttpServer]) -> None:
    server, http = running
    with LeaderboardClient(server.address, timeout=20) as lb, httpx.Client(base_url=http.url, timeout=20) as web:
        lb.create_index("game")
        lb.update_windows("game")
        lb.add_score("game", ("ann",), 5, T0)
        samples = scrape(web)
        assert value(samples, "fdb_leaderboard_grpc_max_calls") == server.settings.max_concurrent_calls
        assert value(samples, "fdb_leaderboard_grpc_calls_in_flight") == 0
        watches = [lb.watch_rank("game", ("ann",)) for _ in range(3)]  # calls that last
        for watch in watches:
            next(iter(watch))
        assert value(scrape(web), "fdb_leaderboard_grpc_calls_in_flight") == 3
        for watch in watches:
            watch.close()
        wait_until(lambda: value(scrape(web), "fdb_leaderboard_grpc_calls_in_flight") == 0, "the watches ended")


def test_the_stores_own_counters_are_exported_where_it_keeps_them(tmp_path) -> None:
    """A store with ``stats.snapshot()`` (the counters store.Database keeps on the lead's branch)
    shows them as counters, but its retries: store_transaction_retries_total counts them, by kind."""

    class Counted:
        def snapshot(self) -> dict[str, int]:
            return {"transactions": 7, "read_rounds": 19, "retries": 2, "conflicts": 1}

    db = open_database(f"lmdb:{tmp_path / 'b'}?durable=false")
    db.stats = Counted()  # type: ignore[attr-defined]
    metrics = Metrics()
    MeasuredDatabase(db, metrics).close()
    samples = {
        s.name: s.value for f in text_string_to_metric_families(metrics.exposition().decode()) for s in f.samples
    }
    assert {
        k: v
        for k, v in samples.items()
        if k.startswith("fdb_leaderboard_store_") and "seconds" not in k and "group" not in k
    } == {
        "fdb_leaderboard_store_transactions_total": 7,
        "fdb_leaderboard_store_read_rounds_total": 19,
        "fdb_leaderboard_store_conflicts_total": 1,
    }


def test_commits_count_the_write_calls_they_carried(server_place: ServerPlace, tmp_path) -> None:
    """Concurrent score writes on either store: the commit-size histogram's sum is the writes
    committed, its count the commits that carried them (on FoundationDB the score writes'
    shared transactions, on the embedded store its durable group commits)."""
    place = ServerPlace("lmdb", tmp_path / "d", durable=True) if server_place.backend == "lmdb" else server_place
    server = place.start()
    http = HttpServer(server, "127.0.0.1:0").start()
    try:
        with LeaderboardClient(server.address, timeout=20) as lb, httpx.Client(base_url=http.url, timeout=20) as web:
            lb.create_index("game", high_score_first=True)
            lb.update_windows("game", high_score_first=True)
            before = scrape(web)
            threads, per_thread = 8, 2
            barrier = threading.Barrier(threads)

            def submit(k: int) -> None:
                barrier.wait()  # all at once, so that writes arrive together
                for i in range(per_thread):
                    lb.add_score("game", (f"p{k}-{i}",), i, T0 + i)

            workers = [threading.Thread(target=submit, args=(k,)) for k in range(threads)]
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join()
            samples = scrape(web)
            assert lb.count("game") == threads * per_thread
    finally:
        server.stop(grace=1)

    def delta(name: str) -> float:
        return value(samples, name) - value(before, name)

    written = threads * per_thread
    assert delta("fdb_leaderboard_store_group_commit_transactions_sum") == written
    commits = delta("fdb_leaderboard_store_group_commit_transactions_count")
    assert 1 <= commits <= written
