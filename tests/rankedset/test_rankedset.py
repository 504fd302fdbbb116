"""The ranked set: byte compatibility with the Record Layer's RankedSet, and behaviour against a model.

Everything that fixes the stored bytes (hashes, level rule, key layout, counts) is checked against
values computed here independently of :mod:`fdb_leaderboard.rankedset`: hand-derived vectors,
published hash test vectors, a pure-Python MurmurHash3, and a layout builder that follows the
documented rules with ``fdb.tuple.pack`` and ``struct``.  Every test runs on each store backend.
"""

from __future__ import annotations

import binascii
import bisect
import functools
import itertools
import random
import struct
import threading

import fdb.tuple
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from fdb_leaderboard import rankedset
from fdb_leaderboard.rankedset import HashFunction, RankedSet, StructureCursor, run_alone
from fdb_leaderboard.store import Database, ReadView
from fdb_leaderboard.store.api import Answered

M32 = 0xFFFF_FFFF

# -- independent reference hashes -------------------------------------------------------------


def ref_jdk(data: bytes) -> int:
    """``java.util.Arrays.hashCode(byte[])`` in closed form: 31^n + sum(b_i * 31^(n-1-i)), bytes signed."""
    n = len(data)
    signed = struct.unpack(f"{n}b", data)
    return (31**n + sum(b * 31 ** (n - 1 - i) for i, b in enumerate(signed))) & M32


def ref_crc(data: bytes) -> int:
    return binascii.crc32(data) & M32


_C1, _C2 = 0xCC9E2D51, 0x1B873593


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & M32


def _mix_k(k: int) -> int:
    return (_rotl((k * _C1) & M32, 15) * _C2) & M32


def _fmix(h: int) -> int:
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & M32
    return h ^ (h >> 16)


def ref_murmur3(data: bytes, seed: int = 0) -> int:
    """MurmurHash3_x86_32, transcribed from Austin Appleby's reference C++ (unsigned result)."""
    h = seed & M32
    nblocks = len(data) // 4
    for i in range(nblocks):
        h ^= _mix_k(int.from_bytes(data[4 * i : 4 * i + 4], "little"))
        h = (_rotl(h, 13) * 5 + 0xE6546B64) & M32
    tail = data[4 * nblocks :]
    if tail:
        h ^= _mix_k(int.from_bytes(tail, "little"))
    return _fmix(h ^ len(data))


REF_HASHES = {HashFunction.JDK: ref_jdk, HashFunction.CRC: ref_crc, HashFunction.MURMUR3: ref_murmur3}


def ref_top_level(hash_value: int, nlevels: int) -> int:
    """The highest level holding an element: level l >= 1 iff hash & (16**l - 1) == 0."""
    top = 0
    for level in range(1, nlevels):
        if hash_value & ((1 << (4 * level)) - 1):
            break
        top = level
    return top


# -- elements with a chosen hash, to reach high levels ----------------------------------------


def _jdk_element(target: int, prefix: bytes) -> bytes:
    """``prefix`` (whose JDK hash is exactly 0) followed by the balanced base-31 digits of ``target``.

    Arrays.hashCode(p + y) = hash(p) * 31^|y| + sum(y_j * 31^(|y|-1-j)), so with hash(p) == 0 the
    hash is the digits' value; balanced digits lie in -15..15, valid signed bytes.
    """
    digits = []
    while target:
        d = target % 31
        if d > 15:
            d -= 31
        digits.append(d)
        target = (target - d) // 31
    return prefix + bytes(d & 0xFF for d in reversed(digits))


def _crc_element(target: int) -> bytes:
    """The 4-byte input whose CRC-32 is ``target``: CRC-32 is affine over GF(2), bijective on 4 bytes."""
    base = binascii.crc32(bytes(4))
    basis: dict[int, tuple[int, int]] = {}  # highest bit -> (vector, combination of input bits)
    for bit in range(32):
        vector, combo = binascii.crc32((1 << bit).to_bytes(4, "little")) ^ base, 1 << bit
        while vector:
            high = vector.bit_length() - 1
            if high not in basis:
                basis[high] = (vector, combo)
                break
            vector, combo = vector ^ basis[high][0], combo ^ basis[high][1]
    wanted, combo = target ^ base, 0
    while wanted:
        vector, bits = basis[wanted.bit_length() - 1]
        wanted, combo = wanted ^ vector, combo ^ bits
    return combo.to_bytes(4, "little")


def _murmur3_element(target: int) -> bytes:
    """The 4-byte input whose MurmurHash3_x86_32 (seed 0) is ``target``: every step is invertible."""
    h = target
    h ^= h >> 16
    h = (h * pow(0xC2B2AE35, -1, 1 << 32)) & M32
    h ^= (h >> 13) ^ (h >> 26)
    h = (h * pow(0x85EBCA6B, -1, 1 << 32)) & M32
    h ^= h >> 16
    h ^= 4  # the length
    h = ((h - 0xE6546B64) * pow(5, -1, 1 << 32)) & M32
    k = _rotl(h, 32 - 13)
    k = _rotl((k * pow(_C2, -1, 1 << 32)) & M32, 32 - 15)
    k = (k * pow(_C1, -1, 1 << 32)) & M32
    return k.to_bytes(4, "little")


TALL_TARGETS = [0] + [(k << (4 * level)) & M32 for level in range(1, 8) for k in (1, 3, 10)]
_JDK_ZERO_PREFIXES = [b"\xe1", b"\xe1\x00", b"\xe2\xe1"]  # 31-31 = 0; (31-31)*31+0 = 0; (31-30)*31-31 = 0


@functools.cache
def tall_elements(hash_function: HashFunction) -> tuple[bytes, ...]:
    """Elements whose hash is each of TALL_TARGETS: promoted to every level 1..7, and to all levels."""
    out = []
    for i, target in enumerate(TALL_TARGETS):
        if hash_function is HashFunction.JDK:
            element = _jdk_element(target, _JDK_ZERO_PREFIXES[i % len(_JDK_ZERO_PREFIXES)])
        elif hash_function is HashFunction.CRC:
            element = _crc_element(target)
        else:
            element = _murmur3_element(target)
        assert REF_HASHES[hash_function](element) == target, (hash_function, target, element)
        out.append(element)
    assert len(set(out)) == len(out)
    return tuple(out)


# -- the layout, built from the rules ---------------------------------------------------------


def expected_layout(prefix: bytes, nlevels: int, elements, hash_function: HashFunction) -> list[tuple[bytes, bytes]]:
    """Every key/value an initialized set holding ``elements`` must store, in key order.

    Per level: a sentinel (level, b"") and a node (level, e) for each element promoted that far;
    a node's value is the int64 little-endian number of elements in [node, next node on its level).
    ``elements`` may map each element to its multiplicity (sets counting duplicates): level 0
    then holds the multiplicity and the spans above count every occurrence.
    """
    multiplicity = dict(elements) if isinstance(elements, dict) else dict.fromkeys(elements, 1)
    distinct = sorted(multiplicity)
    before = list(itertools.accumulate((multiplicity[e] for e in distinct), initial=0))  # occurrences before i
    ref_hash = REF_HASHES[hash_function]
    tops = {e: ref_top_level(ref_hash(e), nlevels) for e in distinct}
    rows = []
    for level in range(nlevels):
        nodes = [b""] + [e for e in distinct if tops[e] >= level]
        for i, node in enumerate(nodes):
            if level == 0:
                count = multiplicity.get(node, 0)
            else:
                start = bisect.bisect_left(distinct, node)
                stop = bisect.bisect_left(distinct, nodes[i + 1]) if i + 1 < len(nodes) else len(distinct)
                count = before[stop] - before[start]
            rows.append((prefix + fdb.tuple.pack((level, node)), struct.pack("<q", count)))
    return sorted(rows)


def stored(db: Database, prefix: bytes) -> list[tuple[bytes, bytes]]:
    return db.read(lambda tr: tr.get_range_startswith(prefix))


def _one(count: int) -> bytes:
    return count.to_bytes(8, "little")


# -- 1. hashes and exact bytes ----------------------------------------------------------------


def test_jdk_hash_vectors():
    vectors = {
        b"": 1,  # Arrays.hashCode of an empty array
        b"\x00": 31,
        fdb.tuple.pack((20,)): 1632,  # b"\x15\x14": 31 * (31 + 21) + 20
        fdb.tuple.pack((180,)): 1536,  # b"\x15\xb4": 31 * 52 - 76 (0xb4 is -76 as a Java byte)
        b"hello": 127791473,  # "hello".hashCode() = 99162322, plus 31**5 = 28629151
        b"\x80": (31 - 128) & M32,  # 0xffffff9f: signed, not 31 + 128
        b"\xff": 30,
        b"\xff\xff": 929,  # 30 * 31 - 1
        b"\xe1": 0,
        b"\xe1\x00": 0,  # (31 - 31) * 31 + 0
        b"e\x04": 4096,  # (31 + 101) * 31 + 4
        b"a": 128,
    }
    for data, expected in vectors.items():
        assert ref_jdk(data) == expected, data
        assert HashFunction.JDK(data) & M32 == expected, data
    assert fdb.tuple.pack((20,)) == b"\x15\x14"
    assert ref_top_level(1632, 6) == 1  # 1632 = 0x660: low 4 bits clear, low 8 bits not
    assert ref_top_level(1536, 6) == 2  # 0x600
    assert ref_top_level(4096, 6) == 3  # 0x1000
    assert ref_top_level(0, 6) == 5


def test_crc_hash_vectors():
    vectors = {
        b"": 0,
        b"a": 0xE8B7BE43,
        b"123456789": 0xCBF43926,  # the CRC-32 check value
        b"hello": 0x3610A686,
        b"The quick brown fox jumps over the lazy dog": 0x414FA339,
    }
    for data, expected in vectors.items():
        assert ref_crc(data) == expected, data
        assert HashFunction.CRC(data) & M32 == expected, data


def test_murmur3_reference_matches_published_vectors():
    vectors = [
        (b"", 0, 0),
        (b"", 1, 0x514E28B7),
        (b"", 0xFFFFFFFF, 0x81F16F39),
        (b"\x00\x00\x00\x00", 0, 0x2362F9DE),
        (b"aaaa", 0x9747B28C, 0x5A97808A),
        (b"a", 0x9747B28C, 0x7FA09EA6),
        (b"ab", 0x9747B28C, 0x74875592),
        (b"abc", 0x9747B28C, 0xC84A62DD),
        (b"abcd", 0x9747B28C, 0xF0478627),
        (b"Hello, world!", 0x9747B28C, 0x24884CBA),
        (b"The quick brown fox jumps over the lazy dog", 0x9747B28C, 0x2FA826CD),
    ]
    for data, seed, expected in vectors:
        assert ref_murmur3(data, seed) == expected, (data, seed)


def test_murmur3_hash_vectors():
    vectors = {
        b"": 0,
        b"\x00\x00\x00\x00": 0x2362F9DE,
        b"abc": 0xB3DD93FA,
        b"foo": -156908512 & M32,  # mmh3's documented example, signed
        b"The quick brown fox jumps over the lazy dog": 0x2E4FF723,
    }
    for data, expected in vectors.items():
        assert ref_murmur3(data) == expected, data
        assert HashFunction.MURMUR3(data) & M32 == expected, data


@pytest.mark.parametrize("hash_function", list(HashFunction))
def test_hashes_match_references_on_random_inputs(hash_function):
    rng = random.Random(20240611)
    ref = REF_HASHES[hash_function]
    for _ in range(2000):
        data = rng.randbytes(rng.randrange(0, 40))
        assert hash_function(data) & M32 == ref(data), data


def _jdk_sample_layout(p: bytes) -> list[tuple[bytes, bytes]]:
    """By hand: nlevels 3, JDK, elements with hashes 1632 (level 1), 1536 (level 2), 0 (all), others level 0.

    Element order: \\x15\\x14 < \\x15\\xb4 < b < \\xe1\\x00 < \\xff.
    """
    return [
        (p + b"\x14\x01\x00", _one(0)),  # (0, b"") sentinel
        (p + b"\x14\x01\x15\x14\x00", _one(1)),
        (p + b"\x14\x01\x15\xb4\x00", _one(1)),
        (p + b"\x14\x01b\x00", _one(1)),
        (p + b"\x14\x01\xe1\x00\xff\x00", _one(1)),  # the 0x00 byte is escaped as 00 ff
        (p + b"\x14\x01\xff\x00", _one(1)),
        (p + b"\x15\x01\x01\x00", _one(0)),  # (1, b""): nothing before \x15\x14
        (p + b"\x15\x01\x01\x15\x14\x00", _one(1)),  # [\x15\x14, \x15\xb4)
        (p + b"\x15\x01\x01\x15\xb4\x00", _one(2)),  # \x15\xb4, b
        (p + b"\x15\x01\x01\xe1\x00\xff\x00", _one(2)),  # \xe1\x00, \xff
        (p + b"\x15\x02\x01\x00", _one(1)),  # (2, b""): \x15\x14
        (p + b"\x15\x02\x01\x15\xb4\x00", _one(2)),
        (p + b"\x15\x02\x01\xe1\x00\xff\x00", _one(2)),
    ]


JDK_SAMPLE = [b"\x15\x14", b"\x15\xb4", b"b", b"\xe1\x00", b"\xff"]


@pytest.mark.parametrize(
    "order",
    [
        JDK_SAMPLE,
        JDK_SAMPLE[::-1],
        [b"b", b"\xff", b"\x15\x14", b"\xe1\x00", b"\x15\xb4"],  # promoted nodes split existing spans
    ],
)
def test_exact_bytes_jdk_by_hand(db, prefix, order):
    rs = RankedSet(prefix, 3, HashFunction.JDK)
    for element in order:
        assert db.run(rs.add, element) is True
    assert stored(db, prefix) == _jdk_sample_layout(prefix)
    assert stored(db, prefix) == expected_layout(prefix, 3, JDK_SAMPLE, HashFunction.JDK)

    # Removing the level-2 node merges its spans into its predecessors'.
    assert db.run(rs.remove, b"\x15\xb4") is True
    p = prefix
    assert stored(db, prefix) == [
        (p + b"\x14\x01\x00", _one(0)),
        (p + b"\x14\x01\x15\x14\x00", _one(1)),
        (p + b"\x14\x01b\x00", _one(1)),
        (p + b"\x14\x01\xe1\x00\xff\x00", _one(1)),
        (p + b"\x14\x01\xff\x00", _one(1)),
        (p + b"\x15\x01\x01\x00", _one(0)),
        (p + b"\x15\x01\x01\x15\x14\x00", _one(2)),
        (p + b"\x15\x01\x01\xe1\x00\xff\x00", _one(2)),
        (p + b"\x15\x02\x01\x00", _one(2)),
        (p + b"\x15\x02\x01\xe1\x00\xff\x00", _one(2)),
    ]


def test_pack_20_is_promoted_to_level_1_only(db, prefix):
    rs = RankedSet(prefix, 4, HashFunction.JDK)
    element = fdb.tuple.pack((20,))
    db.run(rs.add, element)
    p = prefix
    assert stored(db, prefix) == [
        (p + b"\x14\x01\x00", _one(0)),
        (p + b"\x14\x01\x15\x14\x00", _one(1)),
        (p + b"\x15\x01\x01\x00", _one(0)),
        (p + b"\x15\x01\x01\x15\x14\x00", _one(1)),
        (p + b"\x15\x02\x01\x00", _one(1)),
        (p + b"\x15\x03\x01\x00", _one(1)),
    ]


@pytest.mark.parametrize("nlevels", [4, 8])
@pytest.mark.parametrize("hash_function", list(HashFunction))
def test_exact_bytes_with_elements_at_every_level(db, prefix, hash_function, nlevels):
    chosen = [*tall_elements(hash_function), b"\x01", b"\x7f\x80", fdb.tuple.pack((20,)), b"zz"]
    rng = random.Random(7)
    rng.shuffle(chosen)
    rs = RankedSet(prefix, nlevels, hash_function)
    for element in chosen:
        assert db.run(rs.add, element) is True
    layout = expected_layout(prefix, nlevels, chosen, hash_function)
    assert stored(db, prefix) == layout
    nodes = [fdb.tuple.unpack(key[len(prefix) :]) for key, _ in layout]
    assert {level for level, element in nodes if element} == set(range(nlevels))  # every level has elements
    assert db.read(rs.check_consistency) == []
    for element in chosen[::2]:
        assert db.run(rs.remove, element) is True
    assert stored(db, prefix) == expected_layout(prefix, nlevels, chosen[1::2], hash_function)
    assert db.read(rs.check_consistency) == []


# -- 2. stateful test against a sorted list ---------------------------------------------------

ALPHABET = [0x00, 0x01, 0x02, 0x14, 0x15, 0x61, 0x80, 0xB4, 0xE1, 0xFE, 0xFF]
SHORT_ELEMENTS = st.lists(st.sampled_from(ALPHABET), min_size=1, max_size=3).map(bytes)
PACKED_ELEMENTS = st.integers(0, 400).map(lambda i: fdb.tuple.pack((i,)))
FIXED_PROBES = [b"\x00", b"\x00\x00", b"\x01", b"\x15\x14", b"a", b"\x80", b"\xe1", b"\xff", b"\xff\xff\xff"]


def _run_machine(
    db: Database, prefix: bytes, hash_function: HashFunction, nlevels: int, count_duplicates: bool = False
) -> None:
    elements = st.one_of(SHORT_ELEMENTS, PACKED_ELEMENTS, st.sampled_from(tall_elements(hash_function)))
    bounds = st.one_of(st.none(), st.just(b""), elements)
    counter = itertools.count()

    class RankedSetMachine(RuleBasedStateMachine):
        """The model: ``distinct`` sorted elements and their multiplicities (always 1 without duplicates)."""

        def __init__(self) -> None:
            super().__init__()
            self.prefix = prefix + next(counter).to_bytes(4, "big")
            self.rs = RankedSet(self.prefix, nlevels, hash_function, count_duplicates=count_duplicates)
            self.distinct: list[bytes] = []
            self.multiplicity: dict[bytes, int] = {}
            self.initialized = False

        def teardown(self) -> None:
            db.run(lambda tr: tr.clear_range_startswith(self.prefix))

        @initialize(pre_init=st.booleans())
        def start(self, pre_init: bool) -> None:
            if pre_init:
                db.run(self.rs.init)
                self.initialized = True

        def _apply(self, is_add: bool, element: bytes) -> bool:
            """The model's answer to one operation, applied to the model."""
            present = element in self.multiplicity
            if is_add:
                self.initialized = True
                if not present:
                    bisect.insort(self.distinct, element)
                    self.multiplicity[element] = 1
                    return True
                if count_duplicates:
                    self.multiplicity[element] += 1
                    return True
                return False
            if present:
                self.multiplicity[element] -= 1
                if not self.multiplicity[element]:
                    del self.multiplicity[element]
                    self.distinct.remove(element)
            return present

        def _position(self, element: bytes) -> int:
            """Occurrences of elements before ``element``."""
            return sum(self.multiplicity[e] for e in self.distinct[: bisect.bisect_left(self.distinct, element)])

        @rule(element=elements)
        def add(self, element: bytes) -> None:
            result = db.run(self.rs.add, element)
            assert result is self._apply(True, element)

        @rule(element=elements)
        def remove(self, element: bytes) -> None:
            result = db.run(self.rs.remove, element)
            assert result is self._apply(False, element)

        @precondition(lambda self: self.distinct)
        @rule(data=st.data(), add=st.booleans())
        def repeat_present(self, data, add: bool) -> None:
            """Add again (a duplicate) or remove an element known to be present."""
            element = data.draw(st.sampled_from(self.distinct))
            result = db.run(self.rs.add if add else self.rs.remove, element)
            assert result is self._apply(add, element)

        @precondition(lambda self: self.distinct)
        @rule(data=st.data(), new=elements)
        def move(self, data, new: bytes) -> None:
            """Move one occurrence of a present element to another (a score that changed)."""
            old = data.draw(st.sampled_from(self.distinct))
            if old == new:
                return  # not a move the index makes: it moves a record's value only when it changes
            db.run(self.rs.move, old, new)
            self._apply(False, old)
            self._apply(True, new)

        @rule(ops=st.lists(st.tuples(st.booleans(), elements), min_size=1, max_size=6))
        def batch(self, ops) -> None:
            """Several changes in one transaction (reads must see the transaction's own atomic adds)."""
            results = db.run(lambda tr: [(self.rs.add if a else self.rs.remove)(tr, e) for a, e in ops])
            assert results == [self._apply(a, e) for a, e in ops]

        @rule(hint=st.sampled_from([None, 0, 3, 1 << 40]))
        def misjudge_size(self, hint: int | None) -> None:
            """Where reads go follows the size last seen; a wrong one (another process changed the
            set since) may cost reads, never a wrong answer."""
            self.rs._size_hint = hint

        @rule(begin=bounds, end=bounds, limit=st.integers(0, 4), reverse=st.booleans())
        def check_range(self, begin, end, limit, reverse) -> None:
            got = db.read(self.rs.range, begin, end, limit, reverse)
            selected = [e for e in self.distinct if (begin is None or e >= begin) and (end is None or e < end)]
            if reverse:
                selected.reverse()
            assert got == (selected[:limit] if limit else selected)

        @rule(element=elements)
        def probe(self, element: bytes) -> None:
            present = element in self.multiplicity
            position = self._position(element)
            got = db.read(
                lambda tr: (
                    self.rs.contains(tr, element),
                    self.rs.rank(tr, element),
                    self.rs.rank(tr, element, null_if_missing=False),
                )
            )
            assert got == (present, position if present else None, position)

        @invariant()
        def matches_model(self) -> None:
            rs, distinct = self.rs, self.distinct
            occurrences = [e for e in distinct for _ in range(self.multiplicity[e])]
            absent = [p for p in FIXED_PROBES + [e + b"\x00" for e in distinct] if p not in self.multiplicity]

            def read(tr):
                return {
                    "size": rs.size(tr),
                    "contains": [rs.contains(tr, e) for e in distinct],
                    "rank": [rs.rank(tr, e) for e in distinct],
                    "rank_or_position": [rs.rank(tr, e, null_if_missing=False) for e in distinct],
                    "absent_contains": [rs.contains(tr, p) for p in absent],
                    "absent_rank": [rs.rank(tr, p) for p in absent],
                    "absent_position": [rs.rank(tr, p, null_if_missing=False) for p in absent],
                    "rank_and_size": [run_alone(rs.rank_and_size_steps(tr, p)) for p in distinct[:3] + absent[:3]],
                    "nth": [rs.get_nth(tr, n) for n in range(-1, len(occurrences) + 1)],
                    "range": rs.range(tr),
                    "reverse": rs.range(tr, reverse=True),
                    "init_needed": rs.init_needed(tr),
                    "problems": rs.check_consistency(tr) if self.initialized else [],
                    "stored": tr.get_range_startswith(self.prefix),
                }

            got = db.read(read)
            ranks = [self._position(e) for e in distinct]
            assert got == {
                "size": len(occurrences),
                "contains": [True] * len(distinct),
                "rank": ranks,
                "rank_or_position": ranks,
                "absent_contains": [False] * len(absent),
                "absent_rank": [None] * len(absent),
                "absent_position": [self._position(p) for p in absent],
                "rank_and_size": [(self._position(p), len(occurrences)) for p in distinct[:3] + absent[:3]],
                "nth": [None, *occurrences, None],
                "range": distinct,
                "reverse": distinct[::-1],
                "init_needed": not self.initialized,
                "problems": [],
                "stored": (
                    expected_layout(self.prefix, nlevels, self.multiplicity, hash_function) if self.initialized else []
                ),
            }

    # The same machine on every backend: full length on LMDB; on the synced store (batched
    # reads) and FoundationDB, which differ in how reads are issued and commits made, fewer
    # examples keep the whole suite within its time (FoundationDB pays a round trip per read).
    if db.url.startswith("fdb"):
        examples = 5
    elif getattr(db, "batched_reads", False):
        examples = 12
    else:
        examples = 40
    run_state_machine_as_test(
        RankedSetMachine,
        settings=settings(
            max_examples=examples,
            stateful_step_count=40,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        ),
    )


@pytest.mark.parametrize("nlevels", [2, 3, 6])
@pytest.mark.parametrize("hash_function", list(HashFunction))
def test_against_sorted_list_model(db, prefix, hash_function, nlevels):
    _run_machine(db, prefix, hash_function, nlevels)


@pytest.mark.parametrize(("hash_function", "nlevels"), [(HashFunction.JDK, 3), (HashFunction.MURMUR3, 6)])
def test_counting_duplicates_against_multiset_model(db, prefix, hash_function, nlevels):
    _run_machine(db, prefix, hash_function, nlevels, count_duplicates=True)


@pytest.mark.parametrize(
    ("hash_function", "nlevels", "count_duplicates"), [(HashFunction.MURMUR3, 3, False), (HashFunction.JDK, 6, True)]
)
def test_against_model_when_the_upper_levels_hold_more_than_expected(
    db, prefix, monkeypatch, hash_function, nlevels, count_duplicates
):
    """Where reads cost round trips, the upper levels are read whole in one read of at most
    _UPPER_LIMIT nodes; with a limit of 3 most such reads are cut, and the levels they did not
    cover are read in one more round: the answers stay the model's."""
    monkeypatch.setattr(rankedset.reads, "_UPPER_LIMIT", 3)
    monkeypatch.setattr(rankedset.writes, "_UPPER_LIMIT", 3)
    _run_machine(db, prefix, hash_function, nlevels, count_duplicates=count_duplicates)


class CountingReads(ReadView):
    """A read view counting the keys it returns."""

    def __init__(self, tr: ReadView) -> None:
        self.tr = tr
        self.keys = 0
        self.batched_reads = tr.batched_reads

    @property
    def rounds(self):
        return self.tr.rounds

    def get(self, key):
        self.keys += 1
        return self.tr.get(key)

    def get_async(self, key):
        self.keys += 1
        return self.tr.get_async(key)

    def get_range(self, begin, end, limit=0, reverse=False):
        rows = self.tr.get_range(begin, end, limit, reverse)
        self.keys += len(rows)
        return rows

    def get_range_async(self, begin, end, limit=0, reverse=False):
        rows = self.tr.get_range(begin, end, limit, reverse)
        self.keys += len(rows)
        return Answered(rows, self.rounds)

    @classmethod
    def most(cls, tr: ReadView, fn, *args) -> int:
        counting = cls(tr)
        fn(counting, *args)
        return counting.keys


@pytest.mark.parametrize("hash_function", list(HashFunction))
def test_many_elements(db, prefix, hash_function):
    """~5,000 elements, default 6 levels, with elements reaching every level."""
    rng = random.Random(5000)
    numbers = list(range(5000))
    rng.shuffle(numbers)
    chosen = [fdb.tuple.pack((i,)) for i in numbers] + list(tall_elements(hash_function))
    rng.shuffle(chosen)
    rs = RankedSet(prefix, 6, hash_function)

    def add_all(tr, batch):
        return [rs.add(tr, e) for e in batch]

    def remove_all(tr, batch):
        return [rs.remove(tr, e) for e in batch]

    batch = 100  # small transactions, well inside FoundationDB's 5 second limit
    for start in range(0, len(chosen), batch):
        assert all(db.run(add_all, chosen[start : start + batch]))

    top_level = prefix + fdb.tuple.pack((5,))

    def verify(model: list[bytes]) -> None:
        sample = model[::53] + model[-3:]
        indexes = [model.index(e) for e in sample]
        layout = expected_layout(prefix, 6, model, hash_function)
        top_nodes = sum(key.startswith(top_level) for key, _ in layout)

        assert db.read(rs.check_consistency) == []
        assert stored(db, prefix) == layout
        assert db.read(rs.size) == len(model)
        assert db.read(lambda tr: [rs.rank(tr, e) for e in sample]) == indexes
        assert db.read(lambda tr: [rs.rank(tr, e + b"\x00", null_if_missing=False) for e in sample]) == [
            i + 1 for i in indexes
        ]
        assert db.read(lambda tr: [rs.get_nth(tr, i) for i in indexes]) == sample
        assert db.read(rs.get_nth, len(model)) is None
        # The walks stay narrow: size reads the top level only, rank and get_nth a few spans per level.
        assert db.read(CountingReads.most, rs.size) <= top_nodes
        assert db.read(lambda tr: max(CountingReads.most(tr, rs.rank, e) for e in sample)) < 600
        assert db.read(lambda tr: max(CountingReads.most(tr, rs.get_nth, i) for i in indexes)) < 600

    model = sorted(chosen)
    verify(model)
    gone = chosen[::3]
    for start in range(0, len(gone), batch):
        assert all(db.run(remove_all, gone[start : start + batch]))
    verify(sorted(set(chosen) - set(gone)))


@pytest.mark.parametrize("count_duplicates", [False, True])
@pytest.mark.parametrize(("hash_function", "nlevels"), [(HashFunction.JDK, 3), (HashFunction.MURMUR3, 6)])
def test_append_builds_the_same_set_as_add(db, prefix, hash_function, nlevels, count_duplicates):
    """Appending sorted batches (the rebuild path) stores exactly the layout the rules give, and
    the set keeps working with add/remove afterwards."""
    rng = random.Random(77)
    pool = [fdb.tuple.pack((rng.randrange(3000),)) for _ in range(1500)] + list(tall_elements(hash_function))
    occurrences: dict[bytes, int] = {}
    for element in pool:  # the random draws repeat some elements
        occurrences[element] = occurrences.get(element, 0) + 1
    ordered = sorted(occurrences)
    model = {e: (c if count_duplicates else 1) for e, c in occurrences.items()}
    rs = RankedSet(prefix, nlevels, hash_function, count_duplicates)
    start = 0
    while start < len(ordered):
        size = rng.choice([1, 2, 7, 64, 300])
        pairs = [(e, occurrences[e]) for e in ordered[start : start + size]]
        if start and rng.random() < 0.5:  # a batch may begin with the previous batch's last element
            pairs.insert(0, (ordered[start - 1], 2))
            if count_duplicates:
                model[ordered[start - 1]] += 2
        db.run(rs.append, pairs)
        start += size
    assert db.read(rs.check_consistency) == []
    assert stored(db, prefix) == expected_layout(prefix, nlevels, model, hash_function)
    late = fdb.tuple.pack((5000,))
    db.run(rs.add, late)
    db.run(rs.remove, ordered[0])
    model[ordered[0]] -= 1
    model[late] = 1
    model = {e: c for e, c in model.items() if c}
    assert db.read(rs.check_consistency) == []
    assert stored(db, prefix) == expected_layout(prefix, nlevels, model, hash_function)
    assert db.read(rs.rank, late) == sum(c for e, c in model.items() if e < late)


def test_append_refuses_descending_elements_and_writes_nothing(db, prefix):
    rs = RankedSet(prefix, 3, HashFunction.MURMUR3)
    db.run(rs.append, [(b"b", 1), (b"d", 1)])
    before = stored(db, prefix)
    with pytest.raises(ValueError, match="ascending"):
        db.run(rs.append, [(b"e", 1), (b"c", 1)])
    with pytest.raises(ValueError, match="ascending"):
        db.run(rs.append, [(b"a", 1)])
    assert stored(db, prefix) == before


# -- 3. corruption is detected ----------------------------------------------------------------


def _level_key(prefix: bytes, level: int, element: bytes) -> bytes:
    return prefix + fdb.tuple.pack((level, element))


@pytest.mark.parametrize(
    ("tamper", "level"),
    [
        ("count_level_0", 0),
        ("count_level_1", 1),
        ("count_top_sentinel", 2),
        ("delete_level_1_node", 1),
        ("promoted_against_hash", 1),  # counts consistent, only the level rule is broken
        ("demoted_against_hash", 1),
        ("delete_level_2_node", 2),
        ("bogus_node_present_element", 1),
        ("bogus_node_absent_element", 2),
        ("delete_sentinel_0", 0),
        ("delete_sentinel_2", 2),
    ],
)
def test_check_consistency_detects_corruption(db, prefix, tamper, level):
    rs = RankedSet(prefix, 3, HashFunction.JDK)
    for element in JDK_SAMPLE:
        db.run(rs.add, element)
    assert db.read(rs.check_consistency) == []
    changes = {
        "count_level_0": lambda tr: tr.set(_level_key(prefix, 0, b"b"), _one(2)),
        "count_level_1": lambda tr: tr.set(_level_key(prefix, 1, b"\x15\xb4"), _one(3)),
        "count_top_sentinel": lambda tr: tr.set(_level_key(prefix, 2, b""), _one(0)),
        "delete_level_1_node": lambda tr: tr.clear(_level_key(prefix, 1, b"\x15\x14")),  # level 1 only
        "delete_level_2_node": lambda tr: tr.clear(_level_key(prefix, 2, b"\x15\xb4")),
        "promoted_against_hash": lambda tr: (
            tr.set(_level_key(prefix, 1, b"b"), _one(1)),
            tr.set(_level_key(prefix, 1, b"\x15\xb4"), _one(1)),
        ),
        "demoted_against_hash": lambda tr: (
            tr.clear(_level_key(prefix, 1, b"\x15\x14")),
            tr.set(_level_key(prefix, 1, b""), _one(1)),
        ),
        "bogus_node_present_element": lambda tr: tr.set(_level_key(prefix, 1, b"b"), _one(1)),
        "bogus_node_absent_element": lambda tr: tr.set(_level_key(prefix, 2, b"c"), _one(0)),
        "delete_sentinel_0": lambda tr: tr.clear(_level_key(prefix, 0, b"")),
        "delete_sentinel_2": lambda tr: tr.clear(_level_key(prefix, 2, b"")),
    }
    db.run(changes[tamper])
    problems = db.read(rs.check_consistency)
    assert problems, tamper
    assert any(p.startswith(f"level {level}:") for p in problems), problems
    assert len(db.read(rs.check_consistency, 1)) == 1


def test_check_consistency_stops_at_max_problems(db, prefix):
    rs = RankedSet(prefix, 4, HashFunction.JDK)
    assert len(db.read(rs.check_consistency)) == 4  # never initialized: every sentinel is missing
    for limit in (1, 2, 3):
        assert db.read(rs.check_consistency, limit) == db.read(rs.check_consistency)[:limit]
    for element in JDK_SAMPLE:
        db.run(rs.add, element)

    def corrupt(tr):
        for level in range(1, 4):
            tr.set(_level_key(prefix, level, b""), _one(7))  # every level's last span check fails too
        tr.set(_level_key(prefix, 0, b"b"), _one(5))

    db.run(corrupt)
    everything = db.read(rs.check_consistency)
    assert len(everything) >= 4
    assert {p.split(":")[0] for p in everything} >= {"level 0", "level 1", "level 2", "level 3"}
    for limit in range(1, len(everything) + 1):
        assert db.read(rs.check_consistency, limit) == everything[:limit]


# -- 3b. the structure checked in bounded batches ----------------------------------------------


def check_in_batches(db, rs: RankedSet, max_keys: int, between=None, max_problems: int = 100, max_span: int = 16_384):
    """Run ``check_structure`` to the end, one read transaction per call; ``between(batch)`` runs
    after each.  Returns the problems, the calls, the most keys one call read, and whether a span
    was continued from one call to the next."""
    problems: list[str] = []
    cursor: StructureCursor | None = StructureCursor()
    calls, most, continued = 0, 0, False

    def batch(tr, start):
        found: list[str] = []  # per attempt: a retried transaction reports again

        def report(message: str) -> bool:
            found.append(message)
            return len(problems) + len(found) >= max_problems

        return (*rs.check_structure(tr, start, max_keys, report, max_span), found)

    while cursor is not None:
        cursor, keys, found = db.read(batch, cursor)
        problems += found
        calls += 1
        most = max(most, keys)
        continued = continued or (cursor is not None and cursor.span_node is not None)
        if between is not None and cursor is not None:
            between(calls)
    return problems, calls, most, continued


def _height(rs: RankedSet, element: bytes) -> int:
    """The highest level ``element`` is a node of."""
    h = rs.hash_function(element)
    return max(level for level in range(rs.nlevels) if h & ((1 << (4 * level)) - 1) == 0)


def _built(db, prefix: bytes, count: int, nlevels: int = 4, count_duplicates: bool = False) -> RankedSet:
    rs = RankedSet(prefix, nlevels, HashFunction.MURMUR3, count_duplicates)
    elements = sorted(fdb.tuple.pack((i,)) for i in range(count))
    for start in range(0, count, 1000):
        db.run(
            rs.append,
            [(e, 1 + (i % 3 if count_duplicates else 0)) for i, e in enumerate(elements[start : start + 1000])],
        )
    return rs


@pytest.mark.parametrize("count_duplicates", [False, True])
def test_structure_checked_in_many_small_batches_is_clean(db, prefix, count_duplicates):
    count = 2000
    rs = _built(db, prefix, count, count_duplicates=count_duplicates)
    assert db.read(rs.check_consistency) == []
    for max_keys, max_span in [(4, 3), (16, 16_384), (200, 16_384)]:
        problems, calls, most, continued = check_in_batches(db, rs, max_keys, max_span=max_span)
        assert problems == []
        assert calls > count // max_keys  # level 0 by ranges, then each level against the one below
        assert most <= 2 * max_keys + min(max_span, 100) + 2  # a sound set's spans are short
        assert continued == (max_span == 3)  # only spans longer than max_span go on in the next call
    problems, calls, _, continued = check_in_batches(db, rs, 10_000)
    assert (problems, calls, continued) == ([], 1, False)  # a set smaller than a batch: one call


def _nodes_of_height(rs: RankedSet, count: int, height: int) -> list[bytes]:
    """Elements of the set built by ``_built`` whose highest level is ``height``, in order."""
    elements = sorted(fdb.tuple.pack((i,)) for i in range(count))
    return [e for e in elements if _height(rs, e) == height]


DAMAGES = {
    # name: (change, what the message says)
    "count_at_level_0": (lambda rs, p, n: [(0, n[0][len(n[0]) // 2], _one(2))], "level 0:"),
    "count_at_level_1": (lambda rs, p, n: [(1, n[1][len(n[1]) // 2], _one(40))], "level 1: node"),
    "count_at_level_2": (lambda rs, p, n: [(2, n[2][len(n[2]) // 2], _one(300))], "level 2: node"),
    "upper_node_missing_below": (lambda rs, p, n: [(1, n[2][len(n[2]) // 2], None)], "is missing from level 1"),
    "bogus_node_missing_below": (lambda rs, p, n: [(2, fdb.tuple.pack((1500, "x")), _one(0))], "missing from level 1"),
    "bogus_last_node": (lambda rs, p, n: [(3, b"\xff", _one(0))], "missing from level 2"),
    "node_its_hash_does_not_reach": (
        lambda rs, p, n: [(1, n[0][len(n[0]) // 3], _one(1))],
        "present against the MURMUR3 hash",
    ),
    "node_its_hash_reaches_missing": (
        lambda rs, p, n: [(1, n[1][len(n[1]) // 3], None)],
        "missing against the MURMUR3 hash",
    ),
    "sentinel_missing": (lambda rs, p, n: [(2, b"", None)], "level 2: sentinel missing"),
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_structure_checked_in_batches_finds_each_kind_of_damage(db, prefix, damage):
    count = 1200
    rs = _built(db, prefix, count)
    by_height = {height: _nodes_of_height(rs, count, height) for height in range(4)}
    change, expected = DAMAGES[damage]

    def tamper(tr):
        for level, element, value in change(rs, prefix, by_height):
            if value is None:
                tr.clear(_level_key(prefix, level, element))
            else:
                tr.set(_level_key(prefix, level, element), value)

    db.run(tamper)
    oracle = db.read(rs.check_consistency)
    assert any(expected in problem for problem in oracle), oracle
    for max_keys, max_span in [(4, 3), (16, 16_384), (64, 8), (10_000, 16_384)]:
        problems = check_in_batches(db, rs, max_keys, max_span=max_span)[0]
        assert sorted(problems) == sorted(oracle), (max_keys, max_span)
    # The problem limit stops the batches at once.
    first = check_in_batches(db, rs, 16, max_problems=1)[0]
    assert len(first) == 1 and first[0] in oracle


def test_structure_check_tolerates_adds_and_removes_between_batches(db, prefix):
    count = 800
    rs = _built(db, prefix, count)
    rng = random.Random(7)
    present = sorted(fdb.tuple.pack((i,)) for i in range(count))
    absent = [fdb.tuple.pack((i, "new")) for i in range(count)]

    def replace(_batch: int) -> None:  # a remove and an add in one transaction: no count changes
        removed = present.pop(rng.randrange(len(present)))
        added = absent.pop(rng.randrange(len(absent)))
        db.run(lambda tr: (rs.remove(tr, removed), rs.add(tr, added)))
        present.append(added)

    def add_or_remove(batch: int) -> None:
        if batch % 2:
            db.run(rs.remove, present.pop(rng.randrange(len(present))))
        else:
            present.append(absent.pop(rng.randrange(len(absent))))
            db.run(rs.add, present[-1])

    for max_keys in (6, 40):  # spans are never cut: each is checked in one transaction
        problems, calls, _, continued = check_in_batches(db, rs, max_keys, replace)
        assert problems == [] and calls > 30 and not continued
    # Spans cut between calls (longer than max_span) are compared only if their node's count is
    # the same at both ends: an add or a remove in the span changes it.
    problems, calls, _, continued = check_in_batches(db, rs, 8, add_or_remove, max_span=3)
    assert problems == [] and calls > 30 and continued
    assert db.read(rs.check_consistency) == []
    assert db.read(rs.range) == sorted(present)


def test_structure_check_refuses_too_small_batches(db, prefix):
    rs = _built(db, prefix, 10)
    with pytest.raises(ValueError, match="max_keys must be at least 2 and max_span at least 1, not 1 and 5"):
        db.read(rs.check_structure, StructureCursor(), 1, lambda message: False, 5)
    with pytest.raises(ValueError, match="not 2 and 0"):
        db.read(rs.check_structure, StructureCursor(), 2, lambda message: False, 0)


# -- 4. init, init_needed, clear, the never-initialized set -----------------------------------


def test_init_and_clear(db, prefix):
    set_prefix = prefix + b"\x02set"
    rs = RankedSet(set_prefix, 4, HashFunction.MURMUR3)
    neighbour = RankedSet(prefix + b"\x02ses", 4, HashFunction.MURMUR3)  # sorts just before set_prefix
    db.run(neighbour.add, b"kept")
    outside = [prefix + b"\x02se", prefix + b"\x02seu"]  # next to the set, not under its prefix

    def write_outside(tr):
        for key in outside:
            tr.set(key, b"x")

    db.run(write_outside)

    assert db.read(rs.init_needed) is True
    db.run(rs.init)
    assert db.read(rs.init_needed) is False
    sentinels = [(set_prefix + fdb.tuple.pack((level, b"")), bytes(8)) for level in range(4)]
    assert stored(db, set_prefix) == sentinels
    assert db.read(rs.check_consistency) == []
    db.run(rs.init)  # a no-op on an existing set
    for element in [b"a", b"b", *tall_elements(HashFunction.MURMUR3)]:
        db.run(rs.add, element)
    db.run(rs.init)
    assert db.read(rs.size) == 2 + len(TALL_TARGETS)

    db.run(rs.clear)
    assert stored(db, set_prefix) == []
    assert db.read(rs.init_needed) is True
    assert db.read(lambda tr: [tr.get(key) for key in outside]) == [b"x"] * len(outside)
    assert db.read(neighbour.range) == [b"kept"]
    assert db.read(neighbour.check_consistency) == []
    db.run(neighbour.clear)
    assert stored(db, prefix + b"\x02ses") == []


@pytest.mark.parametrize("nlevels", [2, 6])
def test_never_initialized_set_is_empty(db, prefix, nlevels):
    rs = RankedSet(prefix, nlevels)

    def read(tr):
        return (
            rs.init_needed(tr),
            rs.size(tr),
            [rs.rank(tr, e, null_if_missing=False) for e in (b"\x00", b"a", b"\xff\xff")],
            rs.rank(tr, b"a"),
            rs.contains(tr, b"a"),
            [rs.get_nth(tr, n) for n in (-1, 0, 1)],
            rs.range(tr),
        )

    assert db.read(read) == (True, 0, [0, 0, 0], None, False, [None, None, None], [])
    assert db.run(rs.remove, b"a") is False
    assert stored(db, prefix) == []
    problems = db.read(rs.check_consistency)
    assert any(p.startswith("level 0:") for p in problems)
    # The first add creates the set.
    assert db.run(rs.add, b"a") is True
    assert stored(db, prefix) == expected_layout(prefix, nlevels, [b"a"], HashFunction.JDK)


# -- 5. invalid arguments ---------------------------------------------------------------------


@pytest.mark.parametrize("nlevels", [-1, 0, 1, 9, 16])
def test_invalid_nlevels(nlevels):
    with pytest.raises(ValueError):
        RankedSet(b"R", nlevels)


def test_valid_nlevels_bounds():
    assert RankedSet(b"R", 2).nlevels == 2
    assert RankedSet(b"R", 8).nlevels == 8


def test_empty_element_is_rejected(db, prefix):
    rs = RankedSet(prefix, 3)
    for operation in (rs.add, rs.remove, rs.contains, rs.rank):
        with pytest.raises(ValueError):
            db.run(operation, b"")
    assert stored(db, prefix) == []
    db.run(rs.add, b"x")
    before = stored(db, prefix)
    with pytest.raises(ValueError):
        db.run(lambda tr: (rs.add(tr, b"y"), rs.add(tr, b"")))  # the failed transaction keeps nothing
    assert stored(db, prefix) == before


# -- 6. concurrent writers --------------------------------------------------------------------


@pytest.mark.parametrize("hash_function", list(HashFunction))
def test_concurrent_adds(db, prefix, hash_function):
    rs = RankedSet(prefix, 3, hash_function)
    db.run(rs.init)
    threads_count, per_thread = 6, 40
    per_worker = [[fdb.tuple.pack((i, w)) for i in range(per_thread)] for w in range(threads_count)]
    per_worker[0] += list(tall_elements(hash_function))
    barrier = threading.Barrier(threads_count)
    errors: list[BaseException] = []

    def work(mine: list[bytes]) -> None:
        try:
            barrier.wait()
            for element in mine:
                db.run(rs.add, element)
            for element in mine[::4]:
                db.run(rs.remove, element)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(mine,)) for mine in per_worker]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    model = sorted(e for mine in per_worker for i, e in enumerate(mine) if i % 4)
    assert db.read(rs.check_consistency) == []
    assert db.read(rs.size) == len(model)
    assert db.read(rs.range) == model
    assert stored(db, prefix) == expected_layout(prefix, 3, model, hash_function)


def test_first_adds_to_a_new_set_conflict(db, prefix):
    """Two transactions that each find the set missing and create it must not both commit: the
    second's sentinels (count 0) would overwrite the first's counts.  Each transaction reads,
    then both wait for each other before writing, so they truly overlap (on a store whose
    writers run one at a time they cannot: it needs conflict detection)."""
    if not db.run(lambda tr: tr.declares_conflicts):
        pytest.skip("this store runs one writer at a time: no two transactions overlap")
    rs = RankedSet(prefix, 3)
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def add(element: bytes) -> None:
        first = [True]

        def overlapped(tr) -> None:
            steps = rs.add_steps(tr, element)
            next(steps)  # the reads that find no set
            if first[0]:
                first[0] = False
                barrier.wait(timeout=30)
            for _ in steps:
                pass

        try:
            db.run(overlapped)
        except BaseException as exc:
            errors.append(exc)

    elements = [fdb.tuple.pack((i,)) for i in (1, 2)]
    threads = [threading.Thread(target=add, args=(element,)) for element in elements]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert db.read(rs.check_consistency) == []
    assert db.read(rs.size) == 2
    assert stored(db, prefix) == expected_layout(prefix, 3, elements, HashFunction.JDK)
