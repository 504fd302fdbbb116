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

| module | holds |
|---|---|
| ``layout.py`` | the stored layout: levels, node keys and counts, the level rule's hashes, a set's key prefixes |
| ``steps.py`` | operations as steps, run alone or several in lockstep (one read round for all) |
| ``writes.py`` | insertions, removals and moves, their predecessors read in one or two rounds |
| ``reads.py`` | membership, counts, rank, select (``get_nth``), size and range scans |
| ``builder.py`` | a set written whole from ascending elements, each node once |
| ``checker.py`` | the consistency checks: whole in one transaction, or in bounded resumable batches |
| ``ranked_set.py`` | :class:`RankedSet`: the reads, writes and checks of one set |
"""

from .builder import RankedSetBuilder
from .checker import StructureCursor
from .layout import (
    DEFAULT_LEVELS,
    LEVEL_FAN_POW,
    MAX_LEVELS,
    MAX_SPAN_KEYS,
    MIN_LEVELS,
    CorruptRankedSet,
    HashFunction,
    crc_hash,
    element_suffix,
    jdk_hash,
    murmur3_hash,
)
from .ranked_set import RankedSet
from .steps import Steps, run_alone, run_together

__all__ = [
    "DEFAULT_LEVELS",
    "LEVEL_FAN_POW",
    "MAX_LEVELS",
    "MAX_SPAN_KEYS",
    "MIN_LEVELS",
    "CorruptRankedSet",
    "HashFunction",
    "RankedSet",
    "RankedSetBuilder",
    "Steps",
    "StructureCursor",
    "crc_hash",
    "element_suffix",
    "jdk_hash",
    "murmur3_hash",
    "run_alone",
    "run_together",
]
