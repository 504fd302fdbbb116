"""Shared fixtures: every backend-conformance and index test runs on each store backend.

The FoundationDB backend runs when FDB_CLUSTER_FILE names a reachable cluster and the
native client library loads; otherwise its tests are skipped with the reason.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterator

import pytest

from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.service import Server
from fdb_leaderboard.store import Database, StoreUnavailable, open_database

BACKENDS = ["lmdb", "lmdb-redo-log", "fdb"]


def fdb_unavailable_reason() -> str | None:
    """Why the FoundationDB tests cannot run here, or None if they can."""
    cluster_file = os.environ.get("FDB_CLUSTER_FILE")
    if not cluster_file:
        return "FDB_CLUSTER_FILE is not set: no FoundationDB cluster to test against"
    if not os.path.exists(cluster_file):
        return f"FDB_CLUSTER_FILE={cluster_file} does not exist"
    try:
        db = open_database(f"fdb:{cluster_file}")
        db.check_reachable()
    except StoreUnavailable as exc:
        return str(exc)
    return None


_fdb_reason: list[str | None] = []


def _skip_fdb_if_unavailable() -> None:
    if not _fdb_reason:
        _fdb_reason.append(fdb_unavailable_reason())
    if _fdb_reason[0] is not None:
        pytest.skip(_fdb_reason[0])


@pytest.fixture
def store_url(request: pytest.FixtureRequest, tmp_path) -> str:
    """A URL of an empty store of the backend under test."""
    backend = getattr(request, "param", "lmdb")
    if backend == "lmdb":
        return f"lmdb:{tmp_path / 'store'}"
    if backend == "lmdb-redo-log":
        # Checkpoints every 50 ms, so they run among the test's commits; reads take the paths
        # meant for a network store (batched_reads), so those run on the embedded store too.
        return f"lmdb:{tmp_path / 'store'}?redo_log=true&checkpoint_seconds=0.05&batched_reads=true"
    _skip_fdb_if_unavailable()
    return f"fdb:{os.environ['FDB_CLUSTER_FILE']}"


@pytest.fixture
def db(store_url: str) -> Iterator[Database]:
    """An open store; on FoundationDB, a fresh key prefix is used and cleared afterwards."""
    database = open_database(store_url)
    yield database
    database.close()


@pytest.fixture
def prefix(db: Database) -> Iterator[bytes]:
    """A key prefix private to this test, cleared afterwards (FoundationDB clusters are shared)."""
    private = b"\x15\x7f" + uuid.uuid4().bytes[:6].replace(b"\xff", b"\xfe")
    yield private
    db.run(lambda tr: tr.clear_range_startswith(private))


def start_server(path: object, durable: bool = False) -> Server:
    """A gRPC server on a free local port over an embedded store at ``path``."""
    return Server(f"lmdb:{path}?durable={'true' if durable else 'false'}", "127.0.0.1:0").start()


@pytest.fixture
def server(tmp_path) -> Iterator[Server]:
    running = start_server(tmp_path / "s")
    yield running
    running.stop(grace=1)


@pytest.fixture
def client(server: Server) -> Iterator[LeaderboardClient]:
    with LeaderboardClient(server.address, timeout=20) as lb:
        yield lb


@pytest.fixture
def no_unexpected_server_errors(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """The service logs (and answers INTERNAL) only for exceptions it did not expect: none may occur."""
    caplog.set_level(logging.ERROR, logger="fdb_leaderboard.service")
    yield
    unexpected = [r for r in caplog.records if r.name == "fdb_leaderboard.service" and r.levelno >= logging.ERROR]
    assert not unexpected, [r.getMessage() for r in unexpected]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize every test that uses a store over all backends."""
    if "store_url" in metafunc.fixturenames:
        metafunc.parametrize("store_url", BACKENDS, indirect=True)
