"""Stored formats and releases: the format table, the checks at open, the processes' reports, the
raising of formats by an operator and by the maintenance, and every door that shows them.

A store or index of a format newer than this release is made by writing its record directly (as
a newer release would); an index written before formats were recorded comes from the 0.1.0
fixture (``tests/compat/``); a later release's format is a table entry added for the test, with
the release it needs, so the rule "raised once every live process reads it" runs as it will.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import pathlib
import re
import time
import tomllib

import httpx
import pytest
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families

import fdb_leaderboard
from fdb_leaderboard import formats
from fdb_leaderboard.cli import main
from fdb_leaderboard.client import AsyncLeaderboardClient, FailedPrecondition, LeaderboardClient
from fdb_leaderboard.errors import FormatTooNew
from fdb_leaderboard.http import HttpServer
from fdb_leaderboard.index import IndexSettings, LeaderboardIndex
from fdb_leaderboard.index.layout import IndexLayout
from fdb_leaderboard.index.restore import Restorer
from fdb_leaderboard.index.snapshot import FORMAT_VERSION
from fdb_leaderboard.index.upgrade import JOBS
from fdb_leaderboard.proto import index_pb2
from fdb_leaderboard.proto import service_pb2 as pb
from fdb_leaderboard.service import ServerSettings, StartupError
from fdb_leaderboard.service import releases as reports
from fdb_leaderboard.service.catalog import Catalog
from fdb_leaderboard.service.housekeeping import Housekeeping
from fdb_leaderboard.store import open_database
from tests.conftest import ServerPlace, wait_until
from tests.support.compat_stores import compat, load_into

ROOT_DIR = pathlib.Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.usefixtures("no_unexpected_server_errors")


# -- the table and the release -----------------------------------------------------------------------


def test_the_release_is_pyprojects_the_changelogs_and_the_commands() -> None:
    pyproject = tomllib.loads((ROOT_DIR / "pyproject.toml").read_text())
    assert pyproject["project"]["version"] == formats.RELEASE == fdb_leaderboard.__version__
    changelog = (ROOT_DIR / "CHANGELOG.md").read_text()
    assert f"\n## {formats.RELEASE}\n" in changelog
    # The changelog's table says what the code's tables say.
    rows = dict(re.findall(r"^\| (\d+) \| (.*) \|$", changelog, re.M))

    def cell(entry: formats.Format | None) -> str:
        return f"{entry.release}, {entry.read_from}" if entry else "-"

    for store, index in itertools.zip_longest(formats.STORE_FORMATS, formats.INDEX_FORMATS):
        assert rows[str((store or index).version)].startswith(f"{cell(store)} | {cell(index)}")
    version = CliRunner().invoke(main, ["--version"])
    assert version.exit_code == 0 and version.output == formats.version_text() + "\n"
    assert version.output.startswith(f"fdb-leaderboard {formats.RELEASE} (writes store format 4 and index format 4")


def test_the_tables_count_up_and_no_format_is_read_before_it_is_written() -> None:
    for table in (formats.STORE_FORMATS, formats.INDEX_FORMATS):
        assert [entry.version for entry in table] == list(range(1, len(table) + 1))
        for entry in table:
            assert (
                formats.release_key(entry.read_from)
                <= formats.release_key(entry.release)
                <= formats.release_key(formats.RELEASE)
            )
            assert not entry.upgrade or entry.upgrade in JOBS
    assert formats.release_key("0.10.1") > formats.release_key("0.9.9") > formats.release_key("0.9")


INDEX_NOW, STORE_NOW = formats.NEWEST_INDEX, formats.NEWEST_STORE  # what this release writes
LATER_INDEX, LATER_STORE = INDEX_NOW + 1, STORE_NOW + 1  # a later release's (later_format)


def later_format(monkeypatch: pytest.MonkeyPatch, read_from: str = "0.4.0") -> None:
    """The next index and store formats (index 5, store 5), first written and read by release 0.4.0,
    which this process runs."""
    monkeypatch.setattr(formats, "RELEASE", "0.4.0")
    for table, newest in (("INDEX_FORMATS", "NEWEST_INDEX"), ("STORE_FORMATS", "NEWEST_STORE")):
        current = getattr(formats, table)
        version = current[-1].version + 1
        monkeypatch.setattr(formats, table, (*current, formats.Format(version, "0.4.0", read_from, "a later form")))
        monkeypatch.setattr(formats, newest, version)


def test_raisable_waits_for_every_process_that_may_run(monkeypatch: pytest.MonkeyPatch) -> None:
    index, store = formats.INDEX_FORMATS, formats.STORE_FORMATS
    # Index format 3 is read by 0.2.0: raised whatever runs (processes that do not report run 0.2.0);
    # format 4 only once no process of 0.2.0 may run.
    assert formats.raisable(index, 2, [], reporting=False) == 3
    assert formats.raisable(index, 3, ["0.3.0"], reporting=False) == 3
    assert formats.raisable(index, 2, ["0.3.0"], reporting=True) == 4
    # Store format 3 says every process reports: not while one that does not may run.
    assert formats.raisable(store, 2, ["0.3.0"], reporting=False) == 2
    assert formats.raisable(store, 2, ["0.3.0"], reporting=True) == 4  # and 4, the embedded store's redo log
    later_format(monkeypatch)
    index, store = formats.INDEX_FORMATS, formats.STORE_FORMATS
    assert formats.raisable(index, 4, ["0.3.0", "0.4.0"], reporting=True) == 4  # a 0.3.0 process is live
    assert formats.raisable(index, 3, ["0.4.0"], reporting=False) == 3  # a 0.2.0 may be: it does not report
    assert formats.raisable(index, 4, ["0.4.0"], reporting=True) == 5
    assert formats.raisable(index, 2, ["0.4.0"], reporting=True) == 5  # several versions at once
    assert formats.creation_format(index, ["0.3.0"], reporting=True) == 4
    assert formats.creation_format(index, [], reporting=False) == 3
    assert formats.blockers(index, 4, 5, ["0.4.0", "0.3.0", "0.3.0"]) == ["0.3.0"]
    assert formats.blockers(index, 2, 4, ["0.3.0", "0.2.9"]) == ["0.2.9"]


def test_a_format_too_new_is_refused_naming_both_versions_and_what_to_do() -> None:
    formats.check_readable("index", formats.NEWEST_INDEX, "index 'g'")  # what this release writes: read
    with pytest.raises(FormatTooNew) as refused:
        formats.check_readable("store", 7, "the store", "0.9.0")
    assert str(refused.value) == (
        f"the store is in store format 7 (written by release 0.9.0); this release ({formats.RELEASE}) reads store "
        f"formats 1 to {formats.NEWEST_STORE}: serve it with release 0.9.0 or later (`fdb-leaderboard --version` "
        "says which a command is)"
    )


# -- at open -----------------------------------------------------------------------------------------


def _write_store_format(url: str, root: bytes, version: int, raised_by: str) -> None:
    record = index_pb2.StoreFormat(version=version, raised_by=raised_by, raised_at=int(time.time()))
    with open_database(url) as db:
        db.run(lambda tr: tr.set(reports.format_key(root), record.SerializeToString()))


def test_a_store_is_created_at_the_newest_format_and_one_too_new_refused(server_place: ServerPlace, tmp_path) -> None:
    server = server_place.start()
    try:
        assert (server.store_format.version, server.store_format.recorded) == (formats.NEWEST_STORE, True)
        assert server.store_format.raised_by == formats.RELEASE
    finally:
        server.stop(grace=1)
    _write_store_format(server_place.url, server_place.root, 9, "0.9.0")
    with pytest.raises(StartupError, match=r"the store is in store format 9 \(written by release 0\.9\.0\)"):
        server_place.start()
    if server_place.backend == "lmdb":  # serve says so in one line, before it listens
        done = CliRunner().invoke(
            main, ["serve", "--store", server_place.url, "--address", "127.0.0.1:0", "--http-address", "off"]
        )
        assert done.exit_code == 1
        assert done.output.splitlines() == [
            "Error: the store is in store format 9 (written by release 0.9.0); this release "
            f"({formats.RELEASE}) reads store formats 1 to {formats.NEWEST_STORE}: serve it with release 0.9.0 or "
            "later (`fdb-leaderboard --version` says which a command is)"
        ]


def test_a_server_stops_once_the_store_is_raised_past_what_it_reads(
    server_place: ServerPlace, caplog: pytest.LogCaptureFixture
) -> None:
    server = server_place.start()
    try:
        _write_store_format(server_place.url, server_place.root, 9, "0.9.0")  # by a newer release meanwhile
        server.reporter.round()  # its next report finds out
        wait_until(server._stopped.is_set, "the server stopping")
        with open_database(server_place.url) as db:
            assert db.read(lambda tr: reports.processes(tr, server_place.root)) == []  # its report withdrawn
    finally:
        server.stop(grace=1)
    logged = [r.getMessage() for r in caplog.records if r.name == "fdb_leaderboard.service" and r.levelname == "ERROR"]
    assert logged and set(logged) == {  # (its own thread's report may have found out too)
        "the store is in store format 9 (written by release 0.9.0); this release "
        f"({formats.RELEASE}) reads store formats 1 to {formats.NEWEST_STORE}: serve it with release 0.9.0 or later "
        "(`fdb-leaderboard --version` says which a command is): this process stops serving the store"
    }
    caplog.clear()  # the one error expected


def _set_index_format(db, catalog: Catalog, name: str, version: int) -> None:
    """What a newer release raising the index writes: its options and its catalog entry."""
    entry = catalog.entry(name)

    options_key = IndexLayout(entry.prefix).options_key

    def write(tr) -> None:
        options = index_pb2.IndexOptions.FromString(tr.get(options_key))
        options.format = version
        tr.set(options_key, options.SerializeToString())
        stored = index_pb2.CatalogEntry.FromString(tr.get(catalog.entry_key(name)))
        stored.options.format = version
        tr.set(catalog.entry_key(name), stored.SerializeToString())
        tr.changed_metadata()  # as every release from 0.3.0 does with a catalog entry

    db.run(write)


def test_an_index_too_new_is_refused_at_open_and_by_every_kept_index(server_place: ServerPlace) -> None:
    server = server_place.start()
    try:
        with LeaderboardClient(server.address) as client:
            client.create_index("game")
            client.add_score("game", "ann", 5, 100)
            assert [i.format.version for i in client.list_indexes()] == [formats.NEWEST_INDEX]
            # Another process (a newer release) raises the index past what this one reads: this
            # server's kept index finds out in its next transaction, which commits nothing.
            other = Catalog(open_database(server_place.url), server_place.root)
            _set_index_format(other.db, other, "game", 7)
            for call in (lambda: client.add_score("game", "bob", 6, 101), lambda: client.top("game", 3)):
                with pytest.raises(FailedPrecondition, match="index 'game' is in index format 7"):
                    call()
            with pytest.raises(FormatTooNew, match=rf"this release \({formats.RELEASE}\) reads index formats 1 to 4"):
                Catalog(other.db, server_place.root).get("game")  # a fresh open too
            prefix = other.entry("game").prefix
            with pytest.raises(FormatTooNew):
                LeaderboardIndex.open(other.db, prefix)  # and without a catalog
            _set_index_format(other.db, other, "game", formats.NEWEST_INDEX)
            assert client.rank("game", "bob") is None  # nothing was written while refused
            other.db.close()
    finally:
        server.stop(grace=1)


def test_an_index_made_without_a_catalog_records_its_format(db, prefix: bytes) -> None:
    index = LeaderboardIndex.create(db, prefix, IndexSettings())
    assert LeaderboardIndex.open(db, prefix).format == formats.NEWEST_INDEX
    older = LeaderboardIndex.create(db, prefix + b"\x01", IndexSettings(), format=2)
    assert LeaderboardIndex.open(db, prefix + b"\x01").format == 2
    assert older.upgrade(to_format=3).format == 3 and LeaderboardIndex.open(db, prefix + b"\x01").format == 3
    assert older.upgrade().format == 4 and LeaderboardIndex.open(db, prefix + b"\x01").format == 4
    assert index.upgrade_state() == (formats.NEWEST_INDEX, None)
    # A dump of an index a newer release wrote is refused before a row is written.
    with pytest.raises(FormatTooNew, match="the dumped index is in index format 8"):
        Restorer(db, prefix + b"\x02", pb.DumpHeader(format_version=FORMAT_VERSION, index_format=8))


# -- the processes' reports and the raising of formats ------------------------------------------------


def test_each_process_reports_its_release_while_it_runs(server_place: ServerPlace) -> None:
    first = server_place.start()
    second = server_place.start()
    try:
        with LeaderboardClient(first.address) as client:
            status = client.store_status()
            assert status.release == formats.RELEASE
            live = {p.address: p for p in status.processes if p.live}
            assert set(live) == {first.address, second.address}
            assert {(p.release, p.pid, p.store_format, p.index_format) for p in live.values()} == {
                (formats.RELEASE, os.getpid(), formats.NEWEST_STORE, formats.NEWEST_INDEX)
            }
            second.stop(grace=1)  # a clean stop withdraws its report
            assert [p.address for p in client.store_status().processes] == [first.address]
            # A process that stopped reporting (killed) stops counting after LIVE_SECONDS, and is
            # forgotten a day after its last report.
            with open_database(server_place.url) as db:
                stale = index_pb2.ProcessReport(release="0.2.9", host="gone", pid=1, seen_at=int(time.time()) - 120)
                key = reports.reports_prefix(server_place.root) + b"\x02stale\x00"
                db.run(lambda tr: tr.set(key, stale.SerializeToString()))
                assert [(p.host, p.live) for p in client.store_status().processes if p.host == "gone"] == [
                    ("gone", False)
                ]
                assert reports.forget_stale(db, server_place.root) == 0
                assert reports.forget_stale(db, server_place.root, time.time() + reports.FORGET_SECONDS - 60) == 1
    finally:
        second.stop(grace=1)
        first.stop(grace=1)


def test_operators_upgrades_are_refused_while_an_older_release_runs(server_place: ServerPlace) -> None:
    load_into(server_place.url, server_place.root, compat.load("0.1.0"))
    server = server_place.start()
    try:
        with LeaderboardClient(server.address, timeout=60) as client, open_database(server_place.url) as db:
            old = index_pb2.ProcessReport(release="0.2.9", host="old-host", pid=42, seen_at=int(time.time()) + 30)
            key = reports.reports_prefix(server_place.root) + b"\x02old\x00"
            db.run(lambda tr: tr.set(key, old.SerializeToString()))
            with pytest.raises(FailedPrecondition) as refused:
                client.upgrade_store()
            assert (
                f"the store cannot be raised to format {formats.NEWEST_STORE}: release 0.3.0 or later reads it"
                in str(refused.value)
            )
            assert "old-host:42 (0.2.9, seen" in str(refused.value)
            assert not client.store_status().format.recorded  # nothing changed
            # An index's newest format needs release 0.3.0 too (format 3 alone, which 0.2.0 reads, the
            # maintenance raises beside it).
            refusal = r"index 'daily' cannot be raised to format 4: release 0\.3\.0"
            with pytest.raises(FailedPrecondition, match=refusal):
                client.upgrade_index("daily")
            assert client.list_windows("daily").format.version == 2
            db.run(lambda tr: tr.clear(key))
            assert client.upgrade_index("daily").format.version == INDEX_NOW
            client.set_writes_paused("dense", True, "moving")  # a paused index is left as it is
            status = client.upgrade_store()
            assert (status.format.version, status.format.recorded, status.format.raised_by) == (
                formats.NEWEST_STORE,
                True,
                "0.3.0",
            )
            names = [i.name for i in client.list_indexes()]
            assert {e.index: e.format.version for e in status.indexes} == {n: 2 if n == "dense" else 4 for n in names}
            client.set_writes_paused("dense", False)
            assert client.upgrade_store().indexes[names.index("dense")].format.version == 4
            assert client.verify("daily") == [] and client.verify("dense") == []
    finally:
        server.stop(grace=1)


def test_the_maintenance_raises_formats_once_every_live_process_reads_them(
    server_place: ServerPlace, monkeypatch: pytest.MonkeyPatch
) -> None:
    load_into(server_place.url, server_place.root, compat.load("0.1.0"))
    server = server_place.start()
    try:
        catalog = server.catalog
        # Without raise_formats, a pass leaves the formats as they are.
        Housekeeping(catalog, raise_formats=False).run_pass(time.time())
        assert {entry.options.format for _, entry in catalog.list()} == {0}
        done = Housekeeping(catalog).run_pass(time.time())
        # Every index recounted (release 0.2.0 reads format 3); the store not (0.2.0 would not report).
        assert {entry.options.format for _, entry in catalog.list()} == {3}
        assert "daily: index format raised to 3" in done
        with LeaderboardClient(server.address) as client:
            assert not client.store_status().format.recorded
            events, _ = client.audit_events(action="UpgradeIndex", index="daily")
            assert [(e.actor, e.details["phase"], e.details["format"]) for e in events] == [
                ("maintenance", "finished", "3")
            ]
            client.upgrade_store()  # the store's processes report now: index format 4 (read from 0.3.0) too
            assert {entry.options.format for _, entry in catalog.list()} == {4}
            store = formats.NEWEST_STORE
            # A later release's format: raised only once no live process runs an older release.
            later_format(monkeypatch)
            server.reporter.report.release = formats.RELEASE  # as a 0.4.0 process reports itself
            server.reporter.report_now()
            with open_database(server_place.url) as db:
                old = index_pb2.ProcessReport(release="0.3.0", host="h", pid=7, seen_at=int(time.time()) + 30)
                key = reports.reports_prefix(server_place.root) + b"\x02older\x00"
                db.run(lambda tr: tr.set(key, old.SerializeToString()))
                Housekeeping(catalog).run_pass(time.time())
                assert client.store_status().format.version == store
                assert {entry.options.format for _, entry in catalog.list()} == {4}
                db.run(lambda tr: tr.clear(key))
            done = Housekeeping(catalog).run_pass(time.time())
            assert f"store format raised to {store + 1}" in done
            assert client.store_status().format.version == store + 1
            assert {entry.options.format for _, entry in catalog.list()} == {5}
            assert catalog.get("daily").format == 5  # the kept index writes format 5's forms now
    finally:
        server.stop(grace=1)


# -- every door -----------------------------------------------------------------------------------------


@pytest.fixture
def served(server_place: ServerPlace):
    load_into(server_place.url, server_place.root, compat.load("0.1.0"))
    server = server_place.start(ServerSettings(maintain_every=0, read_processes=0))
    http = HttpServer(server, "127.0.0.1:0").start()
    try:
        yield server, http
    finally:
        server.stop(grace=1)


def _scrape(http: HttpServer) -> dict[tuple[str, frozenset], float]:
    text = httpx.get(f"{http.url}/metrics").text
    return {
        (s.name, frozenset(s.labels.items())): s.value for f in text_string_to_metric_families(text) for s in f.samples
    }


def test_formats_and_upgrades_through_every_door(served) -> None:
    server, http = served
    runner = CliRunner()

    def cli(*args: str) -> str:
        done = runner.invoke(main, ["--server", server.address, *args])
        assert done.exit_code == 0, done.output
        return done.output

    with LeaderboardClient(server.address, timeout=60) as client:
        # Before: the store and its indexes as 0.1.0 left them (not recorded).
        assert cli("windows", "show", "daily").splitlines()[-1] == (
            "stored in index format 2 (not recorded: written before release 0.3.0) (the server writes 4: "
            "`fdb-leaderboard index upgrade` raises it)"
        )
        listed = cli("index", "list").splitlines()
        assert listed[0].startswith("daily: BEST") and "; format 2 (not recorded" in listed[0]
        assert listed[-1] == (
            f"store format 2 (not recorded: written before release 0.3.0); the server writes {formats.NEWEST_STORE}: "
            f"`fdb-leaderboard store upgrade` raises it; 1 live process of release {formats.RELEASE}"
        )
        assert json.loads(cli("index", "list", "--json"))[0]["format"] == {
            "version": 2,
            "recorded": False,
            "newest": 4,
            "upgrading_to": None,
            "records_done": None,
        }
        rest = httpx.get(f"{http.url}/v1/store").json()
        grpc_status = client.store_status()
        assert rest["format"] == {
            "version": 2,
            "recorded": False,
            "newest": formats.NEWEST_STORE,
            "raised_by": "",
            "raised_at": 0,
        }
        assert (
            [p["address"] for p in rest["processes"]] == [p.address for p in grpc_status.processes] == [server.address]
        )
        assert [f["read_from"] for f in rest["index_formats"]] == ["0.1.0", "0.2.0", "0.2.0", "0.3.0"]
        assert _scrape(http)[("fdb_leaderboard_index_format", frozenset({("index", "daily")}))] == 2
        assert _scrape(http)[("fdb_leaderboard_store_processes", frozenset({("release", formats.RELEASE)}))] == 1
        assert httpx.get(f"{http.url}/readyz").json()["index_formats"]["daily"] == 2

        # An upgrade under way shows in every listing: one batch of 5 records only (of the recount
        # raising it to 3, on the way to the newest).
        step = httpx.post(f"{http.url}/v1/indexes/daily/upgrade?max_records=5&max_batches=1", json={}).json()
        assert not step["done"] and step["format"]["upgrading_to"] == 3 and step["format"]["records_done"] == 5
        assert [i.format.upgrading_to for i in client.list_indexes() if i.name == "daily"] == [3]
        assert "upgrading to 3: 5 records done" in cli("windows", "show", "daily")
        assert client.list_windows("daily").format.records_done == 5
        scraped = _scrape(http)
        assert (
            scraped[
                (
                    "fdb_leaderboard_index_upgrade_records_done",
                    frozenset({("index", "daily"), ("to_format", "3")}),
                )
            ]
            == 5
        )

        # Through REST, the async client and the CLI, each to the end.
        done = httpx.post(f"{http.url}/v1/indexes/daily/upgrade", json={}).json()
        assert done["done"] and done["format"]["version"] == 4 and done["format"]["recorded"]

        async def upgrade_async() -> int:
            async with AsyncLeaderboardClient(server.address, timeout=60) as lb:
                answer = await lb.upgrade_index("dense")
                return answer.format.version

        assert asyncio.run(upgrade_async()) == 4
        assert cli("index", "upgrade", "low_context").startswith("index low_context: format 4 (")
        upgraded = json.loads(cli("store", "upgrade", "--json"))
        assert upgraded["store_format"]["version"] == formats.NEWEST_STORE
        assert {name: f["version"] for name, f in upgraded["indexes"].items()} == dict.fromkeys(upgraded["indexes"], 4)
        status = cli("store", "status").splitlines()
        assert status[0] == f"store format {formats.NEWEST_STORE}; 1 live process of release {formats.RELEASE}"
        assert status[1].startswith(f"store format {formats.NEWEST_STORE} set by release {formats.RELEASE} at ")
        assert status[2].startswith(f"  {server.reporter.report.host}:") and server.address in status[2]
        assert status[3:] == [f"index {i.name}: format 4" for i in client.list_indexes()]
        assert (
            _scrape(http)[("fdb_leaderboard_store_format", frozenset({("recorded", "true")}))] == formats.NEWEST_STORE
        )
        assert httpx.get(f"{http.url}/readyz").json()["store_format"] == {
            "version": formats.NEWEST_STORE,
            "recorded": True,
        }
        events, _ = client.audit_events(action="UpgradeStore")
        assert [e.details["format"] for e in events] == [str(formats.NEWEST_STORE)]
