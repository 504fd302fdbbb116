"""The FoundationDB backend: a thin adapter over the official Python bindings.

This module holds the database (its transactions' retries, commit markers and time limits) and
opening it; the binding's loading is ``fdb_binding.py``'s, transactions ``fdb_transactions.py``'s,
``run_together``'s shared transactions ``fdb_shared.py``'s and blind writes ``fdb_blind_writes.py``'s.

Pairing the binding with the client library: the ``foundationdb`` package's major.minor
must match the installed ``libfdb_c`` (a 7.3 client needs ``foundationdb==7.3.*``; the
8.0 binding asks for API 800, which every 7.x client refuses).  The API version defaults
to the binding's latest (``fdb.LATEST_API_VERSION``, 710 for the 7.1 binding); override it with the URL option
``api_version`` or the environment variable ``FDB_API_VERSION``.  A process can select
only one API version, so every database it opens uses the first one selected.

Reads, writes and commits go straight to the client library through ``_fdb_direct`` (a C
extension built at install time, see ``_fdb_direct.c``) when it is built: the binding reaches
the library through ctypes, and its per-read Python objects, ctypes structures and callbacks
cost more client CPU than the reads themselves.  The main thread's waits still run signal
handlers, so Ctrl-C stops a call to a cluster that does not answer.  Without it (no compiler
at install time, or the URL option ``direct=false``) they go through the binding: the same C
calls, the same answers.  Transactions, their options and retries are the binding's either way.

A transaction waits as long as the cluster cannot answer (it is down, or has no quorum, or is
recovering after losing a process): URL option ``timeout`` (seconds, default 10; 0 waits
forever) bounds each call, retries included (FoundationDB's transaction ``timeout`` option), and
so does the deadline of the call being served (``api.call_deadline``), whichever ends first.  A
call that runs out raises StoreUnavailable (gRPC UNAVAILABLE) saying the cluster did not answer
in time and whether a write may have committed.  Until then every error FoundationDB's own retry
loop retries is retried, ``transaction_too_old`` (1007) included: a recovery moves the cluster's
versions on, so an attempt that began before it gets 1007 however short it was.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import fdb.tuple as fdb_tuple

from .api import (
    BlindWrites,
    Database,
    StoreError,
    StoreStats,
    StoreUnavailable,
    TransactionTimedOut,
    call_time_left,
    current_read_bounds,
    option_boolean,
)
from .fdb_binding import (
    _LIMIT_ERRORS,
    _MAYBE_COMMITTED,
    _TRANSACTION_TIMED_OUT,
    _TRANSACTION_TOO_OLD,
    CONFLICT,
    _fdb_direct,
    binding_api_version,
    binding_version,
    direct_calls_available,
    load_fdb,
)
from .fdb_blind_writes import PipelinedBlindWrites
from .fdb_shared import SharedTransactions
from .fdb_transactions import DirectFdbTransaction, FdbTransaction

T = TypeVar("T")

DEFAULT_TIMEOUT_SECONDS = 10.0
_TRANSACTION_SECONDS = 5.0
# A transaction of a served call may wait for the cluster this long however little of the call's
# deadline is left: a long job (Verify, Fill) starts its last batch just before its deadline,
# which it then reports (the service gives it that moment).
_LEAST_WAIT_MS = 1000


# Each write transaction sets IDEMPOTENCY_PREFIX + (minute, token): a key no other transaction
# writes.  It lets a retry after an unknown commit result tell whether the earlier attempt
# committed (see FdbDatabase.run).  Markers older than IDEMPOTENCY_MINUTES are cleared in passing.
IDEMPOTENCY_PREFIX = fdb_tuple.pack(("lb-committed",))
IDEMPOTENCY_MINUTES = 60
_CLEANUP_SECONDS = 60.0


class _SeenVersions:
    """The newest version this process has seen (a read version, or a commit's), with the time
    from which it holds: a read version holds every write acknowledged before it was asked for,
    a commit version every write acknowledged before that commit was sent."""

    __slots__ = ("latest",)

    def __init__(self) -> None:
        self.latest: tuple[int, float] = (0, float("-inf"))  # one tuple: read and replaced whole

    def saw(self, version: int, since: float) -> None:
        # The same version seen again later holds from later: a cluster that commits nothing
        # answers every read version with its last commit's.
        latest = self.latest
        if version > latest[0] or (version == latest[0] and since > latest[1]):
            self.latest = (version, since)

    def usable(self, max_staleness: float, min_version: int) -> tuple[int, float] | None:
        """The version and its time, if it is at most ``max_staleness`` seconds old and at least
        ``min_version``."""
        latest = self.latest
        if latest[0] and latest[0] >= min_version and time.monotonic() - latest[1] <= max_staleness:
            return latest
        return None


class FdbDatabase(SharedTransactions, Database):
    batched_reads = True
    clears_ranges_at_once = True
    shared_by_processes = True
    commits_together = True  # run_together shares transactions (commit_together blocks do not)
    metadata_stamps = True

    def __init__(
        self,
        cluster_file: str | None,
        api_version: int | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        direct: bool = True,
    ) -> None:
        self._fdb = load_fdb(api_version)
        self.direct = direct and _fdb_direct is not None  # calls through _fdb_direct (see the module docstring)
        self.url = f"fdb:{cluster_file or ''}"
        self.timeout_seconds = timeout_seconds
        self.stats = StoreStats()
        self._last_cleanup = 0.0
        try:
            self._db = self._fdb.open(cluster_file) if cluster_file else self._fdb.open()
        except Exception as exc:
            raise StoreUnavailable(f"cannot open FoundationDB cluster {cluster_file or '(default)'}: {exc}") from exc
        self._timeout_ms = round(timeout_seconds * 1000)
        self._local = threading.local()  # .shared: this thread's run_together transaction; .versions
        self.on_commit: Callable[[int], object] | None = None  # told the write calls each shared commit kept
        self._seen = _SeenVersions()
        self._tracking = False  # whether versions are noted (from the first read that may reuse one)

    def _commit(self, tr: Any) -> None:
        """Commit ``tr`` (a seam: tests replace it to make commits report an unknown result)."""
        if self.direct:
            _fdb_direct.Transaction(tr).commit()
        else:
            tr.commit().wait()

    def _transact(self, writable: bool, fn: Callable[..., T], args: tuple, kwargs: dict) -> T:
        """Run ``fn`` until it commits, idempotently.

        A write transaction may be retried after it committed: FoundationDB reports
        commit_unknown_result (1021) when the cluster lost track of a commit it may have
        applied.  Every attempt of one call declares a read conflict on, and sets, the call's
        marker key, whose value is the attempt's number: of two attempts at most one commits,
        and a retry after an unknown result reads the marker first.  If an earlier attempt
        committed, the call returns that attempt's result without running ``fn`` again.
        """
        if self._db is None:
            raise StoreError(f"database {self.url} is closed")
        tr = self._db.create_transaction()
        # Per transaction, not the database option: the bindings share one database handle
        # per cluster file in a process, whatever timeout each opener asked for.  Counted from
        # the transaction's creation, across its retries (API >= 610); 0 disables it.
        timeout_ms = self._call_timeout_ms()
        tr.options.set_timeout(timeout_ms)
        reused = False  # whether this read took a version seen before (a bounded-staleness read)
        if writable:
            self._local.versions = []
        else:
            bounds = current_read_bounds()
            self._local.read_since = None
            if bounds.max_staleness:
                self._tracking = True
                # At most half the bound old: an answer shared among identical reads (see
                # service/stale_reads.py) then stays young enough to share for the other half.
                usable = self._seen.usable(bounds.max_staleness / 2, bounds.min_version)
                if usable is not None:
                    tr.set_read_version(usable[0])
                    self._local.read_since = usable[1]
                    reused = True
        marker = None
        results: dict[int, T] = {}  # attempts whose commit outcome is unknown, by number
        attempt = retries = conflicts = unknown = 0
        too_long = False  # the last transaction_too_old came after 5 s of the attempt's own work
        view: FdbTransaction | DirectFdbTransaction | None = None
        try:
            while True:
                attempt += 1
                began = time.monotonic()
                view = DirectFdbTransaction(tr, writable) if self.direct else FdbTransaction(tr, self._fdb, writable)
                try:
                    if writable:
                        if marker is None:
                            marker = self._marker_key()
                        tr.add_read_conflict_key(marker)
                        if results:
                            committed = view.get(marker)
                            if committed is not None:
                                return results[int(committed)]  # only attempts with unknown outcomes
                    result = fn(view, *args, **kwargs)
                    if not writable:
                        if self._tracking and not reused:
                            self._seen.saw(tr.get_read_version().wait(), began)
                            self._local.read_since = began
                        return result
                    try:
                        self._local.versions = [self._commit_marked(tr, marker, attempt)]
                    except self._fdb.FDBError as error:
                        if error.code in _MAYBE_COMMITTED:
                            results[attempt] = result
                        raise
                    return result
                except self._fdb.FDBError as error:
                    if error.code == _TRANSACTION_TIMED_OUT:
                        raise self._timed_out(writable, timeout_ms, too_long, bool(results)) from error
                    mapped = _LIMIT_ERRORS.get(error.code)
                    if mapped is not None:
                        raise mapped(f"FoundationDB error {error.code}: {error.description}") from error
                    retries += 1
                    reused = False  # on_error resets the transaction: the retry asks for a version
                    conflicts += error.code == CONFLICT
                    unknown += error.code in _MAYBE_COMMITTED
                    too_long = error.code == _TRANSACTION_TOO_OLD and time.monotonic() - began >= _TRANSACTION_SECONDS
                    try:
                        tr.on_error(error).wait()  # raises when the error is not retryable
                    except self._fdb.FDBError as final:
                        if final.code == _TRANSACTION_TIMED_OUT:  # the timeout ran out in the back-off
                            raise self._timed_out(writable, timeout_ms, too_long, bool(results)) from final
                        raise
        finally:
            rounds = view.rounds if view is not None else None
            self.stats.add(
                transactions=1,
                read_rounds=rounds.count if rounds else 0,
                reads=rounds.reads if rounds else 0,
                commits=int(writable),
                retries=retries,
                conflicts=conflicts,
                unknown_results=unknown,
                writes=view.writes if view is not None else 0,
                bytes_written=view.bytes_written if view is not None else 0,
            )

    def _commit_marked(self, tr: Any, marker: bytes, attempt: int) -> int:
        """Commit ``tr`` with its marker saying ``attempt`` (what a retry after an unknown result
        reads first); the version it committed at."""
        tr.set(marker, b"%d" % attempt)
        self._clear_old_markers(tr)
        sent = time.monotonic()
        self._commit(tr)
        return self._committed(tr, sent)

    def _committed(self, tr: Any, sent: float) -> int:
        """The version ``tr`` committed at (noted as seen: it holds from when it was sent)."""
        version = tr.get_committed_version()
        if self._tracking:
            self._seen.saw(version, sent)
        return version

    def last_commit_versions(self) -> list[int]:
        return getattr(self._local, "versions", [])

    def last_read_since(self) -> float | None:
        return getattr(self._local, "read_since", None)

    def newest_version(self) -> int:
        return self._seen.latest[0]

    def newest_seen(self) -> tuple[int, float]:
        return self._seen.latest

    def _marker_key(self) -> bytes:
        return IDEMPOTENCY_PREFIX + fdb_tuple.pack((int(time.time()) // 60, os.urandom(16)))

    def _clear_old_markers(self, tr: Any) -> None:
        """Now and then, clear the markers of calls long finished (in the caller's transaction:
        one range clear, which no live call's marker falls in)."""
        now = time.time()
        if now - self._last_cleanup < _CLEANUP_SECONDS:
            return
        self._last_cleanup = now
        oldest_kept = int(now) // 60 - IDEMPOTENCY_MINUTES
        tr.clear_range(IDEMPOTENCY_PREFIX, IDEMPOTENCY_PREFIX + fdb_tuple.pack((oldest_kept,)))

    def _call_timeout_ms(self) -> int:
        """This call's transaction timeout: the store's, or less if the call being served must be
        answered sooner (a moment is kept for the answer to reach the caller; a second at least).
        0: none."""
        left = call_time_left()
        if left is None:
            return self._timeout_ms
        bounded = max(_LEAST_WAIT_MS, round((left - min(0.5, max(0.15, left / 10))) * 1000))
        return bounded if self._timeout_ms == 0 else min(self._timeout_ms, bounded)

    def _timed_out(self, writable: bool, timeout_ms: int, too_long: bool, maybe_committed: bool) -> StoreError:
        """The error for a call that ran out of its timeout (``too_long``: because its own work
        outlasted FoundationDB's 5 s on the last attempt, not because the cluster was slow)."""
        seconds = f"{timeout_ms / 1000:g} s"
        if too_long:
            return TransactionTimedOut(
                "a transaction ran longer than FoundationDB's 5 second limit on every attempt for "
                f"{seconds}; split the work into smaller transactions"
            )
        if not writable:
            outcome = ""
        elif maybe_committed:
            # The marker only settles retries within this call: calling again makes a new call.
            outcome = (
                " The write may or may not have been committed (its commit was sent but not confirmed): "
                "sent again with the same idempotency key it is applied at most once; without one, "
                "calling again is a new write, so check its effect before repeating it."
            )
        else:
            outcome = " The write was not committed."
        limit = "transaction timeout" if timeout_ms == self._timeout_ms else "deadline"
        return StoreUnavailable(
            f"the FoundationDB cluster {self.url} did not answer in time: the call ran out of its "
            f"{seconds} {limit} (the cluster may be down, recovering or overloaded); retry later.{outcome}"
        )

    def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        shared = getattr(self._local, "shared", None)
        if shared is not None:  # inside run_together: the batch's transaction
            return shared.join(fn, args, kwargs)
        return self._transact(True, fn, args, kwargs)

    def blind_writes(self, fences: Sequence[tuple[bytes, bytes]] = ()) -> BlindWrites:
        return PipelinedBlindWrites(self, fences=fences)

    def read(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return self._transact(False, fn, args, kwargs)

    def check_reachable(self, timeout_ms: int = 3000) -> None:
        """Raise StoreUnavailable unless the cluster answers a read within ``timeout_ms``."""
        tr = self._db.create_transaction()
        tr.options.set_timeout(timeout_ms)
        try:
            tr.get_read_version().wait()  # a read version proves the cluster answers
        except self._fdb.FDBError as error:
            raise StoreUnavailable(f"FoundationDB cluster {self.url} did not answer: {error.description}") from error

    def close(self) -> None:
        self._db = None  # the bindings keep one network thread per process; nothing else to release


def open_fdb(cluster_file: str | None, options: dict[str, str]) -> FdbDatabase:
    known = {"api_version", "timeout", "direct"}
    unknown = set(options) - known
    if unknown:
        raise ValueError(f"unknown fdb option(s) {sorted(unknown)}; known: {sorted(known)}")
    version = int(options["api_version"]) if options.get("api_version") else None
    text = options.get("timeout") or str(DEFAULT_TIMEOUT_SECONDS)
    try:
        timeout = float(text)
    except ValueError:
        timeout = -1.0
    if not 0 <= timeout <= 86_400:  # also refuses nan
        raise ValueError(f"fdb option timeout must be a number of seconds from 0 to 86400, not {text!r}")
    return FdbDatabase(cluster_file, version, timeout, option_boolean(options.get("direct", "true"), "direct"))


__all__ = [
    "FdbDatabase",
    "DirectFdbTransaction",
    "FdbTransaction",
    "binding_api_version",
    "binding_version",
    "direct_calls_available",
    "load_fdb",
    "open_fdb",
]
