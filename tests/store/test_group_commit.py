"""Calls committed together: the embedded store's group commit (callers queued behind a leader run as
one batch, a failing call withdrawn alone, no page written for a change to nothing), and
``commit_together`` and ``run_together`` on every store (FoundationDB's budgets, conflicts and
unknown results included)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lmdb
import pytest

from fdb_leaderboard.store import Database, StoreError, Transaction, encode_int64, lmdb_group_commit
from fdb_leaderboard.store.fdb_backend import FdbDatabase
from fdb_leaderboard.store.lmdb_backend import LmdbDatabase, _Pending
from tests.conftest import wait_until
from tests.store.conftest import Boom, is_lmdb, open_lmdb, run_behind_blocked_leader

# -- group commit (LMDB) ---------------------------------------------------------------------------


def hammer(database: LmdbDatabase, threads_n: int, per_thread: int) -> dict[tuple[int, int], Any]:
    """``threads_n`` threads each make ``per_thread`` small ``run`` calls; returns what each call returned."""
    results: dict[tuple[int, int], Any] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(threads_n)

    def write(tr: Transaction, t: int, i: int) -> tuple[int, int]:
        tr.set(b"w/%02d/%03d" % (t, i), b"%d" % (t * 1000 + i))
        return (t, i)

    def worker(t: int) -> None:
        try:
            start.wait()
            for i in range(per_thread):
                results[(t, i)] = database.run(write, t, i)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(threads_n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    expected = {(b"w/%02d/%03d" % (t, i)): b"%d" % (t * 1000 + i) for t in range(threads_n) for i in range(per_thread)}
    assert dict(database.read(lambda tr: tr.get_range(b"w/", b"w0"))) == expected
    return results


def test_lmdb_atomic_op_that_changes_nothing_writes_no_page(lmdb_db: LmdbDatabase) -> None:
    """LMDB commits without a new transaction id when no page is dirty: a MAX below the stored
    value, a MIN above it or an ADD of zero must leave the file untouched, not rewrite it."""
    key = b"\x15\x7fatomic"
    lmdb_db.run(lambda tr: tr.set(key, encode_int64(50)))

    def txnid() -> int:
        return lmdb_db._env.info()["last_txnid"]

    before = txnid()
    lmdb_db.run(lambda tr: (tr.max(key, encode_int64(7)), tr.min(key, encode_int64(90)), tr.add(key, bytes(8))))
    assert txnid() == before
    assert lmdb_db.read(lambda tr: tr.get(key)) == encode_int64(50)
    lmdb_db.run(lambda tr: tr.max(key, encode_int64(51)))
    assert txnid() == before + 1
    lmdb_db.run(lambda tr: tr.add(b"\x15\x7fabsent", bytes(8)))  # an absent key is created, as in FDB
    assert lmdb_db.read(lambda tr: tr.get(b"\x15\x7fabsent")) == bytes(8)


def test_lmdb_group_commit_under_load(lmdb_db: LmdbDatabase) -> None:
    assert lmdb_db.durable and lmdb_db.group_commit
    results = hammer(lmdb_db, 8, 50)
    assert results == {(t, i): (t, i) for t in range(8) for i in range(50)}  # each caller got its own result
    assert 1 <= lmdb_db.commits <= 400


def test_lmdb_group_commit_batches_queued_callers(lmdb_db: LmdbDatabase) -> None:
    def follower(i: int) -> Callable[[Transaction], int]:
        return lambda tr: (tr.set(b"f/%d" % i, b"%d" % i), i)[1]

    results, errors = run_behind_blocked_leader(lmdb_db, b"leader", [follower(i) for i in range(6)])
    assert errors == {}
    assert results == {i: i for i in range(6)}
    assert lmdb_db.commits == 1  # the held leader takes the six queued behind it into its commit
    assert lmdb_db.read(lambda tr: tr.get_range(b"f/", b"f0")) == [(b"f/%d" % i, b"%d" % i) for i in range(6)]


def test_commit_together_runs_each_call_at_once_and_keeps_them_as_the_block_ends(db: Database, prefix: bytes) -> None:
    """In a ``commit_together`` block each ``run`` runs at once (a failing one rolled back alone);
    where the store commits calls together what they wrote is seen by others, in one commit, only
    once the block ends; elsewhere (FoundationDB) each call commits on its own as always."""
    key = prefix + b"together/"
    lmdb = is_lmdb(db)
    commits_before = db.commits if lmdb else 0
    seen_by_another_thread: list[bytes | None] = []

    def failing(tr: Transaction) -> None:
        tr.set(key + b"2", b"b")
        raise Boom(2)

    with db.commit_together():
        assert db.run(lambda tr: (tr.set(key + b"1", b"a"), "one")[1]) == "one"
        with pytest.raises(Boom):
            db.run(failing)
        assert db.run(lambda tr: (tr.get(key + b"1"), tr.get(key + b"2"))) == (b"a", None)
        reader = threading.Thread(target=lambda: seen_by_another_thread.append(db.read(lambda tr: tr.get(key + b"1"))))
        reader.start()
        reader.join(10)
    assert seen_by_another_thread == [None if lmdb and db.group_commit else b"a"]
    assert db.read(lambda tr: tr.get_range(key, key + b"\xff")) == [(key + b"1", b"a")]
    if lmdb:
        assert db.commits_together == db.group_commit
        assert db.commits - commits_before == (1 if db.commits_together else 2)


def test_run_together_gives_each_call_its_outcome_and_keeps_only_what_succeeded(
    db: Database, prefix: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``run_together``: calls run in order, each seeing what those before it wrote (one key
    written twice: both writes, in order); a call that raises before writing or after writing
    keeps nothing and fails no other; on FoundationDB the calls that wrote nothing amiss share
    one transaction, and the one that wrote and raised runs again on its own after it."""
    key = prefix + b"together/"
    counter = key + b"count"

    def add(name: bytes) -> Callable[[], bytes | None]:
        def call() -> bytes | None:
            return db.run(lambda tr: (tr.add(counter, encode_int64(1)), tr.set(key + name, name), tr.get(counter))[2])

        return call

    def refused_before_writing() -> None:
        db.run(lambda tr: (tr.get(counter), (_ for _ in ()).throw(Boom(1))))

    ran_after_writing = []

    def refused_after_writing() -> None:
        def write(tr: Transaction) -> None:
            ran_after_writing.append(tr.get(counter))
            tr.set(key + b"junk", b"x")
            tr.add(counter, encode_int64(100))
            raise Boom(2)

        db.run(write)

    kept: list[int] = []
    if not is_lmdb(db):
        monkeypatch.setattr(db, "on_commit", kept.append)
    stats = db.stats.snapshot()
    outcomes = db.run_together([add(b"a"), refused_before_writing, add(b"b"), refused_after_writing, add(b"a")])
    delta = {name: count - stats[name] for name, count in db.stats.snapshot().items()}
    assert [result for result, _ in outcomes] == [
        encode_int64(1),
        None,
        encode_int64(2),
        None,
        encode_int64(3),
    ]
    assert [type(error).__name__ if error else None for _, error in outcomes] == [None, "Boom", None, "Boom", None]
    assert db.read(lambda tr: tr.get_range(key, key + b"\xff")) == [
        (key + b"a", b"a"),
        (key + b"b", b"b"),
        (counter, encode_int64(3)),
    ]
    if not is_lmdb(db):
        # The batch ran again without the call that wrote and raised, which then ran alone (and
        # saw what the batch committed).
        assert ran_after_writing == [encode_int64(2), encode_int64(3)]
        assert delta["transactions"] == 2 and delta["commits"] == 2  # the batch's, the lone call's
        assert kept == [3]  # the shared commit kept the three that succeeded; the lone call is no batch's


def test_run_together_spreads_calls_over_transactions_within_their_budget(
    fdb_db: FdbDatabase, fdb_prefix: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shared transaction takes calls until it has written SHARED_BYTES: the rest go on in the next."""
    from fdb_leaderboard.store import fdb_shared

    monkeypatch.setattr(fdb_shared, "SHARED_BYTES", 2_500)
    value = b"v" * 1_000
    calls = [lambda i=i: fdb_db.run(lambda tr: (tr.set(fdb_prefix + b"%02d" % i, value), i)[1]) for i in range(7)]
    kept: list[int] = []
    monkeypatch.setattr(fdb_db, "on_commit", kept.append)
    before = fdb_db.stats.snapshot()["transactions"]
    assert fdb_db.run_together(calls) == [(i, None) for i in range(7)]
    assert fdb_db.stats.snapshot()["transactions"] - before == 3  # 3 + 3 + 1 calls
    assert kept == [3, 3, 1]
    assert len(fdb_db.read(lambda tr: tr.get_range(fdb_prefix, fdb_prefix + b"\xff"))) == 7


def test_run_together_retries_conflicts_and_splits_a_batch_that_keeps_conflicting(
    fdb_db: FdbDatabase, fdb_prefix: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shared transaction whose commit conflicts runs again; after SPLIT_AFTER_CONFLICTS it is
    split in halves, each its own transaction; every call ends applied exactly once."""
    commit = fdb_db._commit
    sizes: list[int] = []
    counter = fdb_prefix + b"count"

    def conflicting(tr: Any) -> None:
        sizes.append(len(calls_seen))
        calls_seen.clear()
        if sizes[-1] > 1:  # a batch of several calls conflicts every time: only split ones commit
            raise fdb_db._fdb.FDBError(1020)
        commit(tr)

    calls_seen: list[int] = []

    def call(i: int) -> Callable[[], int]:
        def write(tr: Transaction) -> int:
            calls_seen.append(i)
            tr.add(counter, encode_int64(1))
            return i

        return lambda: fdb_db.run(write)

    kept: list[int] = []
    monkeypatch.setattr(fdb_db, "on_commit", kept.append)
    monkeypatch.setattr(fdb_db, "_commit", conflicting)
    assert fdb_db.run_together([call(i) for i in range(4)]) == [(i, None) for i in range(4)]
    monkeypatch.undo()
    assert fdb_db.read(lambda tr: tr.get(counter)) == encode_int64(4)
    # 4 calls conflict twice, then halves of 2 conflict twice each, then each call commits alone.
    assert sizes == [4, 4, 2, 2, 1, 1, 2, 2, 1, 1]
    assert kept == [1, 1, 1, 1]  # only the commits that took: once each, none for the attempts that conflicted


def test_run_together_settles_an_unknown_commit_result_by_its_marker(
    fdb_db: FdbDatabase, fdb_prefix: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shared commit that reports commit_unknown_result after committing is not applied
    again: the retry finds the batch's marker and answers the committed attempt's outcomes."""
    commit = fdb_db._commit
    faults: list[int] = []
    counter = fdb_prefix + b"count"

    def unknown_after_committing(tr: Any) -> None:
        commit(tr)
        if not faults:
            faults.append(1)
            raise fdb_db._fdb.FDBError(1021)

    runs: list[int] = []

    def call(i: int) -> Callable[[], int]:
        return lambda: fdb_db.run(lambda tr: (runs.append(i), tr.add(counter, encode_int64(1)), i)[2])

    kept: list[int] = []
    monkeypatch.setattr(fdb_db, "on_commit", kept.append)
    monkeypatch.setattr(fdb_db, "_commit", unknown_after_committing)
    assert fdb_db.run_together([call(i) for i in range(3)]) == [(i, None) for i in range(3)]
    monkeypatch.undo()
    assert faults == [1] and runs == [0, 1, 2]  # the retry ran no call again
    assert kept == [3]  # one commit, told once: by the retry that found its marker
    assert fdb_db.read(lambda tr: tr.get(counter)) == encode_int64(3)


def test_lmdb_commit_together_commits_other_threads_calls_with_its_own(lmdb_db: LmdbDatabase) -> None:
    results: dict[str, object] = {}
    other = threading.Thread(target=lambda: results.update(other=lmdb_db.run(lambda tr: (tr.set(b"o", b"1"), 7)[1])))
    with lmdb_db.commit_together():
        lmdb_db.run(lambda tr: tr.set(b"b", b"1"))
        other.start()
        wait_until(lambda: len(lmdb_db._queue) == 1)  # queued behind the block, which leads
        assert results == {}
    other.join(10)
    assert results == {"other": 7}
    assert lmdb_db.commits == 1
    assert lmdb_db.read(lambda tr: tr.get_range(b"a", b"z")) == [(b"b", b"1"), (b"o", b"1")]


def test_lmdb_commit_together_keeps_nothing_when_its_commit_fails(
    lmdb_db: LmdbDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed commit raises as the block ends, to the block and to the callers whose calls it
    took in; so does an exception out of the block: nothing of the block is kept either way."""
    errors: list[BaseException] = []

    def other_caller() -> None:
        try:
            lmdb_db.run(lambda tr: tr.set(b"o", b"1"))
        except StoreError as exc:
            errors.append(exc)

    other = threading.Thread(target=other_caller)
    with monkeypatch.context() as patched:
        patched.setattr(lmdb_db, "_commit", lambda *args: (_ for _ in ()).throw(StoreError("the disk went away")))
        with pytest.raises(StoreError, match="the disk went away"), lmdb_db.commit_together():
            lmdb_db.run(lambda tr: tr.set(b"b", b"1"))
            other.start()
            wait_until(lambda: len(lmdb_db._queue) == 1)
        other.join(10)
    assert [str(error) for error in errors] == ["the disk went away"]
    with pytest.raises(Boom), lmdb_db.commit_together():
        lmdb_db.run(lambda tr: tr.set(b"c", b"1"))
        raise Boom(0)
    assert lmdb_db.read(lambda tr: tr.get_range(b"\x00", b"\xff")) == []
    assert lmdb_db.commits == 0
    lmdb_db.run(lambda tr: tr.set(b"d", b"1"))  # the store goes on
    assert lmdb_db.read(lambda tr: tr.get_range(b"\x00", b"\xff")) == [(b"d", b"1")]


class _CountedSleeps:
    """The ``time`` module as lmdb_group_commit sees it, counting the leader's yields (``sleep(0)``)."""

    def __init__(self) -> None:
        self.sleeps = 0
        self.monotonic = time.monotonic

    def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        time.sleep(seconds)


def test_lmdb_lone_writer_commits_at_once_and_contended_leaders_wait_for_more(
    lmdb_db: LmdbDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A leader yields for more callers to join its batch only while callers queue behind leaders:
    a lone writer's yield would only hand the interpreter away and wait to get it back."""
    clock = _CountedSleeps()
    monkeypatch.setattr(lmdb_group_commit, "time", clock)
    for i in range(20):
        lmdb_db.run(lambda tr, i=i: tr.set(b"lone/%02d" % i, b"x"))
    assert clock.sleeps == 0 and lmdb_db.commits == 20

    def follower(i: int) -> Callable[[Transaction], int]:
        return lambda tr: (tr.set(b"f/%d" % i, b"%d" % i), i)[1]

    results, errors = run_behind_blocked_leader(lmdb_db, b"leader", [follower(i) for i in range(3)])
    assert errors == {} and results == {i: i for i in range(3)}
    assert clock.sleeps >= 1  # callers queued behind the held leader: it waited for more
    assert lmdb_db.commits == 21


def test_lmdb_batch_where_every_function_fails_commits_nothing(lmdb_db: LmdbDatabase) -> None:
    def failing(i: int) -> Callable[[Transaction], None]:
        def fn(tr: Transaction) -> None:
            tr.set(b"f/%d" % i, b"x")
            raise Boom(i)

        return fn

    results, errors = run_behind_blocked_leader(lmdb_db, b"leader", [failing(i) for i in range(3)])
    assert results == {}
    assert sorted(e.args[0] for e in errors.values()) == [0, 1, 2]
    assert lmdb_db.commits == 1  # only the leader's
    assert lmdb_db.read(lambda tr: tr.get_range(b"\x00", b"\xff")) == [(b"leader", b"leader")]


def test_lmdb_without_group_commit_one_commit_per_transaction(lmdb_dir: Path) -> None:
    with open_lmdb(lmdb_dir, "group_commit=false&durable=false") as database:
        assert isinstance(database, LmdbDatabase) and not database.group_commit
        results = hammer(database, 8, 50)
        # Every call ran its own function and got its own result back, even when another
        # thread won the write lock first.
        assert results == {(t, i): (t, i) for t in range(8) for i in range(50)}
        assert database.commits == 400

        follow, errors = run_behind_blocked_leader(
            database, b"leader", [lambda tr, i=i: (tr.set(b"f/%d" % i, b""), i)[1] for i in range(4)]
        )
        assert (follow, errors) == ({i: i for i in range(4)}, {})
        assert database.commits == 400 + 1 + 4


class _BeginFails:
    """An LMDB environment whose next write transaction cannot begin (say MapResizedError)."""

    def __init__(self, env: Any) -> None:
        self.env = env

    def begin(self, **kwargs: Any) -> Any:
        if kwargs.get("write"):
            self.begin = self.env.begin  # once
            raise lmdb.MapResizedError("injected: the write transaction cannot begin")
        return self.env.begin(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)


def test_lmdb_a_leader_failing_for_another_callers_batch_withdraws_its_own_call(lmdb_dir: Path) -> None:
    # Without group commit a leader runs the oldest queued call, here another caller's.  When
    # that batch cannot begin, the leader is told so, and its own call must not run later.
    with open_lmdb(lmdb_dir, "group_commit=false&durable=false") as database:
        assert isinstance(database, LmdbDatabase)
        queued_earlier = _Pending(lambda tr: tr.set(b"earlier", b"v"), (), {})
        database._queue.append(queued_earlier)  # a caller that queued and waits for its turn
        database._env = _BeginFails(database._env)
        with pytest.raises(lmdb.MapResizedError, match="injected"):
            database.run(lambda tr: tr.set(b"mine", b"v"))
        assert queued_earlier.done and isinstance(queued_earlier.error, lmdb.MapResizedError)
        database.run(lambda tr: tr.set(b"later", b"v"))
        assert database.read(lambda tr: tr.get_range(b"\x00", b"\xff")) == [(b"later", b"v")]


def test_lmdb_run_racing_close_fails_instead_of_waiting_forever(lmdb_dir: Path, monkeypatch) -> None:
    database = LmdbDatabase(str(lmdb_dir))
    check = database._check_open
    closing: list[threading.Thread] = []

    def check_then_close_meanwhile() -> None:
        check()  # passes: the store is open
        closer = threading.Thread(target=database.close)
        closer.start()
        closer.join(0.3)  # close() runs now, before the call is queued, unless run() holds it off
        closing.append(closer)

    monkeypatch.setattr(database, "_check_open", check_then_close_meanwhile)
    outcome: list[BaseException | None] = []

    def caller() -> None:
        try:
            database.run(lambda tr: tr.set(b"k", b"v"))
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=caller, daemon=True)
    thread.start()
    thread.join(10)
    assert not thread.is_alive(), "run() racing close() never returned"
    assert isinstance(outcome[0], StoreError) and "closed" in str(outcome[0])
    closing[0].join(10)
    assert not closing[0].is_alive()
