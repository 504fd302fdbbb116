"""A rolling upgrade on FoundationDB: the previous release and this one serve one cluster at once.

The store starts as release 0.2.0 left it (its fixture, ``tests/compat/0.2.0.json.gz``: indexes
0.1.0 made and 0.2.0 wrote to, and 0.2.0's own), under a catalog root of this test's own on the
suite's cluster, plus a board 0.2.0 creates here.  Then, with writers and readers through every
server that runs:

1. a ``serve`` of release 0.2.0 (its own code: an export of its commit, run with ``PYTHONPATH``)
   serves alone;
2. a server of this release joins it on the same store; its maintenance raises the indexes to
   format 3 (0.2.0 reads it), recounting their heads while both write; the store stays at
   format 2, since 0.2.0 does not report its release;
   a deletion of the record holding the latest timestamp of a board too large for the deleting
   call's recompute leaves that timestamp as 0.2.0 reads it (below index format 4);
3. the old server stops (SIGTERM); ``store upgrade`` raises the store to its newest format and the
   indexes to format 4, which finds that board's latest timestamp again;
4. format 3's feature: every head counts what its record submitted, so ``max_per_window`` refuses
   records 0.1.0 and 0.2.0 wrote exactly at their limit, with no look at their entries; format
   4's: a deletion finds the latest timestamp again (the server's maintenance ending it).

At every step ``verify`` finds no problem in any index.  At the end every acknowledged write is
stored once (a SUM board of 1-point writes, each with an idempotency key, totals exactly what was
acknowledged, plus at most the writes whose answers were lost), and each record's total, read
through either server, never went down.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator

import fdb.tuple
import pytest

from fdb_leaderboard import formats
from fdb_leaderboard.client import CallError, LeaderboardClient
from fdb_leaderboard.service import Server, ServerSettings
from fdb_leaderboard.store import open_database
from tests.conftest import fdb_url, wait_until
from tests.support.compat_stores import compat, limits_hold, load_into, release_tree, verify_all

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("no_unexpected_server_errors")]

PREVIOUS = "0.2.0"
PKS = [f"w{i}" for i in range(12)]
LARGE = 2_500  # records of the board whose latest timestamp a deletion leaves to be recomputed
TYPO = 4_070_908_800  # 2099-01-01: a mistyped time
# The previous release's server, from its own tree (run with PYTHONPATH pointing there).
LAUNCH = """
import signal, sys, threading
from fdb_leaderboard.service import Server, ServerSettings
from fdb_leaderboard.store import open_database
server = Server(sys.argv[1], "127.0.0.1:0", catalog_root=bytes.fromhex(sys.argv[2]),
                settings=ServerSettings(maintain_every=1, webhooks=False, read_processes=0)).start()
print(server.address, flush=True)
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
stop.wait()
server.stop(grace=5)
print("stopped", flush=True)
"""


@pytest.fixture
def previous_tree() -> Iterator[str]:
    """The previous release's code, exported from its commit."""
    with release_tree(PREVIOUS) as tree:
        yield tree


class Traffic:
    """Writers and readers through one server until stopped: 1-point keyed writes to the SUM board
    ``rolling`` and scores into boards the releases made, reads of both."""

    def __init__(self, address: str, name: str) -> None:
        self.address = address
        self.name = name
        self.stop = threading.Event()
        self.acked: Counter[str] = Counter()
        self.unknown: Counter[str] = Counter()  # failed after their retries: applied or not
        self.errors: list[str] = []
        self.totals: dict[str, list[int]] = {}  # pk -> every total this reader read, in order
        self.threads = [threading.Thread(target=self.write, name=f"{name} writer {i}") for i in range(2)]
        self.threads.append(threading.Thread(target=self.read, name=f"{name} reader"))

    def start(self) -> Traffic:
        for thread in self.threads:
            thread.start()
        return self

    def finish(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join()

    def write(self) -> None:
        with LeaderboardClient(self.address, timeout=10) as client:
            n = 0
            while not self.stop.is_set():
                pk = PKS[n % len(PKS)]
                n += 1
                try:
                    client.add_score("rolling", pk, 1, compat.T0 + n)
                    self.acked[pk] += 1
                    client.add_score("reference", f"{self.name}-{n % 7}", n, compat.T0 + 4 * compat.DAY + n % 80_000)
                except CallError as exc:
                    self.unknown[pk] += 1
                    self.errors.append(f"{exc.code().name}: {exc}")

    def read(self) -> None:
        with LeaderboardClient(self.address, timeout=10) as client:
            while not self.stop.is_set():
                try:
                    for entry in client.top("rolling", len(PKS)):
                        self.totals.setdefault(entry.pk[0], []).append(entry.score)
                    client.rank("reference", "p01", window_type=1, timestamp=compat.T0)
                except CallError as exc:
                    self.errors.append(f"{exc.code().name}: {exc}")


def test_two_releases_serve_one_cluster_then_the_store_is_raised(previous_tree: str) -> None:
    url = fdb_url()
    root = fdb.tuple.pack(("lb-test", uuid.uuid4().hex))
    load_into(url, root, compat.load(PREVIOUS))
    env = {**os.environ, "PYTHONPATH": previous_tree}
    old = subprocess.Popen(
        [sys.executable, "-c", LAUNCH, url, root.hex()],
        cwd=previous_tree,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    new = None
    traffic: list[Traffic] = []
    try:
        assert old.stdout is not None
        old_address = old.stdout.readline().strip()
        assert old_address, "the previous release's server did not start"
        with LeaderboardClient(old_address, timeout=30) as client:
            assert client.create_index("rolling", aggregation="SUM")
            client.update_windows("rolling", all_time=True)
            assert client.create_index("large")
            client.bulk_load("large", [(f"r{i:05}", [(i, compat.T0 + i)]) for i in range(LARGE)])
            client.add_score("large", "typo", 1, TYPO)
        # 1. The previous release alone.
        traffic.append(Traffic(old_address, "old").start())
        time.sleep(2)

        # 2. This release joins it; its maintenance raises the indexes while both write.
        new = Server(url, "127.0.0.1:0", catalog_root=root, settings=ServerSettings(maintain_every=1)).start()
        traffic.append(Traffic(new.address, "new").start())
        with LeaderboardClient(new.address, timeout=60) as client:
            wait_until(
                lambda: {e.format.version for e in client.store_status().indexes} == {3},
                "the maintenance raising every index to format 3 beside the previous release",
            )
            status = client.store_status()
            assert (status.format.version, status.format.recorded) == (2, False)  # 0.2.0 does not report
            assert [p.release for p in status.processes if p.live] == [formats.RELEASE]
            assert verify_all(client) == {}
            # Below format 4 a deletion leaves the latest timestamp where 0.2.0 reads it.
            assert client.delete_record("large", "typo")
            with LeaderboardClient(old_address, timeout=30) as previous:
                assert previous.list_windows("large").latest_timestamp == TYPO
            assert client.list_windows("large").latest_timestamp == TYPO

            # 3. The previous release stops; the store is raised.
            traffic[0].finish()
            old.terminate()
            assert old.wait(30) == 0
            assert verify_all(client) == {}
            upgraded = client.upgrade_store()
            assert (upgraded.format.version, upgraded.format.recorded) == (formats.NEWEST_STORE, True)
            assert {e.format.version for e in upgraded.indexes} == {formats.NEWEST_INDEX}
            assert client.list_windows("large").latest_timestamp == compat.T0 + LARGE - 1  # found again
            assert verify_all(client) == {}

            # 4. Format 3's feature: heads count what their records submitted, whoever wrote them.
            limits_hold(client, "daily", day=1)
            # Format 4's: the latest timestamp found again after a deletion, the maintenance ending it.
            client.add_score("large", "typo", 1, TYPO)
            assert client.delete_record("large", "typo")
            wait_until(
                lambda: client.list_windows("large").latest_timestamp == compat.T0 + LARGE - 1,
                "the maintenance ending the latest timestamp's recompute",
            )
            time.sleep(1)
            traffic[1].finish()
            assert verify_all(client) == {}

            # No acknowledged write lost or doubled; no total ever read going down.
            stored = {entry.pk[0]: entry.score for entry in client.top("rolling", len(PKS))}
        for pk in PKS:
            acked = sum(t.acked[pk] for t in traffic)
            unknown = sum(t.unknown[pk] for t in traffic)
            assert acked <= stored.get(pk, 0) <= acked + unknown, (pk, acked, unknown, stored.get(pk))
        assert sum(t.acked.total() for t in traffic) > 50
        for t in traffic:
            for pk, seen in t.totals.items():
                assert seen == sorted(seen), (t.name, pk)
        assert [error for t in traffic for error in t.errors] == []
    finally:
        for t in traffic:
            t.finish()
        if old.poll() is None:
            old.kill()
            old.wait()
        if new is not None:
            new.stop(grace=1)
        with open_database(url) as db:
            db.run(lambda tr: tr.clear_range_startswith(root))
