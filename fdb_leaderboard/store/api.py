"""The transactional ordered key-value interface every backend implements.

It is shaped after the FoundationDB Python API so index code is written once:
``db.run(fn, *args)`` calls ``fn(tr, *args)`` in a transaction and retries it on
conflict; ``tr`` offers point and range reads (plain, and ``tr.snapshot`` reads that
add no conflict ranges), ``set``, ``clear``, ``clear_range`` and the atomic ``add`` and
``max`` mutations with FoundationDB's little-endian semantics.

Reads return plain values, or futures from ``get_async`` and ``get_range_async``: on
FoundationDB every read that waits costs a network round trip, so code with several
independent reads issues them all before waiting on any (``get_many`` and ``get_ranges``
do that for lists).  ``batched_reads`` tells code whether that matters: where it is false
(the embedded store), a read costs no more than a function call.

Every transaction counts its *read rounds*: how many times it waited for reads, reads issued
together counting once (:class:`ReadRounds`).  That is the number of sequential round trips
an operation costs on a network store, the same on every backend, so tests can assert it;
``Database.stats`` sums it with the reads, commits and retries of every transaction.

Every backend enforces FoundationDB's limits (key and value size, bytes written per
transaction) so code that would fail on FoundationDB fails on the embedded store too.
"""

from __future__ import annotations

import abc
import contextlib
import contextvars
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

from ..freshness import check_staleness, check_version

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

KeyValue = tuple[bytes, bytes]
RangeRequest = tuple[bytes, bytes, int, bool]  # (begin, end, limit, reverse)
Outcome = tuple[Any, "BaseException | None"]  # a call's result, or the exception it raised

# FoundationDB's metadata version: a stamp every transaction's read version comes with, changed
# by every transaction that changes what caches of metadata hold (``Transaction.changed_metadata``).
METADATA_VERSION_KEY = b"\xff/metadataVersion"

# FoundationDB's documented limits.
MAX_KEY_SIZE = 10_000
MAX_VALUE_SIZE = 100_000
MAX_TRANSACTION_BYTES = 10_000_000


class StoreError(Exception):
    """Base class of errors raised by the store layer."""


class KeyTooLarge(StoreError):
    """A key is longer than the backend accepts (FoundationDB error 2102)."""


class ValueTooLarge(StoreError):
    """A value is longer than 100,000 bytes (FoundationDB error 2103)."""


class TransactionTooLarge(StoreError):
    """A transaction wrote more than 10,000,000 bytes (FoundationDB error 2101)."""


class TransactionTimedOut(StoreError):
    """A transaction ran longer than FoundationDB's 5 seconds (error 1007 there)."""


class InvertedRange(StoreError):
    """A range operation's begin is after its end (FoundationDB error 2005)."""


class ReadOnlyTransaction(StoreError):
    """A write was attempted in a transaction opened with ``Database.read``."""


class StoreFull(StoreError):
    """The store has no room left for what is written (the embedded store's map or disk)."""


class FenceMoved(StoreError):
    """Writes guarded by a fence key found it changed: another process took over their data."""


class StoreUnavailable(StoreError):
    """The backend cannot be used here (missing client library, unreachable cluster...)."""


# The monotonic time by which the call being served must be answered (None: no deadline): a store
# that waits for a cluster stops waiting then (see :func:`call_deadline`).
_CALL_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("call_deadline", default=None)


@contextlib.contextmanager
def call_deadline(seconds: float) -> Iterator[None]:
    """Transactions run in this context wait for the store at most until ``seconds`` from now
    (retries included; FoundationDB's ``timeout``), so a call served with a deadline is answered
    before it, with StoreUnavailable if the cluster did not answer.  ``inf``: no bound."""
    token = _CALL_DEADLINE.set(time.monotonic() + seconds if seconds != float("inf") else None)
    try:
        yield
    finally:
        _CALL_DEADLINE.reset(token)


class ReadBounds(NamedTuple):
    """How fresh the reads of the call being served must be (see :func:`read_bounds`)."""

    max_staleness: float = 0.0  # seconds: 0, every write acknowledged before the call is seen
    min_version: int = 0  # a commit version the reads must see at least (0: none)


_EXACT = ReadBounds()
_READ_BOUNDS: contextvars.ContextVar[ReadBounds | None] = contextvars.ContextVar("read_bounds", default=None)


@contextlib.contextmanager
def read_bounds(max_staleness: int = 0, min_version: int = 0) -> Iterator[None]:
    """Read transactions run in this context (this thread, or this task) may use a read version
    up to ``max_staleness`` milliseconds old (0 to 5000; 0, the default: exact), the newest the
    process has seen from read versions and commits, if it is that young; and they see at least
    commit ``min_version`` (a write's ``Database.last_commit_versions()``, or the
    ``commit-version`` a server answered).  A store without versions (the embedded one) always
    reads the latest state, which meets any bound.  The same option as the clients'
    ``max_staleness`` and the servers' ``max-staleness-ms``."""
    bounds = ReadBounds(check_staleness(max_staleness) / 1000, check_version(min_version))
    token = _READ_BOUNDS.set(bounds)
    try:
        yield
    finally:
        _READ_BOUNDS.reset(token)


def current_read_bounds() -> ReadBounds:
    return _READ_BOUNDS.get() or _EXACT


def call_time_left() -> float | None:
    """Seconds left before the current call's deadline (None: no deadline; never below 0)."""
    deadline = _CALL_DEADLINE.get()
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def encode_int64(value: int) -> bytes:
    """Little-endian two's-complement int64, the encoding of atomic ADD operands."""
    return (value & 0xFFFF_FFFF_FFFF_FFFF).to_bytes(8, "little")


def decode_int64(data: bytes) -> int:
    """Inverse of :func:`encode_int64`; shorter values are zero-extended as FoundationDB does."""
    return int.from_bytes(data[:8].ljust(8, b"\x00"), "little", signed=True)


def apply_add(existing: bytes | None, param: bytes) -> bytes:
    """FoundationDB ADD: little-endian addition truncated/extended to ``len(param)``."""
    width = len(param)
    old = int.from_bytes((existing or b"")[:width], "little")
    return ((old + int.from_bytes(param, "little")) % (1 << (8 * width))).to_bytes(width, "little")


def apply_max(existing: bytes | None, param: bytes) -> bytes:
    """FoundationDB MAX: the larger of two little-endian unsigned integers of ``len(param)`` bytes."""
    width = len(param)
    old = (existing or b"")[:width].ljust(width, b"\x00")
    return param if int.from_bytes(param, "little") >= int.from_bytes(old, "little") else old


def apply_min(existing: bytes | None, param: bytes) -> bytes:
    """FoundationDB MIN: like MAX but the smaller; an absent value becomes ``param``."""
    if existing is None:
        return param
    width = len(param)
    old = existing[:width].ljust(width, b"\x00")
    return param if int.from_bytes(param, "little") <= int.from_bytes(old, "little") else old


def option_boolean(text: str, name: str) -> bool:
    """A store URL option's true/false value (1/0, yes/no and on/off too)."""
    lowered = text.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"option {name} must be true or false, not {text!r}")


def strinc(prefix: bytes) -> bytes:
    """The first key after every key that starts with ``prefix`` (FoundationDB's strinc)."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        raise ValueError("a key made only of 0xff bytes has no successor prefix")
    return stripped[:-1] + bytes([stripped[-1] + 1])


class Future(Protocol[T_co]):
    """A read issued and not waited on yet: ``value`` waits for it."""

    @property
    def value(self) -> T_co: ...


class ReadRounds:
    """A transaction's sequential read rounds, and the reads it issued.

    A read issued while ``count`` is ``r`` and waited on while it is still ``r`` starts round
    ``r + 1``; a read issued before that wait was in flight with it and costs no round of its
    own.  A plain (synchronous) read is issued and waited on at once: one round each.
    """

    __slots__ = ("count", "reads")

    def __init__(self) -> None:
        self.count = 0
        self.reads = 0

    def waited(self, issued: int) -> None:
        if issued == self.count:
            self.count += 1


class CountedRead(Generic[T]):
    """A read issued in a transaction and counted in its :class:`ReadRounds`: ``value`` notes the
    wait, then takes the answer (``_answer``, each backend's)."""

    __slots__ = ("_rounds", "_issued")

    def __init__(self, rounds: ReadRounds) -> None:
        self._rounds = rounds
        self._issued = rounds.count
        rounds.reads += 1

    @property
    def value(self) -> T:
        self._rounds.waited(self._issued)
        return self._answer()

    def _answer(self) -> T:
        raise NotImplementedError


class Answered(CountedRead[T]):
    """A future whose read was answered when issued (a backend without round trips)."""

    __slots__ = ("_value",)

    def __init__(self, value: T, rounds: ReadRounds) -> None:
        super().__init__(rounds)
        self._value = value

    def _answer(self) -> T:
        return self._value


class StoreStats:
    """Counters summed over an open store's transactions (benchmarks and tests read them).

    ``writes`` counts the mutations a transaction made (set, clear, clear_range, atomic ops)
    and ``bytes_written`` their key and value (or operand) bytes, range clears counting both
    bounds: the mutations' share of FoundationDB's transaction size, which adds conflict
    ranges.  Like the read rounds, they count the attempt that finished (not retried ones).
    ``cached_reads`` counts the reads a metadata cache answered instead of the store.
    """

    FIELDS = (
        "transactions",
        "read_rounds",
        "reads",
        "commits",
        "retries",
        "conflicts",
        "unknown_results",
        "writes",
        "bytes_written",
        "cached_reads",
    )

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(self.FIELDS, 0)

    def add(self, **counts: int) -> None:
        with self._lock:
            for name, count in counts.items():
                self._counts[name] += count

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)


class ReadView(abc.ABC):
    """Reads of one transaction.  Results are in key order; ``end`` is exclusive."""

    # Whether reads cost a round trip: then independent reads should be issued together, and a
    # wider read that saves a round is worth it.
    batched_reads = False

    @property
    @abc.abstractmethod
    def rounds(self) -> ReadRounds:
        """This transaction's read rounds (shared with its ``snapshot`` view)."""

    @abc.abstractmethod
    def get(self, key: bytes) -> bytes | None:
        """The value at ``key``, or None."""

    @abc.abstractmethod
    def get_async(self, key: bytes) -> Future[bytes | None]:
        """``get`` issued now, waited on through the future's ``value``."""

    @abc.abstractmethod
    def get_range_async(
        self, begin: bytes, end: bytes, limit: int = 0, reverse: bool = False
    ) -> Future[list[KeyValue]]:
        """``get_range`` issued now, waited on through the future's ``value``."""

    def get_many(self, keys: Sequence[bytes]) -> list[bytes | None]:
        """Values of several keys, read concurrently (one round)."""
        futures = [self.get_async(key) for key in keys]
        return [future.value for future in futures]

    @abc.abstractmethod
    def get_range(self, begin: bytes, end: bytes, limit: int = 0, reverse: bool = False) -> list[KeyValue]:
        """Pairs with ``begin <= key < end``; ``limit`` 0 means all; ``reverse`` starts at the end."""

    def get_ranges(self, requests: Sequence[RangeRequest]) -> list[list[KeyValue]]:
        """Several range reads, issued concurrently (one round)."""
        futures = [self.get_range_async(*request) for request in requests]
        return [future.value for future in futures]

    def last_keys(self, requests: Sequence[tuple[bytes, bytes]]) -> list[bytes | None]:
        """For each ``(begin, end)``, the last key in ``[begin, end)`` or None; concurrently
        where the backend can.  (A reverse range read of one key, without its value.)"""
        found = self.get_ranges([(begin, end, 1, True) for begin, end in requests])
        return [rows[0][0] if rows else None for rows in found]

    def iter_range(self, begin: bytes, end: bytes, page: int = 1000) -> Iterator[KeyValue]:
        """Every pair in ``[begin, end)``, read ``page`` at a time (for long scans)."""
        while True:
            rows = self.get_range(begin, end, page)
            yield from rows
            if len(rows) < page:
                return
            begin = rows[-1][0] + b"\x00"

    def get_range_startswith(self, prefix: bytes, limit: int = 0, reverse: bool = False) -> list[KeyValue]:
        """Pairs whose key starts with ``prefix``."""
        return self.get_range(prefix, strinc(prefix), limit, reverse)


class Transaction(ReadView):
    """One transaction: reads see its own writes; nothing is visible to others until commit."""

    # Whether read conflict ranges matter here (FoundationDB); callers may skip declaring them.
    declares_conflicts = True
    # Whether clear_range costs the same however many keys it clears (FoundationDB); elsewhere a
    # large range is cleared in bounded steps.
    clears_ranges_at_once = False
    # What a metadata cache knows, or collects, for the index this transaction works on (set by
    # the layer that keeps the cache: ``service/catalog.py``); None: nothing, read everything.
    cached: Any = None

    def changed_metadata(self) -> None:
        """Note that this transaction changes metadata that caches hold (a catalog entry, an
        index's directory or sub-directories): on FoundationDB it changes the metadata version
        (a versionstamped value), so every cache checked against it is stale once it commits."""

    def metadata_stamp(self) -> Future[bytes | None] | None:
        """The store's metadata version at this transaction's read version (a snapshot read,
        free on FoundationDB: it comes with the read version), or None where the store has none
        or this transaction changed it (then it cannot be read here)."""
        return None

    @property
    @abc.abstractmethod
    def snapshot(self) -> ReadView:
        """Reads that add no read conflict ranges (FoundationDB snapshot reads)."""

    @abc.abstractmethod
    def set(self, key: bytes, value: bytes) -> None: ...

    def set_many(self, pairs: Sequence[KeyValue]) -> None:
        """``set`` each ``(key, value)`` in turn (in one call where the backend can)."""
        for key, value in pairs:
            self.set(key, value)

    @abc.abstractmethod
    def clear(self, key: bytes) -> None: ...

    @abc.abstractmethod
    def clear_range(self, begin: bytes, end: bytes) -> None: ...

    def clear_range_startswith(self, prefix: bytes) -> None:
        self.clear_range(prefix, strinc(prefix))

    @abc.abstractmethod
    def add(self, key: bytes, param: bytes) -> None:
        """Atomic little-endian ADD (FoundationDB ``MutationType.ADD``)."""

    @abc.abstractmethod
    def max(self, key: bytes, param: bytes) -> None:
        """Atomic little-endian unsigned MAX (FoundationDB ``MutationType.MAX``)."""

    @abc.abstractmethod
    def min(self, key: bytes, param: bytes) -> None:
        """Atomic little-endian unsigned MIN (FoundationDB ``MutationType.MIN``)."""

    @abc.abstractmethod
    def add_read_conflict_range(self, begin: bytes, end: bytes) -> None: ...

    def add_read_conflict_key(self, key: bytes) -> None:
        self.add_read_conflict_range(key, key + b"\x00")

    def add_read_conflict_ranges(self, ranges: Sequence[tuple[bytes, bytes]]) -> None:
        """:meth:`add_read_conflict_range` for each ``(begin, end)`` (in one call where the backend can)."""
        for begin, end in ranges:
            self.add_read_conflict_range(begin, end)


class BlindWrites:
    """Sets that read nothing, committed in bounded transactions of their own, in any order.

    For data no one reads until it is complete (a window built from sorted data): each ``set``
    joins the current chunk, and a chunk of about ``chunk_bytes`` is committed as one
    transaction.  Writes of absolute values are idempotent, so a chunk whose commit failed or
    whose outcome is unknown is simply written again.  This one commits each chunk through
    ``db.run`` before taking the next (the embedded store commits one transaction at a time
    anyway); FoundationDB's keeps several chunks in flight.  :meth:`flush` returns once every
    chunk given so far is committed; an error of any chunk is raised by the call that meets it.

    With ``fences``, pairs ``(key, value)``, each chunk's transaction first reads every ``key``
    and commits only if each holds its ``value``, else raises FenceMoved: the owner of data kept
    under leases stops writing it as soon as another process has taken over any part of it
    (changed one of the keys), however late it is.
    """

    def __init__(self, db: Database, chunk_bytes: int, fences: Sequence[tuple[bytes, bytes]] = ()) -> None:
        self.db = db
        self.chunk_bytes = chunk_bytes
        self.fences = list(fences)
        self._chunk: list[KeyValue] = []
        self._size = 0
        self.keys = 0  # keys written (committed or in flight)
        self.bytes = 0

    def set(self, key: bytes, value: bytes) -> None:
        self._chunk.append((key, value))
        self._size += len(key) + len(value)
        if self._size >= self.chunk_bytes:
            self._send()

    def _send(self) -> None:
        chunk, self._chunk = self._chunk, []
        self.keys += len(chunk)
        self.bytes += self._size
        self._size = 0
        if chunk:
            self._commit(chunk)

    def _commit(self, chunk: list[KeyValue]) -> None:
        def write(tr: Transaction) -> None:
            if self.fences:
                self.check_fences(tr.get_many([key for key, _ in self.fences]))
            tr.set_many(chunk)

        self.db.run(write)

    def check_fences(self, found: Sequence[bytes | None]) -> None:
        """Raise FenceMoved unless ``found``, the fence keys' values read, are the fences' own."""
        if any(value != expected for value, (_, expected) in zip(found, self.fences, strict=True)):
            raise FenceMoved("another process took over the data these writes build (a fence key changed)")

    def flush(self) -> None:
        """Commit what was written so far and wait until every chunk is committed."""
        self._send()

    def __enter__(self) -> BlindWrites:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            self.flush()


class Database(abc.ABC):
    """A store opened by :func:`fdb_leaderboard.store.open_database`."""

    url: str
    stats: StoreStats
    batched_reads: bool = False  # whether its transactions' reads cost round trips (see ReadView)
    clears_ranges_at_once: bool = False  # its transactions' (see Transaction.clears_ranges_at_once)
    shared_by_processes: bool = False  # whether other processes may open the store while this one has it
    commits_together: bool = False  # whether commit_together shares one commit among its calls
    metadata_stamps: bool = False  # whether transactions give a metadata version (metadata_stamp)

    @abc.abstractmethod
    def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Call ``fn(tr, *args, **kwargs)`` in a read-write transaction and commit it.

        Retried on conflict, so ``fn`` must have no side effects outside the
        transaction.  If ``fn`` raises, nothing it wrote is kept.
        """

    @abc.abstractmethod
    def read(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Like :meth:`run` for functions that only read; writes raise ReadOnlyTransaction."""

    @abc.abstractmethod
    def close(self) -> None: ...

    def last_commit_versions(self) -> list[int]:
        """The commit versions of this thread's last ``run`` (one) or ``run_together`` (one per
        call; 0 for a call that committed nothing), where the store has versions; else []."""
        return []

    def last_read_since(self) -> float | None:
        """When (``time.monotonic``) the state this thread's last bounded-staleness read saw was
        current: every write acknowledged before then is in it (None: not known; then forgotten)."""
        return None

    def newest_version(self) -> int | None:
        """A version every read this process starts from now on reads at or after (FoundationDB:
        the newest it has seen, 0 before its first bounded-staleness read); None where the store
        has no versions (the embedded store, whose reads always see the latest commit)."""
        return None

    def newest_seen(self) -> tuple[int, float] | None:
        """:meth:`newest_version` and the time (``time.monotonic``) from which its state holds:
        a read at that version or a later one holds every write acknowledged before then."""
        return None

    def commit_together(self) -> contextlib.AbstractContextManager[None]:
        """A block whose ``run`` calls (made by this thread) commit together as it ends, where
        ``commits_together`` says the store can; elsewhere each commits on its own, as always."""
        return contextlib.nullcontext()

    def blind_writes(self, fences: Sequence[tuple[bytes, bytes]] = ()) -> BlindWrites:
        """Sets committed in bounded transactions of the store's best size, as many in flight as
        it takes, guarded by ``fences`` (see :class:`BlindWrites`)."""
        return BlindWrites(self, 1 << 20, fences)

    def room(self) -> tuple[int, str] | None:
        """How many more bytes the store can take, and what bounds them (None: no bound known
        here, as on a cluster): long jobs check it to stop, clearly, before the store is full."""
        return None

    def run_together(self, calls: Sequence[Callable[[], T]]) -> list[Outcome]:
        """Call each of ``calls`` (functions whose store work is this store's ``run``), sharing
        commits where ``commits_together`` says the store can; each call's outcome, in order:
        ``(result, None)`` or ``(None, the exception it raised)``.

        Here (and on the embedded store) they run in one :meth:`commit_together` block: a call
        that raises keeps nothing and fails no other, and a failed commit is every call's
        outcome.  FoundationDB runs them in shared transactions instead (``fdb_shared.py``).
        """
        outcomes: list[Outcome] = []
        try:
            with self.commit_together():
                for call in calls:
                    try:
                        outcomes.append((call(), None))
                    except Exception as exc:
                        outcomes.append((None, exc))
        except Exception as exc:  # the commit failed: nothing the block ran was kept
            outcomes = [(None, exc if error is None else error) for _, error in outcomes]
        return outcomes

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class WrappedDatabase(Database):
    """A store seen through a layer that adds to its transactions (timing them, checking them):
    ``run``, ``read`` and ``close`` go to ``inner`` unless a subclass changes them, and so does
    everything else the store has (``stats``, ``batched_reads``, a backend's own counters)."""

    def __init__(self, inner: Database) -> None:
        self.inner = inner
        self.url = inner.url

    def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return self.inner.run(fn, *args, **kwargs)

    def read(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return self.inner.read(fn, *args, **kwargs)

    def close(self) -> None:
        self.inner.close()

    # Class attributes of Database would hide the store's own values from __getattr__.
    @property
    def batched_reads(self) -> bool:  # type: ignore[override]
        return self.inner.batched_reads

    @property
    def clears_ranges_at_once(self) -> bool:  # type: ignore[override]
        return self.inner.clears_ranges_at_once

    @property
    def shared_by_processes(self) -> bool:  # type: ignore[override]
        return self.inner.shared_by_processes

    @property
    def commits_together(self) -> bool:  # type: ignore[override]
        return self.inner.commits_together

    @property
    def metadata_stamps(self) -> bool:  # type: ignore[override]
        return self.inner.metadata_stamps

    def commit_together(self) -> contextlib.AbstractContextManager[None]:
        return self.inner.commit_together()

    def blind_writes(self, fences: Sequence[tuple[bytes, bytes]] = ()) -> BlindWrites:
        return self.inner.blind_writes(fences)

    def room(self) -> tuple[int, str] | None:
        return self.inner.room()

    def run_together(self, calls: Sequence[Callable[[], T]]) -> list[Outcome]:
        return self.inner.run_together(calls)

    def last_commit_versions(self) -> list[int]:
        return self.inner.last_commit_versions()

    def newest_version(self) -> int | None:
        return self.inner.newest_version()

    def newest_seen(self) -> tuple[int, float] | None:
        return self.inner.newest_seen()

    def last_read_since(self) -> float | None:
        return self.inner.last_read_since()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
