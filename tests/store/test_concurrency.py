"""Concurrency: many threads and several spawned processes on one SUM index in one LMDB store.

Writers (threads of this process and of two spawned processes) submit scores to the same
records and windows while, in another thread and another process, windows are added over
stored data (so they must be filled while writes go on), filled step by step, refilled
entirely (``Rebuild.ALWAYS``), expired and trimmed; a checker thread runs the consistency
checker on snapshots the whole time.  Every writer logs each submission once ``add_score``
returned.  Afterwards every acknowledged submission must be in the index exactly once: as
one stored entry (matched by its unique operation id, carried as the entry's context) and
in every total (SUM makes totals exact: all-time and each remaining window), and nothing
else may be there.
"""

from __future__ import annotations

import collections
import contextlib
import json
import multiprocessing
import threading
import time
from pathlib import Path

import fdb.tuple
import pytest

from fdb_leaderboard.errors import WindowNotReady
from fdb_leaderboard.index import LeaderboardIndex
from fdb_leaderboard.index.directory import ALL_TIME, WindowSpec, WindowUpdate
from fdb_leaderboard.store import Database
from tests.support.reliability_workers import (
    HOT_PKS,
    MAINTENANCE_OVERTIME,
    PREFIX,
    SETTINGS,
    SHARED_PKS,
    TRIM_BEFORE,
    TRIM_PKS,
    hot_writer_process,
    hot_writes,
    maintenance_loop,
    maintenance_process,
    write_loop,
    writer_process,
)

PROCESS_WRITERS = 2  # processes
THREADS_PER_PROCESS = 2
LOCAL_WRITERS = 3  # threads in this process
WRITERS = PROCESS_WRITERS * THREADS_PER_PROCESS + LOCAL_WRITERS
QUOTA = 25  # acknowledged submissions each writer makes before the run may stop (they go on meanwhile)


def read_log(path: Path) -> list[list]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def entries_of(index: LeaderboardIndex, pk: str) -> list[tuple[int, int, tuple]]:
    pk_nested = fdb.tuple.pack(((pk,),))
    return index.read(lambda ops: ops.txn.read_entries(pk_nested))


def head_totals(index: LeaderboardIndex, pk: str) -> dict[int, int]:
    """The record's SUM total per window key: the stored score of its head's element."""
    head = index.read(lambda ops: ops.txn.read_head(fdb.tuple.pack(((pk,),))))
    directory = index.directory()
    sign = -1 if directory is not None and directory.high_score_first else 1
    return {} if head is None else {state.lb_key: sign * fdb.tuple.unpack(state.element)[0] for state in head.windows}


@pytest.mark.slow
def test_threads_and_processes_write_while_windows_fill_expire_and_trim(
    db: Database, store_url: str, prefix: bytes, tmp_path: Path
) -> None:
    """On FoundationDB (when available) the same run exercises conflicts and their retries."""
    url = store_url  # durable: group commit shares the fsyncs of concurrent writers
    prefix = prefix + PREFIX
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    index = LeaderboardIndex.create(db, prefix, SETTINGS)
    index.update_windows(WindowUpdate(specs=[WindowSpec(1, TRIM_BEFORE, 1000, 1000, 19)]))

    context = multiprocessing.get_context("spawn")  # an LMDB environment must not cross a fork
    ready, start, stop, progress = context.Queue(), context.Event(), context.Event(), context.Queue()
    processes = [
        context.Process(
            target=writer_process,
            args=(url, prefix, str(out_dir), f"proc{i}", 10 + i, THREADS_PER_PROCESS, ready, start, stop),
            kwargs={"quota": QUOTA, "progress": progress},
        )
        for i in range(PROCESS_WRITERS)
    ]
    processes.append(
        context.Process(
            target=maintenance_process, args=(url, prefix, str(out_dir), "maint-proc", 7, ready, start, stop)
        )
    )
    for process in processes:
        process.start()
    threads = [
        threading.Thread(
            target=write_loop,
            args=(index, f"local.{t}", 1000 + t, stop, str(out_dir / f"local.{t}.jsonl"), QUOTA, progress),
        )
        for t in range(LOCAL_WRITERS)
    ]
    threads.append(
        threading.Thread(
            target=maintenance_loop, args=(index, "maint-local", 8, stop, str(out_dir / "maint-local.jsonl"))
        )
    )
    snapshot_problems: list = []
    checks = [0]

    def checker() -> None:
        """Every snapshot a reader sees is consistent, whatever runs concurrently."""
        while not stop.is_set():
            try:
                problems = index.check()
                if problems:
                    snapshot_problems.append(problems)
                    return
                with contextlib.suppress(WindowNotReady):  # all-time refilled after Rebuild.ALWAYS
                    index.top(5)
                checks[0] += 1
            except Exception as exc:
                snapshot_problems.append(repr(exc))
                return

    threads.append(threading.Thread(target=checker))
    try:
        for _ in processes:
            ready.get(timeout=60)
        for thread in threads:
            thread.start()
        start.set()
        # Until every writer made its quota (however long this machine takes; maintenance goes on
        # meanwhile, and does what it has not done yet after the stop).
        for _ in range(WRITERS):
            progress.get(timeout=600)  # a guard against a hang only
    finally:
        stop.set()
        start.set()
        for thread in threads:  # maintenance may run MAINTENANCE_OVERTIME longer
            if thread.ident is not None:  # started
                thread.join(MAINTENANCE_OVERTIME + 30)
        for process in processes:
            process.join(MAINTENANCE_OVERTIME + 30)
            if process.is_alive():
                process.kill()
    assert [p.exitcode for p in processes] == [0] * len(processes)
    assert not any(t.is_alive() for t in threads)
    assert snapshot_problems == []

    acked: list[tuple[str, int, int, str]] = []
    operations: collections.Counter[str] = collections.Counter()
    for log in sorted(out_dir.iterdir()):
        for line in read_log(log):
            assert line[0] != "error", f"{log.name}: {line[1]}"
            if line[0] == "ack":
                acked.append(tuple(line[1:]))  # type: ignore[arg-type]
            else:
                operations[line[1].rstrip("0123456789") if line[0] == "op" else "trim-refused"] += 1
    assert len({a[3] for a in acked}) == len(acked), "operation ids are unique"
    # The scenario really ran: many writes, fills started and completed, expiry and trims.
    assert len(acked) >= WRITERS * QUOTA, len(acked)  # on FoundationDB too, where writers conflict and retry
    assert operations["fill-done"] >= 1 and operations["fill-step"] >= 1, operations
    assert operations["expire"] >= 1 and operations["trim"] + operations["trim-refused"] >= 1, operations
    assert operations["window-filling"] >= 1 and operations["rebuild-all"] >= 1, operations

    # Finish whatever fill the run left, then everything must agree.
    index.fill()
    directory = index.directory()
    assert directory is not None and directory.filling() == []
    assert index.check() == []

    by_pk: dict[str, list[tuple[int, int, str]]] = collections.defaultdict(list)
    for pk, score, ts, op in acked:
        by_pk[pk].append((score, ts, op))
    windows = [w for w in directory.windows if w.type != ALL_TIME]
    all_time = directory.of_type(ALL_TIME)[0]

    for pk in SHARED_PKS:
        expected = sorted((ts, score, op) for score, ts, op in by_pk[pk])
        stored = sorted((ts, score, context[0]) for ts, _seq, (_group, score, context) in entries_of(index, pk))
        assert stored == expected, f"{pk}: stored entries differ from the acknowledged submissions"
        totals = head_totals(index, pk)
        assert totals[all_time.lb_key] == sum(score for score, _, _ in by_pk[pk])
        for window in windows:
            in_window = [score for score, ts, _ in by_pk[pk] if window.start <= ts < window.end]
            assert totals.get(window.lb_key, 0) == sum(in_window), f"{pk} in {window.describe()}"
            assert (window.lb_key in totals) == bool(in_window)

    for pk in TRIM_PKS:  # trims may have folded some entries into the carried total
        expected_entries = {(ts, score, op) for score, ts, op in by_pk[pk]}
        stored = [(ts, score, context[0]) for ts, _seq, (_group, score, context) in entries_of(index, pk)]
        assert len(set(stored)) == len(stored) and set(stored) <= expected_entries
        assert head_totals(index, pk)[all_time.lb_key] == sum(score for score, _, _ in by_pk[pk])

    # A final trim folds every remaining entry of the trim records; totals do not move.
    index.trim(TRIM_BEFORE)
    assert index.check() == []
    for pk in TRIM_PKS:
        assert entries_of(index, pk) == []
        assert index.rank_and_entry((pk,)).score == sum(score for score, _, _ in by_pk[pk])

    # The all-time board: every record once, with its exact total, in ascending total order.
    board = index.top(1000)
    assert sorted((e.pk[0], e.score) for e in board) == sorted(
        (pk, sum(score for score, _, _ in by_pk[pk])) for pk in by_pk
    )
    assert [e.score for e in board] == sorted(e.score for e in board)
    assert [e.rank for e in board] == list(range(len(board)))
    assert index.count() == len(by_pk)
    print(
        f"\nconcurrency: {len(acked)} acknowledged submissions, {checks[0]} concurrent consistency checks, "
        f"maintenance {dict(operations)}"
    )


HOT_PROCESSES = 3
HOT_THREADS = 3  # per process, and in this process
HOT_WRITES = 20  # per writer
HOT_DEADLINE = 120.0  # seconds for every writer to finish: a livelock would not


@pytest.mark.slow
def test_writers_on_one_hot_board_lose_and_double_nothing(
    db: Database, store_url: str, prefix: bytes, tmp_path: Path
) -> None:
    """Twelve writers (threads here and in three processes) submit to the same three records of
    one board.  On FoundationDB they conflict and retry; every call must end (in bounded time,
    with no error), and the board must hold exactly the acknowledged submissions."""
    prefix = prefix + PREFIX
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    index = LeaderboardIndex.create(db, prefix, SETTINGS)
    index.update_windows(WindowUpdate(specs=[WindowSpec(1, 0, 5000, 5000, 4)]))
    before = db.stats.snapshot()

    context = multiprocessing.get_context("spawn")  # an LMDB environment must not cross a fork
    ready, start = context.Queue(), context.Event()
    processes = [
        context.Process(
            target=hot_writer_process,
            args=(store_url, prefix, str(out_dir), f"proc{i}", HOT_THREADS, HOT_WRITES, ready, start),
        )
        for i in range(HOT_PROCESSES)
    ]
    threads = [
        threading.Thread(target=hot_writes, args=(index, f"local.{t}", HOT_WRITES, str(out_dir / f"local.{t}.jsonl")))
        for t in range(HOT_THREADS)
    ]
    for process in processes:
        process.start()
    try:
        for _ in processes:
            ready.get(timeout=60)
        started = time.monotonic()
        start.set()
        for thread in threads:
            thread.start()
        for worker in [*threads, *processes]:
            worker.join(max(0.0, started + HOT_DEADLINE - time.monotonic()))
        elapsed = time.monotonic() - started
        assert not any(worker.is_alive() for worker in [*threads, *processes]), (
            f"writers still busy after {elapsed:.0f} s"
        )
    finally:
        start.set()
        for process in processes:
            if process.is_alive():
                process.kill()
    assert [p.exitcode for p in processes] == [0] * len(processes)

    acked: list[list] = []
    for log in sorted(out_dir.iterdir()):
        for line in read_log(log):
            assert line[0] != "error", f"{log.name}: {line[1]}"
            acked.append(line[1:])
    writers = HOT_THREADS * (HOT_PROCESSES + 1)
    assert len(acked) == writers * HOT_WRITES
    slowest = max(seconds for *_, seconds in acked)

    directory = index.directory()
    assert directory is not None
    for pk in HOT_PKS:
        mine = [(ts, score, op) for p, score, ts, op, _ in acked if p == pk]
        stored = [(ts, score, context[0]) for ts, _seq, (_group, score, context) in entries_of(index, pk)]
        assert sorted(stored) == sorted(mine), f"{pk}: stored entries differ from the acknowledged submissions"
        totals = head_totals(index, pk)
        for window in directory.windows:
            expected = sum(score for ts, score, _ in mine if window.start <= ts < window.end)
            assert totals.get(window.lb_key, 0) == expected, f"{pk} in {window.describe()}"
    assert index.check() == []
    assert [(e.pk[0], e.score) for e in index.top(10)] == sorted(
        ((pk, sum(a[1] for a in acked if a[0] == pk)) for pk in HOT_PKS), key=lambda row: (row[1], row[0])
    )
    stats = {name: count - before[name] for name, count in db.stats.snapshot().items()}
    if store_url.startswith("fdb:"):
        assert stats["conflicts"] > 0, stats  # the writers here really contended (and retried)
    print(
        f"\nhot board: {len(acked)} submissions by {writers} writers in {elapsed:.1f} s, slowest call {slowest:.2f} s; "
        f"this process's writers: {stats['commits']} commits, {stats['conflicts']} conflicts retried"
    )
