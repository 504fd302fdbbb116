"""An index as a dump: the stream of DumpPart messages a restore rebuilds it from (``restore.py``).

A dump holds every row the index stores except those a restore rebuilds from the rest: the
windows' primary and hidden B-trees and ranked sets (and distinct-score sets), rebuilt from the
records' heads, and the idempotency keys' time order, rebuilt from the keys.  What it holds, keys relative
to the index's prefix (so it restores under any prefix, into either store: both keep the same
layout):

- the index's own rows (its *state*): options ``(0,)``, latest timestamp ``(2,)``, directory
  ``(3,)`` and sub-directories, fill cursors ``(4, ...)``, the idempotency keys' count ``(10,)``;
- *units*, each read whole in one transaction when sent again: a record (its head ``(1, pk)``,
  entries ``(5, pk, ...)``, metadata ``(6, pk)`` and, while it is hidden, its hidden-record note
  ``(11, pk)``, named by its head's key) and an idempotency key ``(8, key)``;
- leagues' rows as they are: each league window's members, cohort rows and newest cohorts
  ``(13, ...)``, each record's latest league window ``(14, pk)``.  A live dump's catch-up carries
  a changed record's values into its cohorts; a record that first joins a cohort during the dump
  joins one on the restored side when its change is applied (the same tier, the cohort the
  restored index's count gives).

The state of a recompute of the latest timestamp ``(18,)`` is not copied: the state's latest
timestamp is the one reads see (during a recompute, the value before it: ``latest.py``).

Parts, in order: a header; the rows in key order, each batch one bounded read transaction; a
``copied`` mark; the units written since their rows were copied (a live dump's catch-up, see
``service/served_dumps.py``); the state rows at the dump's moment; an end with the SHA-256 of every
part before it (their deterministic serializations).  Rows copied in separate transactions are a
consistent copy only when nothing changed them meanwhile: :func:`dump_parts` without
``catch_up`` is for an index no one writes to; the service catches up with the writes.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..errors import InvalidArgument
from ..proto import service_pb2 as pb
from ..store.api import Database, KeyValue, ReadView, strinc
from . import tuplecodec as tuples
from .directory import ALL_TIME
from .layout import IndexLayout, decode_latest_timestamp, encode_latest_timestamp
from .space import IndexSpace

FORMAT_VERSION = 1

OPTIONS = tuples.pack((0,))
RECORDS = tuples.pack((1,))
LATEST = tuples.pack((2,))
DIRECTORY = tuples.pack((3,))
SUB_DIRECTORIES = (DIRECTORY + b"\x00", DIRECTORY + b"\x01")
CURSORS = tuples.pack((4,))
ENTRIES = tuples.pack((5,))
METADATA = tuples.pack((6,))
APPLIED = tuples.pack((8,))
APPLIED_COUNT = tuples.pack((10,))
HIDDEN = tuples.pack((11,))
LEAGUES = tuples.pack((13,))
LEAGUE_RECORDS = tuples.pack((14,))
LATEST_RECOMPUTE = tuples.pack((18,))  # not copied: a restored index has the latest as reads see it


class DumpError(InvalidArgument):
    """A dump that cannot be restored: damaged, incomplete, of another format version, out of order."""


def _exact(key: bytes) -> tuple[bytes, bytes]:
    return key, key + b"\x00"


# What a dump copies, as relative key ranges in key order; and the state's share of them.
ROW_RANGES = (
    _exact(OPTIONS),
    (RECORDS, strinc(RECORDS)),
    _exact(LATEST),
    _exact(DIRECTORY),
    SUB_DIRECTORIES,
    (CURSORS, strinc(CURSORS)),
    (ENTRIES, strinc(ENTRIES)),
    (METADATA, strinc(METADATA)),
    (APPLIED, strinc(APPLIED)),
    _exact(APPLIED_COUNT),
    (HIDDEN, strinc(HIDDEN)),
    (LEAGUES, strinc(LEAGUES)),
    (LEAGUE_RECORDS, strinc(LEAGUE_RECORDS)),
)
STATE_RANGES = (
    _exact(OPTIONS),
    _exact(LATEST),
    _exact(DIRECTORY),
    SUB_DIRECTORIES,
    (CURSORS, strinc(CURSORS)),
    _exact(APPLIED_COUNT),
)
BATCH_ROWS = 2000
PART_BYTES = 1 << 20  # about this many bytes of rows per part (a gRPC message holds 4 MB at most)
_READ_ROWS = 250  # rows per read within a batch, so a batch of large rows stops near PART_BYTES


def unit_of(key: bytes) -> bytes | None:
    """The unit a written key (relative to the index's prefix) belongs to, or None for the
    index's own rows and rebuilt ones."""
    if key.startswith(RECORDS) or key.startswith(METADATA) or key.startswith(HIDDEN):
        return RECORDS + key[2:]
    if key.startswith(ENTRIES):
        rest = key[2:]
        return RECORDS + rest[: tuples.item_ends(rest, 1)[0]] if rest else None
    if key.startswith(APPLIED):
        return key
    return None


def copy_rows(
    tr: ReadView, prefix: bytes, position: bytes, max_rows: int = BATCH_ROWS, max_bytes: int = PART_BYTES
) -> tuple[list[KeyValue], bytes | None]:
    """Up to ``max_rows`` rows (about ``max_bytes``) a dump copies, from relative key ``position``
    on, with relative keys; and where the next batch starts (None: every row was read)."""
    rows: list[KeyValue] = []
    size = 0
    cut = len(prefix)
    for begin, end in ROW_RANGES:
        start = max(begin, position)
        while start < end:
            wanted = min(_READ_ROWS, max_rows - len(rows))
            found = tr.get_range(prefix + start, prefix + end, wanted)
            for key, value in found:
                rows.append((key[cut:], value))
                size += len(key) - cut + len(value)
            if len(rows) >= max_rows or size >= max_bytes:
                return rows, rows[-1][0] + b"\x00"
            if len(found) < wanted:
                break
            start = rows[-1][0] + b"\x00"
    return rows, None


def issue_unit(tr: ReadView, prefix: bytes, unit: bytes) -> Callable[[], list[KeyValue]]:
    """The rows of ``unit`` as they are, read now (call the result to wait for them)."""
    cut = len(prefix)
    if unit.startswith(APPLIED):
        applied = tr.get_async(prefix + unit)
        return lambda: [] if applied.value is None else [(unit, applied.value)]
    pk_nested = unit[len(RECORDS) :]
    head = tr.get_async(prefix + unit)
    entries = tr.get_range_async(*IndexLayout(prefix).entries_range(pk_nested))
    metadata = tr.get_async(prefix + METADATA + pk_nested)
    hidden = tr.get_async(prefix + HIDDEN + pk_nested)

    def rows() -> list[KeyValue]:
        out = [] if head.value is None else [(unit, head.value)]
        out.extend((key[cut:], value) for key, value in entries.value)
        if metadata.value is not None:
            out.append((METADATA + pk_nested, metadata.value))
        if hidden.value is not None:
            out.append((HIDDEN + pk_nested, hidden.value))
        return out

    return rows


def state_rows(tr: ReadView, prefix: bytes) -> list[KeyValue]:
    """The index's own rows, read together; the latest timestamp as reads see it (while it is
    recomputed, what it was before: see latest.py), so the restored index fills what it must."""
    ranges = [*STATE_RANGES, _exact(LATEST_RECOMPUTE)]
    found = tr.get_ranges([(prefix + begin, prefix + end, 0, False) for begin, end in ranges])
    rows = [(key[len(prefix) :], value) for rows in found[:-1] for key, value in rows]
    if found[-1]:
        floor = tuples.unpack(found[-1][0][1])[0]
        latest = max([floor, *(decode_latest_timestamp(value) for key, value in rows if key == LATEST)])
        rows = [(key, value) for key, value in rows if key != LATEST] + [(LATEST, encode_latest_timestamp(latest))]
        rows.sort()
    return rows


def rows_message(rows: Iterable[KeyValue]) -> pb.DumpRows:
    message = pb.DumpRows()
    for key, value in rows:
        message.keys.append(key)
        message.values.append(value)
    return message


def rows_of(message: pb.DumpRows) -> list[KeyValue]:
    if len(message.keys) != len(message.values):
        raise ValueError(f"a part of the dump has {len(message.keys)} keys and {len(message.values)} values")
    return list(zip(message.keys, message.values, strict=True))


def records_estimate(space: IndexSpace, tr: Any) -> int:
    """The records of the index's complete all-time window when it has one and no groups (0: unknown)."""
    from .transaction import IndexTransaction

    txn = IndexTransaction(space, tr)
    directory = txn.directory()
    every = [w for w in directory.windows if w.type == ALL_TIME and not w.filling] if directory is not None else []
    if not every or space.settings.group_size:
        return 0
    return space.ranked_set(every[0], b"").size(tr)


def changes_messages(units: Iterable[tuple[bytes, list[KeyValue]]]) -> Iterator[pb.DumpChanges]:
    """Changed units as parts of about PART_BYTES each; a unit larger than that is spread over
    several parts (each piece but the last marked ``more``)."""
    message = pb.DumpChanges()
    size = 0
    for unit, rows in units:
        piece: list[KeyValue] = []
        piece_size = 0
        for row in rows:
            row_size = len(row[0]) + len(row[1])
            if piece and size + piece_size + row_size > PART_BYTES:
                message.units.add(unit=unit, rows=rows_message(piece), more=True)
                yield message
                message, size, piece, piece_size = pb.DumpChanges(), 0, [], 0
            piece.append(row)
            piece_size += row_size
        message.units.add(unit=unit, rows=rows_message(piece))
        size += piece_size + len(unit)
        if size >= PART_BYTES:
            yield message
            message, size = pb.DumpChanges(), 0
    if message.units:
        yield message


class Checksum:
    """The SHA-256 a dump's end carries: of every part before it, serialized deterministically."""

    def __init__(self) -> None:
        self._sha = hashlib.sha256()
        self.parts = 0

    def add(self, part: pb.DumpPart) -> pb.DumpPart:
        self._sha.update(part.SerializeToString(deterministic=True))
        self.parts += 1
        return part

    def digest(self) -> bytes:
        return self._sha.digest()


# A live dump's catch-up yields, until it is done, the units changed since they were copied
# (unit, rows), then the state rows read at the moment no change was left to copy (else None),
# whether the index's writes are paused, and whether the units are all that were left to copy.
CatchUp = Iterator[tuple[list[tuple[bytes, list[KeyValue]]], list[KeyValue] | None, bool, bool]]
CAUGHT_UP_EVERY = 0.1  # seconds between a catch-up's "caught up" progress parts


def dump_parts(
    db: Database,
    space: IndexSpace,
    header: pb.DumpHeader,
    catch_up: Callable[[], CatchUp] | None = None,
    batch_rows: int = BATCH_ROWS,
    progress_every: float = 1.0,
    pause_seconds: Callable[[], float] = lambda: 0.0,
    tick: Callable[[], None] = lambda: None,
) -> Iterator[pb.DumpPart]:
    """The dump of the index ``space`` in ``db``, as parts (see the module docstring).

    Without ``catch_up`` the state is read after the rows: a consistent dump only if nothing
    writes to the index meanwhile.  ``pause_seconds`` says, at the end, how long writes were
    refused to finish it (the service's catch-up knows); ``tick`` is called before each batch
    (the service renews its capture, and stops a dump nobody reads any more).
    """
    prefix = space.prefix
    checksum = Checksum()
    header.format_version = FORMAT_VERSION
    if not header.created_at:
        header.created_at = int(time.time())
    if not header.records_estimate:
        header.records_estimate = db.read(lambda tr: records_estimate(space, tr))
    yield checksum.add(pb.DumpPart(header=header))
    rows = records = changes = 0
    progress_at = time.monotonic() + progress_every

    def progress(phase: str) -> pb.DumpPart:
        counts = pb.DumpProgress(phase=phase, rows=rows, records=records, changes=changes)
        counts.records_estimate = header.records_estimate
        return checksum.add(pb.DumpPart(progress=counts))

    position: bytes | None = b""
    while position is not None:
        tick()
        batch, position = db.read(lambda tr, at=position: copy_rows(tr.snapshot, prefix, at, batch_rows))
        if batch:
            rows += len(batch)
            records += sum(key.startswith(RECORDS) for key, _ in batch)
            yield checksum.add(pb.DumpPart(rows=rows_message(batch)))
        if time.monotonic() >= progress_at:
            progress_at = time.monotonic() + progress_every
            yield progress("copying")
    yield checksum.add(pb.DumpPart(copied=pb.DumpCopied()))
    if catch_up is None:
        state = db.read(lambda tr: state_rows(tr, prefix))
    else:
        state = None
        paused = False
        caught_up: tuple[int, float] = (-1, 0.0)  # the changes count and time of the last "caught up"
        for units, final, pausing, drained in catch_up():
            if pausing and not paused:
                paused = True
                yield progress("paused")
            if units:
                for message in changes_messages(units):
                    yield checksum.add(pb.DumpPart(changes=message))
                rows += sum(len(unit_rows) for _, unit_rows in units)
                changes += len(units)
                if time.monotonic() >= progress_at:
                    progress_at = time.monotonic() + progress_every
                    yield progress("catching up")
            # Every change noted so far is sent: a mover pauses the writes once its target has them.
            fresh = caught_up[0] != changes and (not units or time.monotonic() >= caught_up[1] + CAUGHT_UP_EVERY)
            if drained and not paused and final is None and fresh:
                caught_up = (changes, time.monotonic())
                yield progress("caught up")
            if final is not None:
                state = final
        assert state is not None, "a catch-up ends with the index's state"
    yield checksum.add(pb.DumpPart(state=rows_message(state)))
    end = pb.DumpEnd(
        sha256=checksum.digest(),
        parts=checksum.parts,
        rows=rows + len(state),
        records=records,
        changes=changes,
        pause_seconds=pause_seconds(),
    )
    yield pb.DumpPart(end=end)
