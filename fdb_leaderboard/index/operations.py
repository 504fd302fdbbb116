"""Running the index's operations in store transactions: :class:`Operations`, one transaction's
concerns, and :class:`IndexRunner`, the base of the facade that runs them (plainly, read-only, or
once per idempotency key) and takes the audit events of admin calls.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from .. import formats
from ..store.api import Database
from . import tuplecodec as tuples
from .audit import LOCAL_ACTOR, AuditTrail, JobEvents, PendingEvent
from .deletion import Deleter
from .fill import Filler
from .hiding import Hider
from .idempotency import DEFAULT_MAX_KEYS, AppliedRequests, Replayed, check_key, digest
from .metadata import Metadata
from .records import RecordWriter
from .settings import IndexSettings
from .space import IndexSpace
from .transaction import IndexTransaction
from .trim import Trimmer
from .upgrade import Upgrader
from .windows import WindowEditor

T = TypeVar("T")


class Operations:
    """The index's operations inside one transaction ``tr``, grouped by concern (each made on first use)."""

    def __init__(self, space: IndexSpace, tr: Any) -> None:
        self.tr = tr
        self.txn = IndexTransaction(space, tr)

    @functools.cached_property
    def writer(self) -> RecordWriter:
        return RecordWriter(self.txn)

    @functools.cached_property
    def windows(self) -> WindowEditor:
        return WindowEditor(self.txn)

    @functools.cached_property
    def filler(self) -> Filler:
        return Filler(self.txn, self.writer, self.windows)

    @functools.cached_property
    def trimmer(self) -> Trimmer:
        return Trimmer(self.txn)

    @functools.cached_property
    def metadata(self) -> Metadata:
        return Metadata(self.txn)

    @functools.cached_property
    def applied(self) -> AppliedRequests:
        return AppliedRequests(self.txn)

    @functools.cached_property
    def hider(self) -> Hider:
        return Hider(self.txn, self.writer)

    @functools.cached_property
    def deleter(self) -> Deleter:
        return Deleter(self.txn, self.writer)

    @functools.cached_property
    def upgrader(self) -> Upgrader:
        return Upgrader(self.txn)


class IndexRunner(IndexSpace):
    """An index bound to its store ``db``: runs its operations, each call one transaction."""

    def __init__(
        self, db: Database, prefix: bytes, settings: IndexSettings, format: int = formats.NEWEST_INDEX
    ) -> None:
        super().__init__(prefix, settings, format)
        self.db = db
        self.max_idempotency_keys = DEFAULT_MAX_KEYS
        self.audit: AuditTrail | None = None  # where admin actions are recorded (None: nowhere)
        self.name = ""  # the index's name in its events
        # Told when a deletion leaves the latest timestamp's recompute unfinished (the server wakes
        # its maintenance, which finishes it).
        self.on_latest_left: Callable[[], None] | None = None

    def _event(self, actor: str | None, action: str) -> PendingEvent | None:
        """The event of one admin call (None without an audit trail): taken before its transaction."""
        return None if self.audit is None else self.audit.event(actor or LOCAL_ACTOR, action, self.name)

    def _job(self, actor: str | None, action: str, **arguments: object) -> JobEvents:
        return JobEvents(self.audit, actor or LOCAL_ACTOR, action, self.name, **arguments)

    def run(self, fn: Callable[[Operations], T]) -> T:
        """Run ``fn(ops)`` in one read-write transaction."""
        return self.db.run(lambda tr: fn(Operations(self, tr)))

    def read(self, fn: Callable[[Operations], T]) -> T:
        return self.db.read(lambda tr: fn(Operations(self, tr)))

    def run_once(
        self,
        idempotency_key: str | None,
        operation: str,
        arguments: Callable[[Operations], tuple],
        write: Callable[[Operations], T],
        encode: Callable[[T], tuple],
        decode: Callable[[tuple], T],
    ) -> T:
        """``write(ops)`` in one transaction, applied once per ``idempotency_key`` (see
        ``idempotency.py``): a repeat of the same ``operation`` with the same ``arguments(ops)``
        (checked values, as a tuple) answers the first answer, ``encode``-d and ``decode``-d as
        tuples; None runs it plainly."""
        if idempotency_key is None:
            return self.run(write)
        key = check_key(idempotency_key)

        def once(ops: Operations) -> T:
            return ops.applied.once(
                key,
                lambda: digest(operation, arguments(ops)),
                lambda: write(ops),
                lambda answer: tuples.pack(encode(answer)),
                int(self.clock()),
                self.max_idempotency_keys,
            )

        try:
            return self.run(once)
        except Replayed as replay:
            return decode(tuples.unpack(replay.answer))
