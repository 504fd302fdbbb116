"""The file locks that let several processes share one embedded store safely.

| file | lock | held by |
|---|---|---|
| ``redo.gate`` | ``flock``, exclusive | an opener or closer while it decides (below) |
| ``redo.lock`` | ``flock`` | every process that has the store open (shared); an opener finding it free |
| ``redo-log.lock`` | ``flock``, shared | every process of a redo-log session |
| ``durable.lock`` | ``flock``, shared | every durable opener (earlier releases hold it too) |
| ``not-durable.lock`` | ``flock``, shared | every opener with ``durable=false``, and every redo-log opener |
| ``redo.checkpointer`` | POSIX record lock | the one process of a redo-log session that makes its checkpoints |

(An opener that found the store free may recover it, then shares it.)

Openers (and a closer that may be the last) take ``redo.gate`` first, one at a time: ``flock``
may drop a lock before granting its new mode, and no other opener may find the store free in
between.  The three modes (redo log, durable with synced pages, not durable) never mix: a commit
the log did not see would be missing from its replay, and an opener that does not sync would
break a durable server's promise.  A redo-log opener holds both durability files, so a release
from before the shared log (which checks only those) refuses to open a store a session has open.

The checkpointer's lock is a POSIX (``fcntl``) lock, opened before LMDB's own files: a process
that dies releases it with its file descriptors, in descriptor order, before the ``fcntl`` lock by
which LMDB tells that its read transactions (the checkpoint's pin among them) belong to a live
process.  So no other process can find the pin gone while the checkpointer still looks alive.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from collections.abc import Iterator

from .api import StoreError
from .redo_format import FILE_MODE

LOCK_FILE = "redo.lock"
GATE_FILE = "redo.gate"
LOG_FILE = "redo-log.lock"
DURABLE_FILE = "durable.lock"
FAST_FILE = "not-durable.lock"
CHECKPOINTER_FILE = "redo.checkpointer"

LOG, SYNCED, NOT_DURABLE = "redo log", "synced", "not durable"
_OPTIONS = {LOG: "the redo log (the default)", SYNCED: "redo_log=false", NOT_DURABLE: "durable=false"}


def _try_flock(fd: int, operation: int) -> bool:
    try:
        fcntl.flock(fd, operation | fcntl.LOCK_NB)
        return True
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            return False
        raise


class StoreLock:
    """One process's locks on a store directory (see the module docstring)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = self._open(LOCK_FILE)
        try:
            self.checkpointer_fd = self._open(CHECKPOINTER_FILE)
        except BaseException:
            os.close(self.fd)
            raise
        self.checkpointer = False  # whether this process holds the checkpointer's lock
        self.mode_fds: list[int] = []

    def _open(self, name: str) -> int:
        return os.open(os.path.join(self.path, name), os.O_RDWR | os.O_CREAT, FILE_MODE)

    @contextlib.contextmanager
    def gate(self, wait_seconds: float = 60.0) -> Iterator[None]:
        """Hold the store's opening gate (an ``flock`` on its own file) for the block."""
        fd = self._open(GATE_FILE)
        try:
            deadline = time.monotonic() + wait_seconds
            while not _try_flock(fd, fcntl.LOCK_EX):
                if time.monotonic() > deadline:
                    raise StoreError(
                        f"{self.path} has been opening in another process for {wait_seconds:g} s (recovering "
                        "after a crash, or stuck); try again once it is open"
                    )
                time.sleep(0.01)
            yield
        finally:
            os.close(fd)  # releases the gate

    def take(self) -> bool:
        """Inside the gate: hold the store exclusively if no one else has it open (True), else share it."""
        if _try_flock(self.fd, fcntl.LOCK_EX):
            return True
        self.shared()
        return False

    def shared(self) -> None:
        """Hold the store shared (inside the gate no opener holds it exclusively for long)."""
        if not _try_flock(self.fd, fcntl.LOCK_SH):
            raise StoreError(f"{self.path} is held alone by another process; try again once it is open")

    def alone(self) -> bool:
        """Inside the gate, as a process closes: whether no other process has the store open.

        (A refused upgrade may drop this process's shared lock: call it only on the way out.)"""
        return _try_flock(self.fd, fcntl.LOCK_EX)

    def hold_mode(self, mode: str, alone: bool) -> None:
        """Inside the gate: refuse if another process has the store open in another mode, then mark
        this opener's mode (shared locks released when it closes or dies)."""
        if not alone:
            logging = not self._free(LOG_FILE)
            if logging != (mode == LOG):
                other = LOG if logging else "another mode (durable=false or redo_log=false)"
                raise StoreError(
                    f"{self.path} is open in another process with {_OPTIONS.get(other, other)}; open it with the "
                    "same options (or reach it through that process)"
                )
            if mode != LOG:
                other_file = FAST_FILE if mode == SYNCED else DURABLE_FILE
                if not self._free(other_file):
                    raise StoreError(
                        f"{self.path} is open in another process with durable={mode == NOT_DURABLE}; open it with "
                        "the same durability (or reach it through that process)"
                    )
        names = {LOG: (LOG_FILE, DURABLE_FILE, FAST_FILE), SYNCED: (DURABLE_FILE,), NOT_DURABLE: (FAST_FILE,)}[mode]
        for name in names:
            fd = self._open(name)
            self.mode_fds.append(fd)
            fcntl.flock(fd, fcntl.LOCK_SH)

    def session_mode(self) -> str | None:
        """Inside the gate: the mode the processes that have the store open use (None: none has)."""
        for mode, name in ((LOG, LOG_FILE), (SYNCED, DURABLE_FILE), (NOT_DURABLE, FAST_FILE)):
            if not self._free(name):
                return mode
        return None

    def _free(self, name: str) -> bool:
        """Whether no process holds a lock on ``name``."""
        probe = self._open(name)
        try:
            return _try_flock(probe, fcntl.LOCK_EX)
        finally:
            os.close(probe)

    def take_checkpointer(self) -> bool:
        """Become the session's checkpointer if no live process is; True if this process is it."""
        if not self.checkpointer:
            try:
                fcntl.lockf(self.checkpointer_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno in (errno.EAGAIN, errno.EACCES):
                    return False
                raise
            self.checkpointer = True
        return True

    def give_up_checkpointer(self) -> None:
        if self.checkpointer:
            fcntl.lockf(self.checkpointer_fd, fcntl.LOCK_UN)
            self.checkpointer = False

    def close(self) -> None:
        for fd in self.mode_fds:
            os.close(fd)
        self.mode_fds = []
        if self.checkpointer_fd >= 0:
            os.close(self.checkpointer_fd)  # releases the checkpointer's lock
            self.checkpointer_fd, self.checkpointer = -1, False
        if self.fd >= 0:
            os.close(self.fd)  # releases the lock
            self.fd = -1
