"""A replicated FoundationDB cluster loses processes under load, as users run it.

The module starts its own cluster with ``fdb-local`` (``../shared/fdb``, or ``$FDB_LOCAL``): 3
processes, ``double`` redundancy, the ssd engine, each process its own zone and machine and a
coordinator; it skips without one (fails when FDB_LEADERBOARD_REQUIRE_FDB is set, as in CI).  One
``fdb-leaderboard serve`` process runs on it; writers add to 50 records of a SUM and a BEST index
and readers ask ranks and top 10s, every call with a 5 s deadline, writes keyed and sent again
after UNAVAILABLE or DEADLINE_EXCEEDED as the client does (tests/support/replicated.py).  Then:

- each process in turn (``status json`` names each one's roles: coordinator, logs, storage,
  proxies, cluster controller...) is SIGKILLed and brought back;
- two of the three are killed at once (no quorum of coordinators: the cluster is down), then
  brought back, and the same ``serve`` process carries on;
- a storage process is excluded under load (its data moves to the others) and included again.

Every time: each call was answered, or answered UNAVAILABLE with a message saying to retry (never
DEADLINE_EXCEEDED, never another error: the service answers within the call's deadline); the
boards hold exactly what the acknowledged writes make them (SUM totals, BEST maxima: a write
applied twice or lost would show) and ``verify`` finds both indexes sound.  What each kill cost
(the time from the kill to the first acknowledged write sent after it, the longest time without an
acknowledged write, the p99 of calls sent within 10 s of the kill) is printed; tools/bench failover
measures it over more rounds.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from fdb_leaderboard.client import LeaderboardClient
from tests.support.replicated import (
    Cluster,
    Load,
    ServeProcess,
    boards_served,
    describe_outage,
    outage_figures,
    own_cluster,
    wait_for,
)

pytestmark = pytest.mark.slow

TIMEOUT = 5.0  # every call's deadline
RECORDS = 50


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from own_cluster(tmp_path_factory.mktemp("fdb-replicated"), 3, "double")


@pytest.fixture(scope="module")
def serve(cluster: Cluster) -> Iterator[ServeProcess]:
    process = ServeProcess(f"fdb:{cluster.cluster_file}", "--maintain-every", "0")
    try:
        yield process
    finally:
        process.stop()


def indexes_for(serve: ServeProcess, name: str) -> dict[str, str]:
    """A SUM and a BEST index of this test's own."""
    indexes = {f"{name}-sum": "SUM", f"{name}-best": "BEST"}
    with LeaderboardClient(serve.address, timeout=30) as lb:
        for index, aggregation in indexes.items():
            lb.create_index(index, aggregation=aggregation)
    return indexes


def check_outcome(serve: ServeProcess, load: Load, indexes: dict[str, str]) -> None:
    """Every call answered or UNAVAILABLE saying to retry, nothing acknowledged lost or doubled,
    the indexes sound."""
    unexpected = load.unexpected()
    assert unexpected == [], unexpected[:5]
    assert all(attempt.seconds <= TIMEOUT for attempt in load.attempts)
    assert all(write.acked_at is not None for write in load.writes), "a write was never acknowledged"
    assert load.acknowledged(), "no write was acknowledged"
    with LeaderboardClient(serve.address, timeout=60) as lb:
        assert boards_served(lb, indexes, RECORDS) == load.expected_boards()
        for index in indexes:
            assert lb.verify(index) == [], index


def test_losing_any_one_process_loses_nothing(cluster: Cluster, serve: ServeProcess) -> None:
    indexes = indexes_for(serve, "one")
    roles = cluster.roles()
    assert sorted(roles) == [1, 2, 3], roles
    report = []
    with Load(lambda: serve.address, indexes, timeout=TIMEOUT) as load:
        for number in sorted(roles):
            assert wait_for(lambda: len(load.acknowledged()) > 20, 30)
            lost = time.monotonic()
            cluster.kill(number)
            assert wait_for(lambda lost=lost: load.first_write_after(lost) is not None, 60), "writes never resumed"
            back = time.monotonic()
            cluster.start()
            cluster.wait_recovered()
            figures = describe_outage(outage_figures(load, lost, back))
            report.append(f"process {number} ({', '.join(roles[number])}): {figures}")
    check_outcome(serve, load, indexes)
    assert serve.alive()
    print("\n" + "\n".join(report))


def test_losing_two_of_three_fails_fast_and_the_same_service_resumes(cluster: Cluster, serve: ServeProcess) -> None:
    indexes = indexes_for(serve, "two")
    pid = serve.pid
    with Load(lambda: serve.address, indexes, timeout=TIMEOUT) as load:
        assert wait_for(lambda: len(load.acknowledged()) > 20, 30)
        lost = time.monotonic()
        cluster.kill(2)
        cluster.kill(3)  # two coordinators of three: no quorum, the cluster is down
        # Every call sent now runs into the outage: wait until some were refused, and every call
        # sent since has ended (none hangs past its deadline).
        assert wait_for(lambda: any(a.code == "UNAVAILABLE" for a in load.between(lost + 1, float("inf"))), 30)
        down = load.between(lost + 1, float("inf"))  # (a read a surviving storage server had may answer)
        assert all(a.code in ("UNAVAILABLE", "OK") for a in down), [a for a in down if a.code != "UNAVAILABLE"][:3]
        with LeaderboardClient(serve.address, timeout=3, retry=None) as probe:
            started = time.monotonic()
            with pytest.raises(grpc.RpcError) as refused:
                probe.list_indexes()
            assert refused.value.code() is grpc.StatusCode.UNAVAILABLE
            assert "did not answer in time" in refused.value.details() and "retry" in refused.value.details()
            assert time.monotonic() - started < 3
        with grpc.insecure_channel(serve.address) as channel:  # the process itself still answers
            health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=3)
            assert health.status == health_pb2.HealthCheckResponse.SERVING
        back = time.monotonic()
        cluster.start()
        assert wait_for(lambda: load.first_write_after(back) is not None, 60), "the service did not resume"
        cluster.wait_recovered()
    check_outcome(serve, load, indexes)
    assert serve.alive() and serve.pid == pid  # the same process, not a restart
    print(f"\ntwo of three processes lost: {describe_outage(outage_figures(load, lost, back))}")


def test_excluding_a_storage_process_under_load_and_including_it_again(cluster: Cluster, serve: ServeProcess) -> None:
    indexes = indexes_for(serve, "moved")
    roles = cluster.roles()
    storage = min(number for number, names in roles.items() if "storage" in names)
    port = cluster.ports()[storage]
    with Load(lambda: serve.address, indexes, timeout=TIMEOUT) as load:
        assert wait_for(lambda: len(load.acknowledged()) > 20, 30)
        started = time.monotonic()
        cluster.cli(f"exclude 127.0.0.1:{port}", timeout=180)  # returns once its data moved away
        excluded = time.monotonic()
        assert "storage" not in cluster.roles().get(storage, [])
        assert wait_for(lambda: load.first_write_after(excluded) is not None, 60)
        cluster.cli(f"include 127.0.0.1:{port}")
        cluster.wait_recovered()
    check_outcome(serve, load, indexes)
    print(
        f"\nexcluding process {storage} ({', '.join(roles[storage])}) took {excluded - started:.1f} s: "
        f"{describe_outage(outage_figures(load, started, excluded))}"
    )
