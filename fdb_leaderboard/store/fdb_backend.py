"""The FoundationDB backend: a thin adapter over the official Python bindings.

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

import importlib.metadata
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import fdb.tuple as fdb_tuple

try:
    from . import _fdb_direct
except ImportError:  # not built (no compiler at install time): the binding does the calls
    _fdb_direct = None  # type: ignore[assignment]

from .api import (
    METADATA_VERSION_KEY,
    BlindWrites,
    CountedRead,
    Database,
    InvertedRange,
    KeyTooLarge,
    KeyValue,
    Outcome,
    ReadOnlyTransaction,
    ReadRounds,
    ReadView,
    StoreError,
    StoreStats,
    StoreUnavailable,
    Transaction,
    TransactionTimedOut,
    TransactionTooLarge,
    ValueTooLarge,
    call_time_left,
    current_read_bounds,
    option_boolean,
)

T = TypeVar("T")

DEFAULT_TIMEOUT_SECONDS = 10.0
_TRANSACTION_TIMED_OUT = 1031  # the `timeout` option ran out (not retryable)
_TRANSACTION_TOO_OLD = 1007  # FoundationDB's 5 s limit, or a recovery since the attempt began
_TRANSACTION_SECONDS = 5.0
# A transaction of a served call may wait for the cluster this long however little of the call's
# deadline is left: a long job (Verify, Fill) starts its last batch just before its deadline,
# which it then reports (the service gives it that moment).
_LEAST_WAIT_MS = 1000

_api_lock = threading.Lock()
_direct_bound = False  # whether _fdb_direct has the client library's functions

# FoundationDB error codes that are the caller's fault, mapped to our exceptions.
_LIMIT_ERRORS = {
    2101: TransactionTooLarge,
    2102: KeyTooLarge,
    2103: ValueTooLarge,
    2005: InvertedRange,
}


def load_fdb(api_version: int | None = None) -> Any:
    """Import ``fdb`` and select the API version once per process."""
    try:
        import fdb
    except ImportError as exc:  # pragma: no cover - a runtime dependency
        raise StoreUnavailable("the foundationdb Python package is not installed") from exc
    global _direct_bound
    with _api_lock:
        if not fdb.is_api_version_selected():
            version = api_version or int(os.environ.get("FDB_API_VERSION", 0)) or binding_api_version(fdb)
            try:
                fdb.api_version(version)
            except Exception as exc:  # the native client is missing or does not support `version`
                raise StoreUnavailable(
                    f"cannot select FoundationDB API version {version} with binding {binding_version()}: {exc}. "
                    "Install the FoundationDB client library and the matching `foundationdb` package "
                    "(same major.minor), or pass api_version=..."
                ) from exc
        if _fdb_direct is not None and not _direct_bound:  # also when the caller selected the version
            _bind_direct(fdb)
            _direct_bound = True
    return fdb


def _bind_direct(fdb: Any) -> None:
    """Hand ``_fdb_direct`` the client library's functions as the binding loaded them (ctypes)."""
    import ctypes

    from fdb import impl

    library = impl._capi
    names = _fdb_direct.function_names()
    addresses = {name: ctypes.cast(getattr(library, name), ctypes.c_void_p).value for name in names}
    _fdb_direct.bind(addresses, fdb.FDBError, threading.main_thread().ident)


def direct_calls_available() -> bool:
    """Whether ``_fdb_direct`` was built (the C extension; see the module docstring)."""
    return _fdb_direct is not None


def binding_version() -> str:
    """The installed ``foundationdb`` package's version (7.1's module has no ``__version__``)."""
    return importlib.metadata.version("foundationdb")


def binding_api_version(fdb: Any) -> int:
    """The newest API version the installed binding knows (7.1's has no LATEST_API_VERSION)."""
    latest = getattr(fdb, "LATEST_API_VERSION", None)
    if latest:
        return int(latest)
    major, minor = binding_version().split(".")[:2]
    return int(major) * 100 + int(minor) * 10


class _ValueFuture(CountedRead[bytes | None]):
    """A point read in flight."""

    __slots__ = ("_future",)

    def __init__(self, future: Any, rounds: ReadRounds) -> None:
        super().__init__(rounds)
        self._future = future

    def _answer(self) -> bytes | None:
        return self._future.value


class _RangeFuture(CountedRead[list[KeyValue]]):
    """A range read in flight (the bindings' FDBRange sends its first request when made)."""

    __slots__ = ("_range",)

    def __init__(self, fetched: Any, rounds: ReadRounds) -> None:
        super().__init__(rounds)
        self._range = fetched

    def _answer(self) -> list[KeyValue]:
        return [(kv.key, kv.value) for kv in self._range]


class _DirectFuture(CountedRead[Any]):
    """A read in flight through ``_fdb_direct``: its ``wait`` gives the answer as the store API has it."""

    __slots__ = ("_future",)

    def __init__(self, future: Any, rounds: ReadRounds) -> None:
        super().__init__(rounds)
        self._future = future

    def _answer(self) -> Any:
        return self._future.wait()


class _Reads(ReadView):
    """Reads counted in a transaction's :class:`ReadRounds`: the plain forms wait on the async ones."""

    __slots__ = ()

    batched_reads = True
    _rounds: ReadRounds

    @property
    def rounds(self) -> ReadRounds:
        return self._rounds

    def get(self, key: bytes) -> bytes | None:
        return self.get_async(key).value

    def get_range(self, begin: bytes, end: bytes, limit: int = 0, reverse: bool = False) -> list[KeyValue]:
        return self.get_range_async(begin, end, limit, reverse).value


# FoundationDB's greatest row limit: a larger one (a batch size a caller may send, up to 2**32 - 1)
# asks for no fewer rows than any range holds in one transaction.
_MAX_LIMIT = 2**31 - 1


class _FdbReads(_Reads):
    """Reads through an fdb transaction or its ``snapshot``."""

    __slots__ = ("_tr", "_fdb", "_rounds")

    def __init__(self, tr: Any, fdb: Any, rounds: ReadRounds) -> None:
        self._tr = tr
        self._fdb = fdb
        self._rounds = rounds

    def get_async(self, key: bytes) -> _ValueFuture:
        return _ValueFuture(self._tr.get(key), self._rounds)

    def get_range_async(self, begin: bytes, end: bytes, limit: int = 0, reverse: bool = False) -> _RangeFuture:
        limit = min(limit, _MAX_LIMIT)
        mode = self._fdb.StreamingMode.exact if limit else self._fdb.StreamingMode.want_all
        fetched = self._tr.get_range(begin, end, limit=limit, reverse=reverse, streaming_mode=mode)
        return _RangeFuture(fetched, self._rounds)


class _DirectReads(_Reads):
    """Reads through ``_fdb_direct`` (plain, or snapshot reads): the same requests as :class:`_FdbReads`."""

    __slots__ = ("_direct", "_is_snapshot", "_rounds")

    def __init__(self, direct: Any, snapshot: bool, rounds: ReadRounds) -> None:
        self._direct = direct
        self._is_snapshot = snapshot
        self._rounds = rounds

    def get_async(self, key: bytes) -> _DirectFuture:
        return _DirectFuture(self._direct.get(key, self._is_snapshot), self._rounds)

    def get_range_async(self, begin: bytes, end: bytes, limit: int = 0, reverse: bool = False) -> _DirectFuture:
        limit = min(limit, _MAX_LIMIT)
        return _DirectFuture(self._direct.get_range(begin, end, limit, reverse, self._is_snapshot), self._rounds)


# The parameter of SET_VERSIONSTAMPED_VALUE that makes a value of the commit's versionstamp
# alone: 10 bytes it replaces, then the little-endian offset where it goes (API 520 and later).
_STAMP_ONLY = b"\x00" * 14


class _Writes(Transaction):
    """The writes of one attempt, through ``_writer`` (the binding's transaction, or
    ``_fdb_direct``'s on it: both offer these methods), with the counts StoreStats sums."""

    _writer: Any
    _binding: Any  # the binding's transaction (for the calls _fdb_direct does not make)
    _writable: bool
    writes: int
    bytes_written: int
    clears_ranges_at_once = True  # a range clear is one mutation, whatever it holds
    _stamp: Any = None  # the metadata version's read, once issued
    metadata_changed = False

    def changed_metadata(self) -> None:
        self._write(len(METADATA_VERSION_KEY) + len(_STAMP_ONLY))
        self.metadata_changed = True
        self._binding.set_versionstamped_value(METADATA_VERSION_KEY, _STAMP_ONLY)

    def metadata_stamp(self) -> Any:
        if self.metadata_changed:  # FoundationDB refuses to read it after this transaction set it
            return None
        if self._stamp is None:
            self._stamp = self.snapshot.get_async(METADATA_VERSION_KEY)
        return self._stamp

    def _write(self, size: int) -> None:
        if not self._writable:
            raise ReadOnlyTransaction("this transaction was opened with Database.read and cannot write")
        self.writes += 1
        self.bytes_written += size

    def set(self, key: bytes, value: bytes) -> None:
        self._write(len(key) + len(value))
        self._writer.set(key, value)

    def clear(self, key: bytes) -> None:
        self._write(len(key))
        self._writer.clear(key)

    def clear_range(self, begin: bytes, end: bytes) -> None:
        self._write(len(begin) + len(end))
        self._writer.clear_range(begin, end)

    def add(self, key: bytes, param: bytes) -> None:
        self._write(len(key) + len(param))
        self._writer.add(key, param)

    def max(self, key: bytes, param: bytes) -> None:
        self._write(len(key) + len(param))
        self._writer.max(key, param)

    def min(self, key: bytes, param: bytes) -> None:
        self._write(len(key) + len(param))
        self._writer.min(key, param)

    def add_read_conflict_range(self, begin: bytes, end: bytes) -> None:
        self._writer.add_read_conflict_range(begin, end)


class FdbTransaction(_FdbReads, _Writes):
    """One attempt of a transaction, through the binding."""

    __slots__ = ("_snapshot", "_writer", "_binding", "_writable", "writes", "bytes_written")

    def __init__(self, tr: Any, fdb: Any, writable: bool) -> None:
        rounds = ReadRounds()
        super().__init__(tr, fdb, rounds)
        self._snapshot = _FdbReads(tr.snapshot, fdb, rounds)
        self._writer = self._binding = tr
        self._writable = writable
        self.writes = 0
        self.bytes_written = 0

    @property
    def snapshot(self) -> ReadView:
        return self._snapshot


class DirectFdbTransaction(_DirectReads, _Writes):
    """One attempt of a transaction, through ``_fdb_direct`` on the binding's transaction."""

    __slots__ = ("_snapshot", "_writer", "_binding", "_writable", "writes", "bytes_written")

    def __init__(self, tr: Any, writable: bool) -> None:
        rounds = ReadRounds()
        direct = _fdb_direct.Transaction(tr)
        super().__init__(direct, False, rounds)
        self._snapshot = _DirectReads(direct, True, rounds)
        self._writer = direct
        self._binding = tr
        self._writable = writable
        self.writes = 0
        self.bytes_written = 0

    @property
    def snapshot(self) -> ReadView:
        return self._snapshot

    def add_read_conflict_ranges(self, ranges: Sequence[tuple[bytes, bytes]]) -> None:
        self._writer.add_read_conflict_ranges(ranges)


# Errors after which a commit may or may not have happened (commit_unknown_result,
# transaction_timed_out, cluster_version_changed): the retry must find out before redoing it.
# A timed-out call is not retried (its ``timeout`` is spent) but still records the attempt,
# so its StoreUnavailable can say whether the write may have committed.
_MAYBE_COMMITTED = {1021, 1031, 1039}
CONFLICT = 1020

# Each write transaction sets IDEMPOTENCY_PREFIX + (minute, token): a key no other transaction
# writes.  It lets a retry after an unknown commit result tell whether the earlier attempt
# committed (see FdbDatabase.run).  Markers older than IDEMPOTENCY_MINUTES are cleared in passing.
IDEMPOTENCY_PREFIX = fdb_tuple.pack(("lb-committed",))
IDEMPOTENCY_MINUTES = 60
_CLEANUP_SECONDS = 60.0

# A shared transaction (``run_together``) takes calls until it has written this many bytes or
# spent this long on their work; the calls left go on in the next one.  FoundationDB's limits
# are 10 MB and 5 s; it advises keeping transactions under 1 MB.
SHARED_BYTES = 1_000_000
SHARED_SECONDS = 1.0
# A shared transaction that conflicted this many times is split in two, each half its own.
SPLIT_AFTER_CONFLICTS = 2


class _Abandon(BaseException):
    """A call of a shared transaction that the transaction cannot keep: it raised after writing
    (its writes cannot be taken back alone), or a read failed for the whole transaction
    (``error``).  A BaseException, so handlers' ``except Exception`` let it through."""

    def __init__(self, error: BaseException | None = None) -> None:
        super().__init__()
        self.error = error


class _Shared:
    """The transaction a ``run_together`` batch shares: this thread's ``run`` calls join it."""

    __slots__ = ("view", "fdb_error")

    def __init__(self, view: Any, fdb_error: type[Exception]) -> None:
        self.view = view
        self.fdb_error = fdb_error

    def join(self, fn: Callable[..., T], args: tuple, kwargs: dict) -> T:
        """``fn(tr, ...)`` in the shared transaction, at once; what it wrote commits with the others."""
        view = self.view
        before = view.writes
        try:
            return fn(view, *args, **kwargs)
        except self.fdb_error as error:  # the transaction's, not the call's: it is retried whole
            raise _Abandon(error) from error
        except Exception:
            if view.writes != before:
                raise _Abandon() from None
            raise


class _SeenVersions:
    """The newest version this process has seen (a read version, or a commit's), with the time
    from which it holds: a read version holds every write acknowledged before it was asked for,
    a commit version every write acknowledged before that commit was sent."""

    __slots__ = ("latest",)

    def __init__(self) -> None:
        self.latest: tuple[int, float] = (0, float("-inf"))  # one tuple: read and replaced whole

    def saw(self, version: int, since: float) -> None:
        if version > self.latest[0]:
            self.latest = (version, since)

    def usable(self, max_staleness: float, min_version: int) -> tuple[int, float] | None:
        """The version and its time, if it is at most ``max_staleness`` seconds old and at least
        ``min_version``."""
        latest = self.latest
        if latest[0] and latest[0] >= min_version and time.monotonic() - latest[1] <= max_staleness:
            return latest
        return None


def outcomes_of(outcomes: list[Outcome], done: dict[int, Outcome]) -> None:
    """Copy the outcomes of a committed shared transaction's calls into ``outcomes``."""
    for position, outcome in done.items():
        outcomes[position] = outcome


class FdbDatabase(Database):
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
                usable = self._seen.usable(bounds.max_staleness, bounds.min_version)
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

    def run_together(self, calls: Sequence[Callable[[], T]]) -> list[Outcome]:
        """Run ``calls`` in shared transactions: each call's ``run`` joins its batch's one
        transaction (one read version, one commit), and its outcome is known once that committed.

        - A call that raises before writing anything is refused alone (the others commit); one
          that raises after writing is taken out and the transaction run again without it (at the
          same read version), and it then runs on its own after the batch, as if alone.
        - A conflict retries the whole transaction; one that conflicts
          :data:`SPLIT_AFTER_CONFLICTS` times is split in two halves, each run on its own the
          same way (a transaction too large for FoundationDB likewise).
        - An unknown commit result is settled by the batch's marker key, as for one call
          (:meth:`_transact`): the retry answers the committed attempt's outcomes.
        - A transaction takes calls until it wrote :data:`SHARED_BYTES` or worked
          :data:`SHARED_SECONDS`; the rest go on in the next.

        Calls run one after another on this thread, each seeing what the ones before it wrote
        (one record written twice in a batch is written twice, in order).
        """
        outcomes: list[Outcome] = [(None, None)] * len(calls)
        versions = [0] * len(calls)
        alone: list[int] = []
        members = list(range(len(calls)))
        self._local.shared_versions = versions
        while members:
            members = self._shared_transaction(calls, members, outcomes, alone)
        for position in alone:
            self._local.versions = []
            try:
                outcomes[position] = (calls[position](), None)
            except Exception as exc:
                outcomes[position] = (None, exc)
            versions[position] = self._local.versions[-1] if self._local.versions else 0
        self._local.versions = versions
        return outcomes

    def _shared_transaction(
        self, calls: Sequence[Callable[[], Any]], members: list[int], outcomes: list[Outcome], alone: list[int]
    ) -> list[int]:
        """Commit the ``members`` of ``calls`` in one transaction (or two halves, ...) and fill in
        their ``outcomes``; calls to run on their own join ``alone``.  Returns the members left
        for the next transaction (over the size or time budget)."""
        if self._db is None:
            raise StoreError(f"database {self.url} is closed")
        tr = self._db.create_transaction()
        timeout_ms = self._call_timeout_ms()  # bounded by the calls' deadline (run_together's caller sets it)
        tr.options.set_timeout(timeout_ms)
        marker = self._marker_key()
        maybe: dict[int, tuple[dict[int, Outcome], list[int]]] = {}  # attempts whose commit is unknown
        attempt = retries = conflicts = unknown = 0
        read_version: int | None = None  # kept when a call is taken out: the others run again on it
        view: FdbTransaction | DirectFdbTransaction | None = None
        try:
            while True:
                attempt += 1
                view = DirectFdbTransaction(tr, True) if self.direct else FdbTransaction(tr, self._fdb, True)
                done: dict[int, Outcome] = {}
                left: list[int] = []
                try:
                    tr.add_read_conflict_key(marker)
                    if maybe:
                        committed = view.get(marker)
                        if committed is not None:
                            done, left = maybe[int(committed)]
                            outcomes_of(outcomes, done)
                            return left
                    taken_out, left = self._run_members(calls, members, view, done, alone)
                    if taken_out:  # start again without it, on the same snapshot
                        read_version = read_version or tr.get_read_version().wait()
                        tr.reset()
                        tr.options.set_timeout(timeout_ms)
                        tr.set_read_version(read_version)
                        continue
                    try:
                        version = self._commit_marked(tr, marker, attempt)
                    except self._fdb.FDBError as error:
                        if error.code in _MAYBE_COMMITTED:
                            maybe[attempt] = (done, left)
                        raise
                    for position in done:
                        self._local.shared_versions[position] = version
                    outcomes_of(outcomes, done)
                    return left
                except self._fdb.FDBError as error:
                    failure = self._shared_failure(error, bool(maybe), timeout_ms)
                    if failure is not None:
                        if isinstance(failure, TransactionTooLarge) and len(members) > 1:
                            return self._split(calls, members, outcomes, alone)
                        for position in members:
                            if position not in alone:
                                outcomes[position] = (None, failure)
                        return []
                    retries += 1
                    conflicts += error.code == CONFLICT
                    unknown += error.code in _MAYBE_COMMITTED
                    read_version = None
                    if conflicts >= SPLIT_AFTER_CONFLICTS and len(members) > 1 and not maybe:
                        return self._split(calls, members, outcomes, alone)
                    try:
                        tr.on_error(error).wait()  # raises when the error is not retryable
                    except self._fdb.FDBError as final:
                        failure = self._shared_failure(final, bool(maybe), timeout_ms) or StoreError(
                            f"FoundationDB error {final.code}: {final.description}"
                        )
                        for position in members:
                            if position not in alone:
                                outcomes[position] = (None, failure)
                        return []
        finally:
            self._local.shared = None
            rounds = view.rounds if view is not None else None
            self.stats.add(
                transactions=1,
                read_rounds=rounds.count if rounds else 0,
                reads=rounds.reads if rounds else 0,
                commits=1,
                retries=retries,
                conflicts=conflicts,
                unknown_results=unknown,
                writes=view.writes if view is not None else 0,
                bytes_written=view.bytes_written if view is not None else 0,
            )

    def _run_members(
        self,
        calls: Sequence[Callable[[], Any]],
        members: list[int],
        view: Any,
        done: dict[int, Outcome],
        alone: list[int],
    ) -> tuple[bool, list[int]]:
        """Run the members (but those to run alone) in the shared ``view``, into ``done``.
        Returns (whether one was taken out: it wrote and raised, so the transaction must start
        again without it; the members left over the budget)."""
        began = time.monotonic()
        self._local.shared = _Shared(view, self._fdb.FDBError)
        try:
            for number, position in enumerate(members):
                if position in alone:
                    continue
                if done and (view.bytes_written >= SHARED_BYTES or time.monotonic() - began >= SHARED_SECONDS):
                    return False, [p for p in members[number:] if p not in alone]
                try:
                    done[position] = (calls[position](), None)
                except _Abandon as abandoned:
                    if abandoned.error is not None:
                        raise abandoned.error from None  # the transaction's error: retried whole
                    alone.append(position)
                    return True, []
                except Exception as exc:
                    done[position] = (None, exc)
            return False, []
        finally:
            self._local.shared = None

    def _split(
        self, calls: Sequence[Callable[[], Any]], members: list[int], outcomes: list[Outcome], alone: list[int]
    ) -> list[int]:
        """Commit ``members`` as two halves, each a shared transaction of its own."""
        half = len(members) // 2
        for part in (members[:half], members[half:]):
            while part:
                part = self._shared_transaction(calls, part, outcomes, alone)
        return []

    def _shared_failure(self, error: Any, maybe_committed: bool, timeout_ms: int) -> StoreError | None:
        """What a shared transaction's FoundationDB error means for its calls, or None when it is
        to be retried (FoundationDB's retry loop decides that in ``on_error``)."""
        if error.code == _TRANSACTION_TIMED_OUT:
            return self._timed_out(True, timeout_ms, False, maybe_committed)
        mapped = _LIMIT_ERRORS.get(error.code)
        if mapped is not None:
            return mapped(f"FoundationDB error {error.code}: {error.description}")
        return None

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


# FoundationDB's advice for bulk loads: transactions of about 10 kB of writes, about 50 of them in
# flight per client process.
BLIND_CHUNK_BYTES = 10_000
BLIND_IN_FLIGHT = 50
_FENCE_READS_AHEAD = 16  # chunks written before the oldest one's fence read is waited for


class PipelinedBlindWrites(BlindWrites):
    """:class:`BlindWrites` on FoundationDB: each chunk a transaction of its own, committed while
    the next ones are written, up to ``in_flight`` commits outstanding (the oldest is waited for
    before another starts).  A chunk's writes are sets, so a retryable error or an unknown commit
    result writes it again in a new attempt of the same transaction; the store's ``timeout``
    bounds each, retries included.  With fences, a chunk's reads of the fence keys are issued with
    its writes and waited for a few chunks later, just before its commit (a conflict on such a key,
    which another process changed, then retries it and finds so)."""

    def __init__(
        self,
        db: FdbDatabase,
        chunk_bytes: int = BLIND_CHUNK_BYTES,
        in_flight: int = BLIND_IN_FLIGHT,
        fences: Sequence[tuple[bytes, bytes]] = (),
    ) -> None:
        super().__init__(db, chunk_bytes, fences)
        self.fdb_db = db
        self.in_flight = in_flight
        self._written: deque[tuple[Any, list[KeyValue], list[Any]]] = deque()  # (tr, chunk, fence reads)
        self._committing: deque[tuple[Any, list[KeyValue], Any]] = deque()  # (tr, chunk, commit)

    def _commit(self, chunk: list[KeyValue]) -> None:
        if self.fdb_db._db is None:
            raise StoreError(f"database {self.fdb_db.url} is closed")
        tr = self.fdb_db._db.create_transaction()
        tr.options.set_timeout(self.fdb_db._timeout_ms)
        self._written.append((tr, chunk, self._write(tr, chunk)))
        if len(self._written) > _FENCE_READS_AHEAD:
            self._start_commit(*self._written.popleft())
        while len(self._committing) >= self.in_flight:
            self._settle(*self._committing.popleft())

    def _write(self, tr: Any, chunk: list[KeyValue]) -> list[Any]:
        """Issue the fence keys' reads and write ``chunk`` in ``tr``; the reads' futures."""
        fences = [tr.get(key) for key, _ in self.fences]
        writer = _fdb_direct.Transaction(tr) if self.fdb_db.direct else tr
        for key, value in chunk:
            writer.set(key, value)
        return fences

    def _start_commit(self, tr: Any, chunk: list[KeyValue], fences: list[Any]) -> None:
        commit = self._checked_commit(tr, fences)
        self._committing.append((tr, chunk, commit))

    def _checked_commit(self, tr: Any, fences: list[Any]) -> Any:
        if fences:
            found = [read.wait() for read in fences]
            self.check_fences([bytes(value) if value.present() else None for value in found])
        return tr.commit()

    def _settle(self, tr: Any, chunk: list[KeyValue], commit: Any) -> None:
        fdb, retries = self.fdb_db._fdb, 0
        while True:
            try:
                commit.wait()
                break
            except fdb.FDBError as error:
                mapped = _LIMIT_ERRORS.get(error.code)
                if mapped is not None:
                    raise mapped(f"FoundationDB error {error.code}: {error.description}") from error
                try:
                    if error.code == _TRANSACTION_TIMED_OUT:
                        raise
                    tr.on_error(error).wait()  # raises when the error is not retryable
                except fdb.FDBError as final:
                    if final.code == _TRANSACTION_TIMED_OUT:
                        raise self.fdb_db._timed_out(True, self.fdb_db._timeout_ms, False, False) from final
                    raise
                retries += 1
                commit = self._checked_commit(tr, self._write(tr, chunk))
        size = sum(len(key) + len(value) for key, value in chunk)
        self.fdb_db.stats.add(transactions=1, commits=1, retries=retries, writes=len(chunk), bytes_written=size)

    def flush(self) -> None:
        super().flush()
        while self._written:
            self._start_commit(*self._written.popleft())
        while self._committing:
            self._settle(*self._committing.popleft())


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
