"""The LMDB redo log: every logged commit survives an operating-system crash.

An operating-system crash leaves the data file with any mix of the pages written since the last
synced checkpoint: some written, some not, some torn.  The child process below opens a store
in redo-log mode, keeps a copy of the data file as the checkpoint synced it, commits random
writes from several threads (group commits with failing members, range clears, atomic adds,
optionally a checkpoint midway), records what the store must hold, and dies without closing.
The parent then builds crash images: every page that changed since the copy is taken as the
new page, the old one or garbage, the log's last record is sometimes torn, and recovery must
bring back exactly what the child recorded.  Garbage in the place of any changed page (meta
pages included) only leaves the store intact if no unsynced commit overwrote a page of the
checkpoint's snapshot, which is the property the redo log rests on.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import shutil
import threading
from pathlib import Path

import lmdb
import pytest

from fdb_leaderboard.store import StoreError, open_database
from fdb_leaderboard.store.api import encode_int64
from fdb_leaderboard.store.lmdb_backend import LmdbDatabase
from fdb_leaderboard.store.redo_log import (
    CHECKPOINT_FILE,
    Checkpoint,
    RedoLog,
    RedoLogError,
    StoreLock,
    read_records,
)

PAGE = 4096
THREADS = 4


class Refused(Exception):
    """Raised by a transaction function on purpose: its writes must vanish."""


def _writer(db: LmdbDatabase, thread: int, seed: int, model: dict[bytes, bytes], steps: int) -> None:
    """Random writes to this thread's own keys, mirrored in ``model`` once acknowledged."""
    rng = random.Random(seed * 100 + thread)
    keys = [b"t%d/k%03d" % (thread, i) for i in range(120)]
    counter = b"t%d/count" % thread
    for _ in range(steps):
        roll = rng.random()
        if roll < 0.55:
            chosen = rng.sample(keys, rng.randrange(1, 6))
            values = {key: rng.randbytes(rng.randrange(0, 400)) for key in chosen}
            db.run(lambda tr, values=values: [tr.set(k, v) for k, v in values.items()])
            model.update(values)
        elif roll < 0.7:
            key = rng.choice(keys)
            db.run(lambda tr, key=key: tr.clear(key))
            model.pop(key, None)
        elif roll < 0.78:
            low, high = sorted(rng.sample(keys, 2))
            db.run(lambda tr, low=low, high=high: tr.clear_range(low, high))
            for key in [k for k in model if low <= k < high]:
                del model[key]
        elif roll < 0.9:
            amount = rng.randrange(-5, 50)
            db.run(lambda tr, amount=amount: tr.add(counter, encode_int64(amount)))
            total = int.from_bytes(model.get(counter, bytes(8)), "little", signed=True) + amount
            model[counter] = encode_int64(total)
        else:
            with pytest.raises(Refused):
                db.run(_refused, rng.choice(keys))


def _refused(tr, key: bytes) -> None:
    tr.set(key, b"never stored")
    raise Refused


def write_then_die(path: str, seed: int, checkpoint_midway: bool, out: str) -> None:
    """The child: write, keep the checkpoint's image of the data file, record the truth, die."""
    db = LmdbDatabase(path, redo_log=True, checkpoint_seconds=3600)
    log = db.redo_log  # the checkpoints are driven by hand here
    data_file = os.path.join(path, "data.mdb")
    snapshot = Path(data_file).read_bytes()  # opening checkpointed and synced: the disk holds this
    model: dict[bytes, bytes] = {}
    for phase in (0, 1):
        if phase == 1 and checkpoint_midway:
            assert log.checkpoint()
            snapshot = Path(data_file).read_bytes()
        threads = [
            threading.Thread(target=_writer, args=(db, thread, seed * 10 + phase, model, 60))
            for thread in range(THREADS)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert db.read(lambda tr: tr.get_range(b"\x00", b"\xff")) == sorted(model.items())
    Path(out, "snapshot.bin").write_bytes(snapshot)
    Path(out, "expected.bin").write_bytes(b"".join(_frame(k) + _frame(v) for k, v in sorted(model.items())))
    os._exit(0)  # no close: the log is all a crash leaves behind


def _frame(data: bytes) -> bytes:
    return len(data).to_bytes(4, "little") + data


def _unframe(data: bytes) -> list[tuple[bytes, bytes]]:
    items, position = [], 0
    while position < len(data):
        parts = []
        for _ in range(2):
            length = int.from_bytes(data[position : position + 4], "little")
            parts.append(data[position + 4 : position + 4 + length])
            position += 4 + length
        items.append((parts[0], parts[1]))
    return items


def crash_image(snapshot: bytes, final: bytes, rng: random.Random, garbage_metas: bool) -> bytes:
    """A data file an OS crash could leave: each page changed since the snapshot old, new or torn."""
    pages = []
    for number in range(max(len(snapshot), len(final)) // PAGE):
        old = snapshot[number * PAGE : (number + 1) * PAGE] or None
        new = final[number * PAGE : (number + 1) * PAGE]
        if old == new:
            pages.append(new)
            continue
        choices = [new, rng.randbytes(PAGE)] + ([old] if old is not None else [])
        pages.append(rng.randbytes(PAGE) if garbage_metas and number < 2 else rng.choice(choices))
    return b"".join(pages)


@pytest.mark.parametrize("checkpoint_midway", [False, True])
def test_every_logged_commit_survives_any_crash_image(tmp_path: Path, checkpoint_midway: bool) -> None:
    source, out = tmp_path / "source", tmp_path / "out"
    out.mkdir()
    child = multiprocessing.get_context("spawn").Process(
        target=write_then_die, args=(str(source), 7 + checkpoint_midway, checkpoint_midway, str(out))
    )
    child.start()
    child.join(120)
    assert child.exitcode == 0
    snapshot = (out / "snapshot.bin").read_bytes()
    final = (source / "data.mdb").read_bytes()
    expected = _unframe((out / "expected.bin").read_bytes())
    assert len(expected) > 100
    checkpoint = Checkpoint.load(str(source))
    assert checkpoint is not None
    segments = sorted(p.name for p in source.glob("redo.*.log"))
    assert len(segments) == 1  # the midway checkpoint removed the segment it made obsolete
    assert read_records((source / segments[0]).read_bytes())[0], "the log holds the commits after the checkpoint"

    rng = random.Random(11)
    for image in range(8):
        store = tmp_path / f"image{image}"
        store.mkdir()
        (store / "data.mdb").write_bytes(crash_image(snapshot, final, rng, garbage_metas=image == 0))
        shutil.copy(source / CHECKPOINT_FILE, store / CHECKPOINT_FILE)
        shutil.copy(source / segments[0], store / segments[0])
        if image % 3 == 1:  # the append in flight at the crash, torn: never acknowledged
            with open(store / segments[0], "ab") as log:
                log.write(rng.randbytes(rng.randrange(1, 300)))
        url = f"lmdb:{store}" + ("?redo_log=true" if image % 2 else "")
        with open_database(url) as recovered:
            assert recovered.read(lambda tr: tr.get_range(b"\x00", b"\xff")) == expected, f"image {image}"
            recovered.run(lambda tr: tr.set(b"after", b"recovery"))
        assert not (store / CHECKPOINT_FILE).exists() and not list(store.glob("redo.*.log"))
        with open_database(f"lmdb:{store}") as reopened:
            assert reopened.read(lambda tr: tr.get_range(b"\x00", b"\xff")) == sorted(
                [*expected, (b"after", b"recovery")]
            )


def test_a_redo_log_session_has_the_store_to_itself(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with open_database(f"lmdb:{store}?redo_log=true") as db:
        db.run(lambda tr: tr.set(b"k", b"v"))
        with pytest.raises(StoreError, match="already open in this process with durable=True, redo_log=True"):
            open_database(f"lmdb:{store}")
        context = multiprocessing.get_context("spawn")
        with context.Pool(1) as pool:
            message = pool.apply(_try_open, (f"lmdb:{store}",))
        assert "open in redo-log mode by another process" in message
    with open_database(f"lmdb:{store}?redo_log=true") as again:  # a clean close left nothing to recover
        assert again.read(lambda tr: tr.get(b"k")) == b"v"
    with open_database(f"lmdb:{store}") as plain:
        with context.Pool(1) as pool:
            message = pool.apply(_try_open, (f"lmdb:{store}?redo_log=true",))
        assert "needs the store to itself" in message
        assert plain.read(lambda tr: tr.get(b"k")) == b"v"


def test_openers_take_their_locks_one_at_a_time(tmp_path: Path) -> None:
    # An opener that found the store free turns its exclusive lock into a shared one, and flock
    # may drop the lock in between: a redo-log session must not slip into that gap.
    store = tmp_path / "store"
    open_database(f"lmdb:{store}").close()
    opened = threading.Event()

    def open_and_close() -> None:
        open_database(f"lmdb:{store}?redo_log=true").close()
        opened.set()

    with StoreLock(str(store)).gate():  # as if another process were between its two lock modes
        opener = threading.Thread(target=open_and_close)
        opener.start()
        assert not opened.wait(0.5), "an opener went past the gate another opener holds"
    assert opened.wait(30), "the opener did not go on once the gate was free"
    opener.join()


def _try_open(url: str) -> str:
    try:
        open_database(url).close()
    except StoreError as exc:
        return str(exc)
    return "opened"


def test_redo_log_options_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot go with durable=False"):
        open_database(f"lmdb:{tmp_path / 's'}?redo_log=true&durable=false")
    with pytest.raises(ValueError, match="checkpoint_seconds must be positive"):
        open_database(f"lmdb:{tmp_path / 's'}?redo_log=true&checkpoint_seconds=0")
    with pytest.raises(ValueError, match="option redo_log must be true or false"):
        open_database(f"lmdb:{tmp_path / 's'}?redo_log=maybe")


def test_a_damaged_checkpoint_is_refused_not_guessed(tmp_path: Path) -> None:
    store = tmp_path / "store"
    db = LmdbDatabase(str(store), redo_log=True)
    db.run(lambda tr: tr.set(b"k", b"v"))
    raw = bytearray((store / CHECKPOINT_FILE).read_bytes())
    db.close()
    raw[60] ^= 0xFF
    (store / CHECKPOINT_FILE).write_bytes(bytes(raw))  # as if a crash left this session's checkpoint
    with pytest.raises(RedoLogError, match="fails its checksum"):
        open_database(f"lmdb:{store}")


def _live_readers(db: LmdbDatabase) -> list[str]:
    """LMDB's reader table rows of open read transactions (pins among them)."""
    return [line.split()[-1] for line in db._env.readers().splitlines()[1:] if line.split()[-1] != "-"]


def test_a_checkpoint_whose_sync_fails_keeps_the_previous_one(tmp_path: Path, monkeypatch) -> None:
    store = tmp_path / "store"
    db = LmdbDatabase(str(store), redo_log=True, checkpoint_seconds=3600)  # checkpoints by hand
    log = db.redo_log
    db.run(lambda tr: tr.set(b"a", b"1"))
    assert log.checkpoint()
    saved = (store / CHECKPOINT_FILE).read_bytes()
    pins = _live_readers(db)
    db.run(lambda tr: tr.set(b"b", b"2"))
    segments = sorted(p.name for p in store.glob("redo.*.log"))
    sync = os.fdatasync

    def failing_data_sync(fd: int) -> None:
        if fd == log.data_fd:
            raise OSError(5, "injected I/O error")
        sync(fd)

    monkeypatch.setattr(os, "fdatasync", failing_data_sync)
    with pytest.raises(OSError, match="injected") as failure:
        log.checkpoint()
    monkeypatch.setattr(os, "fdatasync", sync)
    assert (store / CHECKPOINT_FILE).read_bytes() == saved
    # The new pin is released at once, not when the error's traceback (kept here) is collected.
    assert failure.traceback and _live_readers(db) == pins
    assert set(segments) <= {p.name for p in store.glob("redo.*.log")}  # still needed by the old checkpoint
    db.run(lambda tr: tr.set(b"c", b"3"))  # the session goes on
    assert log.checkpoint()
    assert sorted(p.name for p in store.glob("redo.*.log")) == [max(p.name for p in store.glob("redo.*.log"))]
    db.close()
    with LmdbDatabase(str(store)) as reopened:
        assert reopened.read(lambda tr: [tr.get(k) for k in (b"a", b"b", b"c")]) == [b"1", b"2", b"3"]


class _CommitFails:
    """A write transaction whose LMDB commit fails (and, as LMDB's does, aborts it)."""

    def __init__(self, txn) -> None:
        self.txn = txn

    def id(self) -> int:
        return self.txn.id()

    def commit(self) -> None:
        self.txn.abort()
        raise lmdb.DiskError("injected commit failure")


def test_a_commit_that_fails_after_its_record_was_logged_is_never_replayed(tmp_path: Path, monkeypatch) -> None:
    store, crashed = tmp_path / "store", tmp_path / "crashed"
    db = LmdbDatabase(str(store), redo_log=True, checkpoint_seconds=3600)  # no checkpoint after the first
    db.run(lambda tr: tr.set(b"a", b"1"))
    logged = db.redo_log.logged_bytes
    commit = RedoLog.commit
    monkeypatch.setattr(RedoLog, "commit", lambda log, txn, writes: commit(log, _CommitFails(txn), writes))
    with pytest.raises(lmdb.DiskError, match="injected"):
        db.run(lambda tr: tr.set(b"phantom", b"told it failed"))
    monkeypatch.undo()
    assert db.redo_log.logged_bytes == logged and db.redo_log.failed is None
    db.run(lambda tr: tr.set(b"b", b"2"))  # LMDB gives it the failed commit's transaction id
    (segment,) = store.glob("redo.*.log")
    txnids = [txnid for txnid, _ in read_records(segment.read_bytes())[0]]
    assert len(txnids) == 2 and len(set(txnids)) == 2
    _copy_as_a_crash_leaves_it(store, crashed)
    db.close()
    with LmdbDatabase(str(crashed)) as recovered:
        assert recovered.read(lambda tr: tr.get_range(b"\x00", b"\xff")) == [(b"a", b"1"), (b"b", b"2")]


def _copy_as_a_crash_leaves_it(store: Path, crashed: Path) -> None:
    """The data file, checkpoint and log of an open session: recovery replays the log onto them."""
    crashed.mkdir()
    for name in ["data.mdb", CHECKPOINT_FILE, *(p.name for p in store.glob("redo.*.log"))]:
        shutil.copy(store / name, crashed / name)


def _interrupt_the_next_log_sync(monkeypatch, log: RedoLog) -> None:
    """Ctrl-C during the log's fdatasync: Python raises KeyboardInterrupt once the call returns."""
    sync = os.fdatasync

    def sync_then_interrupt(fd: int) -> None:
        sync(fd)
        if fd == log._segment_fd:
            monkeypatch.setattr(os, "fdatasync", sync)
            raise KeyboardInterrupt

    monkeypatch.setattr(os, "fdatasync", sync_then_interrupt)


def test_a_commit_interrupted_while_its_record_syncs_is_never_replayed(tmp_path: Path, monkeypatch) -> None:
    store, crashed = tmp_path / "store", tmp_path / "crashed"
    db = LmdbDatabase(str(store), redo_log=True, checkpoint_seconds=3600)
    db.run(lambda tr: tr.set(b"a", b"1"))
    _interrupt_the_next_log_sync(monkeypatch, db.redo_log)
    with pytest.raises(KeyboardInterrupt):
        db.run(lambda tr: tr.set(b"interrupted", b"x" * 1000))
    assert db.read(lambda tr: tr.get(b"interrupted")) is None
    db.run(lambda tr: tr.set(b"b", b"2"))  # acknowledged, with the interrupted commit's txn id
    commit = RedoLog.commit
    monkeypatch.setattr(RedoLog, "commit", lambda log, txn, writes: commit(log, _CommitFails(txn), writes))
    with pytest.raises(lmdb.DiskError):  # its record is cut off again: b's must stay whole
        db.run(lambda tr: tr.set(b"failed", b"v"))
    monkeypatch.undo()
    _copy_as_a_crash_leaves_it(store, crashed)
    db.close()
    with LmdbDatabase(str(crashed)) as recovered:
        assert recovered.read(lambda tr: tr.get_range(b"\x00", b"\xff")) == [(b"a", b"1"), (b"b", b"2")]


class _InterruptedAfterCommit(_CommitFails):
    """Ctrl-C during LMDB's commit: the commit completes, then Python raises KeyboardInterrupt."""

    def commit(self) -> None:
        self.txn.commit()
        raise KeyboardInterrupt


def test_an_interrupt_after_the_lmdb_commit_keeps_the_record(tmp_path: Path, monkeypatch) -> None:
    store, crashed = tmp_path / "store", tmp_path / "crashed"
    db = LmdbDatabase(str(store), redo_log=True, checkpoint_seconds=3600)
    commit = RedoLog.commit
    monkeypatch.setattr(RedoLog, "commit", lambda log, txn, writes: commit(log, _InterruptedAfterCommit(txn), writes))
    with pytest.raises(KeyboardInterrupt):
        db.run(lambda tr: tr.set(b"k", b"committed"))
    monkeypatch.undo()
    assert db.read(lambda tr: tr.get(b"k")) == b"committed"  # readers see it: a crash must keep it
    _copy_as_a_crash_leaves_it(store, crashed)
    db.close()
    with LmdbDatabase(str(crashed)) as recovered:
        assert recovered.read(lambda tr: tr.get(b"k")) == b"committed"


def test_a_range_clear_with_bounds_longer_than_any_key_is_logged(tmp_path: Path) -> None:
    # The record format holds bounds of up to 65,535 bytes; FoundationDB accepts longer ones.
    begin = b"p" + bytes(70_000)
    with LmdbDatabase(str(tmp_path / "store"), redo_log=True) as db:
        db.run(lambda tr: [tr.set(key, b"v") for key in (b"p", b"p\x00\x01", b"q", b"q\x00\x02")])
        db.run(lambda tr: tr.clear_range(begin, b"q\x00\x01" + bytes(70_000)))
        assert db.read(lambda tr: tr.get_range(b"\x00", b"\xff")) == [(b"p", b"v"), (b"q\x00\x02", b"v")]
