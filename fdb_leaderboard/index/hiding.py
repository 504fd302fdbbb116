"""Hiding and restoring records: a cheater leaves every board, and nothing of it is lost.

Hiding a record, in one transaction, moves each of its window values out of the primary B-tree
and the ranked sets into the hidden B-tree (``S + (12, ...)``, their twin that nothing ranks),
marks its head hidden and files who hid it, when and why at ``S + (11, pk)``.  From then on it is
in no rank, listing, count, page, percentile or friends board, while its entries, head and
metadata stay.  Writes to it go on (``records.py``): they are stored and keep its head exact,
but move only its hidden values.  Restoring it moves each value back, one add per window, so
every window is exactly as if it had never been hidden (the checker recomputes it).

Listing hidden records is a range read of ``S + (11,)``, in primary-key order.
"""

from __future__ import annotations

import dataclasses

from ..errors import InvalidArgument, NotFound
from ..proto import index_pb2
from ..rankedset import Steps, run_together
from ..store.api import strinc
from . import tuplecodec as tuples
from .records import RecordWriter, head_bytes
from .transaction import IndexTransaction
from .values import check_at_least

MAX_REASON_BYTES = 1000
MAX_ACTOR_CHARS = 100
MAX_LISTED = 1000  # hidden records per page


@dataclasses.dataclass(frozen=True)
class HiddenRecord:
    """A hidden record: who hid it (a token's name), when (Unix seconds) and why."""

    pk: tuple
    actor: str
    hidden_at: int
    reason: str


def check_reason(reason: object) -> str:
    if not isinstance(reason, str):
        raise InvalidArgument(f"reason must be a string, not {type(reason).__name__}")
    if len(reason.encode()) > MAX_REASON_BYTES:
        raise InvalidArgument(f"reason takes at most {MAX_REASON_BYTES} bytes encoded")
    return reason


def check_actor(actor: object) -> str:
    if actor is None:
        return ""
    if not isinstance(actor, str) or len(actor) > MAX_ACTOR_CHARS:
        raise InvalidArgument(f"actor must be a string of at most {MAX_ACTOR_CHARS} characters")
    return actor


class Hider:
    """Hidden records inside one transaction (``txn``)."""

    def __init__(self, txn: IndexTransaction, writer: RecordWriter) -> None:
        self.txn = txn
        self.tr = txn.tr
        self.layout = txn.layout
        self.writer = writer

    def _head(self, pk: object) -> tuple[tuple, bytes, bytes, index_pb2.RecordHead]:
        key = self.txn.pk(pk)
        self.txn.prefetch(heads=[key.nested])
        head = self.txn.read_head(key.nested)
        if head is None:
            raise NotFound(f"record {key.pk!r} does not exist")
        return key.pk, key.nested, key.flat, head

    def _move_all(self, head: index_pb2.RecordHead, pk_nested: bytes, pk_flat: bytes, hiding: bool) -> None:
        """Move every maintained value of the record between the primary and the hidden B-trees."""
        directory = self.txn.directory()
        moves: list[Steps[None]] = []
        for state in head.windows:
            window = directory.by_key(state.lb_key) if directory is not None else None
            if window is None or not self.txn.maintains(window, pk_nested):
                continue  # a deleted window's state, or one a fill will compute (hidden or not, as then)
            hidden_key = self.writer.value_key(window, state.group, state.element, pk_flat, hidden=True)
            if hiding:  # out of the primary B-tree and the ranked sets, into the hidden B-tree
                self.tr.set(hidden_key, b"")
                moves.append(self.writer.remove_steps(window, state.group, state.element, pk_flat))
            else:
                self.tr.clear(hidden_key)
                moves.append(self.writer.add_steps(window, state.group, state.element, pk_flat))
        run_together(moves)
        self.txn.note_written(pk_nested)
        head.hidden = hiding
        self.tr.set(self.layout.head_key(pk_nested), head_bytes(head))

    def hide(self, pk: object, actor: str | None, reason: str, now: int) -> bool:
        """Hide the record (NotFound if it does not exist); False if it was hidden already."""
        reason, actor = check_reason(reason), check_actor(actor)
        _, pk_nested, pk_flat, head = self._head(pk)
        if head.hidden:
            return False
        self._move_all(head, pk_nested, pk_flat, hiding=True)
        filed = index_pb2.HiddenRecord(actor=actor, hidden_at=now, reason=reason)
        self.tr.set(self.layout.hidden_key(pk_nested), filed.SerializeToString())
        return True

    def restore(self, pk: object) -> bool:
        """Put the hidden record back in every window (NotFound if it does not exist); False if
        it was not hidden."""
        _, pk_nested, pk_flat, head = self._head(pk)
        if not head.hidden:
            return False
        self._move_all(head, pk_nested, pk_flat, hiding=False)
        self.tr.clear(self.layout.hidden_key(pk_nested))
        return True

    def get(self, pk: object) -> HiddenRecord | None:
        """Who hid the record, when and why; None if it is not hidden."""
        key = self.txn.pk(pk)
        raw = self.tr.get(self.layout.hidden_key(key.nested))
        return None if raw is None else _hidden(key.pk, raw)

    def list(self, limit: int, after: bytes | None = None) -> tuple[list[HiddenRecord], bytes | None]:
        """Up to ``limit`` hidden records in primary-key order, after the continuation ``after``;
        and the continuation of the next page (None: the last page)."""
        check_at_least(limit, 1, "limit")
        limit = min(limit, MAX_LISTED)
        base = self.layout.hidden_records
        begin = base if not after else base + after + b"\x00"
        if begin >= strinc(base):  # a continuation past every key (only a made-up one is)
            return [], None
        rows = self.tr.get_range(begin, strinc(base), limit)
        found = [_hidden(tuples.unpack(key[len(base) :])[0], raw) for key, raw in rows]
        return found, (rows[-1][0][len(base) :] if len(rows) == limit else None)


def _hidden(pk: tuple, raw: bytes) -> HiddenRecord:
    filed = index_pb2.HiddenRecord.FromString(raw)
    return HiddenRecord(tuple(pk), filed.actor, filed.hidden_at, filed.reason)
