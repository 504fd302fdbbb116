"""The LMDB store's durable modes survive a simulated power loss: what was not synced is lost.

A power loss keeps what was synced and any mix of what was written since: each page written but
not synced may hold its old content, its new content or garbage (torn).

**The redo log** (the default).  Since the last checkpoint the data file took unsynced commits,
and the log took one record per commit, each synced before its commit was acknowledged.  The
child process below opens a store with small preallocated log segments, keeps a copy of the data
file as the checkpoint synced it, commits random writes from several threads (group commits with
failing members, range clears, atomic adds, optionally a checkpoint midway), records what the
store must hold, and dies without closing.  The parent builds power-loss images: every data page
that changed since the copy is taken as the new page, the old one or garbage (meta pages
included); the append in flight is torn or stale; the unused rest of the log's segments holds
earlier records (recycled segments) or random bytes.  Recovery must bring back exactly what the
child recorded.  Garbage in the place of any changed page only leaves the store intact if no
unsynced commit overwrote a page of the checkpoint's snapshot, which is the property the redo log
rests on.

**Synced pages** (``redo_log=false``).  Each commit writes its pages, syncs them, then writes
and syncs a meta page.  The child keeps the data file as each of a few chosen commits left it
and as the next one left it; the parent builds the images a power loss during that next commit
can leave (its pages any mix of old, new and garbage under the old meta page; or all new, under
either meta page), and the store must open at one of the two commits, whole.

Then the failure paths: a checkpoint or an append that fails, a commit refused after it was
logged, interrupts, and a store left by a crash of the release before (format 1 of the log).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import shutil
import tarfile
import threading
import time
from pathlib import Path

import lmdb
import pytest

from fdb_leaderboard.store import open_database
from fdb_leaderboard.store.api import encode_int64
from fdb_leaderboard.store.lmdb_backend import LmdbDatabase
from fdb_leaderboard.store.redo_format import (
    CHECKPOINT_FILE,
    HEAD_FILE,
    SET,
    Checkpoint,
    RedoLogError,
    encode_record,
    read_records,
    segment_seed,
    segments,
)
from fdb_leaderboard.store.redo_log import RedoLog, logged_after

PAGE = 4096
THREADS = 4
SEGMENT = 65536  # small log segments: the child's writes fill several
FIXTURES = Path(__file__).parents[1] / "fixtures"


class Refused(Exception):
    """Raised by a transaction function on purpose: its writes must vanish."""


def _writer(
    db: LmdbDatabase, thread: int, seed: int, model: dict[bytes, bytes], steps: int, value_bytes: int = 400
) -> None:
    """Random writes to this thread's own keys, mirrored in ``model`` once acknowledged."""
    rng = random.Random(seed * 100 + thread)
    keys = [b"t%d/k%03d" % (thread, i) for i in range(120)]
    counter = b"t%d/count" % thread
    for _ in range(steps):
        roll = rng.random()
        if roll < 0.55:
            chosen = rng.sample(keys, rng.randrange(1, 6))
            values = {key: rng.randbytes(rng.randrange(0, value_bytes)) for key in chosen}
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


def keep_checkpoint_images(data_file: str) -> list[bytes]:
    """Keep the data file as each checkpoint left it (just synced), in the list returned."""
    images: list[bytes] = []
    make_durable = RedoLog._make_durable

    def and_keep(log: RedoLog, chosen) -> None:
        make_durable(log, chosen)
        # The checkpoint's pages are on disk and pinned; commits since changed only other pages.
        images.append(Path(data_file).read_bytes())

    RedoLog._make_durable = and_keep  # type: ignore[method-assign]
    return images


def write_then_die(path: str, seed: int, checkpoint_midway: bool, out: str) -> None:
    """The child: write, keep the last checkpoint's image of the data file, record the truth, die."""
    snapshots = keep_checkpoint_images(os.path.join(path, "data.mdb"))
    # Checkpoints come when half a segment was logged; one more by hand midway if asked.
    db = LmdbDatabase(path, checkpoint_seconds=3600, log_segment_bytes=SEGMENT)
    log = db.redo_log
    model: dict[bytes, bytes] = {}
    for phase in (0, 1, 2):
        if phase == 2:  # no checkpoint after the last image kept: these commits are only in the log
            log._stopping = True
            log._wake.set()
            log._thread.join()
        if phase == 1:
            # The session's first segment grows; from a preallocated one on, segments fill and switch.
            deadline = time.monotonic() + 30
            while not log.head.cursor().room and time.monotonic() < deadline:
                time.sleep(0.01)
            if checkpoint_midway:
                db.run(lambda tr: tr.set(b"midway", b"1"))  # something new to checkpoint
                model[b"midway"] = b"1"
                assert log.checkpoint()
        threads = [
            threading.Thread(target=_writer, args=(db, thread, seed * 10 + phase, model, 80 if phase < 2 else 20, 1200))
            for thread in range(THREADS)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert db.read(lambda tr: tr.get_range(b"\x00", b"\xff")) == sorted(model.items())
    Path(out, "snapshot.bin").write_bytes(snapshots[-1])
    Path(out, "expected.bin").write_bytes(_frames(sorted(model.items())))
    os._exit(0)  # no close: the log is all a crash leaves behind


def _frames(items: list[tuple[bytes, bytes]]) -> bytes:
    return b"".join(len(part).to_bytes(4, "little") + part for item in items for part in item)


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
    """A data file a power loss could leave: each page changed since the snapshot old, new or torn."""
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


def lose_the_unsynced_log(store: Path, rng: random.Random, torn: bool) -> None:
    """What a power loss does to the log: past the last synced record of each segment the disk
    holds what the segment held before (zeros, or records of its earlier use as another segment),
    random bytes, or part of the append in flight (``torn``)."""
    checkpoint = Checkpoint.load(str(store))
    assert checkpoint is not None and checkpoint.format == 2
    for number, name in segments(str(store)):
        data = bytearray(Path(name).read_bytes())
        _, end = read_records(bytes(data), segment_seed(checkpoint.session, number))
        kind = rng.choice(["stale", "random", "torn" if torn else "stale"])
        if kind == "stale":  # a record that was valid in this file's earlier life as another segment
            filler = encode_record(segment_seed(checkpoint.session, number - 1), 10**9, [(SET, b"stale", b"x")])
        elif kind == "random":
            filler = rng.randbytes(rng.randrange(1, 600))
        else:  # the record in flight, partly written: never acknowledged
            record = encode_record(
                segment_seed(checkpoint.session, number), 10**9, [(SET, b"torn", rng.randbytes(300))]
            )
            filler = record[: rng.randrange(1, len(record))]
        data[end : end + len(filler)] = filler
        Path(name).write_bytes(bytes(data))


@pytest.mark.parametrize("checkpoint_midway", [False, True])
def test_every_logged_commit_survives_a_power_loss(tmp_path: Path, checkpoint_midway: bool) -> None:
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
    logged = [Path(name).name for _, name in segments(str(source))]
    assert segments(str(source))[-1][0] >= 5, "the writes filled several segments"
    assert logged_after(str(source), checkpoint), "the log holds the commits after the checkpoint"

    rng = random.Random(11)
    for image in range(8):
        store = tmp_path / f"image{image}"
        store.mkdir()
        (store / "data.mdb").write_bytes(crash_image(snapshot, final, rng, garbage_metas=image == 0))
        for name in [CHECKPOINT_FILE, *logged]:
            shutil.copy(source / name, store / name)
        lose_the_unsynced_log(store, rng, torn=image % 3 == 1)
        url = f"lmdb:{store}" + ("?redo_log=false" if image % 2 else "")  # any mode recovers
        with open_database(url) as recovered:
            assert recovered.read(lambda tr: tr.get_range(b"\x00", b"\xff")) == expected, f"image {image}"
            recovered.run(lambda tr: tr.set(b"after", b"recovery"))
        assert not (store / CHECKPOINT_FILE).exists() and not list(store.glob("redo.*.log"))
        with open_database(f"lmdb:{store}") as reopened:
            assert reopened.read(lambda tr: tr.get_range(b"\x00", b"\xff")) == sorted(
                [*expected, (b"after", b"recovery")]
            )


def commit_and_keep_images(path: str, out: str, seed: int) -> None:
    """The child for synced pages: commits; before and after each of a few chosen commits it keeps
    the data file and what the store must hold."""
    rng = random.Random(seed)
    db = LmdbDatabase(path, redo_log=False)
    model: dict[bytes, bytes] = {}
    data_file = Path(path, "data.mdb")
    chosen = sorted(rng.sample(range(5, 200), 6))
    for step in range(200):
        if step in chosen:
            Path(out, f"{step}.before").write_bytes(data_file.read_bytes())
            Path(out, f"{step}.model-before").write_bytes(_frames(sorted(model.items())))
        keys = [b"k%03d" % rng.randrange(300) for _ in range(rng.randrange(1, 8))]
        values = {key: rng.randbytes(rng.randrange(0, 600)) for key in keys}
        if rng.random() < 0.2:
            low, high = sorted(rng.sample(sorted(model) or [b"k000", b"k299"], 2) if len(model) > 1 else [b"a", b"b"])
            db.run(lambda tr, low=low, high=high: tr.clear_range(low, high))
            for key in [k for k in model if low <= k < high]:
                del model[key]
        else:
            db.run(lambda tr, values=values: [tr.set(k, v) for k, v in values.items()])
            model.update(values)
        if step in chosen:
            Path(out, f"{step}.after").write_bytes(data_file.read_bytes())
            Path(out, f"{step}.model-after").write_bytes(_frames(sorted(model.items())))
    os._exit(0)


def test_synced_commits_survive_a_power_loss(tmp_path: Path) -> None:
    source, out = tmp_path / "source", tmp_path / "out"
    out.mkdir()
    child = multiprocessing.get_context("spawn").Process(target=commit_and_keep_images, args=(str(source), str(out), 5))
    child.start()
    child.join(120)
    assert child.exitcode == 0
    rng = random.Random(3)
    steps = sorted({int(p.name.split(".")[0]) for p in out.glob("*.before")})
    assert len(steps) == 6
    images = 0
    for step in steps:
        before, after = (out / f"{step}.before").read_bytes(), (out / f"{step}.after").read_bytes()
        states = {
            "before": _unframe((out / f"{step}.model-before").read_bytes()),
            "after": _unframe((out / f"{step}.model-after").read_bytes()),
        }
        metas = [
            number
            for number in (0, 1)
            if before[number * PAGE : (number + 1) * PAGE] != after[number * PAGE : (number + 1) * PAGE]
        ]
        assert len(metas) == 1, "a commit rewrites one of the two meta pages"
        for case in ("pages in flight", "pages synced, meta in flight", "meta synced"):
            image = bytearray(crash_image(before, after, rng, garbage_metas=False))
            meta = slice(metas[0] * PAGE, (metas[0] + 1) * PAGE)
            if case == "pages in flight":  # LMDB writes its meta page only after the pages are synced
                image[meta], expected = before[meta], states["before"]
            else:
                image = bytearray(after)
                if case == "pages synced, meta in flight":
                    image[meta], expected = before[meta], states["before"]
                else:
                    expected = states["after"]
            store = tmp_path / f"image{images}"
            store.mkdir()
            (store / "data.mdb").write_bytes(bytes(image))
            with open_database(f"lmdb:{store}?redo_log=false") as recovered:
                assert recovered.read(lambda tr: tr.get_range(b"\x00", b"\xff")) == expected, (step, case)
            images += 1


def test_a_store_left_by_a_crash_of_the_release_before_is_recovered(tmp_path: Path) -> None:
    """Format 1 of the log: the fixture is a store of that release (38c4218) crashed after a
    checkpoint, its data file as the checkpoint synced it, the later commits only in its log."""
    store = tmp_path / "store"
    with tarfile.open(FIXTURES / "redo-log-v1-crashed.tar.gz") as archive:
        archive.extractall(store, filter="data")
    expected = sorted(
        (bytes.fromhex(k), bytes.fromhex(v)) for k, v in json.loads((store / "expected.json").read_text()).items()
    )
    (store / "expected.json").unlink()
    checkpoint = Checkpoint.load(str(store))
    assert checkpoint is not None and checkpoint.format == 1
    assert len(logged_after(str(store), checkpoint)) == 32
    with open_database(f"lmdb:{store}") as recovered:
        assert recovered.read(lambda tr: tr.get_range(b"\x00", b"\xff")) == expected
        recovered.run(lambda tr: tr.set(b"later", b"v"))
    with open_database(f"lmdb:{store}?redo_log=false") as reopened:
        assert reopened.read(lambda tr: tr.get(b"later")) == b"v"


def test_the_checkpoint_names_its_format_and_a_clean_close_leaves_a_plain_store(tmp_path: Path) -> None:
    """While the log may hold commits the data file lacks, the checkpoint's first line names the
    log's format (a release that reads only format 1 refuses the store rather than miss them);
    the last process to close leaves the data file complete, as plain LMDB reads it."""
    store = tmp_path / "store"
    with open_database(f"lmdb:{store}") as db:
        db.run(lambda tr: [tr.set(b"k%d" % i, b"v%d" % i) for i in range(100)])
        assert (store / CHECKPOINT_FILE).read_bytes().startswith(b"fdb-leaderboard redo checkpoint 2\n")
    assert sorted(p.name for p in store.iterdir() if p.name.startswith("redo.") and not p.name.endswith(".lock")) == [
        "redo.checkpointer",
        "redo.gate",
    ]
    env = lmdb.open(str(store), readonly=True, lock=False)  # as any LMDB reader (an older release) opens it
    try:
        with env.begin() as txn:
            assert list(txn.cursor()) == sorted((b"k%d" % i, b"v%d" % i) for i in range(100))
    finally:
        env.close()
    assert not (store / HEAD_FILE).exists()


def test_redo_log_options_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot go with durable=False"):
        open_database(f"lmdb:{tmp_path / 's'}?redo_log=true&durable=false")
    with pytest.raises(ValueError, match="checkpoint_seconds must be positive"):
        open_database(f"lmdb:{tmp_path / 's'}?redo_log=true&checkpoint_seconds=0")
    with pytest.raises(ValueError, match="option redo_log must be true or false"):
        open_database(f"lmdb:{tmp_path / 's'}?redo_log=maybe")
    with pytest.raises(ValueError, match="log_segment_bytes must be at least 65536"):
        open_database(f"lmdb:{tmp_path / 's'}?log_segment_bytes=4096")


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
    needed = sorted(p.name for p in store.glob("redo.*.log"))
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
    assert set(needed) <= {p.name for p in store.glob("redo.*.log")}  # still needed by the old checkpoint
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


def _records(store: Path) -> list[tuple[int, bytes]]:
    """Every record of the store's log segments, as written (nothing superseded or filtered)."""
    checkpoint = Checkpoint.load(str(store))
    assert checkpoint is not None
    found = []
    for number, name in segments(str(store)):
        found += read_records(Path(name).read_bytes(), segment_seed(checkpoint.session, number))[0]
    return found


def test_a_commit_that_fails_after_its_record_was_logged_is_never_replayed(tmp_path: Path, monkeypatch) -> None:
    store, crashed = tmp_path / "store", tmp_path / "crashed"
    db = LmdbDatabase(str(store), redo_log=True, checkpoint_seconds=3600)  # no checkpoint after the first
    db.run(lambda tr: tr.set(b"a", b"1"))
    logged, records = db.redo_log.logged_bytes, _records(store)
    commit = RedoLog.commit
    monkeypatch.setattr(RedoLog, "commit", lambda log, txn, writes: commit(log, _CommitFails(txn), writes))
    with pytest.raises(lmdb.DiskError, match="injected"):
        db.run(lambda tr: tr.set(b"phantom", b"told it failed"))
    monkeypatch.undo()
    assert db.redo_log.logged_bytes == logged and db.redo_log.failed is None
    assert _records(store) == records  # taken back: a crash now would not replay it
    db.run(lambda tr: tr.set(b"b", b"2"))  # LMDB gives it the failed commit's transaction id
    txnids = [txnid for txnid, _ in _records(store)]
    assert len(txnids) == len(records) + 1 and len(set(txnids)) == len(txnids)
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
        if fd == log._fd:
            monkeypatch.setattr(os, "fdatasync", sync)
            raise KeyboardInterrupt

    monkeypatch.setattr(os, "fdatasync", sync_then_interrupt)


def test_a_commit_interrupted_while_its_record_syncs_is_never_replayed(tmp_path: Path, monkeypatch) -> None:
    store, crashed = tmp_path / "store", tmp_path / "crashed"
    db = LmdbDatabase(str(store), redo_log=True, checkpoint_seconds=3600)
    db.run(lambda tr: tr.set(b"a", b"1"))
    records = _records(store)
    _interrupt_the_next_log_sync(monkeypatch, db.redo_log)
    with pytest.raises(KeyboardInterrupt):
        db.run(lambda tr: tr.set(b"interrupted", b"x" * 1000))
    assert db.read(lambda tr: tr.get(b"interrupted")) is None
    assert _records(store) == records
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
