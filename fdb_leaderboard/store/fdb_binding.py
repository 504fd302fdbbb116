"""The FoundationDB binding and its client library: the API version selected, the direct calls
(``_fdb_direct``) bound to the library, and the error codes the backend tells apart.
"""

from __future__ import annotations

import importlib.metadata
import os
import threading
from typing import Any

try:
    from . import _fdb_direct
except ImportError:  # not built (no compiler at install time): the binding does the calls
    _fdb_direct = None  # type: ignore[assignment]

from .api import (
    InvertedRange,
    KeyTooLarge,
    StoreUnavailable,
    TransactionTooLarge,
    ValueTooLarge,
)

_TRANSACTION_TIMED_OUT = 1031  # the `timeout` option ran out (not retryable)
_TRANSACTION_TOO_OLD = 1007  # FoundationDB's 5 s limit, or a recovery since the attempt began
_api_lock = threading.Lock()
_direct_bound = False  # whether _fdb_direct has the client library's functions

# FoundationDB error codes that are the caller's fault, mapped to our exceptions.
_LIMIT_ERRORS = {
    2101: TransactionTooLarge,
    2102: KeyTooLarge,
    2103: ValueTooLarge,
    2005: InvertedRange,
}


# Errors after which a commit may or may not have happened (commit_unknown_result,
# transaction_timed_out, cluster_version_changed): the retry must find out before redoing it.
# A timed-out call is not retried (its ``timeout`` is spent) but still records the attempt,
# so its StoreUnavailable can say whether the write may have committed.
_MAYBE_COMMITTED = {1021, 1031, 1039}
CONFLICT = 1020


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
