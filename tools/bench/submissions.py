"""Workload 1, in-process: submit a score (``index.add_score``), one caller and concurrent callers.

Each submission is one new entry (a fresh score, timestamp in the current day) for a uniformly
random record.  One caller times each call (:func:`bench.timing.time_each`); ``--threads``
callers are threads in this process sharing one index, released together
(:func:`bench.timing.time_concurrent`).  Three store modes, each on its own submissions:

- durable=false, one caller, right after the load: the CPU cost;
- durable (every commit fsynced; concurrent callers share commits through the store's group
  commit): the note gives what the commits handed to the OS (``/proc/self/io`` ``wchar``): KiB
  per submission and 4-KiB pages per commit (``tools/bench_floor.py`` prices an fdatasync of
  that many pages on this disk), and for several callers the submissions per commit;
- durable by redo log (``redo_log=true``: each commit's writes appended to a log and synced,
  the data file synced by checkpoints about once a second): the note gives the bytes logged
  per submission, the time spent writing and syncing them per commit, the checkpoints' data-file
  syncs and how much the data file grew.

The same-shaped runs through gRPC and on Redis share :func:`one_then_many`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from fdb_leaderboard.index import LeaderboardIndex
from fdb_leaderboard.service.catalog import Catalog
from fdb_leaderboard.store import Database
from fdb_leaderboard.store.lmdb_backend import LmdbDatabase

from .counting import StoreCounters
from .data import DAILY, INDEX_NAME, NOW, TOP_N, WEEKLY, Submission
from .stores import as_lmdb
from .suite import Run
from .timing import Sample, log, profiled, time_callers, time_concurrent, time_each


def time_submissions(
    index: LeaderboardIndex, submissions: Sequence[Submission], threads: int = 1
) -> tuple[Sample, dict[str, float]]:
    """In-process ``add_score`` of each submission, by one caller or ``threads`` concurrent ones;
    the timings and the store's counters per submission."""
    counters = StoreCounters(index.db)
    sample = time_callers([lambda s: index.add_score((s.pk,), s.score, s.ts)] * threads, submissions)
    return sample, counters.per_call(sample.ops)


def submit_all(index: LeaderboardIndex, submissions: Sequence[Submission]) -> int:
    """Untimed (counted): every submission; returns how many."""
    for s in submissions:
        index.add_score((s.pk,), s.score, s.ts)
    return len(submissions)


def one_then_many(
    run: Run,
    system: str,
    label: str,
    one: Callable[[Submission], object],
    many: Sequence[Callable[[Submission], object]],
    sets: tuple[str, str],
) -> None:
    """``one`` caller on the first submission set, then ``len(many)`` concurrent callers on the second."""
    first, second = (run.data.submissions[name] for name in sets)
    run.record("submit_1", system, label, time_each(one, first)[0])
    run.record("submit_n", system, label, time_concurrent(many, second)[0])


def bytes_written() -> int | None:
    """Bytes this process has handed to write()/pwrite() so far (Linux ``/proc/self/io``), or None."""
    try:
        with open("/proc/self/io") as stats:
            for line in stats:
                if line.startswith("wchar:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def written_note(before: int | None, commits: int, submissions: int) -> str:
    """What the durable commits since ``before`` (a ``bytes_written()``) handed to the OS."""
    after = bytes_written()
    if before is None or after is None or not commits:
        return "bytes written per commit: not available on this platform"
    written = after - before
    return (
        f"{written / submissions / 1024:,.0f} KiB written per submission, {written / commits / 4096:,.0f} "
        f"4-KiB pages per commit ({commits:,} commits; LMDB writes every changed page and the B-tree "
        "branch pages above it, then fsyncs)"
    )


class RedoLogMeter:
    """What redo-log commits cost on disk: log bytes, checkpoints, growth of the data file."""

    def __init__(self, db: LmdbDatabase) -> None:
        assert db.redo_log is not None
        self.commits = db.commits
        self.checkpoints = db.redo_log.checkpoints
        self.logged = db.redo_log.logged_bytes
        self.append_seconds = db.redo_log.append_seconds
        self.sync_seconds = db.redo_log.checkpoint_sync_seconds
        self.file = db.disk_usage()

    def note(self, db: LmdbDatabase, submissions: int) -> str:
        log_ = db.redo_log
        assert log_ is not None
        commits = max(1, db.commits - self.commits)
        logged = (log_.logged_bytes - self.logged) / submissions
        checkpoints = log_.checkpoints - self.checkpoints
        append_ms = (log_.append_seconds - self.append_seconds) / commits * 1e3
        sync_s = log_.checkpoint_sync_seconds - self.sync_seconds
        grown = (db.disk_usage() - self.file) / 2**20
        return (
            f"{submissions / commits:.2f} submissions per commit; {logged:,.0f} bytes logged per submission, "
            f"{append_ms:.2f} ms per commit to write and sync them; {checkpoints} checkpoints spent {sync_s:.2f} s "
            f"syncing the data file, which grew {grown:,.1f} MiB (no page is reused until the next checkpoint)"
        )


def nondurable(run: Run, index: LeaderboardIndex) -> None:
    """One caller on the store opened with durable=false (set S0)."""
    log(f"  submissions, 1 caller, durable=false ({run.args.ops:,})")
    with profiled(run.args.profile, "in-process submissions, durable=false"):
        sample, counters = time_submissions(index, run.data.submissions["S0"])
    run.record_ours("submit_1", "nondurable", sample, counters=counters)


def durable(run: Run, db: Database, index: LeaderboardIndex) -> None:
    """One caller (S1), then ``--threads`` callers (S2), on the durable store; then our snapshot for Redis."""
    args, data, lmdb_db = run.args, run.data, as_lmdb(db)
    log(f"  submissions in-process, durable: 1 caller, then {args.threads} threads")
    commits, written = lmdb_db.commits, bytes_written()
    with profiled(args.profile, "in-process submissions, durable"):
        sample, counters = time_submissions(index, data.submissions["S1"])
    note = written_note(written, lmdb_db.commits - commits, len(data.submissions["S1"]))
    run.record_ours("submit_1", "", sample, note, counters=counters)
    commits, written = lmdb_db.commits, bytes_written()
    sample, counters = time_submissions(index, data.submissions["S2"], args.threads)
    count = len(data.submissions["S2"])
    per_commit = count / max(1, lmdb_db.commits - commits)
    run.record_ours(
        "submit_n",
        "",
        sample,
        f"{per_commit:.2f} submissions per durable commit (group commit); "
        + written_note(written, lmdb_db.commits - commits, count),
        counters=counters,
    )
    run.snapshot = {
        "all_time_count": index.count(),
        "day_count": index.count(DAILY, NOW),
        "week_top_scores": [e.score for e in index.top(TOP_N, WEEKLY, NOW)],
    }


def redo_log(run: Run) -> None:
    """The durable submissions again, on the store opened with the redo log (fresh scores: L1, L2)."""
    args, data = run.args, run.data
    db = as_lmdb(run.store.open(redo_log=True))
    try:
        index = Catalog(db).get(INDEX_NAME)
        log(f"  submissions in-process, durable by redo log: 1 caller, then {args.threads} threads")
        for workload, name, threads in (("submit_1", "L1", 1), ("submit_n", "L2", args.threads)):
            before = RedoLogMeter(db)
            sample, counters = time_submissions(index, data.submissions[name], threads)
            note = before.note(db, len(data.submissions[name]))
            run.record_ours(workload, "log", sample, note, counters=counters)
    finally:
        db.close()
