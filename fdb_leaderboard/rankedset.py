"""A persistent skip list with counts, stored as keys: O(log n) rank and select.

This is the FoundationDB Record Layer's ``RankedSet`` with the same key layout, values
and level rule, so sets written by either are byte-identical.

Layout under the set's prefix ``R`` (keys are tuple-encoded):

- ``R + (level, element)`` for ``level`` in ``0 .. nlevels-1``: a node.  Its value is an
  int64 little-endian count of the level-0 elements in ``[node, next node on the level)``.
- ``R + (level, b"")``: a sentinel per level, created by :meth:`RankedSet.init` with count 0,
  so every level has a first node.  At level 0 every element counts 1 and the sentinel 0.

An element is a node at level ``l >= 1`` iff ``hash(element) & (16**l - 1) == 0``: each level
holds about 1/16 of the level below (fan-out 16), so a walk from the top visits about 16
nodes per level.  Promotion at ``l`` implies promotion at every lower level.

Complexity (n elements, L levels, fan-out 16): ``add``, ``remove``, ``rank`` and ``get_nth``
read O(L) keys and O(16 L) nodes; ``size`` reads the top level (n / 16**(L-1) nodes);
``contains`` is one read.  ``add`` and ``remove`` touch L counters with atomic ADD, reading
predecessors as snapshot reads with narrow conflict ranges, so concurrent changes to
unrelated elements do not conflict on FoundationDB.

Every node key of one element shares the same encoded suffix (``\\x01`` + escaped bytes +
``\\x00``) after a per-level prefix, so the suffix is built once per operation and moving
between levels is a byte concatenation, never a tuple (un)packing.
"""

from __future__ import annotations

import enum
import zlib
from collections.abc import Iterable, Iterator

import fdb.tuple
import mmh3

from .store.api import ReadView, Transaction, strinc

DEFAULT_LEVELS = 6
MIN_LEVELS = 2
MAX_LEVELS = 8
LEVEL_FAN_POW = 4  # fan-out 16

_SENTINEL = b"\x01\x00"  # tuple encoding of the empty byte string
_ONE = (1).to_bytes(8, "little")
_MINUS_ONE = (-1 & 0xFFFF_FFFF_FFFF_FFFF).to_bytes(8, "little")
_ZERO = bytes(8)
_NTH_PAGE = 12


class HashFunction(enum.Enum):
    """How an element's level is chosen.  Stored per set: all writers must agree."""

    JDK = "JDK"  # java.util.Arrays.hashCode over signed bytes: the Record Layer's default
    CRC = "CRC"  # zlib CRC-32
    MURMUR3 = "MURMUR3"  # MurmurHash3 x86_32, seed 0: the best spread; use for new sets

    def __call__(self, data: bytes) -> int:
        return _HASHES[self](data)


def jdk_hash(data: bytes) -> int:
    """``Arrays.hashCode(byte[])`` as an unsigned 32-bit value (Java bytes are signed)."""
    h = 1
    for b in data:
        h = (31 * h + (b - 256 if b > 127 else b)) & 0xFFFF_FFFF
    return h


def crc_hash(data: bytes) -> int:
    return zlib.crc32(data)


def murmur3_hash(data: bytes) -> int:
    return mmh3.hash(data, 0, signed=False)


_HASHES = {HashFunction.JDK: jdk_hash, HashFunction.CRC: crc_hash, HashFunction.MURMUR3: murmur3_hash}
_LEVEL_MASKS = [(1 << (LEVEL_FAN_POW * level)) - 1 for level in range(MAX_LEVELS)]
_LEVEL_KEYS = [fdb.tuple.pack((level,)) for level in range(MAX_LEVELS)]


def _encode_count(count: int) -> bytes:
    return (count & 0xFFFF_FFFF_FFFF_FFFF).to_bytes(8, "little")


def _decode_count(value: bytes) -> int:
    return int.from_bytes(value, "little", signed=True)


def _suffix(element: bytes) -> bytes:
    """Tuple encoding of ``element`` as a byte-string item: the node key after the level."""
    return b"\x01" + element.replace(b"\x00", b"\x00\xff") + b"\x00"


def _element(suffix: bytes) -> bytes:
    return suffix[1:-1].replace(b"\x00\xff", b"\x00")


class CorruptRankedSet(Exception):
    """The stored skip list is missing nodes it must have."""


class RankedSet:
    """One ranked set under raw key prefix ``prefix``; elements are non-empty byte strings.

    With ``count_duplicates`` (the reference's ``countDuplicates``) an element may be added
    several times: its level-0 value is its multiplicity and every count, rank and
    position counts each occurrence.  The object holds no data, only key prefixes.
    """

    __slots__ = (
        "prefix",
        "nlevels",
        "hash_function",
        "count_duplicates",
        "_hash",
        "_levels",
        "_level_ends",
        "_level_sentinels",
    )

    def __init__(
        self,
        prefix: bytes,
        nlevels: int = DEFAULT_LEVELS,
        hash_function: HashFunction = HashFunction.JDK,
        count_duplicates: bool = False,
    ):
        if not MIN_LEVELS <= nlevels <= MAX_LEVELS:
            raise ValueError(f"nlevels must be between {MIN_LEVELS} and {MAX_LEVELS}, not {nlevels}")
        self.prefix = prefix
        self.nlevels = nlevels
        self.hash_function = hash_function
        self.count_duplicates = count_duplicates
        self._hash = _HASHES[hash_function]
        self._levels = [prefix + _LEVEL_KEYS[level] for level in range(nlevels)]
        self._level_sentinels = [level + _SENTINEL for level in self._levels]
        self._level_ends = [level + b"\x02" for level in self._levels]  # after every bytes item

    # -- set-up --------------------------------------------------------------------------

    def init_needed(self, tr: ReadView) -> bool:
        return tr.get(self._level_sentinels[0]) is None

    def init(self, tr: Transaction) -> None:
        """Create the per-level sentinels if the set does not exist yet."""
        if self.init_needed(tr):
            for sentinel in self._level_sentinels:
                tr.set(sentinel, _ZERO)

    def clear(self, tr: Transaction) -> None:
        """Remove the whole set, sentinels included."""
        tr.clear_range(self._levels[0], strinc(self._levels[-1]))

    # -- updates -------------------------------------------------------------------------

    def _check_element(self, element: bytes) -> bytes:
        if not element:
            raise ValueError("ranked set elements must be non-empty byte strings")
        return _suffix(element)

    def _predecessors(self, tr: Transaction, suffix: bytes, or_equal: bool = False) -> list[bytes] | None:
        """For each level >= 1, the key of the last node before ``suffix`` (snapshot reads).

        With ``or_equal`` the element's own node counts as its predecessor.  As in the
        reference, each lookup declares conflicts only on the keys strictly between the
        predecessor and the element, and on the predecessor's level-0 key: a node inserted
        in between, or removal of the predecessor, conflicts, while concurrent atomic ADDs
        to the predecessor's count do not.  Returns None if the set is not initialized.
        """
        levels = self._levels
        tail = b"\x00" if or_equal else b""
        found = tr.snapshot.last_keys(
            [(self._level_sentinels[level], levels[level] + suffix + tail) for level in range(1, self.nlevels)]
        )
        if not any(found):
            return None
        keys = []
        conflicts = tr.declares_conflicts
        for level, key in enumerate(found, start=1):
            if key is None:
                raise CorruptRankedSet(f"level {level} of the ranked set at {self.prefix!r} has no sentinel")
            if conflicts:
                node = levels[level] + suffix
                if key != node:
                    tr.add_read_conflict_range(key + b"\x00", node)
                tr.add_read_conflict_key(levels[0] + key[len(levels[level]) :])
            keys.append(key)
        return keys

    def add(self, tr: Transaction, element: bytes) -> bool:
        """Insert ``element``; False if it was already present (and duplicates are not counted).

        Creates the set if needed.
        """
        suffix = self._check_element(element)
        levels = self._levels
        if tr.get(levels[0] + suffix) is not None:
            if not self.count_duplicates:
                return False
            tr.add(levels[0] + suffix, _ONE)
            for predecessor in self._predecessors(tr, suffix, or_equal=True) or ():
                tr.add(predecessor, _ONE)
            return True
        predecessors = self._predecessors(tr, suffix)
        if predecessors is None:
            self.init(tr)
            predecessors = self._level_sentinels[1:]
        tr.set(levels[0] + suffix, _ONE)
        element_hash = self._hash(element)
        for level in range(1, self.nlevels):
            predecessor = predecessors[level - 1]
            if element_hash & _LEVEL_MASKS[level]:
                tr.add(predecessor, _ONE)
                continue
            # Promoted: the predecessor's span splits at the element.  Lower levels were
            # already updated (this loop goes up), so counting the level below between the
            # predecessor and the element gives the predecessor's new count exactly.
            old_count = _decode_count(tr.get(predecessor))
            below = levels[level - 1]
            kept = sum(
                _decode_count(value)
                for _, value in tr.get_range(below + predecessor[len(levels[level]) :], below + suffix)
            )
            tr.set(predecessor, _encode_count(kept))
            tr.set(levels[level] + suffix, _encode_count(old_count - kept + 1))
        return True

    def append(self, tr: Transaction, elements: Iterable[tuple[bytes, int]]) -> int:
        """Add ``(element, occurrences)`` pairs in ascending order, none below the set's last element.

        This builds a set in key order (a rebuild from a sorted source, in bounded batches):
        nothing before the last element can change, so each level only grows at its end.  It
        reads the last node of each level once, writes each new level-0 node once and each
        level's last node's count once per call: O(k + L) writes for k elements, where ``add``
        needs O(k L) reads and writes.  An element equal to the last one only adds occurrences
        (with ``count_duplicates``; else it is skipped).  Returns the occurrences added.
        Raises ValueError, before writing anything, if the elements are not ascending.
        """
        levels = self._levels
        # Per level: the last node's key, whether this call created it, and occurrences added to it.
        last = tr.last_keys([(self._level_sentinels[level], self._level_ends[level]) for level in range(self.nlevels)])
        new_set = last[0] is None
        if new_set:
            last = list(self._level_sentinels)
        elif None in last:
            raise CorruptRankedSet(f"the ranked set at {self.prefix!r} lacks a sentinel above level 0")
        created = [False] * self.nlevels
        pending = [0] * self.nlevels
        writes: list[tuple[bytes, int, bool]] = []  # (node key, count, created)
        previous = last[0][len(levels[0]) :]
        added = 0
        for element, occurrences in elements:
            suffix = self._check_element(element)
            if suffix < previous:
                raise ValueError(f"append needs ascending elements at or after the last one: {element!r} is not")
            if suffix == previous:
                if not self.count_duplicates:
                    continue
            else:
                element_hash = self._hash(element)
                previous = suffix
                for level in range(self.nlevels):
                    if level and element_hash & _LEVEL_MASKS[level]:
                        break
                    writes.append((last[level], pending[level], created[level]))  # type: ignore[arg-type]
                    last[level], created[level], pending[level] = levels[level] + suffix, True, 0
            count = occurrences if self.count_duplicates else 1
            if count < 1:
                raise ValueError(f"occurrences must be at least 1, not {occurrences!r}")
            for level in range(self.nlevels):
                pending[level] += count
            added += count
        writes.extend(zip(last, pending, created, strict=True))  # type: ignore[arg-type]
        if new_set:
            self.init(tr)
        for key, count, new in writes:
            if new:
                tr.set(key, _encode_count(count))
            elif count:
                tr.add(key, _encode_count(count))
        return added

    def remove(self, tr: Transaction, element: bytes) -> bool:
        """Delete one occurrence of ``element``; False if it was absent.  Ignores the hash."""
        suffix = self._check_element(element)
        levels = self._levels
        stored = tr.get(levels[0] + suffix)
        if stored is None or _decode_count(stored) <= 0:
            return False
        if self.count_duplicates and _decode_count(stored) > 1:
            tr.add(levels[0] + suffix, _MINUS_ONE)
            for predecessor in self._predecessors(tr, suffix, or_equal=True) or ():
                tr.add(predecessor, _MINUS_ONE)
            return True
        tr.clear(levels[0] + suffix)
        node_counts = tr.get_many([levels[level] + suffix for level in range(1, self.nlevels)])
        predecessors = self._predecessors(tr, suffix)
        if predecessors is None:
            raise CorruptRankedSet(f"the ranked set at {self.prefix!r} holds {element!r} but has no sentinels")
        for level in range(1, self.nlevels):
            predecessor = predecessors[level - 1]
            count = node_counts[level - 1]
            if count is None:
                tr.add(predecessor, _MINUS_ONE)
            else:  # the element's span merges into its predecessor's, less the element
                tr.add(predecessor, _encode_count(_decode_count(count) - 1))
                tr.clear(levels[level] + suffix)
        return True

    def move(self, tr: Transaction, old: bytes, new: bytes) -> None:
        """Replace one occurrence of ``old`` (which must be present) by ``new``.

        Equivalent to ``remove(old)`` then ``add(new)``.  In the common case, where neither is
        a node above level 0 (``old`` found so by reading, not by hash), no node changes above
        level 0 and each upper level only moves one count between predecessors: when both have
        the same predecessor (most upper levels), nothing is written there at all.
        """
        old_suffix, new_suffix = self._check_element(old), self._check_element(new)
        levels = self._levels
        counts = tr.get_many([levels[0] + old_suffix, levels[0] + new_suffix, levels[1] + old_suffix])
        simple = (
            counts[0] is not None
            and _decode_count(counts[0]) == 1
            and counts[1] is None
            and counts[2] is None
            and self._hash(new) & _LEVEL_MASKS[1] != 0
        )
        if not simple:
            if not self.remove(tr, old):
                raise CorruptRankedSet(f"cannot move {old!r}: the ranked set at {self.prefix!r} lacks it")
            self.add(tr, new)  # False when a shared element is already there: nothing to do
            return
        before_old = self._predecessors(tr, old_suffix)
        before_new = self._predecessors(tr, new_suffix)
        if before_old is None or before_new is None:
            raise CorruptRankedSet(f"the ranked set at {self.prefix!r} holds {old!r} but has no sentinels")
        tr.clear(levels[0] + old_suffix)
        tr.set(levels[0] + new_suffix, _ONE)
        for losing, gaining in zip(before_old, before_new, strict=True):
            if losing != gaining:
                tr.add(losing, _MINUS_ONE)
                tr.add(gaining, _ONE)

    # -- reads ---------------------------------------------------------------------------

    def contains(self, tr: ReadView, element: bytes) -> bool:
        return tr.get(self._levels[0] + self._check_element(element)) is not None

    def count(self, tr: ReadView, element: bytes) -> int:
        """How many times ``element`` is present (0 or 1 unless duplicates are counted)."""
        stored = tr.get(self._levels[0] + self._check_element(element))
        return 0 if stored is None else _decode_count(stored)

    def rank(self, tr: ReadView, element: bytes, null_if_missing: bool = True) -> int | None:
        """The number of elements before ``element``.

        If ``element`` is absent: None when ``null_if_missing``, else the rank it would have.
        """
        suffix = self._check_element(element)
        levels = self._levels
        if null_if_missing and tr.get(levels[0] + suffix) is None:
            return None
        rank = 0
        start = _SENTINEL
        from_bytes = int.from_bytes
        for level in range(self.nlevels - 1, 0, -1):
            prefix = levels[level]
            nodes = tr.get_range(prefix + start, prefix + suffix)
            if not nodes:
                if start == _SENTINEL:
                    return 0  # the set was never initialized: it is empty
                raise CorruptRankedSet(f"level {level} of the ranked set at {self.prefix!r} lacks node {start!r}")
            for _, value in nodes[:-1]:
                rank += from_bytes(value, "little", signed=True)
            start = nodes[-1][0][len(prefix) :]  # descend from the last node before the element
        for _, value in tr.get_range(levels[0] + start, levels[0] + suffix):
            rank += from_bytes(value, "little", signed=True)
        return rank

    def get_nth(self, tr: ReadView, n: int) -> bytes | None:
        """The element of rank ``n`` (0-based), or None when ``n`` is out of range."""
        if n < 0:
            return None
        levels = self._levels
        start = _SENTINEL
        stop: bytes | None = None  # the next node on the level above bounds the scan below
        from_bytes = int.from_bytes
        for level in range(self.nlevels - 1, -1, -1):
            prefix = levels[level]
            begin = prefix + start
            end = prefix + stop if stop is not None else self._level_ends[level]
            found = False
            while not found:
                # A span holds about 16 nodes and the walk stops halfway on average: read in pages.
                nodes = tr.get_range(begin, end, _NTH_PAGE)
                for i, (key, value) in enumerate(nodes):
                    count = from_bytes(value, "little", signed=True)
                    if n < count:
                        start = key[len(prefix) :]
                        if i + 1 < len(nodes):
                            stop = nodes[i + 1][0][len(prefix) :]
                        found = True
                        break
                    n -= count
                else:
                    if len(nodes) < _NTH_PAGE:
                        return None  # past the last element
                    begin = nodes[-1][0] + b"\x00"
        return _element(start)

    def size(self, tr: ReadView) -> int:
        top = self.nlevels - 1
        return sum(_decode_count(value) for _, value in tr.get_range(self._level_sentinels[top], self._level_ends[top]))

    def range(
        self,
        tr: ReadView,
        begin: bytes | None = None,
        end: bytes | None = None,
        limit: int = 0,
        reverse: bool = False,
    ) -> list[bytes]:
        """Elements ``begin <= e < end`` in order (None: unbounded)."""
        level = self._levels[0]
        low = level + _suffix(begin) if begin else self._level_sentinels[0] + b"\x00"
        high = level + _suffix(end) if end is not None else self._level_ends[0]
        return [_element(key[len(level) :]) for key, _ in tr.get_range(low, high, limit, reverse)]

    # -- checking ------------------------------------------------------------------------

    def _nodes(self, tr: ReadView, level: int) -> Iterator[tuple[bytes, int]]:
        """Every node of ``level`` as (suffix, count), read in pages."""
        prefix = self._levels[level]
        for key, value in tr.iter_range(self._level_sentinels[level], self._level_ends[level]):
            yield key[len(prefix) :], _decode_count(value)

    def check_consistency(self, tr: ReadView, max_problems: int = 100) -> list[str]:
        """Problems found in the stored structure; an empty list means it is consistent.

        Checks the sentinels, that level-0 counts are 1, that every node's count equals the
        sum of the level below over its span, and that levels follow the hash.
        """
        problems: list[str] = []

        def report(message: str) -> bool:
            problems.append(message)
            return len(problems) >= max_problems

        for level in range(self.nlevels):
            if tr.get(self._level_sentinels[level]) is None and report(f"level {level}: sentinel missing"):
                return problems
        if problems:
            return problems
        for suffix, count in self._nodes(tr, 0):
            if suffix == _SENTINEL:
                bad, expected = count != 0, "0"
            elif self.count_duplicates:
                bad, expected = count < 1, "at least 1"
            else:
                bad, expected = count != 1, "1"
            if bad and report(f"level 0: {_element(suffix)!r} has count {count}, expected {expected}"):
                return problems
        for level in range(1, self.nlevels):
            upper = self._nodes(tr, level)
            current, total = next(upper)  # the sentinel
            following = next(upper, None)
            span = 0
            for suffix, count in self._nodes(tr, level - 1):
                while following is not None and suffix >= following[0]:
                    if following[0] != suffix and report(
                        f"level {level}: node {_element(following[0])!r} is missing from level {level - 1}"
                    ):
                        return problems
                    if span != total and report(
                        f"level {level}: node {_element(current)!r} counts {total}, the level below sums to {span}"
                    ):
                        return problems
                    (current, total), span = following, 0
                    following = next(upper, None)
                span += count
                if suffix != _SENTINEL:
                    promoted = self._hash(_element(suffix)) & _LEVEL_MASKS[level] == 0
                    if promoted != (suffix == current) and report(
                        f"level {level}: {_element(suffix)!r} is {'missing' if promoted else 'present'} "
                        f"against the {self.hash_function.value} hash"
                    ):
                        return problems
            while following is not None:
                if report(f"level {level}: node {_element(following[0])!r} is missing from level {level - 1}"):
                    return problems
                following = next(upper, None)
            if span != total and report(
                f"level {level}: node {_element(current)!r} counts {total}, the level below sums to {span}"
            ):
                return problems
        return problems
