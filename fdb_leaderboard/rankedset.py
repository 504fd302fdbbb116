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

import bisect
import dataclasses
import enum
import struct
import zlib
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from typing import Any, NamedTuple, TypeVar

import fdb.tuple
import mmh3

from .store.api import Future, KeyValue, ReadView, Transaction, strinc

T = TypeVar("T")

# A ranked-set operation as steps: it issues reads, yields before waiting on them, and returns
# its result (see run_together).
Steps = Generator[None, None, T]

DEFAULT_LEVELS = 6
MIN_LEVELS = 2
MAX_LEVELS = 8
LEVEL_FAN_POW = 4  # fan-out 16
# The longest span a structure check reads in one transaction (a few hundred kB: a fraction of a
# second on FoundationDB); a sound set's spans are far shorter.
MAX_SPAN_KEYS = 16_384

_SENTINEL = b"\x01\x00"  # tuple encoding of the empty byte string
_ONE = (1).to_bytes(8, "little")
_MINUS_ONE = (-1 & 0xFFFF_FFFF_FFFF_FFFF).to_bytes(8, "little")
_ZERO = bytes(8)
_NTH_PAGE = 12
_NTH_PAGE_BATCHED = 48
_TAIL_NODES = 64  # nodes read back from an element on each level by a batched rank
# Where reads cost round trips, the upper levels holding about this many nodes or fewer together
# are read whole in one range read (the set's size, noted from its top level, tells which levels
# those are), instead of one read per level; a read that would return more than _UPPER_LIMIT is
# cut there, and the levels it did not cover are read one by one in one more round.
_UPPER_NODES = 24
_UPPER_LIMIT = 256


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


def _sum_counts(nodes: Sequence[KeyValue]) -> int:
    """The sum of the nodes' counts: one unpacking of them all when each is 8 bytes (as every
    writer stores them), else one by one."""
    values = b"".join([value for _, value in nodes])
    if len(values) == 8 * len(nodes):
        return sum(struct.unpack(f"<{len(nodes)}q", values))
    return sum(_decode_count(value) for _, value in nodes)


def _suffix(element: bytes) -> bytes:
    """Tuple encoding of ``element`` as a byte-string item: the node key after the level."""
    return b"\x01" + element.replace(b"\x00", b"\x00\xff") + b"\x00"


def _element(suffix: bytes) -> bytes:
    return suffix[1:-1].replace(b"\x00\xff", b"\x00")


def _merged(ranges: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """The same keys in fewer ranges: overlapping and touching ranges joined (predecessors found
    for several levels, or for both ends of a move, often share keys)."""
    ranges.sort()
    out: list[tuple[bytes, bytes]] = []
    for begin, end in ranges:
        if out and begin <= out[-1][1]:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end)
        else:
            out.append((begin, end))
    return out


def run_together(operations: Sequence[Steps[Any]]) -> list[Any]:
    """Run operations given as steps in lockstep; returns their results in order.

    Each round, every operation issues its reads and yields; then each resumes and waits for
    what it issued, so the operations cost as many read rounds as the longest one, not the
    sum.  They must not depend on each other's writes (e.g. updates of different sets).
    """
    results: list[Any] = [None] * len(operations)
    active = list(enumerate(operations))
    while active:
        waiting = []
        for i, operation in active:
            try:
                next(operation)
            except StopIteration as done:
                results[i] = done.value
            else:
                waiting.append((i, operation))
        active = waiting
    return results


def run_alone(operation: Steps[T]) -> T:
    """Run one operation given as steps."""
    while True:
        try:
            next(operation)
        except StopIteration as done:
            return done.value


class _UpperReads(NamedTuple):
    """Reads issued by :meth:`RankedSet._issue_upper`: per probe, one per level below ``low``;
    ``whole``, levels ``low`` and up (None when ``low`` is ``nlevels``)."""

    low: int
    probes: Sequence[tuple[bytes, bool]]
    per_level: list[list[Future[list[KeyValue]]]]
    whole: Future[list[KeyValue]] | None


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
        "_size_hint",
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
        # The size last seen (its top level read whole), or None: only where reads go (see
        # _upper_level), never an answer.
        self._size_hint: int | None = None

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
    #
    # Each update is a generator of steps (``*_steps``): it issues every read it can before
    # waiting on any, yields, and continues once resumed.  ``run_together`` drives several (of
    # different sets: one per window and group of a score write) in lockstep, so they cost as
    # many read rounds as the longest one.  ``add``, ``remove`` and ``move`` drive one alone.
    # Round one reads everything but the counts a promoted element splits, which need the
    # predecessor found in round one: a second round for 1 element in 16.

    def _check_element(self, element: bytes) -> bytes:
        if not element:
            raise ValueError("ranked set elements must be non-empty byte strings")
        return _suffix(element)

    def _upper_level(self, tr: ReadView) -> int:
        """The lowest level read whole with every level above it (in one range read), or ``nlevels``
        for none: where reads cost round trips, the lowest level ``l >= 1`` whose nodes and those
        above are expected to number about ``_UPPER_NODES`` or fewer (a set of n elements has about
        ``n / 16**l`` nodes on level ``l``), by the size last seen (the top level alone before)."""
        if not tr.batched_reads:
            return self.nlevels
        size = self._size_hint
        if size is None:
            return self.nlevels - 1
        for level in range(1, self.nlevels):
            if size >> (LEVEL_FAN_POW * level) <= _UPPER_NODES:
                return level
        return self.nlevels

    def _note_size(self, top_nodes: Sequence[KeyValue]) -> int:
        """The size, from the top level's nodes, noted for where later reads go (:meth:`_upper_level`)."""
        size = self._size_hint = _sum_counts(top_nodes)
        return size

    def _issue_upper(self, tr: Transaction, probes: Sequence[tuple[bytes, bool]]) -> _UpperReads:
        """Snapshot reads, issued now, of what updates need on levels >= 1 for each probe
        ``(suffix, own_node)``: the last node at or before the element on each level and, with
        ``own_node``, the one before it (then the first may be the element's own node).  Levels
        below :meth:`_upper_level` are read one range each; that level and those above in one."""
        low = self._upper_level(tr)
        snapshot = tr.snapshot
        per_level = [
            [
                snapshot.get_range_async(
                    self._level_sentinels[level], self._levels[level] + suffix + b"\x00", 2 if own_node else 1, True
                )
                for level in range(1, low)
            ]
            for suffix, own_node in probes
        ]
        whole = None
        if low < self.nlevels:
            whole = snapshot.get_range_async(self._level_sentinels[low], self._level_ends[-1], _UPPER_LIMIT)
        return _UpperReads(low, probes, per_level, whole)

    def _upper(self, tr: Transaction, reads: _UpperReads) -> Steps[list[tuple[list[bytes], list[bytes | None]]] | None]:
        """For each probe of :meth:`_issue_upper`: its predecessor keys on levels 1 .. nlevels-1
        (the last node before the element, or at it without ``own_node``) and, with ``own_node``,
        the element's node values there (None where it is no node).  None if the set has no
        sentinels.  One more round only when the whole-levels read was cut at its limit.

        As in the reference, each lookup declares conflicts only on the keys between the
        predecessor and the element (the element's own node included, with ``own_node``) and on
        the predecessor's level-0 key: a node inserted in between, or removal of the
        predecessor, conflicts, while concurrent atomic ADDs to the predecessor's count do not.
        """
        found = [[read.value for read in level_reads] for level_reads in reads.per_level]
        low = reads.low
        if reads.whole is not None:
            rows = reads.whole.value
            if len(rows) < _UPPER_LIMIT:
                self._note_size(rows[bisect.bisect_left(rows, (self._level_sentinels[-1],)) :])
                keys = [key for key, _ in rows]
                for (suffix, _), levels_found in zip(reads.probes, found, strict=True):
                    for level in range(low, self.nlevels):
                        first = bisect.bisect_left(keys, self._level_sentinels[level])
                        at = bisect.bisect_right(keys, self._levels[level] + suffix)
                        levels_found.append(rows[max(first, at - 2) : at][::-1])
            else:  # more nodes than expected: those levels one by one
                self._size_hint = None
                snapshot = tr.snapshot
                more = [
                    [
                        snapshot.get_range_async(
                            self._level_sentinels[level], self._levels[level] + suffix + b"\x00", 2, True
                        )
                        for level in range(low, self.nlevels)
                    ]
                    for suffix, _ in reads.probes
                ]
                yield
                for levels_found, level_reads in zip(found, more, strict=True):
                    levels_found.extend(read.value for read in level_reads)
        if not any(found[0]):
            return None
        levels = self._levels
        ranges: list[tuple[bytes, bytes]] = []  # read conflicts
        out = []
        for (suffix, own_node), levels_found in zip(reads.probes, found, strict=True):
            keys: list[bytes] = []
            nodes: list[bytes | None] = []
            for level, rows in enumerate(levels_found, start=1):
                node = levels[level] + suffix
                value = None
                if own_node and rows and rows[0][0] == node:
                    value = rows[0][1]
                    rows = rows[1:]
                if not rows:
                    raise CorruptRankedSet(f"level {level} of the ranked set at {self.prefix!r} has no sentinel")
                key = rows[0][0]
                if own_node:
                    ranges.append((key + b"\x00", node + b"\x00"))
                elif key != node:
                    ranges.append((key + b"\x00", node))
                below = levels[0] + key[len(levels[level]) :]
                ranges.append((below, below + b"\x00"))
                keys.append(key)
                nodes.append(value)
            out.append((keys, nodes))
        if tr.declares_conflicts:
            tr.add_read_conflict_ranges(_merged(ranges))
        return out

    def _create(self, tr: Transaction) -> list[bytes]:
        """Write the sentinels of a set found to have none; returns the upper levels' sentinels.

        The reads that found none were snapshot reads: a conflict on the level-0 sentinel makes
        two transactions creating the set at once conflict (else one's counts overwrite the other's).
        """
        if tr.declares_conflicts:
            tr.add_read_conflict_key(self._level_sentinels[0])
        for sentinel in self._level_sentinels:
            tr.set(sentinel, _ZERO)
        return self._level_sentinels[1:]

    def _insert(
        self, tr: Transaction, element: bytes, suffix: bytes, present: bool, predecessors: list[bytes] | None
    ) -> Steps[bool]:
        """Add ``element`` given what round one found: whether it is present, and its predecessors
        at or before it on each upper level (None: the set has no sentinels yet)."""
        levels = self._levels
        if present:
            if not self.count_duplicates:
                return False
            tr.add(levels[0] + suffix, _ONE)
            for predecessor in predecessors or ():
                tr.add(predecessor, _ONE)
            return True
        if predecessors is None:
            predecessors = self._create(tr)
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
            below = levels[level - 1]
            old_count = tr.get_async(predecessor)
            kept_nodes = tr.get_range_async(below + predecessor[len(levels[level]) :], below + suffix)
            yield
            old = _decode_count(old_count.value)  # type: ignore[arg-type]
            kept = sum(_decode_count(value) for _, value in kept_nodes.value)
            tr.set(predecessor, _encode_count(kept))
            tr.set(levels[level] + suffix, _encode_count(old - kept + 1))
        return True

    def _unlink(
        self, tr: Transaction, suffix: bytes, stored: int, node_counts: list[bytes | None], predecessors: list[bytes]
    ) -> dict[bytes, bytes]:
        """Remove one occurrence of an element present ``stored`` times, given its node counts and
        strict predecessors on the upper levels.  Returns each upper node removed, mapped to the
        predecessor that took over its span."""
        levels = self._levels
        if self.count_duplicates and stored > 1:
            tr.add(levels[0] + suffix, _MINUS_ONE)
            for level in range(1, self.nlevels):
                own = node_counts[level - 1] is not None
                tr.add(levels[level] + suffix if own else predecessors[level - 1], _MINUS_ONE)
            return {}
        tr.clear(levels[0] + suffix)
        removed = {}
        for level in range(1, self.nlevels):
            predecessor = predecessors[level - 1]
            count = node_counts[level - 1]
            if count is None:
                tr.add(predecessor, _MINUS_ONE)
            else:  # the element's span merges into its predecessor's, less the element
                node = levels[level] + suffix
                tr.add(predecessor, _encode_count(_decode_count(count) - 1))
                tr.clear(node)
                removed[node] = predecessor
        return removed

    def add_steps(self, tr: Transaction, element: bytes) -> Steps[bool]:
        """:meth:`add` as steps (see ``run_together``)."""
        suffix = self._check_element(element)
        present = tr.get_async(self._levels[0] + suffix)
        before = self._issue_upper(tr, [(suffix, False)])  # at or before: a new element has no node, so before
        yield
        exists = present.value is not None
        upper = yield from self._upper(tr, before)
        return (yield from self._insert(tr, element, suffix, exists, upper[0][0] if upper is not None else None))

    def add(self, tr: Transaction, element: bytes) -> bool:
        """Insert ``element``; False if it was already present (and duplicates are not counted).

        Creates the set if needed.
        """
        return run_alone(self.add_steps(tr, element))

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

    def element_hash(self, element: bytes) -> int:
        """The hash that places ``element`` on its levels (see :class:`HashFunction`)."""
        return self._hash(element)

    def builder(self, write: Callable[[bytes, bytes], None]) -> RankedSetBuilder:
        """A :class:`RankedSetBuilder` of this set, which must not exist yet, writing through ``write``."""
        return RankedSetBuilder(self, write)

    def remove_steps(self, tr: Transaction, element: bytes) -> Steps[bool]:
        """:meth:`remove` as steps (see ``run_together``)."""
        suffix = self._check_element(element)
        stored = tr.get_async(self._levels[0] + suffix)
        before = self._issue_upper(tr, [(suffix, True)])
        yield
        count = stored.value
        if count is None or _decode_count(count) <= 0:
            return False
        upper = yield from self._upper(tr, before)
        if upper is None:
            raise CorruptRankedSet(f"the ranked set at {self.prefix!r} holds {element!r} but has no sentinels")
        predecessors, nodes = upper[0]
        self._unlink(tr, suffix, _decode_count(count), nodes, predecessors)
        return True

    def remove(self, tr: Transaction, element: bytes) -> bool:
        """Delete one occurrence of ``element``; False if it was absent.  Ignores the hash."""
        return run_alone(self.remove_steps(tr, element))

    def move_steps(self, tr: Transaction, old: bytes, new: bytes) -> Steps[None]:
        """:meth:`move` as steps (see ``run_together``): one round of reads, two when ``new`` is
        promoted (as for :meth:`add`)."""
        old_suffix, new_suffix = self._check_element(old), self._check_element(new)
        levels = self._levels
        old_stored = tr.get_async(levels[0] + old_suffix)
        new_present = tr.get_async(levels[0] + new_suffix)
        before = self._issue_upper(tr, [(old_suffix, True), (new_suffix, False)])
        yield
        count = old_stored.value
        stored = _decode_count(count) if count is not None else 0
        exists = new_present.value is not None
        upper = yield from self._upper(tr, before)
        if stored <= 0 or upper is None:
            raise CorruptRankedSet(f"cannot move {old!r}: the ranked set at {self.prefix!r} lacks it")
        (predecessors_old, old_nodes), (predecessors_new, _) = upper
        if stored == 1 and not exists and old_nodes[0] is None and self._hash(new) & _LEVEL_MASKS[1] != 0:
            # The common case: neither is a node above level 0, so each upper level only moves
            # one count between predecessors (nothing at all where they share one).
            tr.clear(levels[0] + old_suffix)
            tr.set(levels[0] + new_suffix, _ONE)
            for losing, gaining in zip(predecessors_old, predecessors_new, strict=True):
                if losing != gaining:
                    tr.add(losing, _MINUS_ONE)
                    tr.add(gaining, _ONE)
            return
        # Otherwise a removal then an insertion, from the same round of reads: where a node of
        # ``old`` preceded ``new``, the predecessor that took over its span precedes ``new`` now.
        removed = self._unlink(tr, old_suffix, stored, old_nodes, predecessors_old)
        predecessors_new = [removed.get(key, key) for key in predecessors_new]
        yield from self._insert(tr, new, new_suffix, exists, predecessors_new)

    def move(self, tr: Transaction, old: bytes, new: bytes) -> None:
        """Replace one occurrence of ``old`` (which must be present) by ``new``.

        Equivalent to ``remove(old)`` then ``add(new)``.  In the common case, where neither is
        a node above level 0 (``old`` found so by reading, not by hash), no node changes above
        level 0 and each upper level only moves one count between predecessors: when both have
        the same predecessor (most upper levels), nothing is written there at all.
        """
        run_alone(self.move_steps(tr, old, new))

    # -- reads ---------------------------------------------------------------------------

    def contains(self, tr: ReadView, element: bytes) -> bool:
        return tr.get(self._levels[0] + self._check_element(element)) is not None

    def count(self, tr: ReadView, element: bytes) -> int:
        """How many times ``element`` is present (0 or 1 unless duplicates are counted)."""
        stored = tr.get(self._levels[0] + self._check_element(element))
        return 0 if stored is None else _decode_count(stored)

    def issue_counts(self, tr: ReadView, elements: Sequence[bytes]) -> Callable[[], list[int | None]]:
        """For each of ``elements`` (ascending, not empty), its count (None: absent), issued now:
        one range read over them, of at most twice their number of nodes; if others between
        them fill it, those past it are read one by one in one more round."""
        level = self._levels[0]
        suffixes = [self._check_element(element) for element in elements]
        limit = 2 * len(suffixes)
        read = tr.get_range_async(level + suffixes[0], level + suffixes[-1] + b"\x00", limit)

        def counts() -> list[int | None]:
            rows = read.value
            found = {key[len(level) :]: value for key, value in rows}
            if len(rows) == limit:
                past = [suffix for suffix in suffixes if level + suffix > rows[-1][0]]
                found.update((s, v) for s, v in zip(past, tr.get_many([level + s for s in past]), strict=True) if v)
            return [None if (value := found.get(suffix)) is None else _decode_count(value) for suffix in suffixes]

        return counts

    def rank(self, tr: ReadView, element: bytes, null_if_missing: bool = True) -> int | None:
        """The number of elements before ``element``.

        If ``element`` is absent: None when ``null_if_missing``, else the rank it would have.
        """
        return run_alone(self.rank_steps(tr, element, null_if_missing))

    def rank_steps(self, tr: ReadView, element: bytes, null_if_missing: bool = True) -> Steps[int | None]:
        """:meth:`rank` as steps (see ``run_together``).

        Where reads are free (``tr.batched_reads`` false) it walks down from the top level,
        each level's read starting at the node the level above ended on: ``nlevels`` reads of
        about 16 nodes.  Where each round costs a network trip it reads every level at once:
        the upper levels whole in one read (see :meth:`_upper_level`; the top level up to the
        element when none is small enough), and on each lower level the last ``_TAIL_NODES``
        nodes before the element, which reach back to the level above's predecessor unless more
        than that many nodes separate them (probability (15/16)**64, about 1.6% per level); the
        gaps are then read in one more round, as are the upper levels one by one when their
        read was cut.
        """
        suffix = self._check_element(element)
        if tr.batched_reads:
            return (yield from self._rank_batched(tr, suffix, null_if_missing))
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

    def rank_and_size_steps(self, tr: ReadView, element: bytes) -> Steps[tuple[int, int]]:
        """The rank ``element`` has or would have, and :meth:`size`, as steps: where reads cost
        round trips, the size comes from the rank's read of the upper levels when it has the top
        level whole (else the top level is read with the rank's first reads)."""
        if tr.batched_reads:
            return (yield from self._rank_batched(tr, self._check_element(element), False, with_size=True))  # type: ignore[misc]
        rank = yield from self.rank_steps(tr, element, null_if_missing=False)  # reads cost nothing here
        return rank, (yield from self.size_steps(tr))  # type: ignore[return-value]

    def _rank_batched(
        self, tr: ReadView, suffix: bytes, null_if_missing: bool, with_size: bool = False
    ) -> Steps[int | tuple[int, int] | None]:
        """The batched rank walk (see :meth:`rank_steps`); ``with_size``: (rank, size)."""
        levels = self._levels
        top = self.nlevels - 1
        low = self._upper_level(tr)
        whole_levels = low < self.nlevels
        present = tr.get_async(levels[0] + suffix) if null_if_missing else None
        top_whole = None  # a read of the whole top level, for the size, where the others lack it
        if with_size and not whole_levels:
            top_whole = tr.get_range_async(self._level_sentinels[top], self._level_ends[top])
        if whole_levels:  # levels low .. top, all their nodes, in one read
            upper = tr.get_range_async(self._level_sentinels[low], self._level_ends[top], _UPPER_LIMIT)
        else:  # the top level up to the element
            low = top
            upper = tr.get_range_async(self._level_sentinels[top], levels[top] + suffix)
        tails = [
            tr.get_range_async(self._level_sentinels[level], levels[level] + suffix, _TAIL_NODES, True)
            for level in range(low)
        ]
        yield
        if present is not None and present.value is None:
            return None
        # Per level: the nodes before the element, last first, and whether they are all of them.
        before: dict[int, tuple[list[KeyValue], bool]] = {}
        size = 0  # with_size: from the whole top level, read below
        rows = upper.value
        if not whole_levels:
            before[top] = (rows[::-1], True)
        elif len(rows) < _UPPER_LIMIT:
            keys = [key for key, _ in rows]
            for level in range(low, top + 1):
                first = bisect.bisect_left(keys, self._level_sentinels[level])
                before[level] = (rows[first : bisect.bisect_left(keys, levels[level] + suffix, first)][::-1], True)
            size = self._note_size(rows[first:])  # the top level's
        else:  # more nodes than expected: those levels by tails, in one more round
            self._size_hint = None
            more = {
                level: tr.get_range_async(self._level_sentinels[level], levels[level] + suffix, _TAIL_NODES, True)
                for level in range(low, top)
            }
            top_nodes = tr.get_range_async(self._level_sentinels[top], levels[top] + suffix)
            if with_size:
                top_whole = tr.get_range_async(self._level_sentinels[top], self._level_ends[top])
            yield
            before = {level: (read.value, False) for level, read in more.items()}
            before[top] = (top_nodes.value[::-1], True)
        if top_whole is not None:
            size = self._note_size(top_whole.value)
        if not before[top][0]:
            return (0, 0) if with_size else 0  # the set was never initialized: it is empty
        for level in range(low):
            before[level] = (tails[level].value, False)
        nodes = before[top][0]  # last first
        rank = _sum_counts(nodes[1:])
        start = nodes[0][0][len(levels[top]) :]
        gaps = []
        for level in range(top - 1, -1, -1):
            prefix = levels[level]
            rows, whole = before[level]  # the nodes before the element, last first
            keys = [key for key, _ in rows]
            try:
                at = keys.index(prefix + start)  # where the walk came down to this level
            except ValueError:  # more nodes lie between the level above's predecessor and those read
                if whole or len(rows) < _TAIL_NODES:
                    raise CorruptRankedSet(
                        f"level {level} of the ranked set at {self.prefix!r} lacks node {start!r}"
                    ) from None
                gaps.append(tr.get_range_async(prefix + start, rows[-1][0]))
                at = len(rows) - 1
            # A level's last node before the element is where the walk descends (counted below it).
            rank += _sum_counts(rows[0 if level == 0 else 1 : at + 1])
            start = rows[0][0][len(prefix) :]
        if gaps:
            yield
            for gap in gaps:
                rank += _sum_counts(gap.value)
        return (rank, size) if with_size else rank

    def get_nth(self, tr: ReadView, n: int) -> bytes | None:
        """The element of rank ``n`` (0-based), or None when ``n`` is out of range."""
        if n < 0:
            return None
        levels = self._levels
        start = _SENTINEL
        stop: bytes | None = None  # the next node on the level above bounds the scan below
        from_bytes = int.from_bytes
        # A span holds about 16 nodes and the walk stops halfway on average: read in pages, wider
        # where each read is a round trip.
        page = _NTH_PAGE_BATCHED if tr.batched_reads else _NTH_PAGE
        for level in range(self.nlevels - 1, -1, -1):
            prefix = levels[level]
            begin = prefix + start
            end = prefix + stop if stop is not None else self._level_ends[level]
            found = False
            while not found:
                nodes = tr.get_range(begin, end, page)
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
                    if len(nodes) < page:
                        return None  # past the last element
                    begin = nodes[-1][0] + b"\x00"
        return _element(start)

    def size(self, tr: ReadView) -> int:
        return run_alone(self.size_steps(tr))

    def size_steps(self, tr: ReadView) -> Steps[int]:
        """:meth:`size` as steps (see ``run_together``): one read of the top level."""
        top = self.nlevels - 1
        nodes = tr.get_range_async(self._level_sentinels[top], self._level_ends[top])
        yield
        return self._note_size(nodes.value)

    def node_at_or_before(self, tr: ReadView, level: int, element: bytes) -> bytes:
        """The key suffix (after the level) of the last node of ``level`` at or before ``element``:
        where a structure check of that level may start (see :class:`StructureCursor`)."""
        rows = tr.get_range(
            self._level_sentinels[level], self._levels[level] + self._check_element(element) + b"\x00", 1, True
        )
        return rows[0][0][len(self._levels[level]) :] if rows else _SENTINEL

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
    #
    # Two checks find the same problems with the same messages: ``check_consistency`` reads the
    # whole set in one transaction; ``check_structure`` reads it in bounded batches, resumed from
    # a ``StructureCursor``, each batch a consistent check of the contiguous range it read.

    def _nodes(self, tr: ReadView, level: int) -> Iterator[tuple[bytes, int]]:
        """Every node of ``level`` as (suffix, count), read in pages."""
        prefix = self._levels[level]
        for key, value in tr.iter_range(self._level_sentinels[level], self._level_ends[level]):
            yield key[len(prefix) :], _decode_count(value)

    def _level_zero_problem(self, suffix: bytes, count: int) -> str | None:
        if suffix == _SENTINEL:
            bad, expected = count != 0, "0"
        elif self.count_duplicates:
            bad, expected = count < 1, "at least 1"
        else:
            bad, expected = count != 1, "1"
        return f"level 0: {_element(suffix)!r} has count {count}, expected {expected}" if bad else None

    def _hash_problem(self, level: int, suffix: bytes, is_node: bool) -> str | None:
        """Whether ``suffix`` (a node of level ``level - 1``) is a node of ``level`` as its hash says."""
        if suffix == _SENTINEL:
            return None
        promoted = self._hash(_element(suffix)) & _LEVEL_MASKS[level] == 0
        if promoted == is_node:
            return None
        return (
            f"level {level}: {_element(suffix)!r} is {'missing' if promoted else 'present'} "
            f"against the {self.hash_function.value} hash"
        )

    def check_consistency(self, tr: ReadView, max_problems: int = 100) -> list[str]:
        """Problems found in the stored structure; an empty list means it is consistent.

        Checks the sentinels, that level-0 counts are 1, that every node's count equals the
        sum of the level below over its span, and that levels follow the hash.  It reads the
        whole set in one transaction: :meth:`check_structure` checks a set of any size.
        """
        problems: list[str] = []

        def report(message: str | None) -> bool:
            if message is None:
                return False
            problems.append(message)
            return len(problems) >= max_problems

        for level in range(self.nlevels):
            if tr.get(self._level_sentinels[level]) is None and report(_missing_sentinel(level)):
                return problems
        if problems:
            return problems
        for suffix, count in self._nodes(tr, 0):
            if report(self._level_zero_problem(suffix, count)):
                return problems
        for level in range(1, self.nlevels):
            upper = self._nodes(tr, level)
            current, total = next(upper)  # the sentinel
            following = next(upper, None)
            span = 0
            for suffix, count in self._nodes(tr, level - 1):
                while following is not None and suffix >= following[0]:
                    if following[0] != suffix and report(_missing_below(level, following[0])):
                        return problems
                    if span != total and report(_span_problem(level, current, total, span)):
                        return problems
                    (current, total), span = following, 0
                    following = next(upper, None)
                span += count
                if report(self._hash_problem(level, suffix, suffix == current)):
                    return problems
            while following is not None:
                if report(_missing_below(level, following[0])):
                    return problems
                following = next(upper, None)
            if span != total and report(_span_problem(level, current, total, span)):
                return problems
        return problems

    def check_structure(
        self,
        tr: ReadView,
        cursor: StructureCursor,
        max_keys: int,
        report: Callable[[str], bool],
        max_span: int = MAX_SPAN_KEYS,
        stop: tuple[int, bytes] | None = None,
    ) -> tuple[StructureCursor | None, int]:
        """Check the stored structure from ``cursor`` on, reading about ``max_keys`` node keys.

        The checks and messages are :meth:`check_consistency`'s, in bounded steps: the sentinels;
        level 0 by key ranges; then each level ``L >= 1`` by ranges of the level below, each
        read with the level-``L`` nodes over it in one transaction, so each node's count is
        compared with its span as one snapshot saw them.  A range ends before the last
        level-``L`` node it reaches, so no span is cut: one longer than the range is read whole,
        up to ``max_span`` keys.  Only a longer span (none in a sound set: a span holds 16
        nodes on average, more than ``k`` with probability ``(15/16)**k``; a damaged level can
        have one) is summed over several calls, and compared only if its node's count is the
        same at both ends; a write inside it meanwhile that leaves that count alone (a move,
        an add and a remove) can then show as a wrong count.

        A call starts another step while half of ``max_keys`` is left (so a small set is checked
        in one call) and reads at most ``2 * max_keys + max_span + 2`` keys.  ``report(message)``
        gets each problem and returns True to stop.  Returns where to resume (None: checked to
        the end, or stopped) and the number of keys read.

        ``stop`` ``(level, suffix)``: a part of a check that others run at once, ending where the
        next starts, at a node of that level (any element on level 0): the call goes no further
        and returns ``StructureCursor(level, suffix)`` there.
        """
        if max_keys < 2 or max_span < 1:
            raise ValueError(f"max_keys must be at least 2 and max_span at least 1, not {max_keys} and {max_span}")
        keys_read = 0
        least = max(2, max_keys // 2)  # a step needs 2 keys to find where a span ends
        next_cursor: StructureCursor | None = cursor
        while next_cursor is not None and (not keys_read or max_keys - keys_read >= least):
            budget = max_keys - keys_read
            bound = None
            if stop is not None and next_cursor.level >= stop[0]:
                if next_cursor.level > stop[0] or next_cursor.start >= stop[1]:
                    return StructureCursor(*stop), keys_read
                bound = stop[1]
            if next_cursor.level < 0:
                next_cursor, read = self._check_sentinels(tr, report)
            elif next_cursor.level == 0:
                next_cursor, read = self._check_level_zero(tr, next_cursor.start, budget, report, bound)
            else:
                next_cursor, read = self._check_level(tr, next_cursor, budget, max_span, report, bound)
            keys_read += read
        return next_cursor, keys_read

    def _level_done(self, level: int) -> StructureCursor | None:
        return StructureCursor(level + 1) if level + 1 < self.nlevels else None

    def _check_sentinels(self, tr: ReadView, report: Callable[[str], bool]) -> tuple[StructureCursor | None, int]:
        found = tr.get_many(self._level_sentinels)
        missing = [level for level, value in enumerate(found) if value is None]
        for level in missing:
            if report(_missing_sentinel(level)):
                break
        # As in check_consistency: without every sentinel the levels cannot be walked.
        return (None if missing else StructureCursor(0)), len(found)

    def _check_level_zero(
        self, tr: ReadView, start: bytes, budget: int, report: Callable[[str], bool], bound: bytes | None = None
    ) -> tuple[StructureCursor | None, int]:
        prefix = self._levels[0]
        rows = tr.get_range(prefix + start, prefix + bound if bound is not None else self._level_ends[0], budget)
        for key, value in rows:
            message = self._level_zero_problem(key[len(prefix) :], _decode_count(value))
            if message is not None and report(message):
                return None, len(rows)
        if len(rows) < budget:
            return (StructureCursor(0, bound) if bound is not None else self._level_done(0)), len(rows)
        return StructureCursor(0, rows[-1][0][len(prefix) :] + b"\x00"), len(rows)

    def _check_level(
        self,
        tr: ReadView,
        cursor: StructureCursor,
        budget: int,
        max_span: int,
        report: Callable[[str], bool],
        bound: bytes | None = None,
    ) -> tuple[StructureCursor | None, int]:
        """One step of :meth:`check_structure` on level ``cursor.level`` against the level below,
        up to the level's end or the node ``bound``."""
        level, start = cursor.level, cursor.start
        upper_prefix, lower_prefix = self._levels[level], self._levels[level - 1]
        if bound is None:
            upper_end, lower_end = self._level_ends[level], self._level_ends[level - 1]
        else:
            upper_end, lower_end = upper_prefix + bound, lower_prefix + bound
        head = tr.get_async(upper_prefix + cursor.span_node) if cursor.span_node is not None else None
        lower_rows = tr.get_range(lower_prefix + start, lower_end, budget)
        reached = (
            upper_end if len(lower_rows) < budget else upper_prefix + lower_rows[-1][0][len(lower_prefix) :] + b"\x00"
        )
        upper_rows = tr.get_range(upper_prefix + start, reached, budget)
        keys_read = len(lower_rows) + len(upper_rows) + (head is not None)
        room = max_span - len(lower_rows)
        if reached != upper_end and room > 0 and not (upper_rows and upper_rows[-1][0] > upper_prefix + start):
            # One span goes on past the range: read the rest of it, up to its end or max_span keys.
            after = lower_rows[-1][0][len(lower_prefix) :] + b"\x00"
            next_node = tr.get_range(upper_prefix + after, upper_end, 1)
            end = lower_prefix + next_node[0][0][len(upper_prefix) :] if next_node else lower_end
            rest = tr.get_range(lower_prefix + after, end, room)
            keys_read += len(next_node) + len(rest)
            lower_rows += rest
            if len(rest) < room:  # the whole span: the step ends at the next node, or at the level's end
                upper_rows += next_node
                if not next_node:
                    reached = upper_end
        lower = [(key[len(lower_prefix) :], _decode_count(value)) for key, value in lower_rows]
        upper = [(key[len(upper_prefix) :], _decode_count(value)) for key, value in upper_rows]
        # A span continued from the last step: compared only if its node's count is unchanged.
        current, total, span = cursor.span_node, cursor.span_count, cursor.span_sum
        if head is not None and (head.value is None or _decode_count(head.value) != total):
            total = None
        complete = reached == upper_end and len(upper_rows) < budget
        resume: StructureCursor | None = None
        if complete:
            resume = self._level_done(level) if bound is None else StructureCursor(level, bound)
        if not complete and upper and upper[-1][0] > start:
            # End before the last node reached, whose span may go on: the next step starts there.
            boundary = upper.pop()[0]
            lower = [node for node in lower if node[0] < boundary]
            resume = StructureCursor(level, boundary)

        def span_ends() -> bool:
            """Compare the span ending with its node's count; True to stop."""
            if current is None or total is None or span == total:
                return False
            return report(_span_problem(level, current, total, span))

        nodes = iter(upper)
        following = next(nodes, None)
        for suffix, count in lower:
            while following is not None and suffix >= following[0]:
                if following[0] != suffix and report(_missing_below(level, following[0])):
                    return None, keys_read
                if span_ends():
                    return None, keys_read
                (current, total), span = following, 0
                following = next(nodes, None)
            span += count
            message = self._hash_problem(level, suffix, suffix == current)
            if message is not None and report(message):
                return None, keys_read
        if not complete and resume is None:  # one span longer than max_span: go on after it
            after = lower[-1][0] + b"\x00"
            if current is None:  # no node heads these: the rest of a span whose node is gone
                return StructureCursor(level, after), keys_read
            return StructureCursor(level, after, current, total, span), keys_read
        while following is not None:  # nodes after every node of the level below read
            if report(_missing_below(level, following[0])):
                return None, keys_read
            if not complete:  # the level below goes on after them: each heads an empty span
                if span_ends():
                    return None, keys_read
                (current, total), span = following, 0
            following = next(nodes, None)
        if span_ends():
            return None, keys_read
        return resume, keys_read


class RankedSetBuilder:
    """A ranked set written whole from its elements in ascending order, each node once.

    For a set that does not exist yet (a window built from sorted data): every node, sentinels
    included, is handed to ``write(key, value)`` exactly once, with its final count, as soon as
    the next node of its level (or :meth:`finish`) closes its span.  The keys and values are
    those ``add`` of the same elements in any order writes, so the two are interchangeable; it
    reads nothing, and holds one open node per level.  Pass each element's ``suffix`` and
    ``element_hash`` (:func:`element_suffix`, :meth:`RankedSet.element_hash`), computed once for the
    several sets (windows) an element goes to; the hash must be ``RankedSet.element_hash``.
    """

    __slots__ = ("_levels", "_top", "_count_duplicates", "_write", "_open", "_opened_at", "_total", "_previous")

    def __init__(self, ranked: RankedSet, write: Callable[[bytes, bytes], None]) -> None:
        self._levels = ranked._levels
        self._top = ranked.nlevels
        self._count_duplicates = ranked.count_duplicates
        self._write = write
        self._open = list(ranked._level_sentinels)  # each level's node whose span is still open
        self._opened_at = [0] * ranked.nlevels  # occurrences added before it opened
        self._total = 0
        self._previous = b""  # the last suffix added (none is empty)

    def add(self, suffix: bytes, element_hash: int, occurrences: int = 1) -> int:
        """Add an element above every one added so far (an equal one adds occurrences with
        ``count_duplicates``, and nothing without); returns the occurrences added."""
        if suffix == self._previous:
            if not self._count_duplicates:
                return 0
        elif suffix < self._previous:
            raise ValueError("a ranked set is built from ascending elements")
        else:
            self._previous = suffix
            total, opened, levels, write = self._total, self._opened_at, self._levels, self._write
            for level in range(self._top):
                if level and element_hash & _LEVEL_MASKS[level]:
                    break
                write(self._open[level], _encode_count(total - opened[level]))
                self._open[level] = levels[level] + suffix
                opened[level] = total
        count = occurrences if self._count_duplicates else 1
        self._total += count
        return count

    def finish(self) -> int:
        """Write every open node (the set then holds what was added); returns the set's size."""
        total = self._total
        for level in range(self._top):
            self._write(self._open[level], _encode_count(total - self._opened_at[level]))
        return total


def element_suffix(element: bytes) -> bytes:
    """The part of every node key of ``element`` after its level (see :class:`RankedSetBuilder`);
    ValueError for an empty element."""
    if not element:
        raise ValueError("ranked set elements must be non-empty byte strings")
    return _suffix(element)


@dataclasses.dataclass(frozen=True)
class StructureCursor:
    """Where :meth:`RankedSet.check_structure` resumes; ``StructureCursor()`` is the beginning.

    ``level`` -1 is the sentinels, 0 the level-0 counts, ``L >= 1`` level L against the level
    below; ``start`` is the node key suffix the next read starts at.  A span longer than one
    step goes on in the next: ``span_node`` is its node on ``level``, ``span_count`` that node's
    count when the span started (None: it changed since, the sum is not compared) and
    ``span_sum`` the level below summed so far.
    """

    level: int = -1
    start: bytes = _SENTINEL
    span_node: bytes | None = None
    span_count: int | None = None
    span_sum: int = 0


def _missing_sentinel(level: int) -> str:
    return f"level {level}: sentinel missing"


def _missing_below(level: int, suffix: bytes) -> str:
    return f"level {level}: node {_element(suffix)!r} is missing from level {level - 1}"


def _span_problem(level: int, suffix: bytes, total: int, span: int) -> str:
    return f"level {level}: node {_element(suffix)!r} counts {total}, the level below sums to {span}"
