"""Two functions of the Record Layer's TIME_WINDOW_LEADERBOARD index the rest of the API lacked.

- :func:`rank_for_score_key`: the rank a score key ``(score, timestamp, context...)`` would have,
  given whole or as a prefix (``(score,)``, ``(score, timestamp)``...), as the reference's
  ``rank_for_score`` takes it: the number of records whose key sorts strictly before it.  With
  ``(score,)`` alone this is :meth:`Reader.rank_for_score` (a competition rank); with the
  timestamp too, records with the same score and an earlier timestamp count as better.  One
  ranked-set walk: O(log n).  In an index with the reference layout (``count_duplicates``
  off) records sharing a full key count once, as there.
- :func:`score_trim`: the reference's ``TimeWindowLeaderboardScoreTrim``: of a record's entries,
  those the index would use with the current windows (ready or being filled), best first.
  For BEST, each window's best entry per group (the reference's rule); for LATEST, each
  window's latest entry (of equal timestamps, the later in the list); for SUM, every entry in
  some window, since all add up.  Entries listed twice come back once.  Without a directory
  every entry is returned (as by the reference), best first.  At most :data:`MAX_TRIM_ENTRIES` entries.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import InvalidArgument
from . import tuplecodec as tuples
from .aggregation import Value
from .reads import Reader, WindowRef
from .records import Entry
from .values import check_items, check_timestamp, normalize_score

MAX_TRIM_ENTRIES = 1000


def rank_for_score_key(reader: Reader, key: object, ref: WindowRef) -> int:
    settings = reader.space.settings
    if not isinstance(key, tuple) or not 1 <= len(key) <= 2 + settings.context_size:
        raise InvalidArgument(
            f"a score key is a tuple (score, timestamp, context...) of 1 to {2 + settings.context_size} items; "
            f"got {key!r}"
        )
    window = reader.window(ref)
    group_bytes = reader.group_bytes(ref.group)
    score = normalize_score(key[0], settings.score_type, settings.columns)
    rest = (check_timestamp(key[1]), *check_items(key[2:], "score key context")) if len(key) > 1 else ()
    probe = tuples.pack((reader.txn.directed(score, group_bytes), *rest))
    return reader.space.ranked_set(window, group_bytes).rank(reader.tr, probe, null_if_missing=False)  # type: ignore[return-value]


def score_trim(reader: Reader, entries: Sequence[Entry]) -> list[Entry]:
    if isinstance(entries, (str, bytes)) or not isinstance(entries, Sequence):
        raise InvalidArgument(f"expected a list of entries, not {type(entries).__name__}")
    if len(entries) > MAX_TRIM_ENTRIES:
        raise InvalidArgument(f"at most {MAX_TRIM_ENTRIES} entries per call; got {len(entries)}")
    settings = reader.space.settings
    values: dict[tuple[bytes, bytes], tuple[Value, Entry]] = {}  # (group, element) -> first such entry
    for seq, entry in enumerate(entries):
        if not isinstance(entry, Entry):
            raise InvalidArgument(f"expected an Entry, not {type(entry).__name__}")
        score = normalize_score(entry.score, settings.score_type, settings.columns)
        ts = (
            reader.txn.now()
            if entry.timestamp is None
            else check_timestamp(entry.timestamp, reader.space.checked_timebase)
        )
        context = check_items(entry.context, "context")
        group = check_items(entry.group, "group")
        if len(group) != settings.group_size or len(context) != settings.context_size:
            raise InvalidArgument(
                f"this index takes {settings.group_size} group and {settings.context_size} context element(s); "
                f"got {entry!r}"
            )
        group_bytes = tuples.pack(group)
        element = reader.txn.packer(group_bytes)(score, ts, context)
        checked = Entry(score, ts, context, group)
        if settings.aggregation == "LATEST":  # equal entries: the later one is the latest
            values[(group_bytes, element)] = (Value(score, ts, seq, context, element), checked)
        else:
            values.setdefault((group_bytes, element), (Value(score, ts, seq, context, element), checked))
    directory = reader.txn.directory()
    if directory is None:
        kept = set(values)
    else:
        kept = set()
        by_group: dict[bytes, list[tuple[bytes, Value]]] = {}
        for (group_bytes, element), (value, _) in values.items():
            by_group.setdefault(group_bytes, []).append((element, value))
        for window in directory.windows:
            for group_bytes, found in by_group.items():
                inside = [(element, value) for element, value in found if window.start <= value.ts < window.end]
                if not inside:
                    continue
                if settings.aggregation == "SUM":
                    kept.update((group_bytes, element) for element, _ in inside)
                elif settings.aggregation == "LATEST":
                    kept.add((group_bytes, max(inside, key=lambda found: (found[1].ts, found[1].seq))[0]))
                else:
                    kept.add((group_bytes, min(element for element, _ in inside)))
    return [values[key][1] for key in sorted(kept, key=lambda key: (key[1], key[0]))]
