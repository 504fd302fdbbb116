"""Bodies of the processes the reliability tests start (not a test module).

- :func:`writer_process` and :func:`maintenance_process` run under ``multiprocessing`` with
  the 'spawn' start method (an LMDB environment must never cross a fork), for
  ``test_concurrency.py``.
- ``python reliability_workers.py crash STORE LOG SEED`` is the child that
  ``test_crash.py`` SIGKILLs at a random moment.

Every writer logs a submission only after ``add_score``/``add_entries`` returned: those are
the acknowledged writes the tests then look for.  Each entry carries a unique operation id
as its context (the indexes here have ``context_size=1``), so the stored entries can be
matched one for one with the log.
"""

from __future__ import annotations

import json
import os
import random
import sys
import threading
import time
import traceback
from typing import Any

from fdb_leaderboard.errors import FailedPrecondition
from fdb_leaderboard.index import Entry, IndexSettings, LeaderboardIndex
from fdb_leaderboard.index.directory import Rebuild, WindowUpdate
from fdb_leaderboard.store import open_database

PREFIX = b"\x15\x42"
SETTINGS = IndexSettings(aggregation="SUM", context_size=1, high_score_first=False)

# -- the concurrency scenario ------------------------------------------------------------------

SHARED_PKS = [f"p{i}" for i in range(12)]  # every writer hits these: maximum contention
TRIM_PKS = [f"t{i}" for i in range(3)]  # written only before TRIM_BEFORE, which trim folds away
TRIM_BEFORE = 1_000
TS_END = 20_000  # writers' timestamps are in [0, TS_END); type 1 windows cover [1000, 20000)


def open_index(url: str, prefix: bytes = PREFIX) -> tuple[Any, LeaderboardIndex]:
    db = open_database(url)
    return db, LeaderboardIndex.open(db, prefix)


def write_loop(
    index: LeaderboardIndex, name: str, seed: int, stop: Any, out_path: str, quota: int = 0, progress: Any = None
) -> None:
    """Submit scores until ``stop`` is set; append each acknowledged one to ``out_path``.  Put
    ``name`` on the ``progress`` queue once ``quota`` are acknowledged, or when the loop ends.

    Lines are JSON: ``["ack", pk, score, ts, op_id]`` or ``["error", text]``.
    """
    rng = random.Random(seed)
    n = 0
    with open(out_path, "a", encoding="utf-8") as out:
        while not stop.is_set():
            if progress is not None and n >= quota:
                progress.put(name)
                progress = None
            try:
                if rng.random() < 0.85:
                    pk = rng.choice(SHARED_PKS)
                    ts = rng.randrange(TRIM_BEFORE, TS_END)
                    score = rng.randrange(1, 1000)
                    op = f"{name}:{n}"
                    index.add_score((pk,), score, ts, context=(op,))
                    out.write(json.dumps(["ack", pk, score, ts, op]) + "\n")
                    n += 1
                elif rng.random() < 0.5:
                    pk = rng.choice(TRIM_PKS)
                    ts = rng.randrange(0, TRIM_BEFORE)
                    score = rng.randrange(1, 1000)
                    op = f"{name}:{n}"
                    index.add_score((pk,), score, ts, context=(op,))
                    out.write(json.dumps(["ack", pk, score, ts, op]) + "\n")
                    n += 1
                else:  # several entries of one record in one transaction
                    pk = rng.choice(SHARED_PKS)
                    batch = []
                    for _ in range(rng.randrange(2, 5)):
                        batch.append((rng.randrange(1, 1000), rng.randrange(TRIM_BEFORE, TS_END), f"{name}:{n}"))
                        n += 1
                    index.add_entries((pk,), [Entry(score, ts, (op,)) for score, ts, op in batch])
                    for score, ts, op in batch:
                        out.write(json.dumps(["ack", pk, score, ts, op]) + "\n")
            except Exception:
                out.write(json.dumps(["error", traceback.format_exc()]) + "\n")
                break
        out.flush()
    if progress is not None:  # stopped, or failed, before its quota: the test need not wait for it
        progress.put(name)


# The kinds of maintenance a run must include, each with a choice of maintenance_loop doing it.
MAINTENANCE_KINDS = {
    "window-filling": 0.0,
    "rebuild-all": 0.13,
    "expire": 0.15,
    "trim": 0.21,
    "fill-step": 0.5,
    "fill-done": 0.5,
}
MAINTENANCE_OVERTIME = 60.0  # seconds after stop to do the kinds still missing


def maintenance_loop(index: LeaderboardIndex, name: str, seed: int, stop: Any, out_path: str) -> None:
    """Window updates that need fills, fill steps, expiry and trims until ``stop`` is set, then
    whichever of MAINTENANCE_KINDS it has not done yet.

    Lines: ``["op", kind]`` per operation done, ``["refused", kind, message]`` for the
    documented refusals (trimming while a fill runs), ``["error", text]`` otherwise.
    """
    rng = random.Random(seed)
    expire_before = TRIM_BEFORE
    # After ``stop``, the kinds not done yet are done then (within MAINTENANCE_OVERTIME), so a
    # short run on a slow store (FoundationDB, where fills conflict with the hot writers and
    # retry) still does them all.
    missing = dict(MAINTENANCE_KINDS)
    overtime_until = None
    with open(out_path, "a", encoding="utf-8") as out:
        while True:
            if stop.is_set():
                overtime_until = overtime_until or time.monotonic() + MAINTENANCE_OVERTIME
                if not missing or time.monotonic() > overtime_until:
                    break
                choice = next(iter(missing.values()))
            else:
                choice = rng.random()
            try:
                if choice < 0.12:
                    # A new window over data already stored: it must be filled while writes go on.
                    window_type = rng.choice((2, 3))
                    start = rng.randrange(TRIM_BEFORE, TS_END - 100)
                    end = start + rng.randrange(100, 8000)
                    result = index.update_windows(WindowUpdate(windows=[(window_type, start, end)]))
                    kind = "window-filling" if result.filling else "window"
                elif choice < 0.14:
                    index.update_windows(WindowUpdate(rebuild=Rebuild.ALWAYS))  # refill every window
                    kind = "rebuild-all"
                elif choice < 0.20:
                    expire_before = min(expire_before + rng.randrange(100, 800), 8_000)
                    kind = f"expire{len(index.expire(expire_before))}"
                elif choice < 0.26:
                    try:
                        kind = f"trim{index.trim(TRIM_BEFORE, max_records=4)}"
                    except FailedPrecondition as exc:  # documented: no trim while windows fill
                        out.write(json.dumps(["refused", "trim", str(exc)]) + "\n")
                        kind = "trim-refused"
                else:
                    step = index.fill_step(max_records=rng.randrange(1, 6))
                    kind = "fill-done" if step.done else "fill-step"
                if kind != "trim-refused":
                    out.write(json.dumps(["op", kind]) + "\n")
                missing.pop(kind.rstrip("0123456789").removesuffix("-refused"), None)
            except Exception:
                out.write(json.dumps(["error", traceback.format_exc()]) + "\n")
                out.flush()
                return
        out.flush()


def _wait_for_start(ready: Any, start: Any) -> None:
    ready.put(os.getpid())
    if not start.wait(60):
        raise RuntimeError("the test never gave the start signal")


def writer_process(
    url: str,
    prefix: bytes,
    out_dir: str,
    name: str,
    seed: int,
    threads: int,
    ready: Any,
    start: Any,
    stop: Any,
    quota: int = 0,
    progress: Any = None,
):
    """A process of ``threads`` writer threads with its own connection to the store."""
    db, index = open_index(url, prefix)
    try:
        _wait_for_start(ready, start)
        _run_threads(
            write_loop,
            [
                (
                    index,
                    f"{name}.{t}",
                    seed * 100 + t,
                    stop,
                    os.path.join(out_dir, f"{name}.{t}.jsonl"),
                    quota,
                    progress,
                )
                for t in range(threads)
            ],
        )
    finally:
        db.close()


def _run_threads(target: Any, arguments: list[tuple]) -> None:
    """Run ``target`` in one thread per argument tuple, and wait for them all."""
    workers = [threading.Thread(target=target, args=args) for args in arguments]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def maintenance_process(
    url: str, prefix: bytes, out_dir: str, name: str, seed: int, ready: Any, start: Any, stop: Any
) -> None:
    db, index = open_index(url, prefix)
    try:
        _wait_for_start(ready, start)
        maintenance_loop(index, name, seed, stop, os.path.join(out_dir, f"{name}.jsonl"))
    finally:
        db.close()


# -- the hot board -------------------------------------------------------------------------------

HOT_PKS = [f"hot{i}" for i in range(3)]  # every writer submits to these three records


def hot_writes(index: LeaderboardIndex, name: str, count: int, out_path: str) -> None:
    """Submit ``count`` scores to the hot records; log each acknowledged one with the call's
    duration: ``["ack", pk, score, ts, op, seconds]``, or ``["error", text]`` and stop."""
    rng = random.Random(name)
    with open(out_path, "a", encoding="utf-8") as out:
        for n in range(count):
            pk, score, ts, op = rng.choice(HOT_PKS), rng.randrange(1, 1000), rng.randrange(TS_END), f"{name}:{n}"
            started = time.monotonic()
            try:
                index.add_score((pk,), score, ts, context=(op,))
            except Exception:
                out.write(json.dumps(["error", traceback.format_exc()]) + "\n")
                return
            out.write(json.dumps(["ack", pk, score, ts, op, time.monotonic() - started]) + "\n")


def hot_writer_process(
    url: str, prefix: bytes, out_dir: str, name: str, threads: int, count: int, ready: Any, start: Any
):
    """``threads`` threads of :func:`hot_writes` with the process's own connection to the store."""
    db, index = open_index(url, prefix)
    try:
        _wait_for_start(ready, start)
        _run_threads(
            hot_writes,
            [(index, f"{name}.{t}", count, os.path.join(out_dir, f"{name}.{t}.jsonl")) for t in range(threads)],
        )
    finally:
        db.close()


# -- the crash child ---------------------------------------------------------------------------

CRASH_PKS = [f"r{i:03d}" for i in range(300)]
CRASH_TS_END = 100_000


def crash_child(url: str, log_path: str, seed: int, prefix_hex: str = "") -> None:
    """Durable writes, window updates, fill steps and expiry until killed.

    ``url`` is the store's (``lmdb:PATH`` is durable by default, its commits made durable by the
    redo log; ``?redo_log=false`` syncs their pages instead), ``prefix_hex`` the index's prefix
    (default PREFIX).

    Before each write, an ``I`` line (intent) is written to the log (flushed, so it survives
    SIGKILL); after the write returns, ``A`` lines (acknowledged), fsynced.  Other lines:
    ``W`` window added (and whether it is filling), ``F`` fill step (``F done`` when a fill
    completes), ``E`` expiry.
    """
    rng = random.Random(seed)
    db = open_database(url)
    assert getattr(db, "durable", True)  # LMDB: durable by default
    index = LeaderboardIndex.open(db, bytes.fromhex(prefix_hex) if prefix_hex else PREFIX)
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def log(line: str, sync: bool = False) -> None:
        os.write(fd, (line + "\n").encode())
        if sync:
            os.fsync(fd)

    def add_window() -> None:
        start = rng.randrange(0, CRASH_TS_END - 1000)
        update = WindowUpdate(windows=[(rng.choice((2, 3)), start, start + rng.randrange(500, 20_000))])
        log(f"W {'filling' if index.update_windows(update).filling else 'complete'}")

    log(f"S {seed}", sync=True)
    print("ready", flush=True)
    if rng.random() < 0.75:
        add_window()  # a fill to interrupt
    n = 0
    while True:
        choice = rng.random()
        if choice < 0.78:
            batch = []
            for _ in range(1 if rng.random() < 0.8 else rng.randrange(2, 4)):
                batch.append((rng.randrange(1, 10_000), rng.randrange(0, CRASH_TS_END), f"{seed}:{n}"))
                n += 1
            pk = rng.choice(CRASH_PKS)
            for score, ts, op in batch:
                log(f"I {op} {pk} {score} {ts}")
            if len(batch) == 1:
                score, ts, op = batch[0]
                index.add_score((pk,), score, ts, context=(op,))
            else:
                index.add_entries((pk,), [Entry(score, ts, (op,)) for score, ts, op in batch])
            for _score, _ts, op in batch:
                log(f"A {op}")
            os.fsync(fd)
        elif choice < 0.785:
            add_window()
        elif choice < 0.795:
            gone = index.expire(rng.randrange(0, CRASH_TS_END))
            log(f"E {len(gone)}")
        else:
            step = index.fill_step(max_records=rng.randrange(2, 7))
            if step.windows or step.records_processed:
                log("F done" if step.done else "F step")


if __name__ == "__main__":
    if len(sys.argv) in (5, 6) and sys.argv[1] == "crash":
        crash_child(sys.argv[2], sys.argv[3], int(sys.argv[4]), *sys.argv[5:])
    else:
        sys.exit(f"usage: {sys.argv[0]} crash STORE_URL LOG SEED [PREFIX_HEX]")
