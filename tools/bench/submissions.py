"""Workload 1, in-process: submit a score (``index.add_score``), one caller and concurrent callers.

Each submission is one new entry (a fresh score, timestamp in the current day) for a uniformly
random record.  One caller times each call (:func:`bench.timing.time_each`); ``--threads``
callers are threads in this process sharing one index, released together
(:func:`bench.timing.time_concurrent`).  Three store modes, each on its own submissions:

- durable=false, one caller, right after the load: the CPU cost;
- durable, the default (each commit's writes written to the redo log's preallocated segment
  and synced, the data file synced by checkpoints about once a second; concurrent callers
  share commits through the store's group commit): the note gives the submissions per commit,
  the bytes logged per submission, the time per commit spent writing and syncing them and the
  whole time per commit, each against the floor (a bare 1-KB write and fdatasync on the same
  disk, measured just before: ``bench.floors.sync_floor``), the checkpoints' data-file syncs and
  how much the data file grew;
- durable with synced pages (``redo_log=false``: every commit's changed pages fsynced): the note
  gives what the commits handed to the OS (``/proc/self/io`` ``wchar``): KiB per submission and
  4-KiB pages per commit (``tools/bench floor`` prices an fdatasync of that many pages on this
  disk), and for several callers the submissions per commit.

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
from .floors import floor_us
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
    """What redo-log commits cost on disk: log bytes, time per commit, checkpoints, growth of the data file."""

    def __init__(self, db: LmdbDatabase, floor: dict | None = None) -> None:
        assert db.redo_log is not None
        self.floor_ms = floor_us(floor) / 1000 if floor else None
        self.commits = db.commits
        self.checkpoints = db.redo_log.checkpoints
        self.logged = db.redo_log.logged_bytes
        self.append_seconds = db.redo_log.append_seconds
        self.sync_seconds = db.redo_log.checkpoint_sync_seconds
        self.file = db.disk_usage()

    def note(self, db: LmdbDatabase, sample: Sample) -> str:
        log_ = db.redo_log
        assert log_ is not None
        commits = max(1, db.commits - self.commits)
        logged = (log_.logged_bytes - self.logged) / sample.ops
        checkpoints = log_.checkpoints - self.checkpoints
        append_ms = (log_.append_seconds - self.append_seconds) / commits * 1e3
        commit_ms = sample.seconds / commits * 1e3
        sync_s = log_.checkpoint_sync_seconds - self.sync_seconds
        grown = (db.disk_usage() - self.file) / 2**20
        floor = self.floor_ms
        against = (
            f" ({append_ms / floor:.2f}x and {commit_ms / floor:.2f}x the floor's {floor:.3f} ms)" if floor else ""
        )
        return (
            f"{sample.ops / commits:.2f} submissions per commit; {logged:,.0f} bytes logged per submission; "
            f"{append_ms:.3f} ms per commit to write and sync them, {commit_ms:.3f} ms per commit in all{against}; "
            f"{checkpoints} checkpoints spent {sync_s:.2f} s syncing the data file, which grew {grown:,.1f} MiB "
            "(no page is reused until the next checkpoint)"
        )


def nondurable(run: Run, index: LeaderboardIndex) -> None:
    """One caller on the store opened with durable=false (set S0)."""
    log(f"  submissions, 1 caller, durable=false ({run.args.ops:,})")
    with profiled(run.args.profile, "in-process submissions, durable=false"):
        sample, counters = time_submissions(index, run.data.submissions["S0"])
    run.record_ours("submit_1", "nondurable", sample, counters=counters)


def durable(run: Run, db: Database, index: LeaderboardIndex) -> None:
    """One caller (S1), then ``--threads`` callers (S2), on the durable store (the redo log); then
    our snapshot for Redis."""
    args, data, lmdb_db = run.args, run.data, as_lmdb(db)
    log(f"  submissions in-process, durable (redo log): 1 caller, then {args.threads} threads")
    for workload, name, threads in (("submit_1", "S1", 1), ("submit_n", "S2", args.threads)):
        before = RedoLogMeter(lmdb_db, run.sync_floor)
        with profiled(args.profile and threads == 1, "in-process submissions, durable"):
            sample, counters = time_submissions(index, data.submissions[name], threads)
        run.record_ours(workload, "", sample, before.note(lmdb_db, sample), counters=counters)
    run.snapshot = {
        "all_time_count": index.count(),
        "day_count": index.count(DAILY, NOW),
        "week_top_scores": [e.score for e in index.top(TOP_N, WEEKLY, NOW)],
    }


def synced(run: Run) -> None:
    """The durable submissions again, on the store opened with ``redo_log=false`` (every commit's
    pages synced; fresh scores: L1, L2)."""
    args, data = run.args, run.data
    db = as_lmdb(run.store.open(redo_log=False))
    try:
        index = Catalog(db).get(INDEX_NAME)
        log(f"  submissions in-process, durable, pages synced: 1 caller, then {args.threads} threads")
        for workload, name, threads in (("submit_1", "L1", 1), ("submit_n", "L2", args.threads)):
            commits, written = db.commits, bytes_written()
            sample, counters = time_submissions(index, data.submissions[name], threads)
            done = db.commits - commits
            note = written_note(written, done, sample.ops)
            if threads > 1:
                note = f"{sample.ops / max(1, done):.2f} submissions per durable commit (group commit); " + note
            run.record_ours(workload, "synced", sample, note, counters=counters)
    finally:
        db.close()
