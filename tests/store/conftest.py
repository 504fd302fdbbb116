"""Fixtures and helpers of the store's tests: a store of one backend (LMDB or FoundationDB) for what only
it does, a failure raised on purpose, and calls queued behind a leader held open."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fdb_leaderboard.store import Database, Transaction, open_database
from fdb_leaderboard.store.fdb_backend import FdbDatabase
from fdb_leaderboard.store.lmdb_backend import LmdbDatabase
from tests.conftest import fdb_url, private_prefix, wait_until


class Boom(Exception):
    """Raised on purpose inside transaction functions."""


def is_lmdb(db: Database) -> bool:
    return isinstance(db, LmdbDatabase)


@pytest.fixture
def lmdb_dir(tmp_path: Path) -> Path:
    return tmp_path / "lmdb-only"


def open_lmdb(path: Path, query: str = "") -> LmdbDatabase:
    database = open_database(f"lmdb:{path}{'?' + query if query else ''}")
    assert isinstance(database, LmdbDatabase)
    return database


@pytest.fixture
def fdb_db() -> Iterator[FdbDatabase]:
    """The FoundationDB store, for the tests of FoundationDB-only behaviour."""
    database = open_database(fdb_url())
    assert isinstance(database, FdbDatabase)
    yield database
    database.close()


@pytest.fixture
def fdb_prefix(fdb_db: FdbDatabase) -> Iterator[bytes]:
    private = private_prefix()
    yield private
    fdb_db.run(lambda tr: tr.clear_range_startswith(private))


@pytest.fixture
def lmdb_db(lmdb_dir: Path) -> Iterator[LmdbDatabase]:
    """A durable LMDB store for the tests of LMDB-only behaviour."""
    database = open_lmdb(lmdb_dir)
    yield database
    database.close()


def run_behind_blocked_leader(
    db: Database, leader_key: bytes, followers: list[Callable[[Transaction], Any]]
) -> tuple[dict[int, Any], dict[int, BaseException]]:
    """Run ``followers`` concurrently while another ``db.run`` is held open inside its function.

    On LMDB the held transaction owns the write lock, so every follower queues behind it
    and the next leader runs them all as one group-commit batch, in the order given.
    """
    entered, release = threading.Event(), threading.Event()
    results: dict[int, Any] = {}
    errors: dict[int, BaseException] = {}

    def leader(tr: Transaction) -> str:
        tr.set(leader_key, b"leader")
        entered.set()
        assert release.wait(10)
        return "leader"

    began: set[int] = set()  # whose function ran (-1: the leader's; on FoundationDB followers' run beside it)

    def call(index: int, fn: Callable[[Transaction], Any]) -> None:
        def noted(tr: Transaction) -> Any:
            began.add(index)
            return fn(tr)

        try:
            results[index] = db.run(noted)
        except BaseException as exc:
            errors[index] = exc

    threads = [threading.Thread(target=call, args=(-1, leader))]
    threads[0].start()
    assert entered.wait(10)
    for index, fn in enumerate(followers):
        thread = threading.Thread(target=call, args=(index, fn))
        threads.append(thread)
        thread.start()
        if is_lmdb(db):  # keep the queue in the order given
            wait_until(lambda n=index + 1: len(db._queue) == n)
    if not is_lmdb(db):
        wait_until(lambda: set(range(len(followers))) <= began, "the followers began their transactions")
    release.set()
    for thread in threads:
        thread.join(30)
        assert not thread.is_alive()
    assert results.pop(-1) == "leader"
    return results, errors
