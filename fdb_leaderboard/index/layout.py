"""Where an index keeps its data under its subspace ``S`` (all keys tuple-encoded).

| key | value |
|---|---|
| ``S + (0,)`` | ``IndexOptions`` protobuf (ours) |
| ``S + (1, pk)`` | ``RecordHead`` protobuf: per window and group, the record's indexed value (pk nested) |
| ``P = S + (2,)`` raw | int64 LE, atomic MAX of ``ts - INT64_MIN``: the latest timestamp ever indexed |
| ``P + (lb_key, group..., stored score, ts, context..., pk...)`` | ``b""``: the primary B-tree |
| ``X = S + (3,)`` raw | ``TimeWindowLeaderboardDirectory`` protobuf |
| ``X + (None, group...)`` | ``TimeWindowLeaderboardSubDirectory`` protobuf |
| ``X + (lb_key, group..., level, element)`` | ranked-set node counts |
| ``S + (4, lb_key)`` | ``FillCursor`` protobuf of a window being filled: how far each fill phase got |
| ``S + (5, pk, ts, seq)`` | one entry of a record: ``(group, score, context)`` packed |
| ``S + (6, pk)`` | ``RecordMetadata`` protobuf: the record's display data (pk nested) |
| ``S + (7, lb_key, group..., level, score)`` | ``dense_ranks``: ranked sets of each window's distinct scores |
| ``S + (8, key)`` | ``AppliedRequest`` protobuf: a write made with idempotency key ``key`` |
| ``S + (9, applied_at, key)`` | ``b""``: the same keys by when they were applied (for expiry) |
| ``S + (10,)`` | int64 LE, atomic ADD: how many idempotency keys the index holds |
| ``S + (11, pk)`` | ``HiddenRecord`` protobuf: who hid the record, when and why (while it is hidden) |
| ``S + (12, lb_key, group..., stored score, ts, context..., pk...)`` | ``b""``: the hidden B-tree |
| ``S + (13, lb_key, 0, pk...)`` | leagues: ``(tier, cohort)`` packed, the record's cohort in the window |
| ``S + (13, lb_key, 1, tier, cohort, stored score, ts, context..., pk...)`` | ``b""``: a cohort's ranked records |
| ``S + (13, lb_key, 2, tier)`` | ``(cohort, members)`` packed: the tier's newest cohort and how many joined it |
| ``S + (14, pk)`` | leagues: ``(lb_key, tier, cohort)`` packed, the record's latest window of the league type |
| ``S + (15,)`` | ``UpgradeCursor`` protobuf while the index's data is rewritten for its next format |
| ``B = S + (16, lb_key)`` | format 4: a build from sorted data (``build.py``): the token of the process building it |
| ``B + (pk, 0)`` | ``b""``: a record written while the window was built (the build redoes its value there) |
| ``B + (pk, 1, group, element)`` | ``b""``: a value the build may hold for a record that lost it (deleted) |
| ``S + (17, lb_key)`` | format 4: ``b""``, a window deleted from the directory whose data is still being cleared |
| ``S + (18,)`` | format 4: ``(floor, scan position, greatest found)`` packed, while the latest is recomputed |

The hidden B-tree is the primary B-tree's twin for hidden records' values: no ranked set counts
them, no read lists them (see ``hiding.py``).

The index's score rules are a field of the directory (``X``).  Its stored format
(``fdb_leaderboard/formats.py``) is a field of its options (``S + (0,)``).

While the latest timestamp is recomputed (the record holding it was deleted: ``latest.py``),
``P`` holds only the timestamps written since it started, and ``S + (18,)`` the value before.

``P`` and ``X`` hold exactly what the Record Layer's index holds for the same options.
"""

from __future__ import annotations

from ..store.api import strinc
from . import tuplecodec as tuples

INT64_MIN = -(1 << 63)


class IndexLayout:
    """Key builders for one index.  Pure byte arithmetic: holds no data."""

    __slots__ = (
        "prefix",
        "options_key",
        "records",
        "primary",
        "secondary",
        "cursors",
        "entries",
        "metadata",
        "dense",
        "applied",
        "applied_by_time",
        "applied_count_key",
        "hidden_records",
        "hidden_values",
        "leagues",
        "league_records",
        "upgrade_key",
        "latest_recompute_key",
        "builds",
        "retired",
    )

    def __init__(self, prefix: bytes) -> None:
        self.prefix = prefix
        self.options_key = prefix + tuples.pack((0,))
        self.records = prefix + tuples.pack((1,))
        self.primary = prefix + tuples.pack((2,))
        self.secondary = prefix + tuples.pack((3,))
        self.cursors = prefix + tuples.pack((4,))
        self.entries = prefix + tuples.pack((5,))
        self.metadata = prefix + tuples.pack((6,))
        self.dense = prefix + tuples.pack((7,))
        self.applied = prefix + tuples.pack((8,))
        self.applied_by_time = prefix + tuples.pack((9,))
        self.applied_count_key = prefix + tuples.pack((10,))
        self.hidden_records = prefix + tuples.pack((11,))
        self.hidden_values = prefix + tuples.pack((12,))
        self.leagues = prefix + tuples.pack((13,))
        self.league_records = prefix + tuples.pack((14,))
        self.upgrade_key = prefix + tuples.pack((15,))
        self.latest_recompute_key = prefix + tuples.pack((18,))
        self.builds = prefix + tuples.pack((16,))
        self.retired = prefix + tuples.pack((17,))

    # records
    def head_key(self, pk_nested: bytes) -> bytes:
        """``pk_nested`` is ``pack((pk,))``: the pk as one nested-tuple item (prefix-free)."""
        return self.records + pk_nested

    def entries_range(self, pk_nested: bytes) -> tuple[bytes, bytes]:
        """Every entry key of one record, and nothing of another.

        ``pack((pk,))`` is not prefix-free: a nested ``None`` encodes as ``00 ff``, so
        ``(("a",),)`` is a prefix of ``(("a", None),)``.  An entry key continues the record's
        prefix with an int64 timestamp (type codes 0x0c..0x1c), another record's with 0xff.
        """
        prefix = self.entries + pk_nested
        return prefix + b"\x0c", prefix + b"\x1d"

    def entry_key(self, pk_nested: bytes, ts: int, seq: int) -> bytes:
        return self.entries + pk_nested + tuples.pack((ts, seq))

    def metadata_key(self, pk_nested: bytes) -> bytes:
        return self.metadata + pk_nested

    def hidden_key(self, pk_nested: bytes) -> bytes:
        return self.hidden_records + pk_nested

    def values_tree(self, hidden: bool) -> bytes:
        """Where record values are kept: the primary B-tree, or the hidden B-tree for hidden records."""
        return self.hidden_values if hidden else self.primary

    # leagues (leagues.py)
    def window_leagues(self, lb_key_bytes: bytes) -> bytes:
        return self.leagues + lb_key_bytes

    def member_key(self, lb_key_bytes: bytes, pk_flat: bytes) -> bytes:
        return self.leagues + lb_key_bytes + b"\x14" + pk_flat  # (…, 0, pk...)

    def cohort_prefix(self, lb_key_bytes: bytes, tier: int, cohort: int) -> bytes:
        return self.leagues + lb_key_bytes + tuples.pack((1, tier, cohort))

    def open_cohort_key(self, lb_key_bytes: bytes, tier: int) -> bytes:
        return self.leagues + lb_key_bytes + tuples.pack((2, tier))

    def league_record_key(self, pk_nested: bytes) -> bytes:
        return self.league_records + pk_nested

    # idempotency keys
    def applied_key(self, key: str) -> bytes:
        return self.applied + tuples.pack((key,))

    def applied_at_key(self, applied_at: int, key: str) -> bytes:
        return self.applied_by_time + tuples.pack((applied_at, key))

    # windows
    @property
    def latest_timestamp_key(self) -> bytes:
        return self.primary

    @property
    def directory_key(self) -> bytes:
        return self.secondary

    def sub_directory_key(self, group_bytes: bytes) -> bytes:
        return self.secondary + b"\x00" + group_bytes  # (None, group...)

    def sub_directories_range(self) -> tuple[bytes, bytes]:
        return self.secondary + b"\x00", self.secondary + b"\x01"

    def window_primary(self, lb_key_bytes: bytes) -> bytes:
        return self.primary + lb_key_bytes

    def window_secondary(self, lb_key_bytes: bytes) -> bytes:
        return self.secondary + lb_key_bytes

    def window_dense(self, lb_key_bytes: bytes) -> bytes:
        """Where a window's ranked sets of distinct scores live (indexes with ``dense_ranks``)."""
        return self.dense + lb_key_bytes

    def cursor_key(self, lb_key: int) -> bytes:
        return self.cursors + tuples.pack((lb_key,))

    def window_hidden(self, lb_key_bytes: bytes) -> bytes:
        """Where a window's hidden records' values live."""
        return self.hidden_values + lb_key_bytes

    # builds from sorted data (build.py)
    def build_token_key(self, lb_key_bytes: bytes) -> bytes:
        return self.builds + lb_key_bytes

    def rewrite_key(self, lb_key_bytes: bytes, pk_nested: bytes) -> bytes:
        """A record to redo in a window being built: written meanwhile."""
        return self.builds + lb_key_bytes + pk_nested + b"\x14"  # (…, pk, 0)

    def lost_value_key(self, lb_key_bytes: bytes, pk_nested: bytes, group_bytes: bytes, element: bytes) -> bytes:
        """A value a window being built may hold for a record whose head lost it."""
        return self.builds + lb_key_bytes + pk_nested + tuples.pack((1, group_bytes, element))

    def retired_key(self, lb_key_bytes: bytes) -> bytes:
        return self.retired + lb_key_bytes

    def window_ranges(self, lb_key_bytes: bytes) -> list[tuple[bytes, bytes]]:
        """Every key range holding a window's data (primary and hidden entries, ranked sets, a build's notes)."""
        starts = (
            self.window_primary(lb_key_bytes),
            self.window_secondary(lb_key_bytes),
            self.window_dense(lb_key_bytes),
            self.window_hidden(lb_key_bytes),
            self.window_leagues(lb_key_bytes),
            self.build_token_key(lb_key_bytes),
        )
        return [(start, strinc(start)) for start in starts]


def extensions_end(prefix: bytes) -> bytes:
    """The exclusive end of the keys that continue the packed tuple ``prefix`` with more items.

    ``strinc(prefix)`` would also take in a longer tuple sharing the bytes: ``("a",)`` packs
    to ``02 61 00`` and ``("a\\x00",)`` to ``02 61 00 ff 00``.  An added item starts with a
    type code below 0xff; such a longer tuple continues with 0xff.
    """
    return prefix + b"\xff"


def score_prefix(element: bytes) -> bytes:
    """``pack((stored score,))``: the leading item of a ranked-set element ``(stored score, ts,
    context...)``, so also a prefix of every primary key holding that score."""
    return element[: tuples.item_ends(element, 1)[0]]


def encode_latest_timestamp(ts: int) -> bytes:
    """The reference's ``encodeSignedLong``: LE bytes of ``ts - INT64_MIN`` (so MAX orders signed)."""
    return (ts - INT64_MIN).to_bytes(8, "little")


def decode_latest_timestamp(data: bytes) -> int:
    return int.from_bytes(data, "little") + INT64_MIN
