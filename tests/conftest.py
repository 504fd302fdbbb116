"""Shared fixtures: every backend-conformance and index test runs on each store backend.

The FoundationDB backend runs when FDB_CLUSTER_FILE names a reachable cluster and the
native client library loads; otherwise its tests are skipped with the reason, unless
FDB_LEADERBOARD_REQUIRE_FDB is set (CI and ``tools/test-fdb`` set it): then they fail.
The same goes for the live page's browser tests, which need Debian's chromium and its
driver, and FDB_LEADERBOARD_REQUIRE_BROWSER (CI sets it: ``.ci/run``).
Servers (``server_place``, ``server``, ``client``) run on the embedded store and on
FoundationDB, where each test's server keeps its indexes under a private catalog root.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import fdb.tuple
import pytest
from click.testing import CliRunner, Result
from hypothesis import settings

from fdb_leaderboard.cli import main
from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.service import Server, ServerSettings
from fdb_leaderboard.service.catalog import ROOT
from fdb_leaderboard.store import Database, StoreUnavailable, open_database
from tests.support.certificates import make_certificates

COMMIT_MARKERS = fdb.tuple.pack(("lb-committed",))  # fdb_backend.IDEMPOTENCY_PREFIX

# Hypothesis's default deadline (200 ms an example) is a latency bound: on a busy machine an
# example fails it (and the test reads as flaky) with nothing wrong in the code.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")

BACKENDS = ["lmdb", "lmdb-synced", "fdb"]
SERVER_BACKENDS = ["lmdb", "fdb"]
# FoundationDB through the binding alone (``direct=false``: the store layer's fallback when its C
# extension is not built) also runs the store's tests, which make every kind of call.
BINDING_BACKEND_MODULES = {"tests.store.test_conformance", "tests.store.test_group_commit"}


def skip_unless_required(reason: str, switch: str = "FDB_LEADERBOARD_REQUIRE_FDB", what: str = "FoundationDB") -> None:
    """Skip a test that cannot run here (by default, a FoundationDB test); fail it instead when
    the environment variable ``switch`` says tests of ``what`` must run."""
    if os.environ.get(switch, "") not in ("", "0"):
        pytest.fail(f"{reason} ({switch} is set: the {what} tests must run)", pytrace=False)
    pytest.skip(reason)


def wait_until(condition: Callable[[], object], what: str = "the condition", timeout: float = 60.0) -> None:
    """Return once ``condition()`` holds; fail if it still does not after ``timeout`` seconds (far
    more than it ever needs: a guard against hanging, not a measure of speed)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what}: still not so after {timeout:g} s"
        time.sleep(0.01)


def store_rows(db: Database) -> list[tuple[bytes, bytes]]:
    """Every key and value in the store, but the server processes' reports of themselves, which
    their heartbeats rewrite every few seconds whatever the calls do (``service/releases.py``), and
    the commit markers FoundationDB's backend writes with every write transaction, those included."""
    reports = fdb.tuple.pack(("processes",)) + b"\x02"  # (..., "processes", id) under any catalog root
    return [
        (key, value)
        for key, value in db.read(lambda tr: tr.get_range(b"\x00", b"\xff"))
        if reports not in key and not key.startswith(COMMIT_MARKERS)
    ]


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
        skip_unless_required(_fdb_reason[0])


def fdb_url() -> str:
    """The URL of the configured FoundationDB cluster (skips, or fails, when there is none)."""
    _skip_fdb_if_unavailable()
    return f"fdb:{os.environ['FDB_CLUSTER_FILE']}"


def private_prefix() -> bytes:
    """A key prefix no other test uses (FoundationDB clusters are shared)."""
    return b"\x15\x7f" + uuid.uuid4().bytes[:6].replace(b"\xff", b"\xfe")


@pytest.fixture
def store_url(request: pytest.FixtureRequest, tmp_path) -> str:
    """A URL of an empty store of the backend under test."""
    backend = getattr(request, "param", "lmdb")
    if backend == "lmdb":
        # The default mode (commits durable by the redo log), with checkpoints every 50 ms and
        # 64 KiB log segments, so checkpoints, segment switches and recycled segments all happen
        # among the test's commits.
        return f"lmdb:{tmp_path / 'store'}?checkpoint_seconds=0.05&log_segment_bytes=65536"
    if backend == "lmdb-synced":
        # Every commit's pages synced (no log); reads take the paths meant for a network store
        # (batched_reads), so those run on the embedded store too.
        return f"lmdb:{tmp_path / 'store'}?redo_log=false&batched_reads=true"
    if backend == "fdb-binding":
        return fdb_url() + "?direct=false"
    return fdb_url()


@pytest.fixture
def db(store_url: str) -> Iterator[Database]:
    """An open store; on FoundationDB, a fresh key prefix is used and cleared afterwards."""
    database = open_database(store_url)
    yield database
    database.close()


@pytest.fixture
def prefix(db: Database) -> Iterator[bytes]:
    """A key prefix private to this test, cleared afterwards (FoundationDB clusters are shared)."""
    private = private_prefix()
    yield private
    db.run(lambda tr: tr.clear_range_startswith(private))


class ServerPlace:
    """Where a test's servers keep their indexes: an embedded store in ``path``, or a catalog
    root of its own on the FoundationDB cluster.  ``start`` may be called again (a restart)."""

    def __init__(self, backend: str, path: Path, durable: bool = False) -> None:
        self.backend = backend
        if backend == "lmdb":
            self.url = f"lmdb:{path}?durable={'true' if durable else 'false'}"
            self.root = ROOT
        elif backend == "fdb":
            self.url = fdb_url()
            self.root = fdb.tuple.pack(("lb-test", uuid.uuid4().hex))
        else:
            raise ValueError(f"unknown server backend {backend!r}")

    def start(self, settings: ServerSettings | None = None) -> Server:
        """A gRPC server on a free local port.  Without ``settings``, its background maintenance is
        off, so what a test reads changes only through its own calls (tests/service/test_new_boards.py
        runs servers with it on)."""
        settings = settings or ServerSettings(maintain_every=0)
        return Server(self.url, "127.0.0.1:0", catalog_root=self.root, settings=settings).start()

    def clear(self) -> None:
        """Remove what the servers stored (on FoundationDB; a temporary directory goes by itself)."""
        if self.backend == "fdb":
            with open_database(self.url) as db:
                db.run(lambda tr: tr.clear_range_startswith(self.root))


def start_server(path: Path, durable: bool = False) -> Server:
    """A gRPC server on a free local port over an embedded store at ``path``."""
    return ServerPlace("lmdb", path, durable).start()


@pytest.fixture
def server_place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServerPlace]:
    """A place for this test's servers, on each backend (see ``pytest_generate_tests``)."""
    place = ServerPlace(getattr(request, "param", "lmdb"), tmp_path / "s")
    yield place
    place.clear()


@pytest.fixture
def server(server_place: ServerPlace) -> Iterator[Server]:
    running = server_place.start()
    yield running
    running.stop(grace=1)


@pytest.fixture
def client(server: Server) -> Iterator[LeaderboardClient]:
    with LeaderboardClient(server.address, timeout=20) as lb:
        yield lb


def _no_errors_logged(caplog: pytest.LogCaptureFixture, logger: str) -> Iterator[None]:
    caplog.set_level(logging.ERROR, logger=logger)
    yield
    unexpected = [r for r in caplog.records if r.name == logger and r.levelno >= logging.ERROR]
    assert not unexpected, [r.getMessage() for r in unexpected]


Cli = Callable[..., Result]


@pytest.fixture
def cli(server: Server) -> Cli:
    """The ``fdb-leaderboard`` command against ``server``, in process: ``cli(*args, code=0, input=None)``
    checks the exit status and that no traceback was printed."""
    runner = CliRunner()

    def invoke(*args: object, code: int = 0, input: str | None = None, server_address: str | None = None) -> Result:
        address = server_address or server.address
        result = runner.invoke(main, ["--server", address, *map(str, args)], input, catch_exceptions=False)
        assert result.exit_code == code, f"exit {result.exit_code} != {code}:\n{result.output}"
        assert "Traceback" not in result.output
        return result

    return invoke


def error_line(result: Result) -> str:
    """The one error line of a failed command (progress bars aside)."""
    lines = [line for line in result.output.splitlines() if line.startswith("Error: ")]
    assert len(lines) == 1, result.output
    return lines[0]


@pytest.fixture
def no_unexpected_server_errors(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """The service logs (and answers INTERNAL) only for exceptions it did not expect: none may occur."""
    yield from _no_errors_logged(caplog, "fdb_leaderboard.service")


@pytest.fixture
def no_unexpected_http_errors(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """uvicorn logs an exception the HTTP application let through (a 500 with a traceback): none may."""
    yield from _no_errors_logged(caplog, "uvicorn.error")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize every test that uses a store over all backends, and a server over both kinds."""
    if "store_url" in metafunc.fixturenames:
        extra = ["fdb-binding"] if metafunc.module.__name__ in BINDING_BACKEND_MODULES else []
        metafunc.parametrize("store_url", BACKENDS + extra, indirect=True)
    if "server_place" in metafunc.fixturenames:
        metafunc.parametrize("server_place", SERVER_BACKENDS, indirect=True)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, made by openssl."""
    return make_certificates(tmp_path_factory.mktemp("tls"), "IP:127.0.0.1,DNS:localhost")
