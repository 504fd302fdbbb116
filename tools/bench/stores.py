"""Store set-up: every benchmark names its stores by URL and opens them here.

A :class:`StoreUnderTest` is a store URL without options (``lmdb:PATH`` or
``fdb:CLUSTER_FILE``), the name its results are keyed by and the title its rows are labelled
with.  Its variants (``durable=false``, the redo log, ...) are the same URL with options, so a
phase that reopens the store in another mode, and the gRPC server process, get exactly the URL
a user would pass to ``fdb-leaderboard serve --store``.  What only the embedded store can
report (its LMDB environment: pages, B-tree depth, commits, the redo log's counters) goes
through :func:`as_lmdb`, which says so when the store is not one; what only FoundationDB can
(the cluster's status, its sampled estimate of a range's size) through :func:`as_fdb`.

A benchmark that builds its own indexes runs in a :class:`ScratchStore`: the store it was
given, or a temporary embedded one, each index under a fresh prefix that is cleared afterwards.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from fdb_leaderboard.store import Database, open_database, parse_url, strinc
from fdb_leaderboard.store.fdb_backend import FdbDatabase
from fdb_leaderboard.store.lmdb_backend import LmdbDatabase


def store_url(url: str, **options: bool | int | float | str) -> str:
    """``url`` with ``options`` set in its query string (booleans as ``true``/``false``)."""
    scheme, path, query = parse_url(url)
    query.update(
        {name: str(value).lower() if isinstance(value, bool) else str(value) for name, value in options.items()}
    )
    return f"{scheme}:{path}" + (f"?{urlencode(query)}" if query else "")


def open_store(url: str) -> Database:
    """The one place the benchmarks open a store."""
    return open_database(url)


def as_lmdb(db: Database) -> LmdbDatabase:
    """``db`` as the embedded store, for the figures only LMDB has."""
    if not isinstance(db, LmdbDatabase):
        raise SystemExit(f"this measurement needs the embedded store (lmdb:PATH), not {db.url}")
    return db


def as_fdb(db: Database) -> FdbDatabase:
    """``db`` as FoundationDB, for the figures only a cluster has."""
    if not isinstance(db, FdbDatabase):
        raise SystemExit(f"this measurement needs FoundationDB (fdb:CLUSTER_FILE), not {db.url}")
    return db


def fdb_cluster(db: Database) -> dict[str, Any]:
    """The cluster behind ``db``: its version, storage engine, redundancy and processes (status json)."""
    raw = as_fdb(db)._db
    status = json.loads(bytes(raw[b"\xff\xff/status/json"]))["cluster"]
    configuration = status.get("configuration", {})
    processes = status.get("processes", {}).values()
    return {
        "version": sorted({p.get("version", "?") for p in processes}),
        "storage_engine": configuration.get("storage_engine", "?"),
        "log_engine": configuration.get("log_engine", configuration.get("tlog_engine", "?")),
        "redundancy": configuration.get("redundancy_mode", "?"),
        "processes": len(processes),
    }


def fdb_range_bytes(db: Database, begin: bytes, end: bytes) -> int:
    """FoundationDB's estimate of the bytes stored in ``[begin, end)`` (sampled by the storage servers)."""
    tr = as_fdb(db)._db.create_transaction()  # kept: a collected transaction cancels its futures
    return int(tr.get_estimated_range_size_bytes(begin, end).wait())


@dataclass(frozen=True)
class StoreUnderTest:
    """A store the workloads run on: its URL (no options), the name its results are keyed by and
    the title its rows' labels start with.

    The in-process durable rows of a store are keyed by ``name`` itself; its other rows by
    ``name`` and a mode (``ours_nondurable``, ``ours_grpc``, ...), see :meth:`system`.
    """

    name: str
    url: str
    title: str = "ours"

    def url_with(self, **options: bool | int | float | str) -> str:
        return store_url(self.url, **options)

    def open(self, **options: bool | int | float | str) -> Database:
        return open_store(self.url_with(**options))

    def system(self, mode: str = "") -> str:
        """The results key of this store in ``mode`` ("" for in-process, durable)."""
        return f"{self.name}_{mode}" if mode else self.name

    @property
    def is_fdb(self) -> bool:
        return self.url.startswith("fdb:")

    @classmethod
    def embedded(cls, name: str, path: str) -> StoreUnderTest:
        return cls(name, f"lmdb:{path}")

    @classmethod
    def foundationdb(cls, name: str, cluster_file: str) -> StoreUnderTest:
        return cls(name, f"fdb:{cluster_file}", "ours on FDB")


@contextlib.contextmanager
def store_directory(given: str | None, keep: bool, prefix: str) -> Iterator[str]:
    """``given`` (made absolute, left in place), or a temporary directory removed afterwards unless ``keep``."""
    if given:
        path, cleanup = os.path.abspath(given), False
    else:
        path, cleanup = tempfile.mkdtemp(prefix=prefix), not keep
    try:
        yield path
    finally:
        if cleanup:
            shutil.rmtree(path, ignore_errors=True)


def require_empty(path: str, what: str) -> None:
    """Refuse to benchmark into a directory that already holds something."""
    if os.path.isdir(path) and os.listdir(path):
        raise SystemExit(f"{path} is not empty: give an empty or new {what}")


@contextlib.contextmanager
def scratch_url(url: str | None, what: str, **options: bool | int | float | str) -> Iterator[str]:
    """``url``, or the URL of a temporary embedded store made with ``options`` and removed
    afterwards, for a benchmark whose server (not itself) opens the store."""
    if url:
        yield url
        return
    with tempfile.TemporaryDirectory(prefix=f"bench-{what}-") as directory:
        yield store_url(f"lmdb:{directory}/store", **options)


class ScratchStore:
    """The store at ``url``, or a temporary embedded store made with ``options`` (removed
    afterwards); :meth:`prefix` gives each index a fresh key prefix, cleared on leaving."""

    def __init__(self, url: str | None, what: str, **options: bool | int | float | str) -> None:
        self._made = contextlib.ExitStack()
        self.url = self._made.enter_context(scratch_url(url, what, **options))
        self.temporary = url is None
        self.db = open_store(self.url)
        self._prefixes: list[bytes] = []

    def prefix(self) -> bytes:
        """A key prefix of its own (in the user key space, as an index's would be)."""
        made = b"\x15\x7d" + uuid.uuid4().bytes[:6]
        self._prefixes.append(made)
        return made

    def described(self) -> str:
        """The store as a report's first line names it."""
        return f"lmdb (temporary, {self.url.partition('?')[2] or 'durable'})" if self.temporary else self.url

    def __enter__(self) -> ScratchStore:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if not self.temporary:
                for made in self._prefixes:
                    self.db.run(lambda tr, made=made: tr.clear_range(made, strinc(made)))
        finally:
            self.db.close()
            self._made.close()
