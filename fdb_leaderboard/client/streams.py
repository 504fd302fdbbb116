"""The streaming calls' parts both clients share: a load's messages, progress and retries, a dump's
and a restore's requests, the answers' errors and cancellation, a move's bookkeeping, a split
check's merge, and a watch's request, updates and end.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator, Sequence
from typing import Any

import grpc

from .. import wire
from ..index import RankedEntry
from ..proto import service_pb2 as pb
from .errors import InvalidArgument, error_from_rpc
from .messages import Key, checked_count, record_to_send
from .retry import RetryPolicy

_MESSAGE_RECORDS = 500  # a BulkLoad message carries up to this many records
_MESSAGE_BYTES = 1 << 20  # or about this many bytes (gRPC refuses messages over 4 MB)


class LoadMessages:
    """A load's records gathered into BulkLoad messages: the first names the index and the key."""

    def __init__(self, index: str, batch_size: int, rank_as_loaded: bool, idempotency_key: str) -> None:
        self.message = pb.BulkLoadRequest(
            index=index,
            batch_size=checked_count(batch_size, "batch_size"),
            rank_as_loaded=rank_as_loaded,
            idempotency_key=idempotency_key,
        )
        self.size = 0
        self.added = 0
        self.failure: BaseException | None = None  # what ended the records early, raised after the stream
        self.written = 0  # records the server saved, as its answers say

    def add(self, record: tuple[Key, Sequence[tuple]]) -> pb.BulkLoadRequest | None:
        """Add a record; returns a full message to send, if this one filled it."""
        try:
            pk, entries = record
            converted = record_to_send(pk, entries)
        except (ValueError, TypeError) as exc:
            raise InvalidArgument(f"record {self.added} of the load: {' '.join(str(exc).split())}") from exc
        self.added += 1
        self.message.records.append(converted)
        self.size += converted.ByteSize()
        if len(self.message.records) < _MESSAGE_RECORDS and self.size < _MESSAGE_BYTES:
            return None
        full, self.message, self.size = self.message, pb.BulkLoadRequest(), 0
        return full

    def last(self) -> pb.BulkLoadRequest | None:
        """The last message (the first one names the index even with no records)."""
        return self.message if self.message.records or self.message.index else None

    def requests(self, records: Iterable[tuple[Key, Sequence[tuple]]]) -> Iterator[pb.BulkLoadRequest]:
        """The stream's messages, gathered from ``records``; it ends where iterating them raises
        (what was raised is kept for :meth:`result`: grpc would only say "Exception iterating
        requests")."""
        try:
            for record in records:
                if (full := self.add(record)) is not None:
                    yield full
        except Exception as exc:
            self.failure = exc
        if (last := self.last()) is not None:
            yield last

    async def async_requests(
        self, records: Iterable[tuple[Key, Sequence[tuple]]] | AsyncIterable[tuple[Key, Sequence[tuple]]]
    ) -> AsyncIterator[pb.BulkLoadRequest]:
        """:meth:`requests`, of records that may come from an async iterable."""
        if not isinstance(records, AsyncIterable):
            for message in self.requests(records):
                yield message
            return
        try:
            async for record in records:
                if (full := self.add(record)) is not None:
                    yield full
        except Exception as exc:
            self.failure = exc
        if (last := self.last()) is not None:
            yield last

    def saved(self, answer: pb.BulkLoadResponse, progress: Callable[[int], None] | None) -> None:
        """The server's answer after a transaction: the records saved so far, shown to ``progress``."""
        self.written = answer.records_saved
        if progress:
            progress(self.written)

    def result(self) -> int:
        """The records saved, once the stream is done; or what ended the records early, raised
        (noting how many were saved before it)."""
        if self.failure is not None:
            saved = "the record" if self.written == 1 else f"the {self.written} records"
            self.failure.add_note(f"BulkLoad saved {saved} before it")
            raise self.failure
        return self.written


def can_send_again(records: object) -> bool:
    """Whether a load's records can be read again from the start (a list, not an iterator)."""
    if isinstance(records, AsyncIterable):
        return aiter(records) is not records
    return iter(records) is not records  # type: ignore[call-overload]


def load_retry_codes(records: object, policy: RetryPolicy) -> frozenset[grpc.StatusCode]:
    """The codes a load is sent again on: a write's, when its records can be read again (none otherwise)."""
    return policy.write_codes if can_send_again(records) else frozenset()


@contextlib.contextmanager
def answering(call: Any) -> Iterator[None]:
    """Around reading a streaming call's answers: its errors raised as CallErrors, and the call
    cancelled when the reader stops early (the server stops its side then; a no-op once done)."""
    try:
        yield
    except grpc.RpcError as exc:
        raise error_from_rpc(exc) from None
    finally:
        call.cancel()


def watched_entry(response: Any) -> RankedEntry | None:
    """A watched rank's update: the record's entry with its rank (None: no value in the window)."""
    return wire.optional_entry_from_proto(response, "entry")


def watch_ended(error: grpc.RpcError, closed: bool) -> None:
    """A watch's call ended with ``error``: quietly if the watch was closed (which cancels the
    call), as a CallError otherwise."""
    if not closed:
        raise error_from_rpc(error) from None


# -- dumps: the streams' messages, shared -----------------------------------------------------------


DEFAULT_MOVE_CATCH_UP = 10.0  # seconds a move catches up after the target's rebuild before it pauses the writes


def dump_request(index: str, keep_paused: bool, moved_to: str, catch_up_seconds: float) -> pb.DumpRequest:
    return pb.DumpRequest(index=index, keep_paused=keep_paused, moved_to=moved_to, catch_up_seconds=catch_up_seconds)


def restore_request(number: int, part: pb.DumpPart, index: str) -> pb.RestoreRequest:
    """The restore stream's ``number``-th message: the first names the index to create."""
    return pb.RestoreRequest(index="" if number else index, part=part)


def restore_requests(parts: Iterable[pb.DumpPart], index: str) -> Iterator[pb.RestoreRequest]:
    """The restore stream's messages, one per dump part."""
    for number, part in enumerate(parts):
        yield restore_request(number, part, index)


async def async_restore_requests(
    parts: Iterable[pb.DumpPart] | AsyncIterable[pb.DumpPart], index: str
) -> AsyncIterator[pb.RestoreRequest]:
    """:func:`restore_requests`, of parts that may come from an async iterable."""
    if not isinstance(parts, AsyncIterable):
        for request in restore_requests(parts, index):
            yield request
        return
    number = 0
    async for part in parts:
        yield restore_request(number, part, index)
        number += 1


class MoveProgress:
    """A move's bookkeeping (blocking and asyncio alike): the dump's parts shown on their way to
    the target and its end kept; and when to pause the source's writes.  The source keeps taking
    writes while the target rebuilds the board and applies the changes made meanwhile; the pause
    comes once the target has applied every change the source had noted at its last "caught up"
    mark (or ``catch_up_seconds`` after the rebuild, if writes never let it catch up), so it
    covers only the changes written since then."""

    def __init__(
        self,
        index: str,
        moved_to: str,
        catch_up_seconds: float,
        progress: Callable[[pb.DumpPart | pb.RestoreProgress], None] | None,
    ) -> None:
        self.reason = f"index {index!r} moved to {moved_to or 'another store'}"  # the source's writes' refusal
        self.catch_up_seconds = catch_up_seconds or DEFAULT_MOVE_CATCH_UP
        self.progress = progress
        self.ends: list[pb.DumpEnd] = []
        self.caught_up: int | None = None  # the dump's changes count at its last "caught up" mark
        self.built_at: float | None = None
        self.paused = False

    def part(self, part: pb.DumpPart) -> pb.DumpPart:
        """A part on its way to the target."""
        kind = part.WhichOneof("part")
        if kind == "end":
            self.ends.append(part.end)
            return part
        if kind == "progress" and part.progress.phase == "caught up":
            self.caught_up = part.progress.changes
        if self.progress is not None:
            self.progress(part)
        return part

    def restored(self, step: pb.RestoreProgress) -> bool:
        """The target's progress: whether to pause the source's writes now."""
        if self.progress is not None:
            self.progress(step)
        if self.paused or step.phase not in ("built", "catching up"):
            return False
        if self.built_at is None:
            self.built_at = time.monotonic()
        caught_up = self.caught_up is not None and step.changes >= self.caught_up
        return caught_up or time.monotonic() - self.built_at >= self.catch_up_seconds

    def pause_now(self, step: pb.RestoreProgress) -> bool:
        """The target's progress: whether to pause the source's writes now (shown to ``progress``
        as the phase "paused")."""
        if not self.restored(step):
            return False
        self.paused = True
        if self.progress is not None:
            self.progress(pb.DumpPart(progress=pb.DumpProgress(phase="paused")))
        return True


def verify_pieces(plan: Sequence[bytes]) -> list[bytes]:
    return list(plan) or [b""]


class VerifyMerge:
    """The answers of a check's pieces run at once, as one (counts added, problems in order)."""

    def __init__(self, pieces: int, max_problems: int, progress: Callable[[pb.VerifyResponse], None] | None) -> None:
        self.latest = [pb.VerifyResponse(complete=True) for _ in range(pieces)]  # (a piece not answered yet)
        self.max_problems = max_problems or 100
        self.progress = progress
        self.lock = threading.Lock()

    def seen(self, piece: int) -> Callable[[pb.VerifyResponse], None]:
        def note(answer: pb.VerifyResponse) -> None:
            with self.lock:
                self.latest[piece] = answer
                if self.progress is not None:  # complete while no piece took more than one call
                    self.progress(self.merged(complete=all(answer.complete for answer in self.latest)))

        return note

    def merged(self, answers: Sequence[pb.VerifyResponse] | None = None, complete: bool = True) -> pb.VerifyResponse:
        out = pb.VerifyResponse(complete=complete)
        for answer in answers if answers is not None else self.latest:
            out.problems.extend(answer.problems)
            for field in ("records", "entries", "elements", "ranked_sets", "windows", "batches"):
                setattr(out, field, getattr(out, field) + getattr(answer, field))
        del out.problems[self.max_problems :]
        return out


def window_ends_request(index: str, after: int | None, top: int | None) -> pb.WatchWindowEndsRequest:
    request = pb.WatchWindowEndsRequest(index=index)
    if after is not None:
        request.after = checked_count(after, "after")
    if top is not None:
        request.top = checked_count(top, "top")
    return request
