"""The streaming calls' shared parts: a load's messages, a dump's and restore's requests, a move's
bookkeeping, a split check's merge and a watch's request.
"""

from __future__ import annotations

import threading
import time
from collections.abc import (
    AsyncIterable,
    Callable,
    Sequence,
)

from ..proto import service_pb2 as pb
from .errors import InvalidArgument
from .messages import Key, _natural, _record

_MESSAGE_RECORDS = 500  # a BulkLoad message carries up to this many records
_MESSAGE_BYTES = 1 << 20  # or about this many bytes (gRPC refuses messages over 4 MB)


class _LoadMessages:
    """A load's records gathered into BulkLoad messages: the first names the index and the key."""

    def __init__(self, index: str, batch_size: int, rank_as_loaded: bool, idempotency_key: str) -> None:
        self.message = pb.BulkLoadRequest(
            index=index,
            batch_size=_natural(batch_size, "batch_size"),
            rank_as_loaded=rank_as_loaded,
            idempotency_key=idempotency_key,
        )
        self.size = 0
        self.added = 0
        self.failure: BaseException | None = None  # what ended the records early, raised after the stream

    def add(self, record: tuple[Key, Sequence[tuple]]) -> pb.BulkLoadRequest | None:
        """Add a record; returns a full message to send, if this one filled it."""
        try:
            pk, entries = record
            converted = _record(pk, entries)
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

    def raise_failure(self, written: int) -> None:
        if self.failure is not None:
            saved = "the record" if written == 1 else f"the {written} records"
            self.failure.add_note(f"BulkLoad saved {saved} before it")
            raise self.failure


def _can_send_again(records: object) -> bool:
    """Whether a load's records can be read again from the start (a list, not an iterator)."""
    if isinstance(records, AsyncIterable):
        return aiter(records) is not records
    return iter(records) is not records  # type: ignore[call-overload]


# -- dumps: the streams' messages, shared -----------------------------------------------------------


DEFAULT_MOVE_CATCH_UP = 10.0  # seconds a move catches up after the target's rebuild before it pauses the writes


def _dump_request(index: str, keep_paused: bool, moved_to: str, catch_up_seconds: float) -> pb.DumpRequest:
    return pb.DumpRequest(index=index, keep_paused=keep_paused, moved_to=moved_to, catch_up_seconds=catch_up_seconds)


def _restore_request(number: int, part: pb.DumpPart, index: str) -> pb.RestoreRequest:
    """The restore stream's ``number``-th message: the first names the index to create."""
    return pb.RestoreRequest(index="" if number else index, part=part)


class _Move:
    """A move's bookkeeping (blocking and asyncio alike): the dump's parts shown on their way to
    the target and its end kept; and when to pause the source's writes.  The source keeps taking
    writes while the target rebuilds the board and applies the changes made meanwhile; the pause
    comes once the target has applied every change the source had noted at its last "caught up"
    mark (or ``catch_up_seconds`` after the rebuild, if writes never let it catch up), so it
    covers only the changes written since then."""

    def __init__(self, catch_up_seconds: float, progress: Callable[[pb.DumpPart | pb.RestoreProgress], None] | None):
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

    def pausing(self) -> None:
        self.paused = True
        if self.progress is not None:
            self.progress(pb.DumpPart(progress=pb.DumpProgress(phase="paused")))


def _moved_reason(index: str, moved_to: str) -> str:
    return f"index {index!r} moved to {moved_to or 'another store'}"


def _verify_parts(plan: Sequence[bytes]) -> list[bytes]:
    return list(plan) or [b""]


class _VerifyMerge:
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


def _window_ends_request(index: str, after: int | None, top: int | None) -> pb.WatchWindowEndsRequest:
    request = pb.WatchWindowEndsRequest(index=index)
    if after is not None:
        request.after = _natural(after, "after")
    if top is not None:
        request.top = _natural(top, "top")
    return request
