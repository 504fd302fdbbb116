"""The FoundationDB server SIGKILLed in the middle of writes, then restarted on its data.

These tests start their own single-process cluster (ssd engine, a free port, a temporary
directory) with ``fdb-local`` from ``../shared/fdb`` (or ``$FDB_LOCAL``; ``replicated.own_cluster``),
and skip when it is absent (they fail instead when FDB_LEADERBOARD_REQUIRE_FDB is set, as in CI).

Writers (index calls in this process, and gRPC calls to a server on the same cluster) submit
scores while the server is killed; it restarts on the same data a moment later.  Then:

- every acknowledged write is stored exactly once and counted in every total; a write whose
  call failed is there or not (whole), and nothing else is;
- ``verify`` (the checker) finds the index consistent;
- while the cluster was down, every writer's calls failed with a clear retryable error
  (StoreUnavailable in-process, UNAVAILABLE through gRPC): none waited for the cluster to return.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Iterator

import fdb.tuple
import grpc
import pytest

from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.index import IndexSettings, LeaderboardIndex
from fdb_leaderboard.index.directory import WindowSpec, WindowUpdate
from fdb_leaderboard.service import Server
from fdb_leaderboard.store import StoreUnavailable, open_database
from tests.conftest import wait_until
from tests.support.replicated import Cluster, own_cluster

TIMEOUT = 3.0  # the store's timeout option here: a call waits at most this long for the cluster
PREFIX = b"\x15\x43"
SETTINGS = IndexSettings(aggregation="SUM", context_size=1)
PKS = [f"r{i}" for i in range(20)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from own_cluster(tmp_path_factory.mktemp("fdb-crash"))


class Writer(threading.Thread):
    """Submits scores through ``submit`` until stopped; records every call's outcome and duration."""

    def __init__(self, name: str, submit: Callable[[str, int, int, str], None], unavailable: type | None) -> None:
        super().__init__(name=name)
        self.submit = submit
        self.unavailable = unavailable
        self.stop = threading.Event()
        # (op, pk, score, ts, started, seconds, outcome): outcome "ack", "unavailable: ..." or "error: ..."
        self.calls: list[tuple[str, str, int, int, float, float, str]] = []

    def run(self) -> None:
        n = 0
        while not self.stop.is_set():
            op, pk, score, ts = f"{self.name}:{n}", PKS[n % len(PKS)], 1 + n % 97, (n * 37) % 10_000
            n += 1
            started = time.monotonic()
            try:
                self.submit(pk, score, ts, op)
                outcome = "ack"
            except Exception as exc:
                if self.unavailable is not None and isinstance(exc, self.unavailable):
                    outcome = f"unavailable: {exc}"
                elif isinstance(exc, grpc.RpcError) and exc.code() == grpc.StatusCode.UNAVAILABLE:
                    outcome = f"unavailable: {exc.details()}"
                else:
                    outcome = f"error: {exc!r}"
            self.calls.append((op, pk, score, ts, started, time.monotonic() - started, outcome))
            if outcome != "ack":
                time.sleep(0.1)  # a client backing off before it retries

    def outcomes(self, since: float) -> set[str]:
        """The kinds of outcome ("ack", "unavailable", "error") of the calls begun at ``since`` or later."""
        return {outcome.split(":")[0] for *_, started, _, outcome in list(self.calls) if started >= since}


def stored_ops(index: LeaderboardIndex) -> dict[str, tuple[str, int, int]]:
    """Every stored entry by its operation id: (pk, score, ts); ids stored twice fail."""
    seen: dict[str, tuple[str, int, int]] = {}
    for pk in PKS:
        rows = index.read(lambda ops, pk=pk: ops.txn.read_entries(fdb.tuple.pack(((pk,),))))
        for ts, _seq, (_group, score, context) in rows:
            assert context[0] not in seen, f"{context[0]} is stored twice"
            seen[context[0]] = (pk, score, ts)
    return seen


@pytest.mark.slow
def test_sigkill_of_the_server_mid_writes_loses_no_acknowledged_write(cluster: Cluster) -> None:
    url = f"fdb:{cluster.cluster_file}?timeout={TIMEOUT:g}"
    db = open_database(url)
    index = LeaderboardIndex.create(db, PREFIX, SETTINGS)
    index.update_windows(WindowUpdate(specs=[WindowSpec(1, 0, 2500, 2500, 4)]))
    server = Server(url, "127.0.0.1:0").start()
    # Each call sent once (retry=None): what is measured is how the server answers one call.
    lb = LeaderboardClient(server.address, timeout=TIMEOUT + 10, retry=None)
    try:
        lb.create_index("game", aggregation="SUM", context_size=1)
        lb.update_windows("game", specs=[(1, 0, 2500, 2500, 4)])
        served = server.catalog.get("game")

        def through_grpc(pk: str, score: int, ts: int, op: str) -> None:
            lb.add_score("game", (pk,), score, ts, (op,))

        def in_process(pk: str, score: int, ts: int, op: str) -> None:
            index.add_score((pk,), score, ts, context=(op,))

        writers = [Writer(f"local{i}", in_process, StoreUnavailable) for i in range(3)]
        writers += [Writer(f"grpc{i}", through_grpc, None) for i in range(2)]
        for writer in writers:
            writer.start()
        try:
            wait_until(lambda: all("ack" in w.outcomes(0) for w in writers), "every writer's first write")
            killed = time.monotonic()
            cluster.kill()
            # Every writer's calls run into the outage, and end refused (a call that hung would not).
            wait_until(lambda: all("unavailable" in w.outcomes(killed) for w in writers), "every writer refused", 120)
            cluster.start()  # the same directory: the same data
            restarted = time.monotonic()
            wait_until(lambda: all("ack" in w.outcomes(restarted) for w in writers), "writes after the restart", 120)
        finally:
            for writer in writers:
                writer.stop.set()
            for writer in writers:
                writer.join(TIMEOUT + 30)
        assert not any(writer.is_alive() for writer in writers), "a writer hung"

        calls = [call for writer in writers for call in writer.calls]
        errors = [call for call in calls if call[6].startswith("error")]
        assert errors == [], errors[:5]
        slowest = max(call[5] for call in calls)
        unavailable = [call for call in calls if call[6].startswith("unavailable")]
        assert unavailable, "no call saw the outage"
        for *_, outcome in unavailable:
            assert "did not answer in time" in outcome and "retry later" in outcome, outcome
        acked = {call[0]: call for call in calls if call[6] == "ack"}
        assert any(call[4] + call[5] < killed for call in acked.values()), "no write before the kill"
        assert any(call[4] > restarted for call in acked.values()), "no write after the restart"

        for kind, board, prefix_name in (("in-process", index, "local"), ("gRPC", served, "grpc")):
            stored = stored_ops(board)
            mine = {op: call for op, call in acked.items() if op.startswith(prefix_name)}
            missing = set(mine) - set(stored)
            assert not missing, f"{kind}: acknowledged writes lost: {sorted(missing)[:5]}"
            attempted = {call[0]: call for call in calls if call[0].startswith(prefix_name)}
            for op, (pk, score, ts) in stored.items():
                assert op in attempted, f"{kind}: {op} was never submitted"
                assert attempted[op][1:4] == (pk, score, ts), op
            totals: collections.Counter[str] = collections.Counter()
            for pk, score, _ in stored.values():
                totals[pk] += score
            assert {e.pk[0]: e.score for e in board.top(100)} == dict(totals)
            assert board.check() == []
        assert lb.verify("game") == []
        print(
            f"\nserver crash: {len(acked)} acknowledged writes kept, {len(unavailable)} calls refused as unavailable "
            f"during the outage, slowest call {slowest:.2f} s"
        )
    finally:
        lb.close()
        server.stop(grace=1)
        db.close()


def test_timeouts_while_the_cluster_is_down(cluster: Cluster) -> None:
    """Each database keeps its own timeout (the bindings share one handle per cluster file), and
    a write says whether it may have been committed."""
    short = open_database(f"fdb:{cluster.cluster_file}?timeout=1")
    longer = open_database(f"fdb:{cluster.cluster_file}?timeout=2.5")
    cluster.kill()
    try:
        for db, timeout in ((short, 1.0), (longer, 2.5), (short, 1.0)):
            started = time.monotonic()
            with pytest.raises(
                StoreUnavailable, match=f"did not answer in time.*its {timeout:g} s transaction timeout"
            ):
                db.read(lambda tr: tr.get(PREFIX))
            assert time.monotonic() - started >= timeout - 0.1  # it waited its own timeout (a lower bound only)
        # A write that timed out reading was never sent; one that timed out committing may have landed.
        with pytest.raises(StoreUnavailable, match="The write was not committed"):
            short.run(lambda tr: (tr.get(PREFIX + b"x"), tr.set(PREFIX + b"x", b"1")))
        with pytest.raises(StoreUnavailable, match=r"may or may not have been committed.*calling again is a new write"):
            short.run(lambda tr: tr.set(PREFIX + b"y", b"1"))
    finally:
        cluster.start()
    assert short.read(lambda tr: tr.get(PREFIX + b"x")) is None
    short.run(lambda tr: tr.clear_range_startswith(PREFIX))
    short.close()
    longer.close()
