"""The ranked set's stored layout: levels, node keys and their int64 counts, the level rule's
hashes, and the key prefixes one set derives from its prefix (see the package's docstring).
"""

from __future__ import annotations

import enum
import struct
import zlib
from collections.abc import Sequence

import fdb.tuple
import mmh3

from ..store.api import KeyValue, ReadView, Transaction, strinc

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


class CorruptRankedSet(Exception):
    """The stored skip list is missing nodes it must have."""


class RankedSetKeys:
    """The key prefixes of one ranked set under raw key prefix ``prefix``, its set-up, and where
    its reads go (the size last seen); holds no stored data."""

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

    # -- where operations read (the writes and the reads share these) -----------------------

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


def element_suffix(element: bytes) -> bytes:
    """The part of every node key of ``element`` after its level (see :class:`RankedSetBuilder`);
    ValueError for an empty element."""
    if not element:
        raise ValueError("ranked set elements must be non-empty byte strings")
    return _suffix(element)
