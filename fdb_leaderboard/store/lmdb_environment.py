"""The LMDB environment of a store directory: opened once per process and shared by its
databases, in one durability mode with the other processes (``store_lock.py``), its redo log
started or joined as the store's format allows.
"""

from __future__ import annotations

import contextlib
import os
import threading

import fdb.tuple
import lmdb

from .. import formats
from ..proto import index_pb2
from . import redo_log as redo
from .api import (
    StoreError,
)
from .lmdb_transactions import _apply_writes
from .store_lock import LOG, NOT_DURABLE, SYNCED, StoreLock

DEFAULT_MAP_SIZE = 1 << 40  # address space only; the file grows as data is written
DEFAULT_TRANSACTION_SECONDS = 5.0


# The service's catalog root (service.catalog.ROOT, which this layer may not import) and its
# store format's key there (service.releases.format_key).
CATALOG_ROOT = fdb.tuple.pack(("lb",))
_STORE_FORMAT_KEY = CATALOG_ROOT + fdb.tuple.pack(("format",))


def log_refused_by_format(env: lmdb.Environment) -> int | None:
    """The store's format if it is below the redo log's (a catalog there, its format recorded
    lower or not at all: releases before 0.3.0 serve it), else None: the log may be written.
    A store with nothing under the catalog's root (new, or used without a catalog) is written
    at the newest format."""
    with env.begin() as txn:
        raw = txn.get(_STORE_FORMAT_KEY)
        if raw is not None:
            version = index_pb2.StoreFormat.FromString(raw).version
            return version if version < formats.REDO_LOG else None
        cursor = txn.cursor()
        if cursor.set_range(CATALOG_ROOT) and cursor.key().startswith(CATALOG_ROOT):
            return formats.UNRECORDED_STORE
    return None


class _Env:
    """One LMDB environment per path per process (LMDB forbids opening it twice)."""

    registry: dict[str, _Env] = {}
    registry_lock = threading.Lock()

    def __init__(
        self,
        path: str,
        durable: bool,
        map_size: int,
        redo_log: bool | None,
        checkpoint_seconds: float,
        segment_bytes: int,
    ) -> None:
        """``redo_log`` None (the default of a durable opener): the redo log, unless other processes
        have the store open syncing pages (``redo_log=false``, or a release before the shared log,
        such as 0.2.0): such an opener joins them, so both releases serve one store during an upgrade.
        An opener starting a session (alone) takes the log only where the store's format allows it
        (:func:`log_refused_by_format`): below store format 4 it syncs pages, and ``redo_log=True``
        is refused."""
        os.makedirs(path, mode=redo.DIRECTORY_MODE, exist_ok=True)
        # One made beforehand (0755 by the usual umask) becomes the owner's only too (unless it is
        # another user's: its files are the owner's only all the same).
        if os.stat(path).st_mode & 0o077:
            with contextlib.suppress(PermissionError):
                os.chmod(path, redo.DIRECTORY_MODE)
        self.path = path
        self.durable = durable
        # Before LMDB opens its files: the checkpointer's lock must go before LMDB's at death.
        self.lock = StoreLock(path)

        def open_env() -> lmdb.Environment:
            return lmdb.open(
                path,
                map_size=map_size,
                sync=durable and not redo_log,
                metasync=durable and not redo_log,
                max_readers=1024,
                max_dbs=0,
                readahead=False,
                mode=redo.FILE_MODE,
            )

        try:
            with self.lock.gate():
                alone = self.lock.take()
                named = redo_log
                if redo_log is None:
                    redo_log = alone or self.lock.session_mode() != SYNCED
                # Only an opener holding the store alone may repair what a crashed redo-log session left.
                self.env = redo.recover(path, open_env, _apply_writes)[0] if alone else open_env()
                try:
                    # Alone, it starts the session: the log only where the store's format allows it.
                    if alone and redo_log and (version := log_refused_by_format(self.env)) is not None:
                        if named:
                            raise StoreError(
                                f"{path} holds a store at format {version}: the redo log needs store format "
                                f"{formats.REDO_LOG}, which releases before 0.3.0 cannot read (raise it with "
                                "`fdb-leaderboard store upgrade` once no such release serves it, or open it "
                                "with redo_log=false)"
                            )
                        self.env.close()
                        redo_log = False
                        self.env = open_env()
                    self.redo_log = redo_log
                    self.lock.hold_mode(LOG if redo_log else SYNCED if durable else NOT_DURABLE, alone)
                    if alone or not redo_log:
                        # Drop reader slots left by killed processes; in a redo-log session only its
                        # checkpointer may, once a pin of its own protects the last checkpoint.
                        self.env.reader_check()
                    self.log = (
                        redo.RedoLog(path, self.env, self.lock, alone, checkpoint_seconds, segment_bytes)
                        if redo_log
                        else None
                    )
                    if alone:
                        self.lock.shared()
                except BaseException:
                    self.env.close()
                    raise
        except BaseException:
            self.lock.close()
            raise
        self.users = 0

    @classmethod
    def acquire(
        cls,
        path: str,
        durable: bool,
        map_size: int,
        redo_log: bool | None,
        checkpoint_seconds: float,
        segment_bytes: int,
    ) -> _Env:
        path = os.path.realpath(path)
        with cls.registry_lock:
            shared = cls.registry.get(path)
            if shared is None:
                shared = cls.registry[path] = cls(path, durable, map_size, redo_log, checkpoint_seconds, segment_bytes)
            elif shared.durable != durable or redo_log not in (None, shared.redo_log):
                raise StoreError(
                    f"{path} is already open in this process with durable={shared.durable}, "
                    f"redo_log={shared.redo_log}; one process must open it with one durability setting"
                )
            shared.users += 1
            return shared

    def release(self) -> None:
        with self.registry_lock:
            self.users -= 1
            if self.users == 0:
                del self.registry[self.path]
                if self.log is None:
                    self._close()
                    return
                try:
                    # Inside the gate no other process opens or closes: the last one out ends the
                    # session, and the next opener finds everything closed.
                    with self.lock.gate():
                        try:
                            self.log.close(alone=self.lock.alone())
                        finally:
                            self._close()
                finally:
                    if self.lock.fd >= 0:  # the gate could not be taken: leave the session to the others
                        try:
                            self.log.close(alone=False)
                        finally:
                            self._close()

    def _close(self) -> None:
        self.env.close()
        self.lock.close()
