"""The index's latest timestamp, found again when the record holding it goes.

Every write makes an atomic MAX of its entries' timestamps on ``P`` (the Record Layer's key:
``at=latest`` reads and a window update's "does a new window overlap stored scores" take it),
so writes never read it and never conflict over it.  A MAX cannot go down: deleting the record
that holds the latest would leave ``P`` naming a time no score has (and ``at=latest`` reading a
window no score is in, or none) for good.

So a deletion that removes an entry at the latest timestamp starts a *recompute*, in the
deleting transaction: the old value goes to the recompute's state ``R = S + (18,)`` as its
*floor*, and ``P`` is cleared, so from then on the writes' MAX on it gathers exactly the
timestamps written since.  The recompute then scans every record's entries in bounded,
resumable batches (their keys hold their timestamps), keeping the greatest; its last batch
MAXes that into ``P`` and clears ``R``.  While it runs, the latest timestamp read is the greater
of ``P`` and the floor: what it was before, never less than any stored score's (a window added
meanwhile is filled whenever it may overlap one).  A deletion during the recompute that removes
an entry at or above what it found so far (or above ``P``) starts it again from the first record.

The deleting call carries the recompute on within its deadline (an index of some thousands of
entries is done at once); the server's maintenance, or any fill (``fdb-leaderboard fill``),
finishes a larger one.  ``R`` is absent except while a recompute runs.

Only an index at format :data:`~fdb_leaderboard.formats.LATEST_RECOMPUTED` (4) or later starts
one on a deletion: release 0.2.0 reads ``P`` alone, and would see the latest vanish (and skip a
fill) while ``R`` holds it.  Below it a deletion leaves ``P`` as it was, as 0.2.0 does.  Raising
an index to format 4 recomputes its latest timestamp once (the upgrade job
:meth:`LatestTimestamp.scan_all`), so a value a deletion left behind before is found again too.
Reads take ``R`` into account at any format (one read issued beside ``P``'s): a process may
read before it sees the raise.
"""

from __future__ import annotations

from typing import Any

from .. import formats
from ..store.api import strinc
from . import tuplecodec as tuples
from .directory import INT64_MIN
from .layout import IndexLayout, decode_latest_timestamp, encode_latest_timestamp

SCAN_ENTRIES = 2000  # entry keys one recompute batch reads


class LatestTimestamp:
    """The latest timestamp inside one store transaction ``tr`` of the index laid out as ``layout``."""

    def __init__(self, tr: Any, layout: IndexLayout, format: int) -> None:
        self.tr = tr
        self.layout = layout
        # Whether a deletion may start a recompute (the index's format, as the space last read it).
        self.recomputes = formats.allows(format, formats.LATEST_RECOMPUTED)
        self._state: tuple[int, bytes, int | None] | bool | None = False  # False: not read yet
        self._written: int | bool | None = False  # P as a snapshot read it (False: not read yet)
        self._state_read: Any = None  # the read of R issued ahead (see prefetch), if any
        self._written_read: Any = None  # the snapshot read of P issued ahead, if any
        self.started = False  # whether this transaction started (or restarted) a recompute

    def prefetch(self) -> None:
        """Issue the reads a deletion's :meth:`removed` makes (P's and R's) now, so that they go
        in the deleting call's first round of reads rather than two rounds of their own."""
        if not self.recomputes:
            return
        if self._written is False and self._written_read is None:
            self._written_read = self.tr.snapshot.get_async(self.layout.latest_timestamp_key)
        if self._state is False and self._state_read is None:
            self._state_read = self.tr.get_async(self.layout.latest_recompute_key)

    def _recompute(self) -> tuple[int, bytes, int | None] | None:
        """The running recompute's (floor, where its scan goes on, greatest timestamp found), or None."""
        if self._state is False:
            read = self._state_read
            if read is None:
                read = self.tr.get_async(self.layout.latest_recompute_key)
            raw, self._state_read = read.value, None
            self._state = None if raw is None else tuple(tuples.unpack(raw))  # type: ignore[assignment]
        return self._state  # type: ignore[return-value]

    def _save(self, state: tuple[int, bytes, int | None] | None) -> None:
        if state is None:
            self.tr.clear(self.layout.latest_recompute_key)
        else:
            self.tr.set(self.layout.latest_recompute_key, tuples.pack(state))
        self._state = state

    def read(self) -> int | None:
        """The latest timestamp: of the scores stored, or (while a recompute runs) what it was before."""
        written = self.tr.get_async(self.layout.latest_timestamp_key)
        if self._state is False and self._state_read is None:  # read beside P
            self._state_read = self.tr.get_async(self.layout.latest_recompute_key)
        raw = written.value
        latest = decode_latest_timestamp(raw) if raw is not None else None
        running = self._recompute()
        if running is not None:
            return running[0] if latest is None else max(latest, running[0])
        return latest

    def removed(self, timestamp: int | None) -> None:
        """Entries up to ``timestamp`` (their greatest; None: none) leave the index in this
        transaction: if one may hold the latest, the recompute starts (again; from index format 4)."""
        if timestamp is None or self.started or not self.recomputes:
            return
        self.prefetch()  # both reads in one round, if the caller did not issue them already
        if self._written is False:
            raw, self._written_read = self._written_read.value, None  # a snapshot: no conflict with writers' MAX
            self._written = decode_latest_timestamp(raw) if raw is not None else None
        written: int | None = self._written  # type: ignore[assignment]
        running = self._recompute()
        if running is None:
            if written is None or timestamp < written:
                return
            floor = written
        else:  # the greatest so far, found or written meanwhile, may be the one going: start again
            floor, _, found = running
            if timestamp < max(INT64_MIN if t is None else t for t in (written, found)):
                return
            floor = floor if written is None else max(floor, written)
        self._start(floor)

    def _start(self, floor: int) -> None:
        self.tr.clear(self.layout.latest_timestamp_key)
        self._save((floor, b"", None))
        self.started = True

    def step(self, max_entries: int = SCAN_ENTRIES) -> bool:
        """One batch of the running recompute; True when none runs (any more)."""
        return self._scan(max_entries)[0]

    def scan_all(self, first: bool, max_entries: int) -> tuple[bool, int]:
        """One batch of the upgrade to format 4's recompute (started by its ``first`` batch, if
        there are scores); whether it is done and how many records' entries the batch began."""
        if first and self._recompute() is None:
            raw = self.tr.get(self.layout.latest_timestamp_key)
            if raw is None:
                return True, 0
            self._start(decode_latest_timestamp(raw))
        return self._scan(max_entries)

    def _scan(self, max_entries: int) -> tuple[bool, int]:
        """One batch of the running recompute: whether none runs any more, and the records whose
        entries it began.

        Entry keys are read without conflicts (a snapshot): an entry written meanwhile has its
        timestamp in ``P`` already, and one deleted meanwhile restarts the recompute, which this
        transaction then conflicts with (it read ``R``)."""
        running = self._recompute()
        if running is None:
            return True, 0
        floor, after, found = running
        entries = self.layout.entries
        begin = entries + after + b"\x00" if after else entries
        rows = self.tr.snapshot.get_range(begin, strinc(entries), max_entries)
        records = 0
        record = tuples.unpack(after)[0] if after else None
        for key, _ in rows:
            pk, ts = tuples.unpack(key[len(entries) :])[:2]  # (pk, ts, seq)
            found = ts if found is None or ts > found else found
            if pk != record:
                record, records = pk, records + 1
        if len(rows) == max_entries:
            self._save((floor, rows[-1][0][len(entries) :], found))
            return False, records
        if found is not None:
            self.tr.max(self.layout.latest_timestamp_key, encode_latest_timestamp(found))
        self._save(None)
        return True, records


def entry_timestamp(key: bytes, prefix_length: int) -> int:
    """The timestamp in an entry key ``S + (5, pk, ts, seq)`` of a record whose entries' keys
    start with ``prefix_length`` bytes (the entries' subspace and the record's nested key)."""
    return tuples.unpack(key[prefix_length:])[0]
