"""The FoundationDB backend: a thin adapter over the official Python bindings.

Pairing the binding with the client library: the ``foundationdb`` package's major.minor
must match the installed ``libfdb_c`` (a 7.3 client needs ``foundationdb==7.3.*``; the
8.0 binding asks for API 800, which every 7.x client refuses).  The API version defaults
to the binding's latest (``fdb.LATEST_API_VERSION``, 710 for the 7.1 binding); override it with the URL option
``api_version`` or the environment variable ``FDB_API_VERSION``.  A process can select
only one API version, so every database it opens uses the first one selected.

A transaction waits as long as the cluster cannot answer (it is down, or has no quorum):
URL option ``timeout`` (seconds, default 10; 0 waits forever) bounds each call, retries
included (FoundationDB's ``transaction_timeout`` database option), and a call that runs out
of it raises StoreUnavailable (gRPC UNAVAILABLE) saying the cluster did not answer in time.
"""

from __future__ import annotations

import importlib.metadata
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from .api import (
    Database,
    InvertedRange,
    KeyTooLarge,
    KeyValue,
    RangeRequest,
    ReadOnlyTransaction,
    ReadView,
    StoreError,
    StoreUnavailable,
    Transaction,
    TransactionTimedOut,
    TransactionTooLarge,
    ValueTooLarge,
)

T = TypeVar("T")

DEFAULT_TIMEOUT_SECONDS = 10.0
_TRANSACTION_TIMED_OUT = 1031  # the `timeout` option ran out (not retryable)
_TRANSACTION_TOO_OLD = 1007  # FoundationDB's 5 s limit

_api_lock = threading.Lock()

# FoundationDB error codes that are the caller's fault, mapped to our exceptions.
_LIMIT_ERRORS = {
    2101: TransactionTooLarge,
    2102: KeyTooLarge,
    2103: ValueTooLarge,
    2005: InvertedRange,
    _TRANSACTION_TOO_OLD: TransactionTimedOut,
}


def load_fdb(api_version: int | None = None) -> Any:
    """Import ``fdb`` and select the API version once per process."""
    try:
        import fdb
    except ImportError as exc:  # pragma: no cover - a runtime dependency
        raise StoreUnavailable("the foundationdb Python package is not installed") from exc
    with _api_lock:
        if fdb.is_api_version_selected():
            return fdb
        version = api_version or int(os.environ.get("FDB_API_VERSION", 0)) or binding_api_version(fdb)
        try:
            fdb.api_version(version)
        except Exception as exc:  # the native client is missing or does not support `version`
            raise StoreUnavailable(
                f"cannot select FoundationDB API version {version} with binding {binding_version()}: {exc}. "
                "Install the FoundationDB client library and the matching `foundationdb` package "
                "(same major.minor), or pass api_version=..."
            ) from exc
    return fdb


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


class _FdbReads(ReadView):
    """Reads through an fdb transaction or its ``snapshot``."""

    __slots__ = ("_tr", "_fdb")

    def __init__(self, tr: Any, fdb: Any) -> None:
        self._tr = tr
        self._fdb = fdb

    def get(self, key: bytes) -> bytes | None:
        return self._tr.get(key).value

    def get_many(self, keys: Sequence[bytes]) -> list[bytes | None]:
        futures = [self._tr.get(key) for key in keys]
        return [future.value for future in futures]

    def _range(self, begin: bytes, end: bytes, limit: int, reverse: bool) -> Any:
        mode = self._fdb.StreamingMode.exact if limit else self._fdb.StreamingMode.want_all
        return self._tr.get_range(begin, end, limit=limit, reverse=reverse, streaming_mode=mode)

    def get_range(self, begin: bytes, end: bytes, limit: int = 0, reverse: bool = False) -> list[KeyValue]:
        return [(kv.key, kv.value) for kv in self._range(begin, end, limit, reverse)]

    def get_ranges(self, requests: Sequence[RangeRequest]) -> list[list[KeyValue]]:
        ranges = [self._range(*request) for request in requests]  # each starts fetching at once
        return [[(kv.key, kv.value) for kv in fetched] for fetched in ranges]


class FdbTransaction(_FdbReads, Transaction):
    __slots__ = ("_snapshot", "_writable")

    def __init__(self, tr: Any, fdb: Any, writable: bool) -> None:
        super().__init__(tr, fdb)
        self._snapshot = _FdbReads(tr.snapshot, fdb)
        self._writable = writable

    @property
    def snapshot(self) -> ReadView:
        return self._snapshot

    def _check(self) -> None:
        if not self._writable:
            raise ReadOnlyTransaction("this transaction was opened with Database.read and cannot write")

    def set(self, key: bytes, value: bytes) -> None:
        self._check()
        self._tr.set(key, value)

    def clear(self, key: bytes) -> None:
        self._check()
        self._tr.clear(key)

    def clear_range(self, begin: bytes, end: bytes) -> None:
        self._check()
        self._tr.clear_range(begin, end)

    def add(self, key: bytes, param: bytes) -> None:
        self._check()
        self._tr.add(key, param)

    def max(self, key: bytes, param: bytes) -> None:
        self._check()
        self._tr.max(key, param)

    def min(self, key: bytes, param: bytes) -> None:
        self._check()
        self._tr.min(key, param)

    def add_read_conflict_range(self, begin: bytes, end: bytes) -> None:
        self._tr.add_read_conflict_range(begin, end)


class FdbDatabase(Database):
    def __init__(
        self,
        cluster_file: str | None,
        api_version: int | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    ) -> None:
        self._fdb = load_fdb(api_version)
        self.url = f"fdb:{cluster_file or ''}"
        self.timeout_seconds = timeout_seconds
        try:
            self._db = self._fdb.open(cluster_file) if cluster_file else self._fdb.open()
        except Exception as exc:
            raise StoreUnavailable(f"cannot open FoundationDB cluster {cluster_file or '(default)'}: {exc}") from exc
        # Counted from a transaction's creation, across its retries (API >= 610); 0 disables it.
        self._db.options.set_transaction_timeout(round(timeout_seconds * 1000))

    def _transact(self, writable: bool, fn: Callable[..., T], args: tuple, kwargs: dict) -> T:
        if self._db is None:
            raise StoreError(f"database {self.url} is closed")
        tr = self._db.create_transaction()
        last_retried = None
        while True:
            try:
                result = fn(FdbTransaction(tr, self._fdb, writable), *args, **kwargs)
                if writable:
                    tr.commit().wait()
                return result
            except self._fdb.FDBError as error:
                if error.code == _TRANSACTION_TIMED_OUT:
                    raise self._timed_out(writable, last_retried) from error
                mapped = _LIMIT_ERRORS.get(error.code)
                if mapped is not None and not (error.code == _TRANSACTION_TOO_OLD and not writable):
                    raise mapped(f"FoundationDB error {error.code}: {error.description}") from error
                last_retried = error.code
                tr.on_error(error).wait()  # raises when the error is not retryable

    def _timed_out(self, writable: bool, last_retried: int | None) -> StoreError:
        """The error for a call that ran out of ``timeout`` (its last retry's cause tells which)."""
        if last_retried == _TRANSACTION_TOO_OLD:  # a read retried past 5 s until the timeout
            return TransactionTimedOut(
                f"a read ran longer than FoundationDB's 5 second limit on every attempt for {self.timeout_seconds:g} s; "
                "split the work into smaller transactions"
            )
        unsure = " A write that timed out may or may not have been committed." if writable else ""
        return StoreUnavailable(
            f"the FoundationDB cluster {self.url} did not answer in time: the call ran out of its "
            f"{self.timeout_seconds:g} s transaction timeout (the cluster may be down or overloaded); retry later.{unsure}"
        )

    def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return self._transact(True, fn, args, kwargs)

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
    known = {"api_version", "timeout"}
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
    return FdbDatabase(cluster_file, version, timeout)


__all__ = ["FdbDatabase", "FdbTransaction", "binding_api_version", "binding_version", "load_fdb", "open_fdb"]
