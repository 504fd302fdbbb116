"""Store backends behind one transactional ordered key-value interface.

``open_database(url)`` understands:

- ``lmdb:PATH`` (or ``lmdb:///abs/path``): the embedded store in directory PATH, created if
  missing.  Options as a query string: ``durable`` (default true: every acknowledged commit
  survives power loss), ``redo_log`` (default, when durable: commits made durable by a synced
  log, see ``redo_log.py``, unless processes syncing pages have the store open, which an opener
  then joins; false: by syncing their pages), ``group_commit`` (default true),
  ``map_size`` (bytes of address space), ``transaction_seconds`` (default 5, FoundationDB's
  limit; 0 disables), ``checkpoint_seconds`` (default 1: how often the redo log's checkpoints
  sync the data file) and ``log_segment_bytes`` (default 4 MiB: the log's preallocated segments).
- ``fdb:`` (default cluster file) or ``fdb:CLUSTER_FILE``: FoundationDB through the
  official bindings.  Options ``api_version`` (default: the installed binding's latest),
  ``timeout`` (default 10 seconds, 0: none): how long a call may wait for the cluster,
  retries included, before it raises StoreUnavailable, and ``direct`` (default true): reads,
  writes and commits through the C extension ``_fdb_direct`` when it is built, the binding's
  ctypes calls otherwise (false: always the binding).

| module | holds |
|---|---|
| ``api.py`` | the interface every backend implements: transactions, reads, limits, errors |
| ``lmdb_backend.py`` | the embedded store's database, opened from its URL |
| ``lmdb_environment.py`` | the LMDB environment a process shares, in one durability mode |
| ``lmdb_transactions.py`` | LMDB transactions: snapshot reads, checked writes, time limit |
| ``lmdb_group_commit.py`` | callers' writes queued and committed once for all |
| ``redo_log.py``, ``redo_format.py`` | the embedded store's redo log and its records |
| ``store_lock.py`` | the lock that keeps every process on a store in one mode |
| ``fdb_backend.py`` | FoundationDB's database: retries, commit markers, time limits |
| ``fdb_binding.py`` | loading the binding, the direct calls, the error codes told apart |
| ``fdb_transactions.py`` | FoundationDB transactions: reads, their futures, checked writes |
| ``fdb_shared.py``, ``fdb_blind_writes.py`` | ``run_together``'s shared transactions; blind writes |
| ``_fdb_direct.c`` | reads, writes and commits straight to the client library (optional at install) |
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

from .api import (
    MAX_KEY_SIZE,
    MAX_TRANSACTION_BYTES,
    MAX_VALUE_SIZE,
    Database,
    InvertedRange,
    KeyTooLarge,
    KeyValue,
    ReadOnlyTransaction,
    ReadView,
    StoreError,
    StoreFull,
    StoreUnavailable,
    Transaction,
    TransactionTimedOut,
    TransactionTooLarge,
    ValueTooLarge,
    decode_int64,
    encode_int64,
    read_bounds,
    strinc,
)


def parse_url(url: str) -> tuple[str, str, dict[str, str]]:
    """Split a store URL into (scheme, path, options)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("lmdb", "fdb"):
        raise ValueError(f"unknown store URL {url!r}: expected lmdb:PATH or fdb:[CLUSTER_FILE]")
    path = parts.netloc + parts.path
    options = dict(parse_qsl(parts.query, keep_blank_values=True, strict_parsing=False))
    return scheme, path, options


def open_database(url: str) -> Database:
    """Open the store named by ``url`` (see the module docstring)."""
    scheme, path, options = parse_url(url)
    if scheme == "lmdb":
        if not path:
            raise ValueError(f"store URL {url!r} names no directory: use lmdb:PATH")
        from .lmdb_backend import open_lmdb

        return open_lmdb(path, options)
    from .fdb_backend import open_fdb

    return open_fdb(path or None, options)


__all__ = [
    "MAX_KEY_SIZE",
    "MAX_TRANSACTION_BYTES",
    "MAX_VALUE_SIZE",
    "Database",
    "InvertedRange",
    "KeyTooLarge",
    "KeyValue",
    "ReadOnlyTransaction",
    "ReadView",
    "StoreError",
    "StoreFull",
    "StoreUnavailable",
    "Transaction",
    "TransactionTimedOut",
    "TransactionTooLarge",
    "ValueTooLarge",
    "decode_int64",
    "encode_int64",
    "open_database",
    "parse_url",
    "read_bounds",
    "strinc",
]
