"""The embedded store's directory across releases: release 0.2.0 (no shared log; its own code, an
export of its commit) and this one (the redo log by default, store format 4) on one directory.

- Upgrade: a store 0.2.0 wrote (no log) opens with the log, keeps what 0.2.0 wrote, and a clean
  close leaves a plain data file that 0.2.0 reads whole (the way back).
- A crash of this release leaves commits only in the log: 0.2.0 refuses the directory, changing
  nothing, rather than open a data file without them; once this release has opened it (and so
  recovered it) and closed it, 0.2.0 reads every acknowledged commit.
- Side by side: a default opener of this release joins 0.2.0's processes by syncing pages as they
  do; 0.2.0 is refused while a redo-log session has the store open.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import fdb.tuple
import pytest

from fdb_leaderboard import formats
from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.service import releases
from fdb_leaderboard.service.catalog import ROOT
from fdb_leaderboard.store import lmdb_environment, open_database
from fdb_leaderboard.store.api import StoreError
from fdb_leaderboard.store.lmdb_backend import LmdbDatabase
from tests.conftest import ServerPlace
from tests.support.compat_stores import compat, load_into, release_tree, verify_all

pytestmark = pytest.mark.slow

PREVIOUS = "0.2.0"
# Run by either release (``python -c`` in its tree): store-level commands, one JSON line each on
# stdin, one JSON answer each on stdout.
CHILD = r"""
import json, sys
import fdb_leaderboard
from fdb_leaderboard.store import open_database
db = None
print(json.dumps({"package": fdb_leaderboard.__file__}), flush=True)
for line in sys.stdin:
    command = json.loads(line)
    try:
        if command["op"] == "open":
            db = open_database(command["url"])
            answer = {"redo_log": getattr(db, "redo_log", None) is not None}
        elif command["op"] == "set":
            for key, value in command["items"].items():
                db.run(lambda tr, k=key, v=value: tr.set(k.encode(), v.encode()))
                print(json.dumps({"acked": key}), flush=True)
            answer = {}
        elif command["op"] == "items":
            rows = db.read(lambda tr: tr.get_range(b"", b"\xff"))
            answer = {"items": {k.decode(): v.decode() for k, v in rows}}
        elif command["op"] == "close":
            db.close()
            answer = {}
    except Exception as exc:
        answer = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(answer), flush=True)
"""


class Child:
    """A process of one release's code running :data:`CHILD`."""

    def __init__(self, tree: str | None) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", CHILD],
            cwd=tree or Path(__file__).resolve().parents[2],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        package = self.answer()["package"]
        assert package.startswith(str(tree)) if tree else True, package  # that release's own code

    def answer(self) -> dict:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, "the child process ended"
        return json.loads(line)

    def send(self, op: str, **fields: object) -> dict:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"op": op, **fields}) + "\n")
        self.process.stdin.flush()
        return self.answer()

    def set(self, items: dict[str, str]) -> None:
        self.send_only("set", items=items)
        for key in items:
            assert self.answer() == {"acked": key}
        assert self.answer() == {}

    def send_only(self, op: str, **fields: object) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"op": op, **fields}) + "\n")
        self.process.stdin.flush()

    def end(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        assert self.process.wait(60) == 0
        assert self.process.stdout is not None
        self.process.stdout.close()


@pytest.fixture(scope="module")
def previous() -> Iterator[str]:
    with release_tree(PREVIOUS) as tree:
        yield tree


def run_release(tree: str | None, url: str, items: dict[str, str] | None = None) -> dict:
    """Open ``url`` with ``tree``'s release (None: this one), write ``items``, read everything, close."""
    child = Child(tree)
    try:
        opened = child.send("open", url=url)
        if "error" in opened:
            return opened
        if items:
            child.set(items)
        found = child.send("items")
        assert child.send("close") == {}
        return {**opened, **found}
    finally:
        child.end()


def session_files(store: Path) -> list[str]:
    return sorted(name for name in os.listdir(store) if name.startswith("redo.") and name.endswith((".log", "point")))


def test_store_format_4_says_what_the_directory_holds() -> None:
    entry = formats.describe(formats.STORE_FORMATS, formats.REDO_LOG)
    assert entry is not None and (entry.release, entry.read_from) == ("0.3.0", "0.3.0")
    assert "redo log" in entry.adds and "clean close" in entry.adds
    assert formats.NEWEST_STORE >= formats.REDO_LOG


def test_a_store_of_the_release_before_opens_with_the_log_and_a_clean_close_leads_back(
    tmp_path: Path, previous: str
) -> None:
    store = tmp_path / "store"
    url = f"lmdb:{store}"
    written = {f"old/{i}": f"v{i}" for i in range(20)}
    assert run_release(previous, url, written) == {"redo_log": False, "items": written}
    assert session_files(store) == []  # 0.2.0's durable store: no log

    db = LmdbDatabase(str(store))  # this release, its default
    try:
        assert db.redo_log is not None
        assert session_files(store) != []  # its session's checkpoint and segment
        assert {k.decode(): v.decode() for k, v in db.read(lambda tr: tr.get_range(b"", b"\xff"))} == written
        for i in range(30):
            db.run(lambda tr, i=i: tr.set(f"new/{i}".encode(), f"w{i}".encode()))
    finally:
        db.close()
    assert session_files(store) == []  # a plain LMDB data file again

    both = {**written, **{f"new/{i}": f"w{i}" for i in range(30)}}
    assert run_release(previous, url) == {"redo_log": False, "items": both}


def test_a_crash_leaves_commits_the_release_before_refuses_to_miss(tmp_path: Path, previous: str) -> None:
    store = tmp_path / "store"
    url = f"lmdb:{store}?checkpoint_seconds=3600"  # no checkpoint after the first: the log holds them all
    writer = Child(None)
    assert writer.send("open", url=url) == {"redo_log": True}
    acked = {f"k/{i:03d}": f"v{i}" for i in range(200)}
    writer.set(acked)
    writer.process.send_signal(signal.SIGKILL)
    writer.process.wait(60)
    assert "redo.checkpoint" in os.listdir(store)

    before = {name: hashlib.sha256((store / name).read_bytes()).hexdigest() for name in session_files(store)}
    data = hashlib.sha256((store / "data.mdb").read_bytes()).hexdigest()
    refused = run_release(previous, f"lmdb:{store}")
    assert refused.keys() == {"error"}
    assert refused["error"].startswith("RedoLogError: ") and "is not a redo-log checkpoint" in refused["error"]
    # Nothing changed: neither the log nor the data file.
    assert {name: hashlib.sha256((store / name).read_bytes()).hexdigest() for name in session_files(store)} == before
    assert hashlib.sha256((store / "data.mdb").read_bytes()).hexdigest() == data

    with open_database(f"lmdb:{store}") as db:  # this release recovers from the log
        assert {k.decode(): v.decode() for k, v in db.read(lambda tr: tr.get_range(b"", b"\xff"))} == acked
    assert session_files(store) == []
    assert run_release(previous, f"lmdb:{store}") == {"redo_log": False, "items": acked}


def test_the_releases_share_a_store_by_syncing_pages_and_0_2_0_is_refused_by_a_log_session(
    tmp_path: Path, previous: str
) -> None:
    store = tmp_path / "store"
    url = f"lmdb:{store}"
    old = Child(previous)
    try:
        assert old.send("open", url=url) == {"redo_log": False}
        old.set({"a": "from 0.2.0"})
        with open_database(url) as db:  # joins 0.2.0's mode: pages synced, no log
            assert isinstance(db, LmdbDatabase) and db.redo_log is None
            assert db.read(lambda tr: tr.get(b"a")) == b"from 0.2.0"
            db.run(lambda tr: tr.set(b"b", b"from 0.3.0"))
            assert old.send("items") == {"items": {"a": "from 0.2.0", "b": "from 0.3.0"}}
            old.set({"c": "from 0.2.0 again"})
            assert db.read(lambda tr: tr.get(b"c")) == b"from 0.2.0 again"
            assert session_files(store) == []
        assert old.send("close") == {}
    finally:
        old.end()

    with open_database(url) as db:  # alone: the redo log
        assert isinstance(db, LmdbDatabase) and db.redo_log is not None
        refused = run_release(previous, url)
        assert refused.keys() == {"error"} and refused["error"].startswith("StoreError: ")
        assert f"{store}" in refused["error"] and "is open in another process" in refused["error"]
        db.run(lambda tr: tr.set(b"d", b"while 0.2.0 was refused"))
    found = run_release(previous, url)
    assert found["items"] == {
        "a": "from 0.2.0",
        "b": "from 0.3.0",
        "c": "from 0.2.0 again",
        "d": "while 0.2.0 was refused",
    }


# -- the store-format gate: below store format 4 the default durable mode syncs pages ----------


def test_the_gate_reads_the_catalogs_store_format_where_the_service_keeps_it() -> None:
    assert lmdb_environment.CATALOG_ROOT == ROOT
    assert releases.format_key(ROOT) == lmdb_environment._STORE_FORMAT_KEY


def test_a_store_below_format_4_is_served_with_pages_synced_and_nothing_written_0_2_0_cannot_read(
    tmp_path: Path, previous: str
) -> None:
    """0.2.0 wrote a catalog without a format record (format 2): a default opener syncs pages, a
    SIGKILL leaves no log, and 0.2.0 then reads every acknowledged write; a named redo log is refused."""
    store = tmp_path / "store"
    url = f"lmdb:{store}"
    catalog_key = (ROOT + fdb.tuple.pack(("catalog", "board"))).decode("latin-1")
    assert run_release(previous, url, {catalog_key: "0.2.0's entry"})["redo_log"] is False

    writer = Child(None)
    assert writer.send("open", url=url) == {"redo_log": False}
    acked = {f"k/{i:03d}": f"v{i}" for i in range(100)}
    writer.set(acked)
    assert session_files(store) == []
    writer.process.send_signal(signal.SIGKILL)
    writer.process.wait(60)
    assert session_files(store) == []
    found = run_release(previous, url)
    assert found == {"redo_log": False, "items": {catalog_key: "0.2.0's entry", **acked}}

    with pytest.raises(StoreError, match=r"at format 2: the redo log needs store format 4.*store upgrade"):
        open_database(f"{url}?redo_log=true")
    assert session_files(store) == []
    with open_database(url) as db:  # refused above without a trace: the default still opens
        assert db.redo_log is None


def test_the_0_2_0_fixture_is_served_durable_below_format_4_and_the_raise_starts_the_log(tmp_path: Path) -> None:
    store = tmp_path / "store"
    url = f"lmdb:{store}"
    fixture = compat.load("0.2.0")
    load_into(url, ROOT, fixture)  # an empty directory: nothing under the root yet, so the log
    place = ServerPlace("lmdb", store)
    place.url = url  # the default: durable
    server = place.start()
    try:
        assert server.db.redo_log is None  # read through to the embedded store
        with LeaderboardClient(server.address, timeout=60) as client:
            queries = fixture["queries"]
            assert [q["answer"] for q in queries] == [
                compat.plain(getattr(client, q["op"])(*q["args"], **q["kwargs"])) for q in queries
            ]
            assert verify_all(client) == {}
            client.add_score("daily", "after the upgrade", 7, compat.T0 + 1)
        assert session_files(store) == []
    finally:
        server.stop(grace=1)

    with open_database(url) as db:  # still format 2 (nothing raised it): pages synced
        assert db.redo_log is None
        db.run(lambda tr: releases.write_store_format(tr, ROOT, formats.REDO_LOG))
    with open_database(url) as db:  # raised: the log
        assert db.redo_log is not None and session_files(store) != []
