"""Several independent service hosts on one FoundationDB cluster, as users deploy it.

Three ``fdb-leaderboard serve`` processes (each its own port, as separate hosts behind a load
balancer would be) on the test cluster (FDB_CLUSTER_FILE; skipped without one, failed when
FDB_LEADERBOARD_REQUIRE_FDB is set):

- writes go through all three at once and reads through any: each answers the same exact totals;
  an index created through one is written through the others, dropped through one and then
  refused by the others (NOT_FOUND, not written into the dropped index's keys), and created again
  through another with other options, which the others then serve;
- every server maintains indexes in the background and two ``fdb-leaderboard maintain`` jobs run
  beside them, on an index whose policy keeps 5-second windows 10 seconds ahead and expires them
  5 seconds after they end while scores arrive for times not yet covered: each window is added
  once (the windows every process reports adding are the directory's new window keys, none
  twice), expired once (likewise), and filled once (verify is clean and each window counts the
  records scored in it), and no pass fails on the others' conflicts.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator

import grpc
import pytest

from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.proto import service_pb2 as pb
from fdb_leaderboard.service.catalog import Catalog
from fdb_leaderboard.store import open_database
from tests.conftest import fdb_url
from tests.support.replicated import ServeProcess

pytestmark = pytest.mark.slow


@pytest.fixture
def hosts() -> Iterator[list[ServeProcess]]:
    url = fdb_url()
    started: list[ServeProcess] = []
    try:
        for _ in range(3):
            started.append(ServeProcess(url, "--maintain-every", "1s", verbose=True))
        yield started
    finally:
        for host in started:
            host.stop()


def test_three_service_hosts_serve_one_board(hosts: list[ServeProcess]) -> None:
    name = f"hosts-{uuid.uuid4().hex[:8]}"
    clients = [LeaderboardClient(host.address, timeout=30) for host in hosts]
    try:
        clients[0].create_index(name, aggregation="SUM")
        acked: dict[str, int] = {}
        lock = threading.Lock()

        def write(lb: LeaderboardClient, seed: int) -> None:
            for i in range(60):
                pk, value = f"p{(seed * 7 + i) % 20}", 1 + (seed + i) % 5
                lb.add_score(name, pk, value, 1000)
                with lock:
                    acked[pk] = acked.get(pk, 0) + value

        threads = [threading.Thread(target=write, args=(lb, n)) for n, lb in enumerate(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for lb in clients:  # every host answers the same exact totals
            assert {e.pk[0]: e.score for e in lb.top(name, 100)} == acked
        assert clients[2].verify(name) == []

        # Created through one host, written through the others; dropped through one, refused by the others.
        other = f"{name}-x"
        clients[0].create_index(other, aggregation="SUM")
        clients[1].add_score(other, "a", 5, 1000)
        clients[2].add_score(other, "a", 7, 1000)
        assert clients[0].top(other, 10)[0].score == 12
        clients[0].drop_index(other)
        for lb in clients[1:]:
            with pytest.raises(grpc.RpcError) as gone:
                lb.add_score(other, "a", 1, 1000)
            assert gone.value.code() is grpc.StatusCode.NOT_FOUND
        # Created again through another host with other options: every host serves the new index.
        clients[2].create_index(other, aggregation="BEST")
        clients[1].add_score(other, "a", 3, 1000)
        clients[0].add_score(other, "a", 2, 1000)
        assert [(e.pk[0], e.score) for e in clients[2].top(other, 10)] == [("a", 3)]
        assert {info.name: info.options.aggregation for info in clients[1].list_indexes()}[other] == pb.BEST
        clients[1].drop_index(other)
        clients[0].drop_index(name)
    finally:
        for lb in clients:
            lb.close()


WINDOW = 5  # seconds: type 1 windows [5k, 5k + 5)
HORIZON = 10
RETAIN = 5


def _reported(lines: list[str], name: str, what: str) -> int:
    """Windows ``what`` ("added" or "expired") in the maintenance lines about index ``name`` (the
    server's "1 window(s)", the CLI's "1 window" or "2 windows")."""
    pattern = re.compile(rf"\b{re.escape(name)}: {what} (\d+) window(?:\(s\)|s)?\b")
    return sum(int(found[1]) for line in lines for found in pattern.finditer(line))


def test_two_maintain_jobs_beside_three_servers_add_fill_and_expire_each_window_once(
    hosts: list[ServeProcess],
) -> None:
    name = f"upkeep-{uuid.uuid4().hex[:8]}"
    url = fdb_url()
    policy = pb.MaintenancePolicy(
        windows=[pb.RegularWindows(type=1, base=0, increment=WINDOW, duration=WINDOW)],
        horizon=HORIZON,
        certain_within=HORIZON,  # every window within the horizon is added (none left to chance)
        retain=RETAIN,
    )
    clients = [LeaderboardClient(host.address, timeout=30) for host in hosts]
    lb = clients[0]
    db = open_database(url)
    catalog = Catalog(db)
    jobs: list[subprocess.Popen] = []
    try:
        lb.create_index(name, aggregation="SUM", maintenance=policy)
        first = catalog.get(name).directory()
        assert first is not None
        scored: dict[int, set[str]] = {}  # window start -> records scored in it
        command = [sys.executable, "-m", "fdb_leaderboard.cli", "--server"]
        for host in hosts[1:]:  # two maintenance jobs, each through another host
            jobs.append(
                subprocess.Popen(
                    [*command, host.address, "maintain", "--every", "1s"],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                )
            )
        ends = time.time() + 4 * WINDOW
        n = 0
        while time.time() < ends:  # scores for times the windows do not reach yet: filled once added
            ts = int(time.time()) + HORIZON + 2 + n % WINDOW
            pk = f"p{n % 13}"
            clients[n % 3].add_score(name, pk, 1, ts)
            scored.setdefault(ts - ts % WINDOW, set()).add(pk)
            n += 1
            time.sleep(0.05)
        time.sleep(2 * WINDOW)  # let the windows scored into be added and filled, and old ones expire
    finally:
        for job in jobs:
            job.terminate()
        outputs = [job.communicate(timeout=30)[0] for job in jobs]
    for host in hosts:
        host.stop()
    try:
        lines = [line for output in outputs for line in output.splitlines()]
        lines += [line for host in hosts for line in host.output]
        refused = re.compile(r"fail|error|ABORTED|INTERNAL|UNAVAILABLE")
        failures = [line for line in lines if name in line and refused.search(line)]
        assert failures == []
        index = catalog.get(name)
        final = index.directory()
        assert final is not None
        kinds = [(w.type, w.start, w.end) for w in final.windows]
        assert len(kinds) == len(set(kinds)), "a window was added twice"
        added = final.next_key - first.next_key
        assert added > 0 and _reported(lines, name, "added") == added
        expired = added + len(first.windows) - len(final.windows)
        assert expired > 0 and _reported(lines, name, "expired") == expired
        assert index.check() == []
        filled = [w for w in final.windows if w.type == 1 and w.start in scored and not w.filling]
        assert filled, final
        for window in filled:
            assert index.count(1, window.start) == len(scored[window.start]), window
    finally:
        for client in clients:
            client.close()
        try:
            catalog.drop(name)
        finally:
            db.close()
