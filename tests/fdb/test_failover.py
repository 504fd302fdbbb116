"""What a FoundationDB call does while the cluster recovers or cannot answer.

- ``transaction_too_old`` (1007) is what an attempt that began before a recovery gets, however
  short it was: it is retried like FoundationDB's other transient errors, writes included.  Only
  an attempt whose own work outlasted FoundationDB's 5 seconds on its last try ends as
  TransactionTimedOut ("split the work").
- A call served with a deadline (``api.call_deadline``, set by the service from the call's
  deadline) waits for the cluster no longer than that, even when the store's own ``timeout`` is
  longer (but a second at least: a long job's last batch may start just before its deadline),
  and says whether a write may have committed.

The replicated cluster's processes killed under load are tests/fdb/test_replicated.py.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fdb_leaderboard.store import StoreUnavailable, TransactionTimedOut, fdb_backend, open_database
from fdb_leaderboard.store.api import call_deadline, call_time_left
from fdb_leaderboard.store.fdb_backend import FdbDatabase, load_fdb
from tests.conftest import fdb_url, private_prefix

TRANSACTION_TOO_OLD = 1007


class TooOldDatabase(FdbDatabase):
    """FoundationDB whose commits fail with transaction_too_old (uncommitted) ``faults`` times per call."""

    def __init__(self, cluster_file: str, faults: int, timeout_seconds: float = 10.0) -> None:
        super().__init__(cluster_file, timeout_seconds=timeout_seconds)
        self.faults = faults
        self._left = threading.local()

    def _transact(self, writable: bool, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        self._left.count = self.faults
        return super()._transact(writable, fn, args, kwargs)

    def _commit(self, tr: Any) -> None:
        if self._left.count > 0:
            self._left.count -= 1
            raise self._fdb.FDBError(TRANSACTION_TOO_OLD)
        super()._commit(tr)


@pytest.fixture
def cluster_file() -> str:
    return fdb_url().removeprefix("fdb:")


@pytest.fixture
def prefix(cluster_file: str) -> Iterator[bytes]:
    private = private_prefix()
    yield private
    with open_database(f"fdb:{cluster_file}") as db:
        db.run(lambda tr: tr.clear_range_startswith(private))


def test_a_write_that_gets_transaction_too_old_is_retried(cluster_file: str, prefix: bytes) -> None:
    db = TooOldDatabase(cluster_file, faults=2)
    db.run(lambda tr: tr.add(prefix, (1).to_bytes(8, "little")))
    assert db.read(lambda tr: tr.get(prefix)) == (1).to_bytes(8, "little")  # applied once
    assert db.stats.snapshot()["retries"] == 2


def test_transaction_too_old_until_the_timeout_is_the_cluster_not_answering(cluster_file: str, prefix: bytes) -> None:
    db = TooOldDatabase(cluster_file, faults=1_000_000, timeout_seconds=0.5)
    started = time.monotonic()
    with pytest.raises(StoreUnavailable, match=r"did not answer in time.*The write was not committed"):
        db.run(lambda tr: tr.set(prefix, b"x"))
    assert time.monotonic() - started < 5
    assert db.read(lambda tr: tr.get(prefix)) is None


def test_transaction_too_old_after_five_seconds_of_work_says_to_split_it(
    cluster_file: str, prefix: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fdb_backend, "_TRANSACTION_SECONDS", 0.0)  # every attempt counts as a long one
    db = TooOldDatabase(cluster_file, faults=1_000_000, timeout_seconds=0.5)
    with pytest.raises(TransactionTimedOut, match=r"longer than FoundationDB's 5 second limit.*smaller transactions"):
        db.run(lambda tr: tr.set(prefix, b"x"))


def test_a_call_deadline_bounds_the_wait_for_a_cluster_that_does_not_answer(tmp_path: Path) -> None:
    try:
        load_fdb()
    except StoreUnavailable as exc:
        pytest.skip(str(exc))
    nobody = tmp_path / "nobody.cluster"
    nobody.write_text("nobody:nobody@127.0.0.1:1\n")  # no coordinator listens there
    db = open_database(f"fdb:{nobody}?timeout=30")
    assert call_time_left() is None
    for deadline, waited in ((1.6, 1.45), (2.5, 2.25), (0.3, 1.0)):
        started = time.monotonic()
        with call_deadline(deadline), pytest.raises(StoreUnavailable) as caught:
            db.run(lambda tr: tr.set(b"k", b"v"))
        took = time.monotonic() - started
        assert waited - 0.1 <= took <= max(deadline, waited + 0.3), took  # before the deadline, if over a second
        said = re.search(r"did not answer in time: the call ran out of its ([\d.]+) s deadline", str(caught.value))
        assert said and waited - 0.1 <= float(said[1]) <= waited, str(caught.value)
    with call_deadline(float("inf")):
        assert call_time_left() is None
