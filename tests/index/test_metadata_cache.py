"""The catalog entry and window directory kept across transactions, checked by the metadata version.

On FoundationDB a kept index reads its catalog entry, directory and sub-directories once, then
takes them from the cache while the store's metadata version (``\\xff/metadataVersion``, which
comes with each read version) is the one they were read at.  These tests use two catalogs on one
cluster, as two server processes would: every change one makes (windows, score rules, a group's
direction, pauses, a drop and a new index under the same name) is seen by the other's next call;
a write that used the cache conflicts with a directory change committed meanwhile; every
transaction that writes an entry, a directory or a sub-directory changes the metadata version;
and a cached call reads two keys fewer.  On the embedded store nothing is cached (every
transaction reads them, as before): the same behaviour is checked there too.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import fdb.tuple
import pytest

from fdb_leaderboard import formats
from fdb_leaderboard.errors import NotFound, ScoreOutOfRange, Unavailable, WindowNotFound
from fdb_leaderboard.index import IndexSettings, ScoreRules, WindowUpdate
from fdb_leaderboard.index.layout import IndexLayout
from fdb_leaderboard.service import catalog as catalog_module
from fdb_leaderboard.service import releases
from fdb_leaderboard.service.catalog import Catalog, StaleIndex
from fdb_leaderboard.store import Database, open_database
from fdb_leaderboard.store.api import WrappedDatabase
from tests.conftest import fdb_url

DAY = 86_400


@pytest.fixture
def two_catalogs(store_url: str) -> Iterator[tuple[Catalog, Catalog, Database]]:
    """Two catalogs (two processes' views) on one store, under a root of their own."""
    root = fdb.tuple.pack(("lb-test", uuid.uuid4().hex))
    first = open_database(store_url)
    second = first if store_url.startswith("lmdb") else open_database(store_url)
    yield Catalog(first, root), Catalog(second, root), first
    first.run(lambda tr: tr.clear_range_startswith(root))
    first.close()
    if second is not first:
        second.close()


def cached_reads(db: Database) -> int:
    return db.stats.snapshot()["cached_reads"]


def test_changes_made_elsewhere_are_seen_at_once(two_catalogs: tuple[Catalog, Catalog, Database]) -> None:
    here, there, db = two_catalogs
    here.create("game", IndexSettings(high_score_first=True))
    mine = here.get("game")
    mine.add_score(("alice",), 5, DAY)
    assert [e.pk for e in mine.top(3)] == [("alice",)]
    saved = cached_reads(db)
    assert [e.pk for e in mine.top(3)] == [("alice",)]
    if db.metadata_stamps:
        assert cached_reads(db) - saved == 2  # the entry and the directory
    theirs = there.get("game")

    theirs.update_windows(WindowUpdate(high_score_first=True, all_time=True, windows=[(1, 0, 2 * DAY)]))
    theirs.fill()
    assert mine.count(1, DAY) == 1  # the new window, empty: not WindowNotFound from a stale directory
    theirs.set_score_rules(ScoreRules(max_score=10))
    with pytest.raises(ScoreOutOfRange):
        mine.add_score(("bob",), 11, DAY)
    theirs.update_windows(WindowUpdate(high_score_first=True, all_time=True, delete_before=2 * DAY))
    with pytest.raises(WindowNotFound):
        mine.count(1, DAY)

    there.set_writes_paused("game", -1, "a dump")
    with pytest.raises(Unavailable, match="a dump"):
        mine.add_score(("bob",), 1, DAY)
    there.set_writes_paused("game", 0)
    mine.add_score(("bob",), 1, DAY)  # taken again at once

    there.drop("game")
    there.create("game", IndexSettings(high_score_first=False))
    with pytest.raises(StaleIndex):  # the service then opens the name afresh and runs the call again
        mine.count()
    here.forget("game")
    assert here.get("game").count() == 0


def test_a_group_direction_set_elsewhere_is_seen(store_url: str) -> None:
    root = fdb.tuple.pack(("lb-test", uuid.uuid4().hex))
    with open_database(store_url) as db, open_database(store_url) as other:
        try:
            settings = IndexSettings(high_score_first=True, group_size=1)
            Catalog(db, root).create("g", settings)
            mine, theirs = Catalog(db, root).get("g"), Catalog(other, root).get("g")
            mine.add_score(("a",), 1, DAY, group=("x",))
            mine.add_score(("b",), 2, DAY, group=("x",))
            assert [e.pk for e in mine.top(2, group=("y",))] == []  # group y's direction: cached absent
            theirs.save_sub_directory(("y",), False)  # low scores first in group y
            mine.add_score(("a",), 1, DAY, group=("y",))
            mine.add_score(("b",), 2, DAY, group=("y",))
            assert [e.pk for e in mine.top(2, group=("y",))] == [("a",), ("b",)]
            assert [e.pk for e in mine.top(2, group=("x",))] == [("b",), ("a",)]
            assert mine.check() == []
        finally:
            db.run(lambda tr: tr.clear_range_startswith(root))


def test_a_write_that_used_the_cache_conflicts_with_a_change_committed_meanwhile() -> None:
    """A cached directory is not read in the transaction, yet a directory change committed after
    the write's read version aborts it: it runs again and sees the change."""
    root = fdb.tuple.pack(("lb-test", uuid.uuid4().hex))
    with open_database(fdb_url()) as db, open_database(fdb_url()) as other:
        try:
            Catalog(db, root).create("game", IndexSettings(high_score_first=True))
            mine, theirs = Catalog(db, root).get("game"), Catalog(other, root).get("game")
            mine.add_score(("alice",), 5, DAY)  # the cache now holds the entry and directory
            windows_seen: list[int] = []

            def write(ops: Any) -> None:
                windows_seen.append(len(ops.txn.directory().windows))
                ops.writer.add_entries(("bob",), [])
                if len(windows_seen) == 1:  # another process adds a window while this one runs
                    change = WindowUpdate(high_score_first=True, windows=[(1, 0, 2 * DAY)])
                    thread = threading.Thread(target=lambda: theirs.update_windows(change))
                    thread.start()
                    thread.join()

            retries = db.stats.snapshot()["retries"]
            mine.run(write)
            # The commit conflicted (a retry), and the attempt that committed saw the new window
            # (an attempt between may still have taken the cache: its metadata version told).
            assert db.stats.snapshot()["retries"] > retries
            assert windows_seen[0] == 1 and windows_seen[-1] == 2
        finally:
            db.run(lambda tr: tr.clear_range_startswith(root))


def test_a_directory_rewritten_from_the_cache_keeps_a_change_committed_meanwhile() -> None:
    """A write that takes the directory from the cache and rewrites it (a window added) conflicts
    with a directory change another process committed after its read version: it runs again, and
    neither window is lost (three servers' maintenance adding the next window at once)."""
    root = fdb.tuple.pack(("lb-test", uuid.uuid4().hex))
    with open_database(fdb_url()) as db, open_database(fdb_url()) as other:
        try:
            Catalog(db, root).create("game", IndexSettings(high_score_first=True))
            mine, theirs = Catalog(db, root).get("game"), Catalog(other, root).get("game")
            mine.add_score(("alice",), 5, DAY)  # the cache now holds the entry and directory
            attempts: list[int] = []

            def write(ops: Any) -> Any:
                attempts.append(len(ops.txn.directory().windows))
                if len(attempts) == 1:  # another process adds a window while this one runs
                    change = WindowUpdate(high_score_first=True, windows=[(1, 0, DAY)])
                    thread = threading.Thread(target=lambda: theirs.update_windows(change))
                    thread.start()
                    thread.join()
                return ops.windows.add_missing([(2, 0, 7 * DAY)], 0, 6)

            added = mine.run(write)
            assert [(w.type, w.start, w.end) for w in added] == [(2, 0, 7 * DAY)]
            assert attempts[0] == 1 and attempts[-1] == 2  # the attempt that committed saw theirs
            windows = Catalog(db, root).get("game").directory().windows
            assert sorted((w.type, w.start, w.end) for w in windows if w.type) == [(1, 0, DAY), (2, 0, 7 * DAY)]
        finally:
            db.run(lambda tr: tr.clear_range_startswith(root))


class _Recording(WrappedDatabase):
    """A store whose write transactions note the keys they write and whether they changed the
    metadata version (the oracle of the next test)."""

    def __init__(self, inner: Database) -> None:
        super().__init__(inner)
        self.transactions: list[tuple[list[bytes], bool]] = []

    def run(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        def recorded(tr: Any, *a: Any, **k: Any) -> Any:
            keys: list[bytes] = []
            changed = [False]
            proxy = _Proxy(tr, keys, changed)
            result = fn(proxy, *a, **k)
            self.transactions.append((keys, changed[0]))
            return result

        return self.inner.run(recorded, *args, **kwargs)


class _Proxy:
    def __init__(self, tr: Any, keys: list[bytes], changed: list[bool]) -> None:
        self._tr, self._keys, self._changed = tr, keys, changed

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._tr, name)
        if name in ("set", "clear", "add", "max", "min"):
            return lambda key, *rest: (self._keys.append(key), attribute(key, *rest))[1]
        if name == "clear_range":
            return lambda begin, end: (self._keys.append(begin), attribute(begin, end))[1]
        if name == "changed_metadata":
            return lambda: (self._changed.__setitem__(0, True), attribute())[1]
        return attribute

    @property
    def cached(self) -> Any:
        return self._tr.cached

    @cached.setter
    def cached(self, value: Any) -> None:
        self._tr.cached = value


def test_every_transaction_changing_metadata_changes_the_metadata_version(store_url: str) -> None:
    """Every admin change of the catalog, a directory or a sub-directory, run through a store that
    notes what each transaction writes: a transaction that wrote an entry, a directory or a
    sub-directory key also changed the metadata version."""
    root = fdb.tuple.pack(("lb-test", uuid.uuid4().hex))
    with open_database(store_url) as plain:
        db = _Recording(plain)
        catalog = Catalog(db, root)
        try:
            catalog.create("g", IndexSettings(high_score_first=True, group_size=1))
            index = catalog.get("g")
            index.add_score(("a",), 1, DAY, group=("x",))
            index.update_windows(WindowUpdate(high_score_first=True, windows=[(1, 0, DAY), (1, DAY, 2 * DAY)]))
            index.fill()
            index.save_sub_directory(("y",), False)
            index.set_score_rules(ScoreRules(max_score=100))
            index.expire(DAY)
            index.keep_ahead(DAY, [(1, 0, DAY, DAY)], 3 * DAY)
            catalog.set_writes_paused("g", -1, "x")
            catalog.set_writes_paused("g", 0)
            catalog.drop("g")
            with pytest.raises(NotFound):
                catalog.get("g")
            layout = IndexLayout(index.prefix)
            metadata = (layout.directory_key, layout.sub_directories_range()[0], root + fdb.tuple.pack(("catalog",)))
            touching = [
                (keys, changed)
                for keys, changed in db.transactions
                if any(key == metadata[0] or key.startswith(metadata[1]) or key.startswith(metadata[2]) for key in keys)
            ]
            assert len(touching) >= 8
            assert all(changed for _, changed in touching), [keys for keys, changed in touching if not changed]
        finally:
            plain.run(lambda tr: tr.clear_range_startswith(root))


def test_nothing_is_cached_while_an_older_release_may_change_metadata(
    two_catalogs: tuple[Catalog, Catalog, Database], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store below ``formats.CACHED_METADATA`` (one 0.2.0 wrote, which does not change the
    metadata version) may have a process that changes a directory without telling caches: a
    catalog keeps nothing across transactions there, and starts once the store is raised."""
    here, _, db = two_catalogs
    here.create("game", IndexSettings(high_score_first=True))
    key = releases.format_key(here.root)
    db.run(lambda tr: tr.clear(key))  # as 0.2.0 left it: no format recorded (format 2)
    older = Catalog(db, here.root)
    index = older.get("game")
    saved = cached_reads(db)
    for i in range(3):
        index.add_score(("alice",), i, DAY)
        assert [e.pk for e in index.top(3)] == [("alice",)]
    assert cached_reads(db) == saved
    db.run(lambda tr: releases.write_store_format(tr, here.root, formats.CACHED_METADATA))
    index.top(3)
    assert cached_reads(db) == saved  # read again only every STAMPS_CHECK_SECONDS
    monkeypatch.setattr(catalog_module, "STAMPS_CHECK_SECONDS", 0.0)
    for _ in range(3):
        index.top(3)
    assert (cached_reads(db) > saved) == db.metadata_stamps
