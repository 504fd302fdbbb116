#!/usr/bin/env python3
"""The product benchmark: fdb-leaderboard on the embedded LMDB store, next to Redis sorted sets.

**Data.**  ``--records`` N records (players), one group, primary key ``(player_id,)``, each
with one entry loaded: a score drawn from a log-normal distribution rounded down to a
multiple of 10 (skewed, a few hundred distinct values, so many ties) at a timestamp
uniform over the 30 days before ``NOW`` (2026-01-15 12:00 UTC, fixed so a seed always
gives the same data).  The index is high-score-first with the all-time window plus UTC
calendar windows: daily (type 1), ISO-weekly (type 2) and monthly (type 3), so exactly 4
windows hold each score.  The whole benchmark runs once per ``--aggregations`` entry
(default BEST, then SUM), each on a fresh store and fresh Redis servers.

**Workloads** (``--ops`` operations each; latencies are those of whole calls, so p50/p99
of one operation, or of one batch for loads and fills; throughput is operations over wall
time):

1. *Submit a score*: one new entry (a fresh score, timestamp in the current day, after
   ``NOW``) for a uniformly random record; ``index.add_score`` in-process, ``AddScore``
   through gRPC.  One caller, then ``--threads`` (8) concurrent callers (threads in this
   process, one index / one client each).  Our store is durable (every commit fsynced;
   concurrent callers share commits through the store's group commit).  An extra
   in-process row with durable=false (taken right after the load) shows the CPU cost.  The
   in-process durable rows note what their commits handed to the OS (``/proc/self/io``
   ``wchar``): KiB per submission and 4-KiB pages per commit (``tools/bench_floor.py``
   prices an fdatasync of that many pages on this disk).  Then the same rows again, with
   fresh submissions, on the store opened with the redo log (``redo_log=true``: each commit's
   writes appended to a log and synced, the data file synced by checkpoints about once a
   second), in-process and through a second server on that URL; the in-process rows note the
   bytes logged per submission, the time spent writing and syncing them per commit, the
   checkpoints' data-file syncs and how much the data file grew.
2. *Rank* of a random record in the current daily window (records with a value there)
   and in the all-time window (any record): ``index.rank`` / ``GetRank``.
3. *Top 10* of the current ISO-weekly window: ``index.top`` / ``Top``.
4. *Around me*: 5 above and 5 below a random record in the all-time window:
   ``index.around`` / ``AroundMe``.
5. *Bulk load* of the N records into an empty index, ``index.bulk_load`` in transactions of
   ``--load-batch`` records, on the store opened with durable=false (then reopened with
   durable=true for everything else); through gRPC, one ``BulkLoad`` stream (the client's
   ``bulk_load``: messages of 500 records, transactions of ``--load-batch``, ranked sets
   built at the end) into a second, empty index of the server's durable store, then into a
   third through the server on the redo-log URL.  records/s; latency per batch in-process
   (the gRPC load is one call: throughput only).
6. *Fill* of a new window over the loaded data: ``update_windows`` adds a 31-day window
   (a new type) covering every stored entry, then ``index.fill()`` fills it in batches of
   200 records (durable store); through gRPC, another new window, filled by ``Fill`` RPCs of
   one 200-record batch each until done.  records/s; latency per batch.

In-process runs call the Python API on the embedded store in this process.  End-to-end
runs start ``Server`` (the product's gRPC server, its own durable LMDB store) in a
separate process on a free local port, over the same store directory, and call it with
``LeaderboardClient``.  Each client thread has its own client (channel), though gRPC may
share one connection between them.  The order is: load, raw store rounds, durable=false
submissions, (reopen durable) operation counts, reads, submissions, (reopen with the redo
log) submissions, gRPC reads and submissions, in-process fill, gRPC fill, gRPC load, then
through the server on the redo-log URL gRPC submissions and a gRPC load.

**Redis** (skipped, with a message, when ``redis-server`` or the ``redis`` package is
missing, or with ``--no-redis``): Debian's ``redis-server`` started by the benchmark on a
free port in a temporary directory, once with ``--save '' --appendonly no`` and once more
with ``--appendonly yes --appendfsync always`` (the durable variant, measured for loads and
submissions).  One sorted set per window (``lb:TYPE:START``, the windows of the same
directory), members ``str(player_id)``.  A submission is one pipeline (no MULTI) of ``ZADD GT``
(BEST) or ``ZINCRBY`` (SUM) to its 4 sets; rank is ``ZREVRANK``; top 10 ``ZREVRANGE 0 9
WITHSCORES``; around me ``ZREVRANK`` (with ``ZCARD`` in the same pipeline, to shift the range near either end as
ours does) then ``ZREVRANGE r-5 r+5 WITHSCORES``; the load sends the
same commands in pipelines of ``--load-batch`` records; the fill replays the loaded records
in the new window into a new set, 200 records per pipeline (Redis keeps no entries to
rebuild from, so the client must hold them).  Clients are redis-py with hiredis; the
concurrent run uses one connection per thread.  Redis gets the same records and the same
submissions, in the same order, as the in-process run (the durable instance those of the
gRPC run); it does not store the entries, the record heads or timestamp tie-breaks (equal
scores are ordered by member, not by who reached them first), so it does less work.
After the in-process submissions the all-time and daily counts and the weekly top-10
scores are compared with Redis's as a sanity check.

**Storage**: the LMDB pages holding data (``LmdbDatabase.tree_bytes()``; the data file, free
pages included, is also shown: ``disk_usage()``) after the
load, divided by N x 4 (record x window), against Redis's ``used_memory`` growth during its
load divided by the same.  Ours includes the records' heads and entries, not only the windows.

**Store cost**: each of our operations runs again through ``CountingTransaction`` (from
``tools/bench_rankedset.py``) by way of a counting ``Database`` wrapper (writes rolled back), giving
the store operations per operation.  The load row is a whole ``bulk_load`` of ``--load-batch``
records into a scratch index with the same windows (cleared afterwards), ranked-set build
included; the fill row is one first-phase fill step (records into the primary B-tree; the
second phase adds about one write per entry).  The raw store is measured in the same run on the same
LMDB environment (``bench_rankedset``'s raw rounds: get / put / clear / atomic add / range
reads through the store API and through py-lmdb, 1000 per transaction, durable=false,
median of 3 rounds, on 20,000 scratch keys removed afterwards).  The count x raw cost of
each kind, summed, is the operation's store-bound cost; the measured in-process mean per
operation divided by it tells how much is Python work above the store.

Run for example (``--write-docs`` rewrites ``docs/benchmarks.md``)::

    /tmp/venv/bin/python tools/bench.py --records 100000 --json /tmp/bench.json --write-docs
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import dataclasses
import datetime as dt
import importlib.metadata
import io
import json
import multiprocessing
import os
import platform
import pstats
import random
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, TypeVar

# tools/ (this script's directory) is on sys.path when run as a script.  bench_rankedset is
# imported before fdb_leaderboard, and from a checkout that is not installed it puts the
# checkout on sys.path, so the fdb_leaderboard imports below work there too.
import bench_rankedset as rsb
import lmdb
from bench_rankedset import CountingTransaction, Sample, fmt_rate, table, time_each

from fdb_leaderboard.index import Entry, IndexSettings, LeaderboardIndex
from fdb_leaderboard.index.calendar import calendar_windows
from fdb_leaderboard.index.directory import ALL_TIME, Directory, Window, WindowUpdate
from fdb_leaderboard.service.catalog import Catalog
from fdb_leaderboard.store.api import Database, strinc
from fdb_leaderboard.store.lmdb_backend import LmdbDatabase

try:
    import redis
except ModuleNotFoundError:
    redis = None  # type: ignore[assignment]

T = TypeVar("T")

ROOT = Path(__file__).resolve().parent.parent
DAY = 86_400
SPAN_DAYS = 30
NOW = int(dt.datetime(2026, 1, 15, 12, tzinfo=dt.UTC).timestamp())  # "now": the current day is Jan 15
DATA_START = NOW - SPAN_DAYS * DAY
DAY_END = NOW - NOW % DAY + DAY  # end of the current day: submissions stay before it
DAILY, WEEKLY, MONTHLY = 1, 2, 3
FILL_TYPE_INPROC, FILL_TYPE_GRPC = 4, 5
FILL_START = DATA_START - DATA_START % DAY
FILL_END = FILL_START + 31 * DAY  # covers every loaded entry and every submission
WINDOWS_PER_SCORE = 4
INDEX_NAME = "bench"
GRPC_LOAD_INDEX = "bench-load"
TOP_N = 10
AROUND = 5
FILL_BATCH = 200
COUNT_OPS = 200  # operations run through the counting proxy per kind
RAW_KEYS = 20_000
RAW_BATCH = 1_000
RAW_ROUNDS = 3


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- data ----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Submission:
    pk: int
    score: int
    ts: int


@dataclasses.dataclass
class Data:
    """Everything the workloads use, drawn once from the seed (shared by every aggregation)."""

    records: list[tuple[int, int]]  # (score, ts) of player i
    # S0 (durable=false), S1, S2 (in-process), S3, S4 (gRPC), count; with the redo log: L1, L2
    # (in-process), L3, L4 (gRPC)
    submissions: dict[str, list[Submission]]
    rank_day_pks: list[int]  # records with a value in the current daily window
    rank_all_pks: list[int]
    around_pks: list[int]
    today: int  # how many loaded records are in the current daily window


SUBMISSION_SETS = ("S0", "S1", "S2", "S3", "S4", "count")
REDO_LOG_SETS = ("L1", "L2", "L3", "L4")  # drawn after everything else, so the rest stays as before


def draw_score(rng: random.Random) -> int:
    """Skewed, with many ties: log-normal (median about 665), rounded down to a multiple of 10."""
    return int(rng.lognormvariate(6.5, 1.0)) // 10 * 10


def make_data(records: int, ops: int, seed: int) -> Data:
    rng = random.Random(seed)
    rows = [(draw_score(rng), DATA_START + rng.randrange(SPAN_DAYS * DAY)) for _ in range(records)]
    day_start = NOW - NOW % DAY
    today = [pk for pk, (_, ts) in enumerate(rows) if ts >= day_start]
    sequence = 0

    def submissions(count: int) -> list[Submission]:
        nonlocal sequence
        out = []
        for _ in range(count):
            ts = NOW + sequence % (DAY_END - NOW)
            sequence += 1
            out.append(Submission(rng.randrange(records), draw_score(rng), ts))
        return out

    data = Data(
        records=rows,
        submissions={name: submissions(COUNT_OPS if name == "count" else ops) for name in SUBMISSION_SETS},
        rank_day_pks=rng.choices(today, k=ops),
        rank_all_pks=[rng.randrange(records) for _ in range(ops)],
        around_pks=[rng.randrange(records) for _ in range(ops)],
        today=len(today),
    )
    data.submissions.update((name, submissions(ops)) for name in REDO_LOG_SETS)
    return data


def bench_windows() -> list[tuple[int, int, int]]:
    """UTC calendar windows over the data and the current day: days, ISO weeks, months."""
    first = dt.datetime.fromtimestamp(DATA_START, dt.UTC).date()
    days = (dt.datetime.fromtimestamp(NOW, dt.UTC).date() - first).days + 2  # through tomorrow
    return [
        *calendar_windows(DAILY, "daily", "UTC", first, days),
        *calendar_windows(WEEKLY, "iso-weekly", "UTC", first, days // 7 + 2),
        *calendar_windows(MONTHLY, "monthly", "UTC", first, 2),
    ]


def bench_directory() -> Directory:
    """The same windows as a directory, to find which windows (Redis sets) hold a timestamp."""
    windows = [Window(ALL_TIME, -(1 << 63), (1 << 63) - 1, 0)]
    windows += [Window(t, s, e, i) for i, (t, s, e) in enumerate(bench_windows(), start=1)]
    return Directory(0, True, len(windows), windows)


# -- measurement helpers --------------------------------------------------------------------


@dataclasses.dataclass
class Measured:
    """One workload on one system: ``label`` says what ran, ``sample`` the timings."""

    label: str
    sample: Sample
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        out = self.sample.to_json(durable=False)
        del out["durable"]  # the label says it
        return {"label": self.label, **out, **({"note": self.note} if self.note else {})}


def time_concurrent(calls: Sequence[Callable[[T], object]], items: Sequence[T]) -> tuple[Sample, list[object]]:
    """Split ``items`` round-robin over ``len(calls)`` threads; thread i calls ``calls[i]``.

    Latencies are per call; throughput is every item over the wall time from the moment all
    threads are released together to the end of the last one.
    """
    threads = len(calls)
    parts = [items[i::threads] for i in range(threads)]
    latencies: list[list[int]] = [[] for _ in range(threads)]
    results: list[list[object]] = [[] for _ in range(threads)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(threads + 1)
    clock = time.perf_counter_ns

    def worker(i: int) -> None:
        call, lat, res = calls[i], latencies[i], results[i]
        barrier.wait()
        try:
            for item in parts[i]:
                t0 = clock()
                res.append(call(item))
                lat.append(clock() - t0)
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=worker, args=(i,), name=f"bench-{i}") for i in range(threads)]
    for thread in workers:
        thread.start()
    barrier.wait()
    start = clock()
    for thread in workers:
        thread.join()
    seconds = (clock() - start) / 1e9
    if errors:
        raise errors[0]
    return Sample(len(items), seconds, [x for lat in latencies for x in lat]), [x for r in results for x in r]


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


class BatchClock:
    """Per-batch latencies from progress callbacks (or explicit ticks) during a timed loop."""

    def __init__(self, what: str, total: int) -> None:
        self.what = what
        self.total = total
        self.latencies: list[int] = []
        self.start = self.last = time.perf_counter_ns()
        self.logged = self.start
        self.finished = False

    def tick(self, done: int) -> None:
        now = time.perf_counter_ns()
        self.latencies.append(now - self.last)
        self.last = now
        if now - self.logged > 15e9 or (done >= self.total and not self.finished):
            self.logged = now
            self.finished = done >= self.total
            seconds = (now - self.start) / 1e9
            log(f"    {self.what}: {done:>10,} / {self.total:,} records, {seconds:6.1f} s, {done / seconds:8,.0f}/s")

    def sample(self, done: int) -> Sample:
        return Sample(done, (time.perf_counter_ns() - self.start) / 1e9, self.latencies)


class RedoLogMeter:
    """What redo-log commits cost on disk: log bytes, checkpoints, growth of the data file."""

    def __init__(self, db: LmdbDatabase) -> None:
        self.commits = db.commits
        self.checkpoints = db.redo_log.checkpoints
        self.logged = db.redo_log.logged_bytes
        self.append_seconds = db.redo_log.append_seconds
        self.sync_seconds = db.redo_log.checkpoint_sync_seconds
        self.file = db.disk_usage()

    def note(self, db: LmdbDatabase, submissions: int) -> str:
        log_ = db.redo_log
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


def expect(what: str, got: int, wanted: int) -> None:
    if got != wanted:
        raise SystemExit(f"benchmark bug: {what}: {got} succeeded, expected {wanted}")


@contextlib.contextmanager
def profiled(enabled: bool, what: str) -> Iterator[None]:
    """With ``--profile``: cProfile the block and print its top 15 functions by tottime."""
    if not enabled:
        yield
        return
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        yield
    finally:
        profiler.disable()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(15)
        log(f"\n--- cProfile: {what} (top 15 by tottime; timings of this phase are inflated) ---")
        log(out.getvalue())


# -- counting store operations ----------------------------------------------------------------


class RolledBack(Exception):
    """Ends a counting transaction so that nothing it wrote is kept."""


class CountingDatabase(Database):
    """Runs every transaction of ``inner`` through a CountingTransaction adding to ``counts``.

    With ``rollback`` every ``run`` aborts its transaction after ``fn`` returns (and returns
    what ``fn`` returned), so writes can be counted without changing the data.
    """

    def __init__(self, inner: Database, rollback: bool) -> None:
        self.inner = inner
        self.url = inner.url
        self.rollback = rollback
        self.counts: Counter[str] = Counter()
        self.transactions = 0

    def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        def body(tr: Any) -> T:
            self.transactions += 1
            result = fn(CountingTransaction(tr, self.counts), *args, **kwargs)
            if self.rollback:
                raise RolledBack(result)
            return result

        try:
            return self.inner.run(body)
        except RolledBack as rolled_back:
            return rolled_back.args[0]

    def read(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        self.transactions += 1
        return self.inner.read(lambda tr: fn(CountingTransaction(tr, self.counts), *args, **kwargs))

    def close(self) -> None:
        pass


def per_op_counts(counts: Counter[str], ops: int) -> dict[str, float]:
    """Average store operations per operation, with the totals the report shows."""
    per_op = {key: value / ops for key, value in sorted(counts.items())}
    per_op["gets"] = per_op.get("get", 0) + per_op.get("get_many_keys", 0)
    per_op["ranges"] = per_op.get("get_range", 0) + per_op.get("get_ranges_ranges", 0)
    per_op["rows"] = per_op.get("forward_rows", 0) + per_op.get("reverse_rows", 0)
    per_op["atomic"] = sum(per_op.get(k, 0) for k in ("add", "max", "min"))
    per_op["total"] = (
        per_op["gets"]
        + per_op["ranges"]
        + per_op["atomic"]
        + sum(per_op.get(k, 0) for k in ("set", "clear", "clear_range"))
    )
    return per_op


def modelled_us(per_op: dict[str, float], cost: dict[str, float]) -> float:
    """The store-bound cost of one operation: ``bench_rankedset``'s model, plus MAX (costed as
    an atomic add) and range clears (costed as a one-key range read)."""
    return (
        rsb.Bench.model_us(per_op, cost)
        + (per_op.get("max", 0) + per_op.get("min", 0)) * cost["add"]
        + per_op.get("clear_range", 0) * cost["range1"]
    )


def measure_raw_store(db: LmdbDatabase, seed: int) -> dict[str, dict[str, Sample]]:
    """``bench_rankedset``'s raw store rounds on scratch keys in ``db``'s environment.

    The keys are level-0 keys of that benchmark's own ranked-set prefix (outside any index),
    written here, measured, then removed.
    """
    args = argparse.Namespace(seed=seed, levels=6, hash="MURMUR3", raw_batch=RAW_BATCH)
    helper = rsb.Bench(args, db.path)
    helper.db = db
    rng = random.Random(seed + 1)
    keys = [rsb.level0_key(e) for e in rsb.make_elements(rng, RAW_KEYS, set())]
    direct = rsb.DirectLmdb(helper.env())
    for part in rsb.chunks(keys, RAW_BATCH):
        direct.put(part)
    helper.raw_keys = rng.sample(keys, len(keys))
    helper.raw_single_keys = rng.sample(keys, 3000)
    try:
        for i in range(RAW_ROUNDS):
            log(f"    raw store round {i + 1}/{RAW_ROUNDS}")
            helper.raw_round()
        api, lmdb_direct, single = helper.raw_costs()
    finally:
        db.run(lambda tr: tr.clear_range(rsb.SET_PREFIX, strinc(rsb.SET_PREFIX)))
    return {"api": api, "py_lmdb": lmdb_direct, "single": single}


# -- the gRPC server in its own process --------------------------------------------------------


def _serve(store_url: str, conn: Connection) -> None:
    """Child process: run the product's Server until told to stop."""
    from fdb_leaderboard.service import Server

    server = Server(store_url, "127.0.0.1:0").start()
    conn.send(server.address)
    conn.recv()
    server.stop(grace=5)
    conn.send("stopped")


class ServerProcess:
    """``Server`` over ``store_url`` in a spawned process; ``address`` once started."""

    def __init__(self, store_url: str) -> None:
        self.store_url = store_url
        self.address = ""

    def __enter__(self) -> ServerProcess:
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(self.store_url, child), name="bench-server", daemon=True)
        self.process.start()
        if not self.conn.poll(60):
            self.process.terminate()
            raise SystemExit("the gRPC server did not start within 60 s")
        self.address = self.conn.recv()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.conn.send("stop")
            self.conn.poll(30)
        finally:
            self.process.join(30)
            if self.process.is_alive():
                self.process.terminate()
                self.process.join(10)


# -- Redis --------------------------------------------------------------------------------------


def redis_missing(binary: str) -> str | None:
    """Why Redis cannot run here, or None."""
    if redis is None:
        return "the redis package is not installed (pip install 'fdb-leaderboard[bench]')"
    if shutil.which(binary) is None:
        return f"{binary} not found (on Debian: apt-get install redis-server)"
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer:
    """A ``redis-server`` of ours on a free local port with a temporary directory."""

    def __init__(self, binary: str, persistence: Sequence[str]) -> None:
        self.binary = binary
        self.persistence = list(persistence)

    def __enter__(self) -> RedisServer:
        self.dir = tempfile.mkdtemp(prefix="bench-redis-")
        self.port = free_port()
        command = [
            self.binary,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", self.dir,
            "--daemonize", "no",
            "--logfile", os.path.join(self.dir, "redis.log"),
            *self.persistence,
        ]  # fmt: skip
        shown = [{str(self.port): "PORT", self.dir: "TMPDIR"}.get(part, part) for part in command]
        self.command = shlex.join(shown).replace(self.dir, "TMPDIR")  # for the report: no per-run values
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while True:
            try:
                self.client().ping()
                break
            except redis.ConnectionError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.__exit__()
                    raise SystemExit(f"redis-server did not start: {shlex.join(command)}") from None
                time.sleep(0.05)
        return self

    def client(self) -> Any:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=60)

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class RedisBench:
    """The same work on Redis sorted sets, one per window."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.args = run.args
        self.data = run.data
        self.directory = run.directory
        self.sum = run.aggregation == "SUM"
        self._keys: dict[int, list[str]] = {}

    def keys(self, ts: int) -> list[str]:
        """The sets of the windows holding ``ts`` (cached per day: windows are whole days)."""
        day = ts - ts % DAY
        keys = self._keys.get(day)
        if keys is None:
            keys = self._keys[day] = [f"lb:{w.type}:{w.start}" for w in self.directory.containing(ts)]
            assert len(keys) == WINDOWS_PER_SCORE, keys
        return keys

    def key(self, window_type: int, ts: int) -> str:
        """The set a read of ``window_type`` at ``ts`` uses (the same window our index picks)."""
        window = self.directory.oldest(window_type, ts)
        assert window is not None
        return f"lb:{window.type}:{window.start}"

    def queue(self, pipe: Any, keys: Sequence[str], member: str, score: int) -> None:
        for key in keys:
            if self.sum:
                pipe.zincrby(key, score, member)
            else:
                pipe.zadd(key, {member: score}, gt=True)

    def submit(self, client: Any, s: Submission) -> None:
        pipe = client.pipeline(transaction=False)
        self.queue(pipe, self.keys(s.ts), str(s.pk), s.score)
        pipe.execute()

    def apply(self, client: Any, submissions: Sequence[Submission], batch: int = 500) -> None:
        """Untimed: the submissions another phase made on our side, to keep the data equal."""
        for i in range(0, len(submissions), batch):
            pipe = client.pipeline(transaction=False)
            for s in submissions[i : i + batch]:
                self.queue(pipe, self.keys(s.ts), str(s.pk), s.score)
            pipe.execute()

    def load(self, client: Any, what: str) -> Sample:
        records, batch = self.data.records, self.args.load_batch
        clock = BatchClock(what, len(records))
        for i in range(0, len(records), batch):
            pipe = client.pipeline(transaction=False)
            for pk in range(i, min(i + batch, len(records))):
                score, ts = records[pk]
                self.queue(pipe, self.keys(ts), str(pk), score)
            pipe.execute()
            clock.tick(min(i + batch, len(records)))
        return clock.sample(len(records))

    def submissions(self, server: RedisServer, label: str, one: str, many: str) -> None:
        results = self.run.results
        client = server.client()
        sample, _ = time_each(lambda s: self.submit(client, s), self.data.submissions[one])
        results["submit_1"][label] = Measured(SYSTEM_LABELS[label], sample)
        clients = [server.client() for _ in range(self.args.threads)]
        calls = [lambda s, c=c: self.submit(c, s) for c in clients]
        sample, _ = time_concurrent(calls, self.data.submissions[many])
        results["submit_n"][label] = Measured(SYSTEM_LABELS[label], sample)
        for c in [client, *clients]:
            c.close()

    def measure(self) -> None:
        binary = self.args.redis_server
        results, data = self.run.results, self.data
        log("  Redis (no persistence): load, reads, submissions, fill")
        with RedisServer(binary, ["--save", "", "--appendonly", "no"]) as server:
            client = server.client()
            self.run.environment["redis_server"] = client.info("server")["redis_version"]
            self.run.environment["redis_command"] = server.command
            before = client.info("memory")["used_memory"]
            results["load"]["redis"] = Measured(SYSTEM_LABELS["redis"] + ", pipelined", self.load(client, "load"))
            used = client.info("memory")["used_memory"] - before
            self.run.storage["redis"] = {
                "used_memory_bytes": used,
                "bytes_per_record_window": used / (len(data.records) * WINDOWS_PER_SCORE),
            }
            self.apply(client, data.submissions["S0"])
            day_key, week_key, all_key = self.key(DAILY, NOW), self.key(WEEKLY, NOW), self.key(ALL_TIME, NOW)

            def around(pk: int) -> list[Any]:
                # Near either end the window shifts to keep 11 rows, as ours does: the set's size
                # comes with the rank in the same round trip.
                pipe = client.pipeline(transaction=False)
                pipe.zrevrank(all_key, str(pk))
                pipe.zcard(all_key)
                rank, size = pipe.execute()
                start = max(0, min(rank - AROUND, size - 2 * AROUND - 1))
                return client.zrevrange(all_key, start, start + 2 * AROUND, withscores=True)

            reads: list[tuple[str, Callable[[int], Any], Sequence[int], Callable[[Any], bool]]] = [
                ("rank_day", lambda pk: client.zrevrank(day_key, str(pk)), data.rank_day_pks, _present),
                ("rank_all", lambda pk: client.zrevrank(all_key, str(pk)), data.rank_all_pks, _present),
                (
                    "top_week",
                    lambda _: client.zrevrange(week_key, 0, TOP_N - 1, withscores=True),
                    range(self.args.ops),
                    lambda r: len(r) == TOP_N,
                ),
                ("around", around, data.around_pks, lambda r: len(r) == 2 * AROUND + 1),
            ]
            for name, call, items, ok in reads:
                sample, out = time_each(call, items)
                expect(f"Redis {name}", sum(map(ok, out)), len(items))
                results[name]["redis"] = Measured(SYSTEM_LABELS["redis"], sample)
            self.submissions(server, "redis", "S1", "S2")
            self.run.check_against_redis(
                client.zcard(all_key),
                client.zcard(day_key),
                [int(score) for _, score in client.zrevrange(week_key, 0, TOP_N - 1, withscores=True)],
            )
            results["fill"]["redis"] = Measured(
                SYSTEM_LABELS["redis"] + ", replay of the records",
                self.fill(client),
                "Redis keeps no entries: the records are replayed from the client's copy",
            )
            client.close()
        log("  Redis (AOF, appendfsync always): load, submissions")
        with RedisServer(binary, ["--save", "", "--appendonly", "yes", "--appendfsync", "always"]) as server:
            client = server.client()
            self.run.environment["redis_aof_command"] = server.command
            results["load"]["redis_aof"] = Measured(
                SYSTEM_LABELS["redis_aof"] + ", pipelined", self.load(client, "load (AOF)")
            )
            self.apply(client, data.submissions["S0"])
            self.submissions(server, "redis_aof", "S3", "S4")
            client.close()

    def fill(self, client: Any) -> Sample:
        key = f"lb:{FILL_TYPE_INPROC}:{FILL_START}"
        rows = [(pk, score) for pk, (score, ts) in enumerate(self.data.records) if FILL_START <= ts < FILL_END]
        clock = BatchClock("fill (Redis)", len(rows))
        for i in range(0, len(rows), FILL_BATCH):
            pipe = client.pipeline(transaction=False)
            for pk, score in rows[i : i + FILL_BATCH]:
                self.queue(pipe, [key], str(pk), score)
            pipe.execute()
            clock.tick(min(i + FILL_BATCH, len(rows)))
        return clock.sample(len(rows))


def _present(rank: object) -> bool:
    return rank is not None


# -- one aggregation ---------------------------------------------------------------------------

WORKLOADS: list[tuple[str, str]] = [
    ("submit_1", "1. submit a score, 1 caller"),
    ("submit_n", "1. submit a score, {threads} concurrent callers"),
    ("rank_day", "2. rank in the current daily window"),
    ("rank_all", "2. rank in the all-time window"),
    ("top_week", "3. top 10 of the current weekly window"),
    ("around", "4. around me (5 above, 5 below), all-time"),
    ("load", "5. bulk load, records/s (latency per batch of {load_batch})"),
    ("fill", "6. fill a new 31-day window, records/s (latency per batch of 200)"),
]
SYSTEM_ORDER = ("ours_nondurable", "ours", "ours_log", "ours_grpc", "ours_grpc_log", "redis", "redis_aof")
SYSTEM_LABELS = {
    "ours_nondurable": "ours in-process, durable=false",
    "ours": "ours in-process, durable",
    "ours_log": "ours in-process, durable by redo log",
    "ours_grpc": "ours via gRPC, durable",
    "ours_grpc_log": "ours via gRPC, durable by redo log",
    "redis": "Redis, no persistence",
    "redis_aof": "Redis, AOF fsync always",
}


class Run:
    """The whole benchmark for one aggregation, on a fresh store (and fresh Redis servers)."""

    def __init__(self, args: argparse.Namespace, aggregation: str, data: Data, path: str) -> None:
        self.args = args
        self.aggregation = aggregation
        self.data = data
        self.path = path
        self.url = f"lmdb:{path}?durable=true"
        self.windows = bench_windows()
        self.directory = bench_directory()
        self.settings = IndexSettings(aggregation=aggregation, high_score_first=True)
        self.results: dict[str, dict[str, Measured]] = {name: {} for name, _ in WORKLOADS}
        self.storage: dict[str, dict[str, Any]] = {}
        self.counts: dict[str, dict[str, float]] = {}
        self.raw: dict[str, dict[str, Sample]] = {}
        self.notes: list[str] = []
        self.environment: dict[str, Any] = {}
        self.checks: dict[str, Any] = {}
        self._ours_snapshot: dict[str, Any] = {}

    # -- helpers

    def update(self, extra: Sequence[tuple[int, int, int]] = ()) -> WindowUpdate:
        return WindowUpdate(high_score_first=True, windows=[*self.windows, *extra])

    def records(self) -> Iterator[tuple[tuple[int], list[Entry]]]:
        for pk, (score, ts) in enumerate(self.data.records):
            yield (pk,), [Entry(score, ts)]

    def count(self, name: str, index: LeaderboardIndex, fn: Callable[[LeaderboardIndex], int], rollback: bool) -> None:
        """Run ``fn`` on ``index`` through a counting database; ``fn`` returns how many operations it made."""
        counting = CountingDatabase(index.db, rollback)
        ops = fn(LeaderboardIndex(counting, index.prefix, index.settings))
        self.counts[name] = {**per_op_counts(counting.counts, ops), "transactions_per_op": counting.transactions / ops}

    # -- our side

    def ours(self) -> None:
        args, data = self.args, self.data
        n = len(data.records)
        log(f"  load: {n:,} records, index.bulk_load in transactions of {args.load_batch} (durable=false)")
        db = LmdbDatabase(self.path, durable=False)
        try:
            index, _ = Catalog(db).create(INDEX_NAME, self.settings)
            index.update_windows(self.update())
            clock = BatchClock("load", n)
            with profiled(args.profile, "in-process bulk load"):
                written = index.bulk_load(self.records(), args.load_batch, clock.tick)
            expect("load", written, n)
            self.results["load"]["ours"] = Measured("ours in-process, durable=false", clock.sample(n))
            stat = db._env.stat()
            disk = db.disk_usage()
            tree = db.tree_bytes()
            self.storage["ours"] = {
                "disk_bytes": disk,
                "tree_bytes": tree,
                "bytes_per_record_window": tree / (n * WINDOWS_PER_SCORE),
                "file_bytes_per_record_window": disk / (n * WINDOWS_PER_SCORE),
                "store_keys": stat["entries"],
                "btree_depth": stat["depth"],
            }
            log("  counting store operations of a load (a scratch index, then cleared)")
            scratch, _ = Catalog(db).create(INDEX_NAME + "-count", self.settings)
            scratch.update_windows(self.update())
            sample = [((i,), [Entry(score, ts)]) for i, (score, ts) in enumerate(data.records[: args.load_batch])]
            self.count("load (per record)", scratch, lambda ix: ix.bulk_load(sample, args.load_batch), rollback=False)
            db.run(lambda tr: tr.clear_range(scratch.prefix, strinc(scratch.prefix)))
            log(f"  submissions, 1 caller, durable=false ({args.ops:,})")
            with profiled(args.profile, "in-process submissions, durable=false"):
                sample = time_submissions(index, data.submissions["S0"])
            self.results["submit_1"]["ours_nondurable"] = Measured(SYSTEM_LABELS["ours_nondurable"], sample)
            log("  raw store (bench_rankedset's rounds, durable=false)")
            self.raw = measure_raw_store(db, args.seed)
        finally:
            db.close()
        self.ours_durable()
        if args.grpc:
            with ServerProcess(self.url) as server:
                self.ours_grpc_reads_and_submissions(server.address)
                self.ours_fill()
                self.ours_grpc_fill_and_load(server.address)
            with ServerProcess(self.url + "&redo_log=true") as server:
                self.ours_grpc_redo_log(server.address)
        else:
            self.ours_fill()

    def ours_durable(self) -> None:
        args, data = self.args, self.data
        db = LmdbDatabase(self.path, durable=True)
        try:
            db._env.sync(True)  # flush what the durable=false phase left, outside any timing
            index = Catalog(db).get(INDEX_NAME)
            log("  counting store operations of reads and submissions")
            self.count("submit", index, lambda ix: _submit_all(ix, data.submissions["count"]), rollback=True)
            reads = self.reads(index)
            for name, call, items, _ in reads:
                self.count(name, index, lambda ix, c=call, i=items: _call_all(ix, c, i[:COUNT_OPS]), rollback=False)
            log(f"  reads in-process ({args.ops:,} each)")
            for name, call, items, ok in reads:
                sample, out = time_each(lambda item, c=call: c(index, item), items)
                expect(f"in-process {name}", sum(map(ok, out)), len(items))
                self.results[name]["ours"] = Measured(SYSTEM_LABELS["ours"], sample)
            log(f"  submissions in-process, durable: 1 caller, then {args.threads} threads")
            commits, written = db.commits, bytes_written()
            with profiled(args.profile, "in-process submissions, durable"):
                sample = time_submissions(index, data.submissions["S1"])
            self.results["submit_1"]["ours"] = Measured(
                SYSTEM_LABELS["ours"], sample, written_note(written, db.commits - commits, len(data.submissions["S1"]))
            )
            commits, written = db.commits, bytes_written()
            sample = time_submissions(index, data.submissions["S2"], args.threads)
            count = len(data.submissions["S2"])
            per_commit = count / max(1, db.commits - commits)
            self.results["submit_n"]["ours"] = Measured(
                SYSTEM_LABELS["ours"],
                sample,
                f"{per_commit:.2f} submissions per durable commit (group commit); "
                + written_note(written, db.commits - commits, count),
            )
            self._ours_snapshot = {
                "all_time_count": index.count(),
                "day_count": index.count(DAILY, NOW),
                "week_top_scores": [e.score for e in index.top(TOP_N, WEEKLY, NOW)],
            }
        finally:
            db.close()
        self.ours_redo_log()

    def ours_redo_log(self) -> None:
        """The durable submissions again, on the store opened with the redo log (fresh scores)."""
        args, data = self.args, self.data
        db = LmdbDatabase(self.path, redo_log=True)
        try:
            index = Catalog(db).get(INDEX_NAME)
            log(f"  submissions in-process, durable by redo log: 1 caller, then {args.threads} threads")
            for workload, name, threads in (("submit_1", "L1", 1), ("submit_n", "L2", args.threads)):
                before = RedoLogMeter(db)
                sample = time_submissions(index, data.submissions[name], threads)
                note = before.note(db, len(data.submissions[name]))
                self.results[workload]["ours_log"] = Measured(SYSTEM_LABELS["ours_log"], sample, note)
        finally:
            db.close()

    def reads(
        self, index: LeaderboardIndex
    ) -> list[tuple[str, Callable[[LeaderboardIndex, Any], Any], Sequence[Any], Callable[[Any], bool]]]:
        data = self.data
        return [
            ("rank_day", lambda ix, pk: ix.rank((pk,), DAILY, NOW), data.rank_day_pks, _present),
            ("rank_all", lambda ix, pk: ix.rank((pk,)), data.rank_all_pks, _present),
            ("top_week", lambda ix, _: ix.top(TOP_N, WEEKLY, NOW), range(self.args.ops), lambda r: len(r) == TOP_N),
            (
                "around",
                lambda ix, pk: ix.around((pk,), AROUND, AROUND),
                data.around_pks,
                lambda r: len(r) == 2 * AROUND + 1,
            ),
        ]

    def ours_grpc_reads_and_submissions(self, address: str) -> None:
        from fdb_leaderboard.client import LeaderboardClient

        args, data = self.args, self.data
        log(f"  gRPC server at {address}: reads ({args.ops:,} each)")
        with LeaderboardClient(address) as lb:
            reads: list[tuple[str, Callable[[Any], Any], Sequence[Any], Callable[[Any], bool]]] = [
                ("rank_day", lambda pk: lb.rank(INDEX_NAME, (pk,), DAILY, NOW), data.rank_day_pks, _present),
                ("rank_all", lambda pk: lb.rank(INDEX_NAME, (pk,)), data.rank_all_pks, _present),
                (
                    "top_week",
                    lambda _: lb.top(INDEX_NAME, TOP_N, WEEKLY, NOW),
                    range(args.ops),
                    lambda r: len(r) == TOP_N,
                ),
                (
                    "around",
                    lambda pk: lb.around(INDEX_NAME, (pk,), AROUND, AROUND),
                    data.around_pks,
                    lambda r: len(r) == 2 * AROUND + 1,
                ),
            ]
            for name, call, items, ok in reads:
                sample, out = time_each(call, items)
                expect(f"gRPC {name}", sum(map(ok, out)), len(items))
                self.results[name]["ours_grpc"] = Measured(SYSTEM_LABELS["ours_grpc"], sample)
        self.grpc_submissions(address, "ours_grpc", "S3", "S4")

    def ours_grpc_redo_log(self, address: str) -> None:
        """Submissions and a load through the server on the redo-log URL."""
        from fdb_leaderboard.client import LeaderboardClient

        self.grpc_submissions(address, "ours_grpc_log", "L3", "L4")
        with LeaderboardClient(address, timeout=120) as lb:
            self.grpc_load(lb, "ours_grpc_log", GRPC_LOAD_INDEX + "-log")

    def grpc_submissions(self, address: str, system: str, one: str, many: str) -> None:
        """Submissions through the server at ``address``: 1 client, then ``--threads`` clients."""
        from fdb_leaderboard.client import LeaderboardClient

        args, data = self.args, self.data
        log(f"  gRPC submissions ({SYSTEM_LABELS[system]}): 1 client, then {args.threads} concurrent clients")
        clients = [LeaderboardClient(address) for _ in range(args.threads)]
        try:
            calls = [lambda s, c=c: c.add_score(INDEX_NAME, (s.pk,), s.score, s.ts) for c in clients]
            sample, _ = time_each(calls[0], data.submissions[one])
            self.results["submit_1"][system] = Measured(SYSTEM_LABELS[system], sample)
            sample, _ = time_concurrent(calls, data.submissions[many])
            self.results["submit_n"][system] = Measured(SYSTEM_LABELS[system], sample)
        finally:
            for client in clients:
                client.close()

    def ours_fill(self) -> None:
        db = LmdbDatabase(self.path, durable=True)
        try:
            index = Catalog(db).get(INDEX_NAME)
            result = index.update_windows(self.update([(FILL_TYPE_INPROC, FILL_START, FILL_END)]))
            expect("filling windows after the update", len(result.filling), 1)
            log("  counting store operations of one fill batch (rolled back)")
            self.count("fill (per record)", index, lambda ix: ix.fill_step(FILL_BATCH).records_processed, True)
            total = len(self.data.records)
            log(f"  fill in-process: a new window over {total:,} records, batches of {FILL_BATCH} (durable)")
            clock = BatchClock("fill", total)
            done = 0

            def progress(step: Any) -> None:
                nonlocal done
                done += step.records_processed
                clock.tick(done)

            processed = index.fill(FILL_BATCH, progress=progress)
            expect("fill", processed, total)
            self.results["fill"]["ours"] = Measured(SYSTEM_LABELS["ours"], clock.sample(processed))
            expect("filled window size", index.count(FILL_TYPE_INPROC, NOW), total)
        finally:
            db.close()

    def ours_grpc_fill_and_load(self, address: str) -> None:
        from fdb_leaderboard.client import LeaderboardClient

        data = self.data
        total = len(data.records)
        with LeaderboardClient(address, timeout=120) as lb:
            log(f"  gRPC fill: a new window over {total:,} records, Fill RPCs of one {FILL_BATCH}-record batch")
            lb.update_windows(
                INDEX_NAME, windows=[*self.windows, (FILL_TYPE_GRPC, FILL_START, FILL_END)], high_score_first=True
            )
            clock = BatchClock("fill (gRPC)", total)
            processed = 0
            while True:
                response = lb.fill(INDEX_NAME, max_records=FILL_BATCH, max_batches=1)
                processed += response.records_processed
                clock.tick(processed)
                if response.done:
                    break
            expect("gRPC fill", processed, total)
            self.results["fill"]["ours_grpc"] = Measured(
                SYSTEM_LABELS["ours_grpc"] + ", Fill RPCs", clock.sample(total)
            )
            self.grpc_load(lb, "ours_grpc", GRPC_LOAD_INDEX)

    def grpc_load(self, lb: Any, system: str, name: str) -> None:
        """The N records into a new index ``name`` through client ``lb``: one BulkLoad stream."""
        args, data = self.args, self.data
        total = len(data.records)
        log(f"  gRPC load ({SYSTEM_LABELS[system]}): {total:,} records into a new index, BulkLoad stream")
        lb.create_index(name, aggregation=self.aggregation, high_score_first=True)
        lb.update_windows(name, windows=self.windows, high_score_first=True)
        started = time.perf_counter()
        records = (((pk,), [record]) for pk, record in enumerate(data.records))
        sent = BatchClock(f"load ({system}, records saved)", total)
        written = lb.bulk_load(name, records, args.load_batch, progress=sent.tick)
        expect("gRPC load", written, total)
        # One call: its latency is the whole load, so only the throughput is reported.
        self.results["load"][system] = Measured(
            SYSTEM_LABELS[system] + ", one BulkLoad stream", Sample(total, time.perf_counter() - started)
        )
        expect("gRPC-loaded index size", lb.count(name), total)

    # -- Redis and the comparison

    def check_against_redis(self, all_count: int, day_count: int, week_scores: list[int]) -> None:
        ours = self._ours_snapshot
        theirs = {"all_time_count": all_count, "day_count": day_count, "week_top_scores": week_scores}
        if not ours:
            return
        same = ours == theirs
        self.checks = {"same_as_redis": same, "ours": ours, "redis": theirs}
        if not same:
            self.notes.append(f"SANITY CHECK FAILED: ours {ours} != Redis {theirs}")
            log(f"  WARNING: ours and Redis differ after the same submissions: {ours} vs {theirs}")

    def measure(self) -> None:
        self.ours()
        if self.args.redis_skip_reason is None:
            RedisBench(self).measure()

    # -- figures

    def figures(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "aggregation": self.aggregation,
            "workloads": {
                name: {system: m.to_json() for system, m in self.results[name].items()} for name, _ in WORKLOADS
            },
            "storage": self.storage,
            "store_ops_per_op": {k: {kk: round(vv, 3) for kk, vv in v.items()} for k, v in self.counts.items()},
            "checks": self.checks,
            "notes": self.notes,
            "environment": self.environment,
        }
        if self.raw:
            out["raw_store_api"] = {k: s.to_json(durable=False) for k, s in self.raw["api"].items()}
            out["raw_py_lmdb"] = {k: s.to_json(durable=False) for k, s in self.raw["py_lmdb"].items()}
            out["raw_one_op_per_txn"] = {k: s.to_json(durable=False) for k, s in self.raw["single"].items()}
            out["store_cost_model"] = self.cost_model()
        return out

    def cost_model(self) -> dict[str, dict[str, float]]:
        cost = {kind: s.us_per_op for kind, s in self.raw["api"].items()}
        measured = {
            "submit": ("submit_1", "ours_nondurable"),
            "rank_day": ("rank_day", "ours"),
            "rank_all": ("rank_all", "ours"),
            "top_week": ("top_week", "ours"),
            "around": ("around", "ours"),
            "load (per record)": ("load", "ours"),
            "fill (per record)": ("fill", "ours"),
        }
        model = {}
        for op, per_op in self.counts.items():
            store_us = modelled_us(per_op, cost)
            workload, system = measured[op]
            m = self.results[workload].get(system)
            row = {"store_ops": per_op["total"], "modelled_store_us": store_us}
            if m is not None:
                row["measured_us"] = m.sample.us_per_op
                row["measured_over_store"] = m.sample.us_per_op / store_us
            model[op] = row
        return model


def time_submissions(index: LeaderboardIndex, submissions: Sequence[Submission], threads: int = 1) -> Sample:
    """In-process ``add_score`` of each submission, by one caller or ``threads`` concurrent ones."""
    calls = [lambda s: index.add_score((s.pk,), s.score, s.ts)] * threads
    return time_each(calls[0], submissions)[0] if threads == 1 else time_concurrent(calls, submissions)[0]


def _submit_all(index: LeaderboardIndex, submissions: Sequence[Submission]) -> int:
    for s in submissions:
        index.add_score((s.pk,), s.score, s.ts)
    return len(submissions)


def _call_all(index: LeaderboardIndex, call: Callable[[LeaderboardIndex, Any], Any], items: Sequence[Any]) -> int:
    for item in items:
        call(index, item)
    return len(items)


# -- reporting -------------------------------------------------------------------------------------


def fmt_ms(us: float) -> str:
    """Microseconds as milliseconds, with precision where it matters."""
    ms = us / 1000
    if ms != ms:  # NaN
        return "-"
    if ms < 1:
        return f"{ms:.3f}"
    if ms < 100:
        return f"{ms:.2f}"
    return f"{ms:,.0f}"


def fmt_ratio(ours: float, theirs: float | None) -> str:
    return f"{ours / theirs:.2f}x" if theirs else ""


def main_table(fig: dict[str, Any], cfg: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """One heading row per workload, then one row per system.

    "vs Redis" is our throughput over Redis's without persistence; "vs Redis AOF" (durable
    rows of ours only) over Redis's with every write fsynced.
    """
    headers = ["workload / system", "ops/s", "p50 ms", "p99 ms", "vs Redis", "vs Redis AOF"]
    rows: list[list[str]] = []
    for name, title in WORKLOADS:
        measured = fig["workloads"][name]
        if not measured:
            continue
        redis_rate = measured.get("redis", {}).get("ops_per_s")
        aof_rate = measured.get("redis_aof", {}).get("ops_per_s")
        rows.append([title.format(**cfg), "", "", "", "", ""])
        for system in SYSTEM_ORDER:
            m = measured.get(system)
            if m is None:
                continue
            ours = system.startswith("ours")
            durable = ours and "durable=false" not in m["label"]
            rows.append(
                [
                    f"    {m['label']}",
                    fmt_rate(m["ops_per_s"]),
                    fmt_ms(m.get("p50_us", float("nan"))),
                    fmt_ms(m.get("p99_us", float("nan"))),
                    fmt_ratio(m["ops_per_s"], redis_rate) if ours else "",
                    fmt_ratio(m["ops_per_s"], aof_rate) if durable else "",
                ]
            )
    while len(headers) > 4 and not any(row[len(headers) - 1] for row in rows):  # no Redis: no ratios
        headers.pop()
        for row in rows:
            row.pop()
    return headers, rows


def storage_table(fig: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    headers = ["storage after the load", "bytes", "bytes per record per window", "ours/Redis"]
    ours, theirs = fig["storage"].get("ours"), fig["storage"].get("redis")
    rows = []
    if ours:
        rows.append(
            [
                f"ours: LMDB live B-tree pages ({ours['store_keys']:,} keys, depth {ours['btree_depth']})",
                f"{ours['tree_bytes']:,}",
                f"{ours['bytes_per_record_window']:.1f}",
                f"{ours['bytes_per_record_window'] / theirs['bytes_per_record_window']:.2f}x" if theirs else "",
            ]
        )
        rows.append(
            [
                "ours: LMDB data file (with free pages kept for reuse)",
                f"{ours['disk_bytes']:,}",
                f"{ours['file_bytes_per_record_window']:.1f}",
                "",
            ]
        )
    if theirs:
        rows.append(
            [
                "Redis: used_memory growth",
                f"{theirs['used_memory_bytes']:,}",
                f"{theirs['bytes_per_record_window']:.1f}",
                "",
            ]
        )
    return headers, rows


def cost_table(fig: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    headers = [
        "operation",
        "gets",
        "ranges",
        "rows read",
        "sets",
        "clears",
        "atomic",
        "store ops",
        "store us",
        "measured us",
        "measured/store",
    ]
    model = fig.get("store_cost_model", {})
    rows = []
    for op, c in fig["store_ops_per_op"].items():
        m = model.get(op, {})
        rows.append(
            [
                op,
                f"{c['gets']:.1f}",
                f"{c['ranges']:.1f}",
                f"{c['rows']:.1f}",
                f"{c.get('set', 0):.1f}",
                f"{c.get('clear', 0) + c.get('clear_range', 0):.1f}",
                f"{c['atomic']:.1f}",
                f"{c['total']:.1f}",
                f"{m['modelled_store_us']:.1f}" if m else "-",
                f"{m['measured_us']:.1f}" if "measured_us" in m else "-",
                f"{m['measured_over_store']:.1f}x" if "measured_over_store" in m else "-",
            ]
        )
    return headers, rows


RAW_LABELS = {
    "get": "get",
    "put": "put (overwrite)",
    "clear": "clear",
    "add": "atomic add",
    "range1": "range read, 1 key",
    "range16": "range read, 16 keys",
    "rev_range1": "reverse range read, 1 key",
}


def raw_table(fig: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    headers = ["raw store op (durable=false, 1000/txn)", "store API ops/s", "us/op", "py-lmdb ops/s", "us/op"]
    rows = []
    for kind, label in RAW_LABELS.items():
        api, direct = fig["raw_store_api"][kind], fig["raw_py_lmdb"].get(kind)
        rows.append(
            [
                label,
                fmt_rate(api["ops_per_s"]),
                f"{api['us_per_op']:.2f}",
                fmt_rate(direct["ops_per_s"]) if direct else "-",
                f"{direct['us_per_op']:.2f}" if direct else "-",
            ]
        )
    for name, label in (
        ("api_read_1_get", "transaction: db.read, 1 get"),
        ("api_run_1_put", "transaction: db.run, 1 set"),
    ):
        s = fig["raw_one_op_per_txn"][name]
        rows.append([label, fmt_rate(s["ops_per_s"]), f"{s['us_per_op']:.2f}", "", ""])
    return headers, rows


def markdown(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A pipe table: first column left-aligned (headings in bold), the others right-aligned."""

    def line(cells: Sequence[str]) -> str:
        first = cells[0].strip()
        if first and not any(cells[1:]):
            first = f"**{first}**"
        elif cells[0].startswith(" "):
            first = "&nbsp;&nbsp;" + first
        return "| " + " | ".join([first, *cells[1:]]).replace("\n", " ") + " |"

    align = "| --- | " + " | ".join("---:" for _ in headers[1:]) + " |"
    return "\n".join([line(headers), align, *(line(r) for r in rows)])


def tables(fig: dict[str, Any], cfg: dict[str, Any]) -> list[tuple[str, tuple[list[str], list[list[str]]]]]:
    out = [("Workloads", main_table(fig, cfg)), ("Storage", storage_table(fig))]
    if fig["store_ops_per_op"]:
        caption = "Store operations per operation"
        if "store_cost_model" in fig:
            caption += (
                " (store us: counts x the raw store-API costs below; measured us: the in-process mean, "
                "durable=false for submit and load, durable for the others)"
            )
        out.append((caption, cost_table(fig)))
    if "raw_store_api" in fig:
        out.append(("Raw store, same LMDB environment (median of 3 rounds)", raw_table(fig)))
    return out


def header_lines(figures: dict[str, Any]) -> list[str]:
    cfg, env = figures["config"], figures["environment"]
    return [
        f"fdb-leaderboard benchmark: {cfg['records']:,} records, 1 group, {WINDOWS_PER_SCORE} windows per score "
        f"(all-time, UTC daily, ISO-weekly, monthly), {cfg['ops']:,} ops per workload, "
        f"{cfg['threads']} concurrent callers, seed {cfg['seed']}",
        f"machine: {env['cpu_model']}, {env['cpus']} CPUs, {env['ram_gib']:.1f} GiB RAM; {env['platform']}",
        f"python {env['python']}; " + ", ".join(f"{k} {v}" for k, v in env["packages"].items()),
        f"source: {env['source']}",
    ]


def report(figures: dict[str, Any]) -> Iterator[str]:
    yield from header_lines(figures)
    cfg = figures["config"]
    for skipped in figures["skipped"]:
        yield f"SKIPPED: {skipped}"
    for run in figures["runs"]:
        yield ""
        yield f"=== aggregation {run['aggregation']} ==="
        for caption, (headers, rows) in tables(run, cfg):
            yield ""
            yield caption
            yield table(headers, rows)
        for note in _run_notes(run):
            yield f"  note: {note}"


def _run_notes(run: dict[str, Any]) -> list[str]:
    notes = list(run["notes"])
    for name, _ in WORKLOADS:
        for m in run["workloads"][name].values():
            if m.get("note"):
                notes.append(f"{m['label']} ({name}): {m['note']}")
    if run["checks"]:
        notes.append(
            "sanity check against Redis after the same submissions (all-time and daily counts, weekly top-10 "
            f"scores): {'same' if run['checks']['same_as_redis'] else 'DIFFERENT'}"
        )
    return notes


def write_docs(figures: dict[str, Any], path: Path) -> None:
    cfg, env = figures["config"], figures["environment"]
    lines = [
        "# Benchmarks",
        "",
        "Written by `tools/bench.py --write-docs`; its docstring says exactly what each workload measures.",
        "Ours: the Python API on the embedded LMDB store (in-process) and the gRPC server (`Server` in its own",
        "process, `LeaderboardClient`). Redis: Debian's `redis-server`, one sorted set per window, redis-py with",
        "hiredis. Ratios are our throughput divided by Redis's (higher is better for us). Latencies are per call",
        "(per batch for loads and fills). Redis does less work: it stores neither the entries nor the record",
        "heads, and orders equal scores by member instead of by who reached them first.",
        "",
        "## Run",
        "",
        f"- date: {figures['date']}; source: {env['source']}",
        f"- command: `{figures['command']}`",
        f"- machine: {env['cpu_model']}, {env['cpus']} CPUs, {env['ram_gib']:.1f} GiB RAM, {env['platform']}"
        + (" (shared and noisy: figures vary between runs)" if env["cpus"] <= 2 else ""),
        f"- load average at the end: {', '.join(f'{x:.2f}' for x in env['loadavg_at_end'])}",
        f"- Python {env['python']}, LMDB {env['lmdb']}; " + ", ".join(f"{k} {v}" for k, v in env["packages"].items()),
        f"- data: {cfg['records']:,} records in 1 group, {WINDOWS_PER_SCORE} windows per score (all-time, UTC daily, "
        f"ISO-weekly, monthly); {cfg['ops']:,} operations per workload; {cfg['threads']} concurrent callers; "
        f"load batches of {cfg['load_batch']}; seed {cfg['seed']}",
    ]
    for run in figures["runs"]:
        if run["environment"].get("redis_command"):
            lines.append(f"- Redis ({run['aggregation']}): `{run['environment']['redis_command']}`")
            lines.append(f"- Redis durable ({run['aggregation']}): `{run['environment']['redis_aof_command']}`")
            break
    for skipped in figures["skipped"]:
        lines.append(f"- skipped: {skipped}")
    for run in figures["runs"]:
        lines += ["", f"## Aggregation {run['aggregation']}"]
        for caption, (headers, rows) in tables(run, cfg):
            lines += ["", f"{caption}:", "", markdown(headers, rows)]
        notes = _run_notes(run)
        if notes:
            lines.append("")
            lines += [f"- {note}" for note in notes]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


# -- environment -----------------------------------------------------------------------------------


def source_version() -> str:
    """The checkout's commit, flagged when the library has uncommitted changes."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--", "fdb_leaderboard"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return f"{commit} with uncommitted library changes" if dirty else commit


def environment() -> dict[str, Any]:
    cpu_model = platform.processor() or "unknown CPU"
    ram = 0.0
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                ram = int(line.split()[1]) / 2**20
                break
    packages = {}
    for name in ("fdb-leaderboard", "lmdb", "grpcio", "protobuf", "foundationdb", "redis", "hiredis"):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            packages[name] = importlib.metadata.version(name)
    return {
        "source": source_version(),
        "cpu_model": cpu_model,
        "cpus": os.cpu_count() or 0,
        "ram_gib": ram,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "lmdb": ".".join(map(str, lmdb.version())),
        "packages": packages,
    }


# -- entry point ---------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Benchmark fdb-leaderboard (in-process and via gRPC) against Redis sorted sets.",
        epilog="See the module docstring for exactly what each workload measures.",
    )
    parser.add_argument("--records", type=int, default=1_000_000, help="records loaded (default: %(default)s)")
    parser.add_argument("--ops", type=int, default=3000, help="operations per workload (default: %(default)s)")
    parser.add_argument(
        "--aggregations", default="BEST,SUM", help="comma-separated, each a full run (default: %(default)s)"
    )
    parser.add_argument("--threads", type=int, default=8, help="concurrent callers for submissions (default: 8)")
    parser.add_argument(
        "--load-batch", type=int, default=500, help="records per load transaction / RPC / pipeline (default: 500)"
    )
    parser.add_argument("--no-grpc", dest="grpc", action="store_false", help="skip the end-to-end gRPC runs")
    parser.add_argument("--no-redis", dest="redis", action="store_false", help="skip Redis")
    parser.add_argument("--redis-server", default="redis-server", help="the redis-server binary (default: from PATH)")
    parser.add_argument(
        "--dir", help="store directory (one subdirectory per aggregation; must be empty or absent; default: temporary)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the store directory")
    parser.add_argument("--json", metavar="PATH", help="also write every figure as JSON to PATH")
    parser.add_argument("--write-docs", action="store_true", help="rewrite docs/benchmarks.md with this run")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default: %(default)s)")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="cProfile the in-process load and submissions (prints the top 15 by tottime; inflates those figures)",
    )
    args = parser.parse_args(argv)
    if args.records < 1000:
        parser.error("--records must be at least 1000")
    for name in ("ops", "threads", "load_batch"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    args.aggregation_list = [a.strip().upper() for a in args.aggregations.split(",") if a.strip()]
    for aggregation in args.aggregation_list:
        try:
            IndexSettings(aggregation=aggregation)
        except Exception as exc:
            parser.error(str(exc))
    if args.profile and args.write_docs:
        parser.error("--profile inflates the figures: do not combine it with --write-docs")
    args.redis_skip_reason = redis_missing(args.redis_server) if args.redis else "--no-redis"
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    command = shlex.join(
        [sys.executable, os.path.relpath(Path(sys.argv[0]).resolve(), ROOT), *(sys.argv[1:] if argv is None else argv)]
    )
    skipped = []
    if args.redis_skip_reason:
        skipped.append(f"Redis: {args.redis_skip_reason}")
        if args.redis:
            log(f"skipping Redis: {args.redis_skip_reason}")
    if not args.grpc:
        skipped.append("gRPC: --no-grpc")
    if args.dir:
        base = os.path.abspath(args.dir)
        cleanup = False
    else:
        base = tempfile.mkdtemp(prefix="fdb-leaderboard-bench-")
        cleanup = not args.keep
    env = environment()  # before the runs: the source as it was imported
    log(f"generating {args.records:,} records and the operations (seed {args.seed})")
    data = make_data(args.records, args.ops, args.seed)
    log(f"  {data.today:,} records in the current daily window")
    runs = []
    started = time.perf_counter()
    try:
        for aggregation in args.aggregation_list:
            path = os.path.join(base, aggregation.lower())
            if os.path.isdir(path) and os.listdir(path):
                raise SystemExit(f"{path} is not empty: give an empty or new --dir")
            log(f"aggregation {aggregation}: store {path}")
            run = Run(args, aggregation, data, path)
            run.measure()
            runs.append(run.figures())
    finally:
        if cleanup:
            shutil.rmtree(base, ignore_errors=True)
    env["loadavg_at_end"] = list(os.getloadavg())
    for run in runs:
        if run["environment"].get("redis_server"):
            env["packages"]["redis-server"] = run["environment"]["redis_server"]
    figures = {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": command,
        "seconds": round(time.perf_counter() - started, 1),
        "config": {
            "records": args.records,
            "ops": args.ops,
            "threads": args.threads,
            "load_batch": args.load_batch,
            "aggregations": args.aggregation_list,
            "grpc": args.grpc,
            "redis": args.redis_skip_reason is None,
            "seed": args.seed,
            "dir": base,
            "now": NOW,
        },
        "environment": env,
        "skipped": skipped,
        "runs": runs,
    }
    print("\n".join(report(figures)), flush=True)
    log(f"\ntotal time {figures['seconds']:,.0f} s")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(figures, out, indent=2)
            out.write("\n")
    if args.write_docs:
        target = ROOT / "docs" / "benchmarks.md"
        write_docs(figures, target)
        log(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
