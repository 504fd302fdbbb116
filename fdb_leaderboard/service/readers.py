"""Reads of many rows in processes of their own, so they never hold the server's interpreter.

Python runs one thread of Python code at a time per process.  A Top of 2,000 rows is about
100 ms of Python (decoding keys, building the answer); run on a thread of the server, it holds
the interpreter in turns with the event loop and the workers of point reads and score writes,
so every other call waits behind it, and a few clients looping such reads make everyone slow.
:class:`ReadProcesses` runs them in ``count`` separate processes instead (started with
``spawn``: gRPC must not be forked), each with its own connection to the store, at a lower CPU
priority: by default Linux's idle policy (``SCHED_IDLE``), so a reader runs only on CPU time
nothing else of the machine wants and gives the CPU up at once to a server thread or any other
process that wakes (a nice level still shares the CPU in proportion, and a woken thread may wait
for the reader's time slice to end).  The server's process only passes request bytes in and
answer bytes out.

Only a store that several processes may open at once can be read this way (FoundationDB, and
the embedded store, whose redo log the readers share); the server uses its heavy threads otherwise.

A reader process is told which key prefix and settings the calling server resolved for the
index name, so it reads exactly the index its server would (never a stale one of its own
cache).  Each answer carries the reader's store counters and transaction timings, which the
server adds to its own metrics.

A reader that dies (killed, out of memory) fails the calls it had: they answer UNAVAILABLE
and the next call starts a new pool.
"""

from __future__ import annotations

import concurrent.futures
import logging
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import grpc

from ..index import IndexSettings, LeaderboardIndex
from ..proto import index_pb2
from ..proto import service_pb2 as pb
from ..rpcs import names
from ..store import Database, open_database
from .catalog import Catalog
from .grpc_service import LeaderboardService
from .metrics import MeasuredDatabase, Metrics
from .settings import IDLE, check_priority
from .status import Answer

log = logging.getLogger("fdb_leaderboard.service")

# The reads a reader process serves (an entry's ``elsewhere``; each names its index in ``request.index``):
# the HTTP door asks this set.
READ_METHODS = names(elsewhere=True)
START_TIMEOUT = 60.0


class ReadProcesses:
    """``count`` reader processes of the store at ``store_url`` (started on first use, or by
    :meth:`start`)."""

    def __init__(
        self,
        store_url: str,
        catalog_root: bytes,
        max_page: int,
        count: int = 1,
        priority: str = IDLE,
        on_stats: Callable[[dict[str, int], list[tuple]], None] | None = None,
    ) -> None:
        self.store_url = store_url
        self.catalog_root = catalog_root
        self.max_page = max_page
        self.count = count
        self.priority = check_priority(priority)
        self.on_stats = on_stats
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self._closed = False
        self.served = 0  # calls answered by a reader

    def _executor(self) -> concurrent.futures.ProcessPoolExecutor:
        with self._lock:
            if self._closed:
                raise Answer(grpc.StatusCode.UNAVAILABLE, "the server is stopping")
            if self._pool is None:
                self._pool = concurrent.futures.ProcessPoolExecutor(
                    self.count,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_open_reader,
                    initargs=(self.store_url, self.catalog_root, self.max_page, self.priority, os.getpid()),
                )
            return self._pool

    def start(self, wait: bool = False) -> concurrent.futures.Future:
        """Start the processes now (not at the first heavy read); ``wait``: until they answer,
        raising what stopped one from opening the store."""
        pool = self._executor()
        ready = pool.submit(_ready)
        for _ in range(self.count - 1):
            pool.submit(_ready)
        if wait:
            ready.result(START_TIMEOUT)
        return ready

    def submit(self, method: str, index: LeaderboardIndex, name: str, request: bytes, deadline: float) -> Any:
        """Run ``method`` on a reader: a future of the answer's bytes (or :class:`Answer`)."""
        options = index.settings.to_proto()
        options.format = index.format
        options = options.SerializeToString()
        pool = self._executor()
        try:
            future = pool.submit(_serve, method, name, index.prefix, options, index.timebase, request, deadline)
        except BrokenProcessPool:  # a reader died since the last call: start anew
            self._discard(pool)
            pool = self._executor()
            future = pool.submit(_serve, method, name, index.prefix, options, index.timebase, request, deadline)
        outer: concurrent.futures.Future = concurrent.futures.Future()
        # A call given up (its client went away) leaves the queue if no reader has begun it.
        outer.add_done_callback(lambda mine: future.cancel() if mine.cancelled() else None)

        def settle(inner: concurrent.futures.Future) -> None:
            if inner.cancelled():
                return
            try:
                ok, payload, stats, transactions = inner.result()
            except BrokenProcessPool:
                self._discard(pool)
                answer = Answer(grpc.StatusCode.UNAVAILABLE, f"{method} failed: a reader process ended; retry")
                _settle(outer, exception=answer)
                return
            except Exception as exc:
                _settle(outer, exception=exc)
                return
            if self.on_stats is not None:
                self.on_stats(stats, transactions)
            if ok:
                self.served += 1
                _settle(outer, result=payload)
            else:
                code, message, trailing = payload
                _settle(outer, exception=Answer(grpc.StatusCode[code], message, trailing))

        future.add_done_callback(settle)
        return outer

    def call(self, method: str, index: LeaderboardIndex, name: str, request: bytes, deadline: float) -> bytes:
        """:meth:`submit` and wait (from a worker thread), at most until ``deadline``."""
        try:
            return self.submit(method, index, name, request, deadline).result(max(0.0, deadline - time.monotonic()))
        except concurrent.futures.TimeoutError:
            raise Answer(grpc.StatusCode.DEADLINE_EXCEEDED, f"{method} ran past its deadline on the server") from None

    def _discard(self, broken: concurrent.futures.ProcessPoolExecutor) -> None:
        """Drop ``broken`` (a reader of it died), unless it was replaced already."""
        with self._lock:
            if self._pool is broken:
                log.error("a reader process ended unexpectedly: starting new ones for the next reads")
                broken.shutdown(wait=False, cancel_futures=True)
                self._pool = None

    def pids(self) -> list[int]:
        """The reader processes running now (for tests and operators)."""
        with self._lock:
            processes = getattr(self._pool, "_processes", None) or {}  # the executor keeps no public list
            return sorted(processes)

    def shutdown(self) -> None:
        """Stop the processes, after the reads they have begun."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def _settle(future: concurrent.futures.Future, result: Any = None, exception: BaseException | None = None) -> None:
    """Give ``future`` its outcome, unless its caller gave it up already."""
    if not future.set_running_or_notify_cancel():
        return
    if exception is not None:
        future.set_exception(exception)
    else:
        future.set_result(result)


def can_share(db: Database) -> bool:
    """Whether another process may open ``db``'s store while this one has it open."""
    return bool(getattr(db, "shared_by_processes", False))


# -- in the reader process ------------------------------------------------------------------

_service: LeaderboardService | None = None
_catalog: _PinnedCatalog | None = None
_timings: _TransactionTimings | None = None
_db: Database | None = None


class _PinnedCatalog(Catalog):
    """A catalog whose names resolve to what the calling server resolved."""

    def pin(self, name: str, prefix: bytes, options: bytes, timebase: int) -> None:
        cached = self._open.get(name)
        if cached is None or cached[0] != prefix:
            parsed = index_pb2.IndexOptions.FromString(options)
            cached = (prefix, self._keep(name, prefix, IndexSettings.from_proto(parsed), None, parsed.format))
        cached[1].timebase = timebase


class _TransactionTimings(Metrics):
    """Metrics of a reader process: its transaction timings are kept for the server's metrics."""

    def __init__(self) -> None:
        super().__init__()
        self.transactions: list[tuple[str, str, float, int]] = []

    def observe_transaction(self, kind: str, outcome: str, seconds: float, attempts: int) -> None:
        self.transactions.append((kind, outcome, seconds, attempts))


class _Deadline:
    """The call as a reader sees it: active until its deadline (the server watches the client)."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline

    def is_active(self) -> bool:
        return time.monotonic() < self.deadline  # CLOCK_MONOTONIC: one clock for every process

    def time_remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())


def _open_reader(store_url: str, catalog_root: bytes, max_page: int, priority: str, server: int) -> None:
    global _service, _catalog, _timings, _db
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the server stops us
    if priority == IDLE:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    else:
        os.nice(int(priority))

    def watch_server() -> None:  # a server killed outright cannot stop its readers: they stop themselves
        while os.getppid() == server:  # (the server's pid, not getppid() now: it may have died already)
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch_server, name="server-watch", daemon=True).start()
    _timings = _TransactionTimings()
    _db = open_database(store_url)
    _catalog = _PinnedCatalog(MeasuredDatabase(_db, _timings), catalog_root)
    _service = LeaderboardService(_catalog, max_page)


def _ready() -> int:
    return os.getpid()


def _serve(method: str, name: str, prefix: bytes, options: bytes, timebase: int, data: bytes, deadline: float) -> tuple:
    """(ok, answer bytes or (code, message, trailing), store counters, transaction timings)."""
    assert _service is not None and _catalog is not None and _timings is not None and _db is not None
    before = _db.stats.snapshot()
    _timings.transactions.clear()
    try:
        if time.monotonic() >= deadline:  # it waited its whole deadline in the queue
            raise Answer(grpc.StatusCode.DEADLINE_EXCEEDED, f"{method} waited past its deadline on the server")
        _catalog.pin(name, prefix, options, timebase)
        request = getattr(pb, pb.DESCRIPTOR.services_by_name["Leaderboard"].methods_by_name[method].input_type.name)
        response = getattr(_service, method)(request.FromString(data), _Deadline(deadline))
        outcome: tuple[bool, Any] = (True, response.SerializeToString())
    except Answer as answer:
        outcome = (False, (answer.code.name, str(answer), tuple(answer.trailing or ())))
    after = _db.stats.snapshot()
    stats = {field: after[field] - before[field] for field in after if after[field] != before[field]}
    return (*outcome, stats, list(_timings.transactions))
