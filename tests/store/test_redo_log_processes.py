"""Several processes share one store's redo log (``serve --processes N``, reader processes, a CLI).

Each test runs the store in this process and in child processes (``spawn``): the children share
the session, hand the checkpoints on when they close, die holding them (SIGKILL) or die between
logging a commit and committing it; then the store, or a power-loss image of it as in
``test_redo_log.py``, must hold every acknowledged write and nothing a commit never made.
"""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import random
import shutil
import signal
import time
from pathlib import Path

import pytest

from fdb_leaderboard.store import open_database
from fdb_leaderboard.store.lmdb_backend import LmdbDatabase
from fdb_leaderboard.store.redo_format import CHECKPOINT_FILE, SET, Checkpoint, segments
from fdb_leaderboard.store.redo_log import RedoLog
from tests.conftest import wait_until
from tests.store.test_redo_log import crash_image, lose_the_unsynced_log

CONTEXT = multiprocessing.get_context("spawn")
SEGMENT = 65536


def _session_files(store: Path) -> list[str]:
    return sorted(p.name for p in store.iterdir() if p.name.endswith((".checkpoint", ".log", ".head")))


def _hold(url: str, opened, close, writes: int, prefix: bytes) -> None:
    """A child: open, write ``writes`` keys, say so, then close when told."""
    db = open_database(url)
    for i in range(writes):
        db.run(lambda tr, i=i: tr.set(prefix + b"%03d" % i, b"v%d" % i))
    opened.set()
    assert close.wait(60)
    db.close()


def _child(url: str, writes: int, prefix: bytes):
    opened, close = CONTEXT.Event(), CONTEXT.Event()
    process = CONTEXT.Process(target=_hold, args=(url, opened, close, writes, prefix))
    process.start()
    assert opened.wait(60), "the child did not open the store"
    return process, close


def test_processes_share_one_log_session(tmp_path: Path) -> None:
    store = tmp_path / "store"
    url = f"lmdb:{store}"
    with open_database(url) as db:
        db.run(lambda tr: tr.set(b"parent", b"1"))
        child, close = _child(url, 50, b"child/")
        assert db.read(lambda tr: len(tr.get_range(b"child/", b"child0"))) == 50  # its commits, seen here
        close.set()
        child.join(30)
        assert child.exitcode == 0
        assert CHECKPOINT_FILE in _session_files(store), "the session goes on after the child closed"
        db.run(lambda tr: tr.set(b"parent", b"2"))
    assert _session_files(store) == []  # the last one out ended it cleanly
    with open_database(f"lmdb:{store}?redo_log=false") as plain:
        assert plain.read(lambda tr: (tr.get(b"parent"), tr.get(b"child/049"))) == (b"2", b"v49")


def test_the_checkpoints_pass_on_when_their_process_closes(tmp_path: Path) -> None:
    store = tmp_path / "store"
    url = f"lmdb:{store}?checkpoint_seconds=3600"  # no checkpoint but those the hand-over makes
    child, close = _child(url, 10, b"first/")  # opened alone: it makes the checkpoints
    db = open_database(url)
    try:
        log = db.redo_log
        assert log is not None and log.takeovers == 0
        db.run(lambda tr: tr.set(b"k", b"1"))
        assert not log.checkpoint(), "another process makes the checkpoints"
        before = Checkpoint.load(str(store))
        close.set()
        child.join(30)
        assert child.exitcode == 0
        db.run(lambda tr: tr.set(b"k", b"2"))  # no checkpointer: this commit takes over first
        assert log.takeovers == 1
        after = Checkpoint.load(str(store))
        assert before is not None and after is not None and after.txnid > before.txnid
        db.run(lambda tr: tr.set(b"k", b"3"))
        assert log.checkpoint()
    finally:
        db.close()
    assert _session_files(store) == []
    with open_database(url) as reopened:
        assert reopened.read(lambda tr: (tr.get(b"k"), tr.get(b"first/009"))) == (b"3", b"v9")


def _write_until_killed(url: str, acks: str, ready) -> None:
    """A child that opens first (so it makes the checkpoints) and writes, noting each
    acknowledged write (flushed: it survives SIGKILL), until it is killed."""
    db = LmdbDatabase(url.partition("?")[0][5:], checkpoint_seconds=0.05, log_segment_bytes=SEGMENT)
    fd = os.open(acks, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    rng = random.Random(5)
    ready.set()
    for i in range(1_000_000):
        key, value = b"a/%06d" % i, rng.randbytes(rng.randrange(1, 900))
        db.run(lambda tr, key=key, value=value: tr.set(key, value))
        os.write(fd, key.hex().encode() + b" " + value.hex().encode() + b"\n")


def test_a_killed_checkpointer_is_replaced_and_a_power_loss_keeps_every_acknowledged_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child making the checkpoints dies (SIGKILL) with its pin; this process takes over and
    goes on writing; a power loss afterwards keeps both processes' acknowledged writes."""
    store, acks = tmp_path / "store", tmp_path / "acks"
    url = f"lmdb:{store}?checkpoint_seconds=0.05&log_segment_bytes={SEGMENT}"
    ready = CONTEXT.Event()
    child = CONTEXT.Process(target=_write_until_killed, args=(url, str(acks), ready))
    child.start()
    assert ready.wait(60)
    snapshots: list[bytes] = []
    monkeypatch.setattr(RedoLog, "_make_durable", _keeping(snapshots))
    db = LmdbDatabase(str(store), checkpoint_seconds=3600, log_segment_bytes=SEGMENT)
    model: dict[bytes, bytes] = {}
    try:
        log = db.redo_log
        assert log is not None
        wait_until(lambda: acks.exists() and acks.stat().st_size > 200_000, "the child's writes")
        for i in range(20):  # while the child writes too
            db.run(lambda tr, i=i: tr.set(b"b/%03d" % i, b"x" * i))
            model[b"b/%03d" % i] = b"x" * i
        assert log.takeovers == 0 and not snapshots
        os.kill(child.pid, signal.SIGKILL)
        child.join()
        db.run(lambda tr: tr.set(b"b/first", b"after the death"))
        model[b"b/first"] = b"after the death"
        # Its pages went to disk protected: a checkpoint of the commit before it was made first.
        checkpoint = Checkpoint.load(str(store))
        assert checkpoint is not None and checkpoint.txnid >= db._env.info()["last_txnid"] - 1
        for i in range(20, 200):  # the first commit (or the checkpoint thread) takes over
            value = os.urandom(700)
            db.run(lambda tr, i=i, value=value: tr.set(b"b/%03d" % i, value))
            model[b"b/%03d" % i] = value
        assert log.takeovers == 1 and snapshots
        # What the dead child acknowledged is in the store (its last write may have landed, unacknowledged).
        for line in acks.read_text().splitlines():
            key, value = (bytes.fromhex(part) for part in line.split())
            model[key] = value
        stored = dict(db.read(lambda tr: tr.get_range(b"\x00", b"\xff")))
        unacknowledged = set(stored) - set(model)
        assert len(unacknowledged) <= 1 and all(stored[k] == v for k, v in model.items())
        model.update((key, stored[key]) for key in unacknowledged)
        expected = sorted(model.items())
        final = (store / "data.mdb").read_bytes()
        crashed = tmp_path / "crashed"
        crashed.mkdir()
        for name in [CHECKPOINT_FILE, *(Path(n).name for _, n in segments(str(store)))]:
            shutil.copy(store / name, crashed / name)
    finally:
        monkeypatch.undo()
        db.close()
    rng = random.Random(2)
    for image in range(4):
        place = tmp_path / f"image{image}"
        shutil.copytree(crashed, place)
        (place / "data.mdb").write_bytes(crash_image(snapshots[-1], final, rng, garbage_metas=image == 0))
        lose_the_unsynced_log(place, rng, torn=image % 2 == 1)
        with open_database(f"lmdb:{place}") as recovered:
            assert recovered.read(lambda tr: tr.get_range(b"\x00", b"\xff")) == expected, f"image {image}"


def _keeping(snapshots: list[bytes]):
    """``RedoLog._make_durable`` that keeps the data file after each checkpoint (in this process)."""
    make_durable = RedoLog._make_durable

    def and_keep(log, chosen) -> None:
        make_durable(log, chosen)
        snapshots.append(Path(log.path, "data.mdb").read_bytes())

    return and_keep


def _log_then_die(path: str, size: int) -> None:
    """A child that joins the session, logs a commit and dies before committing it, holding
    LMDB's write lock: its record belongs to a commit that never happened."""
    db = LmdbDatabase(path, log_segment_bytes=SEGMENT)
    txn = db._env.begin(write=True)
    txn.put(b"ghost", b"boo")
    db.redo_log.append(txn.id(), [(SET, b"ghost", b"boo" * size)])
    os._exit(0)


@pytest.mark.parametrize("next_record", ["written over", "in the next segment"])
def test_a_record_whose_commit_never_happened_is_never_replayed(tmp_path: Path, next_record: str) -> None:
    store, crashed = tmp_path / "store", tmp_path / "crashed"
    db = LmdbDatabase(str(store), checkpoint_seconds=3600, log_segment_bytes=SEGMENT)
    try:
        log = db.redo_log
        assert log is not None
        db.run(lambda tr: tr.set(b"a", b"1"))
        for i in range(12):  # enough for the session to prepare a preallocated segment
            db.run(lambda tr, i=i: tr.set(b"fill%d" % i, bytes(2000)))
        wait_until(lambda: log.head.cursor().room > 0, "a preallocated segment in use")
        child = CONTEXT.Process(target=_log_then_die, args=(str(store), 1 if next_record == "written over" else 10))
        child.start()
        child.join(60)
        assert child.exitcode == 0
        cursor = log.head.cursor()
        assert cursor.last_txnid == db._env.info()["last_txnid"] + 1, "a record no commit followed"
        room = cursor.room - cursor.end
        big = next_record == "in the next segment"
        value = b"v" * (room + 100 if big else 10)  # longer than what is left of the segment, or short
        db.run(lambda tr: tr.set(b"b", value))  # LMDB's write lock, released by the dead child's death
        assert (log.head.cursor().segment > cursor.segment) == big
        assert db.read(lambda tr: tr.get(b"ghost")) is None
        crashed.mkdir()
        for name in ["data.mdb", CHECKPOINT_FILE, *(Path(n).name for _, n in segments(str(store)))]:
            shutil.copy(store / name, crashed / name)
    finally:
        db.close()
    with open_database(f"lmdb:{crashed}") as recovered:
        assert recovered.read(lambda tr: tr.get(b"ghost")) is None
        assert recovered.read(lambda tr: tr.get(b"b")) == value


def test_an_earlier_release_cannot_open_a_store_a_session_has_open(tmp_path: Path) -> None:
    """A release from before the shared log opens a store only after checking ``durable.lock``
    and ``not-durable.lock`` (and, for its redo log, holding ``redo.lock`` alone): a session holds
    all of them, so such a release is refused instead of writing around the log."""
    store = tmp_path / "store"
    with open_database(f"lmdb:{store}"):
        for name in ("durable.lock", "not-durable.lock", "redo.lock"):
            fd = os.open(store / name, os.O_RDWR)
            try:
                with pytest.raises(BlockingIOError):
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            finally:
                os.close(fd)
    for name in ("durable.lock", "not-durable.lock", "redo.lock"):  # closed: free for anyone
        fd = os.open(store / name, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)


def test_reader_processes_need_no_checkpointer_of_their_own_until_it_goes(tmp_path: Path) -> None:
    """A process that only reads takes the checkpoints over (on its own thread) once the process
    that made them is gone, so the session's files do not grow without checkpoints."""
    store = tmp_path / "store"
    url = f"lmdb:{store}?checkpoint_seconds=0.05"
    child, close = _child(url, 5, b"c/")
    db = LmdbDatabase(str(store), checkpoint_seconds=0.05)
    try:
        log = db.redo_log
        assert log is not None
        time.sleep(0.3)
        assert log.checkpoints == 0
        close.set()
        child.join(30)
        wait_until(lambda: log.checkpoints > 0, "the reader taking the checkpoints over")
        assert log.takeovers == 1
    finally:
        db.close()
    assert _session_files(store) == []
