"""Reads of a list of records: their ranks in one call, and a board of just them (friends, clans).

Both take up to :data:`MAX_RECORDS` primary keys and read, in one transaction, each record's
value and rank in the window through :meth:`Reader.rank_and_entry_steps` (O(log n) store reads
per record: k log n in all, never a scan of the window).  The records' heads are read together
and their rank walks run together, so on a network store the call costs the round trips of
one record, not k times as many.  A record with no value in the window is
reported as absent (None) by :meth:`ranks_of` and left out of :meth:`board_of`; a primary key
given twice is read once.  The board is ordered as the window orders its records (best score,
then earliest timestamp, context, primary key) and keeps each record's rank in the whole
window.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import InvalidArgument
from ..rankedset import run_together
from . import tuplecodec as tuples
from .reads import RankedEntry, RankMode, Reader, WindowRef

MAX_RECORDS = 200


def check_pks(pks: object) -> list[object]:
    if isinstance(pks, (str, bytes)) or not isinstance(pks, Sequence):
        raise InvalidArgument(f"expected a list of primary keys, not {type(pks).__name__}")
    if len(pks) > MAX_RECORDS:
        raise InvalidArgument(f"at most {MAX_RECORDS} records per call; got {len(pks)}")
    return list(pks)


def ranks_of(
    reader: Reader, pks: Sequence[object], ref: WindowRef, mode: RankMode = RankMode.ORDINAL
) -> list[RankedEntry | None]:
    """Each record's entry with its rank, in the order given; None for a record absent from the window."""
    pks = check_pks(pks)
    keys = [reader.txn.pk(pk) for pk in pks]
    # One round for every head, then the ranks walk their sets together: the rounds of one record.
    reader.txn.prefetch(heads=[key.nested for key in keys], groups=[reader.group_bytes(ref.group)])
    unique = {key.flat: key for key in keys}
    results = run_together([reader.rank_and_entry_steps(key, ref, mode) for key in unique.values()])
    found = dict(zip(unique, results, strict=True))
    return [found[key.flat] for key in keys]


def board_of(
    reader: Reader, pks: Sequence[object], ref: WindowRef, mode: RankMode = RankMode.ORDINAL
) -> list[RankedEntry]:
    """The records present in the window, ordered as the window orders them, with their global ranks."""
    entries = {tuples.pack(entry.pk): entry for entry in ranks_of(reader, pks, ref, mode) if entry is not None}
    if not entries:
        return []
    group_bytes = reader.group_bytes(ref.group)
    pack = reader.txn.packer(group_bytes)  # the ranked-set element: the window's order, then the pk
    return sorted(entries.values(), key=lambda e: (pack(e.score, e.timestamp, e.context), tuples.pack(e.pk)))
