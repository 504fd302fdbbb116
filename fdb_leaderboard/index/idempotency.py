"""Writes applied once per idempotency key, whoever sends them again and however often.

A caller that did not hear back from a write (a timeout, a dropped connection after the commit)
can only send it again.  Sent with the same idempotency key, the repeat must change nothing and
answer what the first call answered.  So a keyed write, in its own transaction:

- reads ``S + (8, key)`` with the transaction's first reads (no round trip of its own);
- runs the write, and then, if the key is recorded: with the same digest (SHA-256 of the
  operation and its arguments) it drops what it wrote and answers the stored answer
  (:class:`Replayed`); with another digest it refuses (:class:`AlreadyExists`, naming the key);
- otherwise records the key with the digest and the answer, and files it under its time at
  ``S + (9, applied_at, key)`` so expiry reads keys oldest first in bounded batches.

Two calls with one key at once apply once: both read the key, so on FoundationDB the second to
commit conflicts and, run again, finds the key; the embedded store runs writers one at a time.
A write that raises (a refusal) is answered from the key too when the key is recorded, since
what the first call changed may refuse the repeat (SetMetadata of a record deleted since).

The number of keys an index holds is bounded (``S + (10,)``, an atomic counter read as a
snapshot, so keyed writes do not conflict on it); beyond the bound keyed writes are refused
until expiry catches up.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import TypeVar

from ..errors import AlreadyExists, InvalidArgument, LeaderboardError, ResourceExhausted
from ..proto import index_pb2
from ..store.api import decode_int64, encode_int64
from . import tuplecodec as tuples
from .transaction import IndexTransaction

T = TypeVar("T")

MAX_KEY_LENGTH = 128
DEFAULT_RETENTION = 86_400  # seconds a key is kept (an index policy's idempotency_retention)
DEFAULT_MAX_KEYS = 10_000_000  # per index
DEFAULT_EXPIRY_BATCH = 1000
_KEY = re.compile(rf"[\x21-\x7e]{{1,{MAX_KEY_LENGTH}}}")  # printable ASCII, no spaces


def check_key(key: object) -> str:
    """``key`` if it is a valid idempotency key (InvalidArgument naming the rule otherwise)."""
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        shown = repr(key) if len(repr(key)) <= 60 else f"{repr(key)[:60]}..."
        raise InvalidArgument(
            f"idempotency key {shown} is invalid: use 1-{MAX_KEY_LENGTH} printable ASCII characters "
            "without spaces (a UUID, for instance)"
        )
    return key


def batch_key(key: str, number: int) -> str:
    """The key under which batch ``number`` of a keyed load is applied (may exceed the length
    callers may use: it is made here, from a checked key)."""
    return f"{key}#{number}"


def digest(operation: str, arguments: tuple) -> bytes:
    """What identifies a request: its operation and its (checked) arguments, packed and hashed."""
    try:
        packed = tuples.pack((operation, *arguments))
    except (TypeError, ValueError):  # only arguments the write refused can fail to pack
        raise InvalidArgument(f"the arguments of this {operation} are not valid") from None
    return hashlib.sha256(packed).digest()


class Replayed(Exception):
    """The write was applied before under its key: the transaction must not commit what this
    attempt wrote; ``answer`` is the first call's (tuple-packed)."""

    def __init__(self, answer: bytes) -> None:
        super().__init__("replayed")
        self.answer = answer


class AppliedRequests:
    """Idempotency keys inside one transaction (``txn``)."""

    def __init__(self, txn: IndexTransaction) -> None:
        self.txn = txn
        self.tr = txn.tr
        self.layout = txn.layout

    def once(
        self,
        key: str,
        request: Callable[[], bytes],
        write: Callable[[], T],
        encode: Callable[[T], bytes],
        now: int,
        max_keys: int = DEFAULT_MAX_KEYS,
    ) -> T:
        """Run ``write`` once for ``key``: ``request()`` is the request's digest (computed once the
        write has checked its arguments), ``encode`` packs its answer for repeats."""
        stored_read = self.tr.get_async(self.layout.applied_key(key))
        count_read = self.tr.snapshot.get_async(self.layout.applied_count_key)
        try:
            answer = write()
        except LeaderboardError:
            if stored_read.value is not None:
                self._replay_if_same(stored_read.value, request)
            raise  # a repeat refused as the first call would have been, or a key used for another write
        stored = stored_read.value
        if stored is not None:
            self._replay_if_same(stored, request)
            raise AlreadyExists(
                f"idempotency key {key!r} was used for another request: use a new key for each write, "
                "and the same key only to send the same write again"
            )
        count = count_read.value
        if count is not None and decode_int64(count) >= max_keys:
            raise ResourceExhausted(
                f"the index holds {decode_int64(count)} idempotency keys, its limit: keyed writes are refused "
                "until older keys expire (shorten the policy's idempotency_retention, or run maintenance)"
            )
        record = index_pb2.AppliedRequest(digest=request(), answer=encode(answer), applied_at=now)
        self.tr.set(self.layout.applied_key(key), record.SerializeToString())
        self.tr.set(self.layout.applied_at_key(now, key), b"")
        self.tr.add(self.layout.applied_count_key, encode_int64(1))
        return answer

    @staticmethod
    def _replay_if_same(stored: bytes, request: Callable[[], bytes]) -> None:
        """Raise :class:`Replayed` if the key was recorded for this very request."""
        record = index_pb2.AppliedRequest.FromString(stored)
        try:
            same = record.digest == request()
        except Exception:
            return  # caller re-raises the write's own refusal
        if same:
            raise Replayed(record.answer)

    def expire_step(self, before: int, max_keys: int) -> tuple[int, bool]:
        """Forget up to ``max_keys`` keys applied before ``before``; returns (forgotten, done)."""
        begin = self.layout.applied_by_time
        end = self.layout.applied_by_time + tuples.pack((before,))
        rows = self.tr.get_range(begin, end, max_keys + 1)  # one more: whether any are left
        done = len(rows) <= max_keys
        rows = rows[:max_keys]
        for row_key, _ in rows:
            _, key = tuples.unpack(row_key[len(begin) :])
            self.tr.clear(self.layout.applied_key(key))
        if rows:
            self.tr.clear_range(begin, rows[-1][0] + b"\x00")
            self.tr.add(self.layout.applied_count_key, encode_int64(-len(rows)))
        return len(rows), done

    def count(self) -> int:
        raw = self.tr.get(self.layout.applied_count_key)
        return decode_int64(raw) if raw is not None else 0
