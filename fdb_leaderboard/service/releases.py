"""Which releases run on a store: the store's format record and the server processes' reports.

Both live under the catalog's root, beside the indexes:

- ``ROOT + ("format",)``: a ``StoreFormat``, the store's format (``fdb_leaderboard/formats.py``).
  A server opening the store reads it (:func:`open_store`): a format newer than this release reads
  is refused before anything is served; a store holding nothing yet is created at the newest
  format the running processes read; a store written before formats were recorded has no record
  and reads as :data:`~fdb_leaderboard.formats.UNRECORDED_STORE` until ``store upgrade`` raises it.
- ``ROOT + ("processes", id)``: a ``ProcessReport`` per server process while it runs: its release,
  host, pid and address, the newest formats it reads, when it started and its last sign of life.
  :class:`Reporter` writes it when the server starts (before it serves), again every
  ``HEARTBEAT_SECONDS`` on a thread of its own, and removes it when the server stops.  A report
  seen within ``LIVE_SECONDS`` is a live process; one that stopped answering (killed, cut off)
  stops counting after that, and the maintenance forgets reports older than ``FORGET_SECONDS``.
  Each report is one small write to a key only its process writes: nothing conflicts with it.

Formats are raised only when every live process reads the newer one (``upgrades.py``).  A process
that finds the store raised past what it reads (its own report refused) stops serving: the
``on_too_new`` callback.  Reader processes (``readers.py``) run the release of the server that
started them and are covered by its report.  Times are the processes' clocks (Unix seconds): the
hosts' clocks should agree within a few seconds, as they must for the index's notion of now.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable

import fdb.tuple

from .. import formats
from ..proto import index_pb2
from ..store.api import Database, ReadView, Transaction, strinc
from .background import BackgroundLoop

log = logging.getLogger("fdb_leaderboard.service")

HEARTBEAT_SECONDS = 10.0
LIVE_SECONDS = 60.0
FORGET_SECONDS = 24 * 3600.0


def format_key(root: bytes) -> bytes:
    return root + fdb.tuple.pack(("format",))


def reports_prefix(root: bytes) -> bytes:
    return root + fdb.tuple.pack(("processes",))


@dataclasses.dataclass(frozen=True)
class StoreFormatState:
    """The store's format: its version, whether it is recorded (a store written before release
    0.3.0 has no record), and which release set it when."""

    version: int
    recorded: bool
    raised_by: str = ""
    raised_at: int = 0

    @property
    def reporting(self) -> bool:
        """Whether every process on the store reports its release (store format 3 on)."""
        return self.version >= formats.REPORTING


@dataclasses.dataclass(frozen=True)
class Process:
    """A process's report, and whether it is live (reported within ``LIVE_SECONDS``)."""

    id: str
    report: index_pb2.ProcessReport
    live: bool

    @property
    def release(self) -> str:
        return self.report.release


def read_store_format(tr: ReadView, root: bytes) -> StoreFormatState:
    raw = tr.get(format_key(root))
    if raw is None:
        return StoreFormatState(formats.UNRECORDED_STORE, False)
    record = index_pb2.StoreFormat.FromString(raw)
    return StoreFormatState(record.version, True, record.raised_by, record.raised_at)


def write_store_format(tr: Transaction, root: bytes, version: int) -> StoreFormatState:
    record = index_pb2.StoreFormat(version=version, raised_by=formats.RELEASE, raised_at=int(time.time()))
    tr.set(format_key(root), record.SerializeToString())
    return StoreFormatState(version, True, record.raised_by, record.raised_at)


def processes(tr: ReadView, root: bytes, now: float | None = None) -> list[Process]:
    """Every process's report (live or not), by id."""
    now = time.time() if now is None else now
    begin = reports_prefix(root)
    found = []
    for key, raw in tr.get_range(begin, strinc(begin)):
        report = index_pb2.ProcessReport.FromString(raw)
        found.append(Process(fdb.tuple.unpack(key[len(begin) :])[0], report, report.seen_at >= now - LIVE_SECONDS))
    return found


def live_releases(tr: ReadView, root: bytes, now: float | None = None) -> list[str]:
    return [process.release for process in processes(tr, root, now) if process.live]


def _is_fresh(tr: ReadView, root: bytes) -> bool:
    """Whether the root holds nothing but processes' reports (a store no index was made in)."""
    begin = reports_prefix(root)
    return not tr.get_range(root, begin, 1) and not tr.get_range(strinc(begin), strinc(root), 1)


def open_store(tr: Transaction, root: bytes) -> StoreFormatState:
    """In a server's first transaction: the store's format, checked readable; a fresh store is
    recorded at the newest format the processes reporting on it read (FormatTooNew if too new)."""
    state = read_store_format(tr, root)
    if not state.recorded and _is_fresh(tr, root):
        version = formats.creation_format(formats.STORE_FORMATS, live_releases(tr, root), reporting=True)
        return write_store_format(tr, root, version)
    formats.check_readable("store", state.version, "the store", state.raised_by)
    return state


class Reporter(BackgroundLoop):
    """This process's report (see the module docstring), written every ``HEARTBEAT_SECONDS``."""

    thread_name = "process-report"
    failure = "the process report failed; the next one retries"

    def __init__(
        self,
        db: Database,
        root: bytes,
        address: str = "",
        stopping: threading.Event | None = None,
        on_too_new: Callable[[Exception], None] | None = None,
    ) -> None:
        super().__init__(stopping, HEARTBEAT_SECONDS)
        self.db = db
        self.root = root
        self.id = secrets.token_hex(8)
        self.key = reports_prefix(root) + fdb.tuple.pack((self.id,))
        self.report = index_pb2.ProcessReport(
            release=formats.RELEASE,
            host=socket.gethostname(),
            pid=os.getpid(),
            address=address,
            started_at=int(time.time()),
            store_format=formats.NEWEST_STORE,
            index_format=formats.NEWEST_INDEX,
        )
        self.on_too_new = on_too_new
        self.store_format = StoreFormatState(formats.UNRECORDED_STORE, False)

    def report_now(self) -> StoreFormatState:
        """Write the report, in the transaction that checks the store's format (FormatTooNew)."""

        def write(tr: Transaction) -> StoreFormatState:
            state = open_store(tr, self.root)
            self.report.seen_at = int(time.time())
            tr.set(self.key, self.report.SerializeToString())
            return state

        self.store_format = self.db.run(write)
        return self.store_format

    def round(self) -> float:
        try:
            self.report_now()
        except formats.FormatTooNew as exc:
            log.error("%s: this process stops serving the store", exc)
            if self.on_too_new is not None:
                self.on_too_new(exc)
            return 3600.0
        return HEARTBEAT_SECONDS

    def withdraw(self) -> None:
        """Remove the report (the process stops)."""
        try:
            self.db.run(lambda tr: tr.clear(self.key))
        except Exception:  # the store gone: the report stops counting after LIVE_SECONDS
            log.warning("could not remove this process's report from the store", exc_info=True)


def forget_stale(db: Database, root: bytes, now: float | None = None) -> int:
    """Remove reports not renewed for ``FORGET_SECONDS`` (processes that died); returns how many."""
    now = time.time() if now is None else now

    def forget(tr: Transaction) -> int:
        gone = 0
        begin = reports_prefix(root)
        for key, raw in tr.get_range(begin, strinc(begin)):
            if index_pb2.ProcessReport.FromString(raw).seen_at < now - FORGET_SECONDS:
                tr.clear(key)
                gone += 1
        return gone

    return db.run(forget)
