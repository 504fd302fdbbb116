"""Backend conformance: every store backend behaves like FoundationDB.

Each test runs once per backend through the ``db``/``store_url``/``prefix`` fixtures of
conftest.py (the FoundationDB run is skipped, with the reason, when no cluster is
configured).  Every key lives under the test's private ``prefix`` because FoundationDB
clusters are shared.  Results are checked against independent models: sorted Python
lists and dicts, and byte-level re-implementations of FoundationDB's documented atomic
operations and tuple-layer ordering.  Tests named ``test_lmdb_*`` cover behaviour only
the embedded store has (its key limit, reopening a directory); calls committed together (group
commit, ``run_together``) are in tests/store/test_group_commit.py.
"""

from __future__ import annotations

import math
import multiprocessing
import random
import shutil
import socket
import subprocess
import sys
import sysconfig
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fdb.tuple
import pytest
from fdb.subspace_impl import Subspace
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fdb_leaderboard.store import (
    MAX_KEY_SIZE,
    MAX_TRANSACTION_BYTES,
    MAX_VALUE_SIZE,
    Database,
    KeyTooLarge,
    ReadOnlyTransaction,
    StoreError,
    Transaction,
    TransactionTooLarge,
    ValueTooLarge,
    decode_int64,
    encode_int64,
    open_database,
    parse_url,
    strinc,
)
from fdb_leaderboard.store.api import apply_add, apply_max, apply_min
from fdb_leaderboard.store.fdb_backend import FdbDatabase, direct_calls_available
from fdb_leaderboard.store.lmdb_backend import LmdbDatabase
from tests.conftest import fdb_url
from tests.store.conftest import Boom, is_lmdb, open_lmdb, run_behind_blocked_leader

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
LMDB_MAX_KEY = 511

# Hypothesis shares one store between the examples of a test (each example clears its
# prefix first), so the function-scoped fixtures are safe to reuse.
conformance_settings = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


# -- helpers ---------------------------------------------------------------------------------


def replace_all(tr: Transaction, prefix: bytes, items: dict[bytes, bytes]) -> None:
    """Make ``items`` the whole content of ``prefix``."""
    tr.clear_range_startswith(prefix)
    for key, value in items.items():
        tr.set(key, value)


def everything(db: Database, prefix: bytes) -> list[tuple[bytes, bytes]]:
    """All pairs under ``prefix``, read with a plain range read (independent of get_range_startswith)."""
    return db.read(lambda tr: tr.get_range(prefix, strinc(prefix)))


def model_range(
    model: dict[bytes, bytes], begin: bytes, end: bytes, limit: int = 0, reverse: bool = False
) -> list[tuple[bytes, bytes]]:
    items = sorted((k, v) for k, v in model.items() if begin <= k < end)
    if reverse:
        items.reverse()
    return items[:limit] if limit else items


# -- ordering of tuple-encoded keys ------------------------------------------------------------

INT_EDGES = [
    -(2**100),
    -(2**64),
    -(2**64) + 1,
    INT64_MIN - 1,
    INT64_MIN,
    -(2**32),
    -256,
    -255,
    -1,
    0,
    1,
    255,
    256,
    2**32,
    INT64_MAX,
    INT64_MAX + 1,
    2**64 - 1,
    2**64,
    2**100,
]
BYTES_EDGES = [
    b"",
    b"\x00",
    b"\x00\x00",
    b"\x00\xff",
    b"\x01",
    b"a",
    b"a\x00",
    b"a\x00b",
    b"a\xff",
    b"\xff",
    b"\xff\x00",
]
STR_EDGES = ["", "\x00", "a", "a\x00", "a\x00b", "b", "z", "\u00e9", "\u00ff\u0100", "\u4e2d", "\uffff", "\U0001f600"]
FLOAT_EDGES = [-math.inf, -1e300, -1.5, -5e-324, -0.0, 0.0, 5e-324, 1e-300, 1.0, 1.5, 1e300, math.inf]
NESTED_EDGES = [(), (None,), (None, None), (b"",), (1,), (1, None), (1, 2), (-1,), ("a", (b"\x00", None)), ((),)]
SCALARS = [None, *BYTES_EDGES, *STR_EDGES, *INT_EDGES, *FLOAT_EDGES, *NESTED_EDGES]


def element_order(value: Any) -> tuple:
    """Where the tuple layer places one element: by type code, then by value within the type.

    Type codes: null 0x00 < bytes 0x01 < unicode 0x02 < nested 0x05 < integers 0x0b-0x1d
    < double 0x21.  Byte strings compare bytewise, unicode by its UTF-8 bytes, integers
    and doubles numerically (with -0.0 before 0.0), nested tuples element by element.
    """
    if value is None:
        return (0,)
    if isinstance(value, bytes):
        return (1, value)
    if isinstance(value, str):
        return (2, value.encode("utf-8"))
    if isinstance(value, tuple):
        return (5, tuple_order(value))
    if isinstance(value, bool):
        raise TypeError("booleans are not part of this model")
    if isinstance(value, int):
        return (20, value)
    if isinstance(value, float):
        return (33, value, math.copysign(1.0, value))
    raise TypeError(f"no model for {value!r}")


def tuple_order(values: tuple) -> tuple:
    return tuple(element_order(v) for v in values)


def check_tuple_keys_round_trip(db: Database, prefix: bytes, tuples: list[tuple]) -> None:
    space = Subspace(rawPrefix=prefix)
    packed = [space.pack(t) for t in tuples]
    assert len(set(packed)) == len(packed)
    shuffled = list(zip(packed, range(len(packed)), strict=True))
    random.Random(len(packed)).shuffle(shuffled)
    db.run(replace_all, prefix, {key: b"%d" % index for key, index in shuffled})

    stored = everything(db, prefix)
    keys = [key for key, _ in stored]
    # Keys come back in the order of their bytes...
    assert keys == sorted(packed)
    # ...which is the tuple layer's order of the values...
    assert keys == [space.pack(t) for t in sorted(tuples, key=tuple_order)]
    # ...and each key still carries its own value and unpacks to its tuple.
    for key, value in stored:
        index = int(value)
        assert key == packed[index]
        assert space.unpack(key) == tuples[index]


def test_tuple_keys_come_back_in_tuple_order(db: Database, prefix: bytes) -> None:
    singles = [(value,) for value in SCALARS]
    pairs = [(1, "a"), (1, "a", None), (1, b"a"), ("a", 1), (1, 0), (1, -1), (1, (2,)), (None, 1), ((), 1)]
    check_tuple_keys_round_trip(db, prefix, singles + pairs)


def test_tuple_key_edges_sort_numerically(db: Database, prefix: bytes) -> None:
    """Spelled out without the model: integers and doubles sort by value, strings by code point."""
    space = Subspace(rawPrefix=prefix)
    shuffled = INT_EDGES[::-1] + [x + 0.25 for x in (-3.0, 2.0, -1e20, 1e20)]
    db.run(replace_all, prefix, {space.pack(("n", x)): b"" for x in shuffled})
    got = [space.unpack(key)[1] for key, _ in everything(db, prefix)]
    assert got == sorted(INT_EDGES) + sorted([-1e20 + 0.25, -2.75, 2.25, 1e20 + 0.25])

    db.run(replace_all, prefix, {space.pack((s,)): b"" for s in reversed(STR_EDGES)})
    assert [space.unpack(key)[0] for key, _ in everything(db, prefix)] == sorted(STR_EDGES)


tuple_leaves = st.one_of(
    st.none(),
    st.binary(max_size=6),
    st.text(st.characters(codec="utf-8"), max_size=5),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.sampled_from(INT_EDGES),
    st.floats(allow_nan=False),
)
tuple_elements = st.recursive(tuple_leaves, lambda inner: st.lists(inner, max_size=3).map(tuple), max_leaves=6)
tuple_keys = st.lists(tuple_elements, min_size=1, max_size=3).map(tuple)


@conformance_settings
@given(tuples=st.lists(tuple_keys, min_size=1, max_size=15, unique_by=fdb.tuple.pack))
def test_generated_tuple_keys_come_back_in_tuple_order(db: Database, prefix: bytes, tuples: list[tuple]) -> None:
    check_tuple_keys_round_trip(db, prefix, tuples)


# -- range reads ------------------------------------------------------------------------------


def test_range_read_boundaries(db: Database, prefix: bytes) -> None:
    space = Subspace(rawPrefix=prefix)
    k10, k20, k30, k40, k50 = keys = [space.pack((i,)) for i in (10, 20, 30, 40, 50)]
    model = {key: b"v%d" % i for i, key in enumerate(keys)}
    db.run(replace_all, prefix, model)
    lo, hi = prefix, strinc(prefix)

    def reads(tr: Transaction) -> dict[str, list]:
        return {
            "first..last": tr.get_range(k10, k50),
            "first..after last": tr.get_range(k10, k50 + b"\x00"),
            "begin == end": tr.get_range(k20, k20),
            "begin > end": tr.get_range(k40, k20),
            "begin > end reverse": tr.get_range(k40, k20, 0, True),
            "between keys": tr.get_range(space.pack((15,)), space.pack((35,))),
            "between keys reverse": tr.get_range(space.pack((15,)), space.pack((35,)), 0, True),
            "just after a key": tr.get_range(k20 + b"\x00", k40),
            "limit 1": tr.get_range(lo, hi, 1),
            "limit 3": tr.get_range(lo, hi, 3),
            "limit 5": tr.get_range(lo, hi, 5),
            "limit 99": tr.get_range(lo, hi, 99),
            "reverse": tr.get_range(lo, hi, 0, True),
            "reverse limit 2": tr.get_range(lo, hi, 2, True),
            "reverse end on key": tr.get_range(lo, k40, 2, True),
            "reverse end between": tr.get_range(lo, space.pack((45,)), 1, True),
            "empty below": tr.get_range(lo, k10),
            "empty above": tr.get_range(k50 + b"\x00", hi, 0, True),
        }

    got = db.read(reads)

    def pairs(*ks: bytes) -> list[tuple[bytes, bytes]]:
        return [(k, model[k]) for k in ks]

    assert got == {
        "first..last": pairs(k10, k20, k30, k40),
        "first..after last": pairs(k10, k20, k30, k40, k50),
        "begin == end": [],
        "begin > end": [],
        "begin > end reverse": [],
        "between keys": pairs(k20, k30),
        "between keys reverse": pairs(k30, k20),
        "just after a key": pairs(k30),
        "limit 1": pairs(k10),
        "limit 3": pairs(k10, k20, k30),
        "limit 5": pairs(k10, k20, k30, k40, k50),
        "limit 99": pairs(k10, k20, k30, k40, k50),
        "reverse": pairs(k50, k40, k30, k20, k10),
        "reverse limit 2": pairs(k50, k40),
        "reverse end on key": pairs(k30, k20),
        "reverse end between": pairs(k40),
        "empty below": [],
        "empty above": [],
    }

    # Every combination of interesting bounds, limits and directions against the model.
    bounds = [lo, hi, *keys, *(k + b"\x00" for k in keys), space.pack((5,)), space.pack((25,)), space.pack((55,))]
    requests = [
        (begin, end, limit, reverse)
        for begin in bounds
        for end in bounds
        for limit in (0, 1, 4, 5, 6)
        for reverse in (False, True)
    ]
    results = db.read(lambda tr: [tr.get_range(*request) for request in requests])
    for request, result in zip(requests, results, strict=True):
        assert result == model_range(model, *request), request


def test_a_row_limit_beyond_the_clusters_greatest_reads_every_row(db: Database, prefix: bytes) -> None:
    """A batch size a caller may send (a uint32) as a range read's limit: every row, not an error."""
    db.run(lambda tr: [tr.set(prefix + bytes([i]), b"") for i in range(5)])
    for limit in (2**31 - 1, 2**31, 2**32 - 1):
        assert len(db.read(lambda tr, n=limit: tr.get_range(prefix, prefix + b"\xff", n))) == 5
        assert len(db.read(lambda tr, n=limit: tr.get_range(prefix, prefix + b"\xff", n, True))) == 5


def test_range_reads_with_bounds_longer_than_lmdb_keys(db: Database, prefix: bytes) -> None:
    """Keys near LMDB's 511-byte limit, read with bounds (and gets) longer than any storable key."""
    k511 = prefix + b"m" * (LMDB_MAX_KEY - len(prefix))
    k510 = k511[:-1]
    before = prefix + b"l"
    after = k510 + b"n"
    assert len(k511) == LMDB_MAX_KEY
    long_bounds = [
        k511 + b"\x00" * 100,  # just after k511
        k510 + b"\x00" * 200,  # between k510 and k511
        k510 + b"m\xff" + b"\x00" * 50,  # after k511, before `after`
        k510 + b"z" * 300,  # after everything
        before + b"\x00" * 600,  # just after `before`
    ]
    short_bounds = [prefix, strinc(prefix), before, k510, k511, after]
    for model in (
        {before: b"b", k510: b"510", k511: b"511", after: b"a"},
        {before: b"b", k510: b"510", k511: b"511"},  # the long bound's 511-byte prefix is the last key
        {k511: b"511"},
    ):
        db.run(replace_all, prefix, model)
        requests = [
            (begin, end, limit, reverse)
            for begin in long_bounds + short_bounds
            for end in long_bounds + short_bounds
            for limit in (0, 1, 2)
            for reverse in (False, True)
        ]

        def reads(tr: Transaction, requests: list = requests) -> tuple[list, list, list]:
            return (
                [tr.get_range(*request) for request in requests],
                [tr.get(bound) for bound in long_bounds],
                tr.get_range_startswith(k511),
            )

        ranges, gets, startswith = db.read(reads)
        for request, result in zip(requests, ranges, strict=True):
            assert result == model_range(model, *request), (request, sorted(model))
        assert gets == [None] * len(long_bounds)
        assert startswith == [(k511, b"511")]

    # clear_range with long bounds removes exactly the keys in between.
    db.run(replace_all, prefix, {before: b"b", k510: b"510", k511: b"511", after: b"a"})
    db.run(lambda tr: tr.clear_range(long_bounds[1], long_bounds[2]))
    assert everything(db, prefix) == [(before, b"b"), (k510, b"510"), (after, b"a")]


bound_suffixes = st.binary(max_size=5)


@conformance_settings
@given(data=st.data())
def test_generated_range_reads_match_model(db: Database, prefix: bytes, data: st.DataObject) -> None:
    stored = data.draw(st.dictionaries(st.binary(max_size=4), st.binary(max_size=4), max_size=20), label="stored")
    model = {prefix + suffix: value for suffix, value in stored.items()}
    db.run(replace_all, prefix, model)

    near = bound_suffixes
    if stored:
        existing = st.sampled_from(sorted(stored))
        near = st.one_of(bound_suffixes, existing, existing.map(lambda s: s + b"\x00"))
    bound = st.one_of(near.map(lambda s: prefix + s), st.just(strinc(prefix)))
    queries = data.draw(
        st.lists(st.tuples(bound, bound, st.integers(0, len(model) + 2), st.booleans()), min_size=1, max_size=10),
        label="queries",
    )
    starts = data.draw(
        st.lists(
            st.tuples(
                near.flatmap(lambda s: st.integers(0, len(s)).map(lambda n: prefix + s[:n])),
                st.integers(0, len(model) + 1),
                st.booleans(),
            ),
            max_size=4,
        ),
        label="startswith",
    )
    lookups = data.draw(st.lists(near.map(lambda s: prefix + s), max_size=8), label="lookups")

    def reads(tr: Transaction) -> dict[str, Any]:
        return {
            "single": [tr.get_range(*q) for q in queries],
            "batched": tr.get_ranges(queries),
            "snapshot": [tr.snapshot.get_range(*q) for q in queries],
            "startswith": [tr.get_range_startswith(*s) for s in starts],
            "gets": [tr.get(key) for key in lookups],
            "get_many": tr.get_many(lookups),
            "snapshot get_many": tr.snapshot.get_many(lookups),
            "last_keys": tr.snapshot.last_keys([(begin, end) for begin, end, _, _ in queries]),
        }

    got = db.read(reads)
    expected_ranges = [model_range(model, *q) for q in queries]
    expected_values = [model.get(key) for key in lookups]
    assert got == {
        "single": expected_ranges,
        "batched": expected_ranges,
        "snapshot": expected_ranges,
        "startswith": [model_range(model, p, strinc(p), limit, reverse) for p, limit, reverse in starts],
        "gets": expected_values,
        "get_many": expected_values,
        "snapshot get_many": expected_values,
        "last_keys": [
            rows[0][0] if (rows := model_range(model, begin, end, 1, True)) else None for begin, end, _, _ in queries
        ],
    }


# -- atomic operations --------------------------------------------------------------------------


def _fit(existing: bytes | None, width: int) -> bytes:
    """FoundationDB: the existing value is zero-extended or truncated to the operand's length."""
    old = existing or b""
    return old[:width] + b"\x00" * max(0, width - len(old))


def fdb_add(existing: bytes | None, param: bytes) -> bytes:
    """ADD as documented: byte-by-byte little-endian addition with carry, overflow discarded."""
    out, carry = bytearray(), 0
    for a, b in zip(_fit(existing, len(param)), param, strict=True):
        total = a + b + carry
        out.append(total & 0xFF)
        carry = total >> 8
    return bytes(out)


def fdb_max(existing: bytes | None, param: bytes) -> bytes:
    """MAX as documented: unsigned little-endian comparison, most significant (last) byte first."""
    if existing is None:
        return param
    old = _fit(existing, len(param))
    return param if param[::-1] >= old[::-1] else old


def fdb_min(existing: bytes | None, param: bytes) -> bytes:
    """MIN as documented (API >= 510): an absent value becomes ``param``; otherwise the smaller."""
    if existing is None:
        return param
    old = _fit(existing, len(param))
    return param if param[::-1] <= old[::-1] else old


MODEL_OPS: dict[str, Callable[[bytes | None, bytes], bytes]] = {"add": fdb_add, "max": fdb_max, "min": fdb_min}


@settings(max_examples=300, deadline=None)
@given(
    op=st.sampled_from(sorted(MODEL_OPS)),
    existing=st.none() | st.binary(max_size=12),
    param=st.binary(max_size=12),
)
def test_atomic_semantics_match_fdb_documentation(op: str, existing: bytes | None, param: bytes) -> None:
    """The store's shared helpers against the independent byte-level models (no store needed)."""
    helper = {"add": apply_add, "max": apply_max, "min": apply_min}[op]
    assert helper(existing, param) == MODEL_OPS[op](existing, param)


def run_atomic(tr: Transaction, op: str, key: bytes, param: bytes) -> None:
    getattr(tr, op)(key, param)


atomic_cases = st.lists(
    st.tuples(
        st.none() | st.binary(max_size=10),
        st.lists(st.tuples(st.sampled_from(sorted(MODEL_OPS)), st.binary(min_size=1, max_size=10)), max_size=4),
    ),
    min_size=1,
    max_size=6,
)


@conformance_settings
@given(cases=atomic_cases)
def test_generated_atomic_ops_match_model(
    db: Database, prefix: bytes, cases: list[tuple[bytes | None, list[tuple[str, bytes]]]]
) -> None:
    space = Subspace(rawPrefix=prefix)
    keys = [space.pack((i,)) for i in range(len(cases))]
    initial = {key: existing for key, (existing, _) in zip(keys, cases, strict=True) if existing is not None}
    db.run(replace_all, prefix, initial)

    expected_after_each: list[list[bytes | None]] = []
    expected: dict[bytes, bytes] = dict(initial)
    for key, (_, ops) in zip(keys, cases, strict=True):
        steps = []
        for op, param in ops:
            expected[key] = MODEL_OPS[op](expected.get(key), param)
            steps.append(expected[key])
        expected_after_each.append(steps)

    def mutate(tr: Transaction) -> list[list[bytes | None]]:
        seen = []
        for key, (_, ops) in zip(keys, cases, strict=True):
            steps = []
            for op, param in ops:
                run_atomic(tr, op, key, param)
                steps.append(tr.get(key))  # the transaction reads its own atomic writes
            seen.append(steps)
        return seen

    assert db.run(mutate) == expected_after_each
    assert everything(db, prefix) == sorted(expected.items())


def test_atomic_add_int64_semantics(db: Database, prefix: bytes) -> None:
    space = Subspace(rawPrefix=prefix)
    key = {name: space.pack((name,)) for name in ("absent", "neg", "wrap", "under", "short", "long", "narrow")}
    db.run(
        replace_all,
        prefix,
        {
            key["neg"]: encode_int64(10),
            key["wrap"]: encode_int64(INT64_MAX),
            key["under"]: encode_int64(INT64_MIN),
            key["short"]: b"\x01\x02",  # zero-extended to the operand's 8 bytes
            key["long"]: b"\x05" + b"\x00" * 7 + b"\xaa\xbb",  # truncated to 8 bytes
            key["narrow"]: encode_int64(0x1_0000_00FF),  # a 1-byte operand keeps only the low byte
        },
    )

    def adds(tr: Transaction) -> None:
        tr.add(key["absent"], encode_int64(-5))
        tr.add(key["neg"], encode_int64(-25))
        tr.add(key["wrap"], encode_int64(1))
        tr.add(key["under"], encode_int64(-1))
        tr.add(key["short"], encode_int64(1))
        tr.add(key["long"], encode_int64(-6))
        tr.add(key["narrow"], b"\x02")

    db.run(adds)
    got = db.read(lambda tr: {name: tr.get(k) for name, k in key.items()})
    assert got == {
        "absent": encode_int64(-5),
        "neg": encode_int64(-15),
        "wrap": encode_int64(INT64_MIN),
        "under": encode_int64(INT64_MAX),
        "short": bytes([2, 2, 0, 0, 0, 0, 0, 0]),
        "long": b"\xff" * 8,
        "narrow": b"\x01",
    }
    assert decode_int64(got["long"]) == -1
    assert decode_int64(b"\x07") == 7  # shorter values are zero-extended
    assert [decode_int64(encode_int64(v)) for v in (INT64_MIN, -1, 0, INT64_MAX)] == [INT64_MIN, -1, 0, INT64_MAX]


def test_atomic_max_min_are_unsigned_little_endian(db: Database, prefix: bytes) -> None:
    space = Subspace(rawPrefix=prefix)
    k = {name: space.pack((name,)) for name in ("max-absent", "min-absent", "max", "min", "max-short", "min-long")}
    db.run(
        replace_all,
        prefix,
        {
            k["max"]: encode_int64(5),
            k["min"]: encode_int64(5),
            k["max-short"]: b"\x09",
            k["min-long"]: b"\x01\x00\x00\x00\x00\x00\x00\x00\xff",
        },
    )

    def ops(tr: Transaction) -> None:
        tr.max(k["max-absent"], encode_int64(3))
        tr.min(k["min-absent"], encode_int64(3))  # absent: param is stored, not zero
        tr.max(k["max"], encode_int64(-1))  # 0xff.. is the largest unsigned value
        tr.min(k["min"], encode_int64(-1))
        tr.max(k["max-short"], b"\x08\x00")  # existing 0x09 extended to 2 bytes wins
        tr.min(k["min-long"], encode_int64(2))  # existing truncated to 8 bytes (1) wins

    db.run(ops)
    assert db.read(lambda tr: {name: tr.get(key) for name, key in k.items()}) == {
        "max-absent": encode_int64(3),
        "min-absent": encode_int64(3),
        "max": encode_int64(-1),
        "min": encode_int64(5),
        "max-short": b"\x09\x00",
        "min-long": encode_int64(1),
    }


# -- isolation ----------------------------------------------------------------------------------


def test_transaction_sees_its_own_writes(db: Database, prefix: bytes) -> None:
    space = Subspace(rawPrefix=prefix)
    a, b, c, d = (space.pack((x,)) for x in "abcd")
    db.run(replace_all, prefix, {a: b"A", b: b"B", c: b"C"})

    def body(tr: Transaction) -> list[Any]:
        seen = []
        tr.set(d, b"D")
        seen.append((tr.get(d), tr.get_range_startswith(prefix)))
        tr.clear(a)
        seen.append((tr.get(a), tr.get_range_startswith(prefix, reverse=True)))
        tr.clear_range(b, d)
        seen.append((tr.get(b), tr.get(c), tr.get_range_startswith(prefix)))
        tr.add(c, encode_int64(7))
        seen.append((tr.get(c), tr.get_range(prefix, strinc(prefix), 1, True), tr.get_many([a, c, d])))
        return seen

    assert db.run(body) == [
        (b"D", [(a, b"A"), (b, b"B"), (c, b"C"), (d, b"D")]),
        (None, [(d, b"D"), (c, b"C"), (b, b"B")]),
        (None, None, [(d, b"D")]),
        (encode_int64(7), [(d, b"D")], [None, encode_int64(7), b"D"]),
    ]
    assert everything(db, prefix) == [(c, encode_int64(7)), (d, b"D")]


def test_stats_count_the_mutations_and_their_bytes(db: Database, prefix: bytes) -> None:
    space = Subspace(rawPrefix=prefix)
    a, b, c = (space.pack((x,)) for x in "abc")
    db.run(replace_all, prefix, {a: b"A"})

    def body(tr: Transaction) -> None:
        tr.get(a)
        tr.set(b, b"value")
        tr.clear(a)
        tr.clear_range(a, c)
        tr.add(c, encode_int64(1))
        tr.max(c, encode_int64(2))
        tr.min(c, encode_int64(3))

    before = db.stats.snapshot()
    db.run(body)
    db.read(lambda tr: tr.get_many([a, b, c]))
    after = db.stats.snapshot()
    delta = {name: after[name] - before[name] for name in after}
    assert delta["transactions"] == 2
    assert delta["writes"] == 6  # the reads wrote nothing
    key = len(a)  # every key here has the same length
    assert delta["bytes_written"] == (key + 5) + key + 2 * key + 3 * (key + 8)
    assert delta["read_rounds"] == 2 and delta["reads"] == 4


RYW_SUFFIXES = [b"a", b"a\x00", b"b", b"b\xff", b"c", b"\xff"]
ryw_ops = st.one_of(
    st.tuples(st.just("set"), st.sampled_from(RYW_SUFFIXES), st.binary(max_size=3)),
    st.tuples(st.just("clear"), st.sampled_from(RYW_SUFFIXES)),
    # begin <= end: FoundationDB rejects an inverted clear_range (inverted_range, error 2005).
    st.lists(st.sampled_from([b"", *RYW_SUFFIXES, b"\xff\xff"]), min_size=2, max_size=2).map(
        lambda bounds: ("clear_range", *sorted(bounds))
    ),
    st.tuples(st.just("add"), st.sampled_from(RYW_SUFFIXES), st.integers(INT64_MIN, INT64_MAX)),
)


def apply_ryw_op(target: Transaction | dict[bytes, bytes], prefix: bytes, op: tuple) -> None:
    """Apply one generated op to a transaction or (independently) to the dict model."""
    kind = op[0]
    if isinstance(target, dict):
        if kind == "set":
            target[prefix + op[1]] = op[2]
        elif kind == "clear":
            target.pop(prefix + op[1], None)
        elif kind == "clear_range":
            for key in [k for k in target if prefix + op[1] <= k < prefix + op[2]]:
                del target[key]
        else:
            target[prefix + op[1]] = fdb_add(target.get(prefix + op[1]), encode_int64(op[2]))
        return
    if kind == "set":
        target.set(prefix + op[1], op[2])
    elif kind == "clear":
        target.clear(prefix + op[1])
    elif kind == "clear_range":
        target.clear_range(prefix + op[1], prefix + op[2])
    else:
        target.add(prefix + op[1], encode_int64(op[2]))


@conformance_settings
@given(
    initial=st.dictionaries(st.sampled_from(RYW_SUFFIXES), st.binary(max_size=3)),
    ops=st.lists(ryw_ops, max_size=10),
    fail=st.booleans(),
)
def test_generated_writes_are_visible_inside_and_atomic_outside(
    db: Database, prefix: bytes, initial: dict[bytes, bytes], ops: list[tuple], fail: bool
) -> None:
    committed = {prefix + suffix: value for suffix, value in initial.items()}
    db.run(replace_all, prefix, committed)

    model = dict(committed)
    expected_views = []
    for op in ops:
        apply_ryw_op(model, prefix, op)
        expected_views.append((sorted(model.items()), [model.get(prefix + s) for s in RYW_SUFFIXES]))

    observed: list[Any] = []

    def body(tr: Transaction) -> None:
        observed.clear()  # FoundationDB may retry
        for op in ops:
            apply_ryw_op(tr, prefix, op)
            observed.append((tr.get_range_startswith(prefix), [tr.get(prefix + s) for s in RYW_SUFFIXES]))
        if fail:
            raise Boom

    if fail:
        with pytest.raises(Boom):
            db.run(body)
    else:
        db.run(body)
    assert observed == expected_views
    assert everything(db, prefix) == sorted((committed if fail else model).items())


def test_failing_transaction_leaves_nothing(db: Database, prefix: bytes) -> None:
    space = Subspace(rawPrefix=prefix)
    keep = {space.pack(("keep", i)): b"%d" % i for i in range(5)}
    db.run(replace_all, prefix, keep)

    def body(tr: Transaction) -> None:
        tr.set(space.pack(("new",)), b"x")
        tr.clear(space.pack(("keep", 0)))
        tr.clear_range(space.pack(("keep", 2)), space.pack(("keep", 4)))
        tr.add(space.pack(("keep", 4)), encode_int64(1))
        tr.max(space.pack(("max",)), b"\x01")
        raise Boom("on purpose")

    with pytest.raises(Boom, match="on purpose"):
        db.run(body)
    assert everything(db, prefix) == sorted(keep.items())


def test_failing_transaction_in_a_batch_leaves_nothing(db: Database, prefix: bytes) -> None:
    space = Subspace(rawPrefix=prefix)
    total = space.pack(("total",))

    def good(i: int) -> Callable[[Transaction], int]:
        def fn(tr: Transaction) -> int:
            tr.set(space.pack(("good", i)), b"%d" % i)
            tr.add(total, encode_int64(1))
            return i

        return fn

    def bad(tr: Transaction) -> None:
        tr.set(space.pack(("bad",)), b"x")
        tr.add(total, encode_int64(1000))
        tr.clear(space.pack(("good", 0)))  # ran earlier in the same batch on LMDB
        tr.clear_range(space.pack(("leader",)), strinc(space.pack(("leader",))))
        raise Boom("bad")

    commits_before = db.commits if is_lmdb(db) else 0
    results, errors = run_behind_blocked_leader(db, space.pack(("leader",)), [good(0), good(1), bad, good(2), good(3)])
    assert results == {0: 0, 1: 1, 3: 2, 4: 3}
    assert list(errors) == [2]
    assert isinstance(errors[2], Boom)
    assert everything(db, prefix) == sorted(
        [(space.pack(("good", i)), b"%d" % i) for i in range(4)]
        + [(space.pack(("leader",)), b"leader"), (total, encode_int64(4))]
    )
    if is_lmdb(db):
        # The leader takes the five followers queued while it ran into its own commit.
        assert db.commits - commits_before == 1


def test_read_only_transactions_reject_writes(db: Database, prefix: bytes) -> None:
    space = Subspace(rawPrefix=prefix)
    key = space.pack(("k",))
    db.run(replace_all, prefix, {key: encode_int64(1)})
    writes: list[Callable[[Transaction], Any]] = [
        lambda tr: tr.set(key, b"x"),
        lambda tr: tr.set(space.pack(("new",)), b"x"),
        lambda tr: tr.clear(key),
        lambda tr: tr.clear_range(prefix, strinc(prefix)),
        lambda tr: tr.clear_range_startswith(prefix),
        lambda tr: tr.add(key, encode_int64(1)),
        lambda tr: tr.max(key, encode_int64(9)),
        lambda tr: tr.min(key, encode_int64(0)),
    ]
    for write in writes:
        with pytest.raises(ReadOnlyTransaction):
            db.read(write)

    # A read-only function that swallows the error still cannot have written anything.
    def swallow(tr: Transaction) -> bytes | None:
        with pytest.raises(ReadOnlyTransaction):
            tr.set(key, b"y")
        return tr.get(key)

    assert db.read(swallow) == encode_int64(1)
    assert everything(db, prefix) == [(key, encode_int64(1))]


# -- conflicts and concurrency --------------------------------------------------------------------


def increment(tr: Transaction, counter: bytes, marker: bytes | None = None) -> int:
    """Read-modify-write (not an atomic add): loses updates unless transactions are serializable."""
    raw = tr.get(counter)
    value = (int(raw) if raw is not None else 0) + 1
    tr.set(counter, b"%d" % value)
    if marker is not None:
        tr.set(marker, b"%d" % value)
    return value


def test_concurrent_read_modify_write_loses_no_update(db: Database, prefix: bytes) -> None:
    space = Subspace(rawPrefix=prefix)
    counter = space.pack(("counter",))
    threads_n, per_thread = 6, 30
    returned: list[int] = []
    lock = threading.Lock()
    errors: list[BaseException] = []
    start = threading.Barrier(threads_n)

    def worker(t: int) -> None:
        try:
            start.wait()
            for i in range(per_thread):
                value = db.run(increment, counter, space.pack(("mark", t, i)))
                with lock:
                    returned.append(value)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(threads_n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    total = threads_n * per_thread
    # Every committed increment saw a distinct predecessor: the values handed out are 1..total.
    assert sorted(returned) == list(range(1, total + 1))
    stored = dict(everything(db, prefix))
    assert stored.pop(counter) == b"%d" % total
    assert sorted(int(v) for v in stored.values()) == list(range(1, total + 1))
    assert set(stored) == {space.pack(("mark", t, i)) for t in range(threads_n) for i in range(per_thread)}


def process_worker(url: str, prefix: bytes, worker: int, count: int, start: Any) -> None:
    """Body of one writer process (module level so 'spawn' can import it)."""
    space = Subspace(rawPrefix=prefix)
    assert start.wait(30)
    database = open_database(url)
    try:
        for i in range(count):
            database.run(increment, space.pack(("counter",)), space.pack(("unique", worker, i)))
    finally:
        database.close()


def test_concurrent_writer_processes(db: Database, store_url: str, prefix: bytes) -> None:
    space = Subspace(rawPrefix=prefix)
    processes_n, per_process = 4, 40
    context = multiprocessing.get_context("spawn")  # LMDB environments must not cross a fork
    start = context.Event()
    processes = [
        context.Process(target=process_worker, args=(store_url, prefix, w, per_process, start))
        for w in range(processes_n)
    ]
    for process in processes:
        process.start()
    start.set()
    for process in processes:
        process.join(60)
    for process in processes:
        if process.is_alive():
            process.kill()
    assert [p.exitcode for p in processes] == [0] * processes_n

    stored = dict(everything(db, prefix))
    total = processes_n * per_process
    assert stored.pop(space.pack(("counter",))) == b"%d" % total
    assert set(stored) == {space.pack(("unique", w, i)) for w in range(processes_n) for i in range(per_process)}
    assert sorted(int(v) for v in stored.values()) == list(range(1, total + 1))


# -- durability ---------------------------------------------------------------------------------


def test_data_survives_close_and_reopen(db: Database, store_url: str, prefix: bytes, tmp_path: Path) -> None:
    # The fixture keeps `store_url` open, so on LMDB reopen a directory nobody else holds (with
    # the same options: the first and third opens take that variant's).
    options = store_url.partition("?")[2]
    url = f"lmdb:{tmp_path / 'reopened'}" + (f"?{options}" if options else "") if is_lmdb(db) else store_url
    space = Subspace(rawPrefix=prefix)
    expected = {space.pack(("k", i)): b"v%d" % i for i in range(50)}
    expected[space.pack(("n",))] = encode_int64(7)

    first = open_database(url)
    first.run(replace_all, prefix, {k: v for k, v in expected.items() if k != space.pack(("n",))})
    first.run(lambda tr: tr.add(space.pack(("n",)), encode_int64(7)))
    first.run(lambda tr: tr.set(space.pack(("gone",)), b"x"))
    first.run(lambda tr: tr.clear(space.pack(("gone",))))
    first.close()

    # On LMDB a different durability setting can only be chosen once the environment is really closed.
    second = open_database(url.partition("?")[0] + "?durable=false" if is_lmdb(db) else url)
    try:
        assert everything(second, prefix) == sorted(expected.items())
        second.run(lambda tr: tr.add(space.pack(("n",)), encode_int64(1)))
    finally:
        second.close()
    with open_database(url) as third:
        expected[space.pack(("n",))] = encode_int64(8)
        assert everything(third, prefix) == sorted(expected.items())


def test_lmdb_closed_database_refuses_work(lmdb_dir: Path) -> None:
    database = open_lmdb(lmdb_dir)
    database.close()
    database.close()  # idempotent
    with pytest.raises(StoreError, match="closed"):
        database.run(lambda tr: tr.set(b"k", b"v"))
    with pytest.raises(StoreError, match="closed"):
        database.read(lambda tr: tr.get(b"k"))


# -- limits -------------------------------------------------------------------------------------


def test_key_longer_than_fdb_limit_is_rejected(db: Database, prefix: bytes) -> None:
    space = Subspace(rawPrefix=prefix)
    keep = space.pack(("keep",))
    db.run(replace_all, prefix, {keep: b"old"})
    big = prefix + b"k" * (MAX_KEY_SIZE + 1 - len(prefix))
    assert len(big) == MAX_KEY_SIZE + 1

    def write_then(op: Callable[[Transaction], None]) -> Callable[[Transaction], None]:
        def fn(tr: Transaction) -> None:
            tr.set(keep, b"new")
            op(tr)

        return fn

    for op in (lambda tr: tr.set(big, b"v"), lambda tr: tr.add(big, encode_int64(1)), lambda tr: tr.max(big, b"\x01")):
        with pytest.raises(KeyTooLarge):
            db.run(write_then(op))
    assert everything(db, prefix) == [(keep, b"old")]

    # No key that long can exist: reading it finds nothing and clearing it is a no-op, as on FoundationDB.
    assert db.read(lambda tr: tr.get(big)) is None
    db.run(lambda tr: tr.clear(big))
    assert everything(db, prefix) == [(keep, b"old")]


def test_value_limit(db: Database, prefix: bytes) -> None:
    space = Subspace(rawPrefix=prefix)
    keep, at_limit = space.pack(("keep",)), space.pack(("at-limit",))
    db.run(replace_all, prefix, {keep: b"old"})
    db.run(lambda tr: tr.set(at_limit, b"x" * MAX_VALUE_SIZE))

    def too_big(tr: Transaction) -> None:
        tr.clear(keep)
        tr.set(space.pack(("big",)), b"x" * (MAX_VALUE_SIZE + 1))

    with pytest.raises(ValueTooLarge):
        db.run(too_big)
    assert everything(db, prefix) == sorted([(keep, b"old"), (at_limit, b"x" * MAX_VALUE_SIZE)])


def test_transaction_size_limit(db: Database, prefix: bytes) -> None:
    space = Subspace(rawPrefix=prefix)
    keep = {space.pack(("keep", i)): b"old%d" % i for i in range(3)}
    db.run(replace_all, prefix, keep)
    chunk = b"z" * 90_000

    def huge(tr: Transaction) -> None:
        tr.set(space.pack(("keep", 0)), b"new")
        tr.clear(space.pack(("keep", 1)))
        tr.clear_range(space.pack(("keep", 2)), strinc(space.pack(("keep", 2))))
        for i in range(MAX_TRANSACTION_BYTES // len(chunk) + 2):  # a little over 10 MB
            tr.set(space.pack(("bulk", i)), chunk)

    with pytest.raises(TransactionTooLarge):
        db.run(huge)
    assert everything(db, prefix) == sorted(keep.items())

    # Comfortably under the limit still commits.
    under = {space.pack(("bulk", i)): chunk for i in range(9_000_000 // len(chunk))}
    db.run(lambda tr: [tr.set(k, v) for k, v in under.items()])
    assert everything(db, prefix) == sorted({**keep, **under}.items())


def test_lmdb_key_limit(lmdb_db: LmdbDatabase) -> None:
    prefix = b"\x15\x7fkeys"
    longest = prefix + b"a" * (LMDB_MAX_KEY - len(prefix))
    too_long = longest + b"a"
    lmdb_db.run(lambda tr: tr.set(longest, b"511"))
    for op in (lambda tr: tr.set(too_long, b"v"), lambda tr: tr.add(too_long, encode_int64(1))):
        with pytest.raises(KeyTooLarge, match=r"embedded \(LMDB\) store's limit of 511 bytes"):
            lmdb_db.run(op)
    with pytest.raises(KeyTooLarge, match="empty key"):
        lmdb_db.run(lambda tr: tr.set(b"", b"v"))

    def reads(tr: Transaction) -> tuple:
        return (
            tr.get(too_long),
            tr.get(b""),
            tr.get(longest),
            tr.get_range(too_long, strinc(prefix)),
            tr.get_range(prefix, too_long),
            tr.get_range(prefix, too_long, 1, True),
        )

    assert lmdb_db.read(reads) == (None, None, b"511", [], [(longest, b"511")], [(longest, b"511")])
    # Clearing keys that cannot be stored is a no-op rather than an error (FoundationDB ignores
    # clears of keys over its limit the same way).
    lmdb_db.run(lambda tr: (tr.clear(too_long), tr.clear(b"")))
    with pytest.raises(ReadOnlyTransaction):
        lmdb_db.read(lambda tr: tr.clear(too_long))
    assert lmdb_db.read(lambda tr: tr.get_range_startswith(prefix)) == [(longest, b"511")]


# -- URLs ---------------------------------------------------------------------------------------


def test_url_parsing(tmp_path: Path) -> None:
    assert parse_url("lmdb:relative/dir") == ("lmdb", "relative/dir", {})
    assert parse_url("lmdb:///abs/dir?durable=false&group_commit=0") == (
        "lmdb",
        "/abs/dir",
        {"durable": "false", "group_commit": "0"},
    )
    assert parse_url("LMDB:/x") == ("lmdb", "/x", {})
    assert parse_url("fdb:") == ("fdb", "", {})
    assert parse_url("fdb:/etc/fdb.cluster?api_version=710") == ("fdb", "/etc/fdb.cluster", {"api_version": "710"})

    for url in ("redis://localhost", "sqlite:x.db", "/just/a/path", ""):
        with pytest.raises(ValueError, match="unknown store URL"):
            open_database(url)
    with pytest.raises(ValueError, match="names no directory"):
        open_database("lmdb:")
    with pytest.raises(ValueError, match=r"unknown lmdb option\(s\) \['bogus'\]"):
        open_database(f"lmdb:{tmp_path / 'a'}?bogus=1")
    with pytest.raises(ValueError, match="durable must be true or false"):
        open_database(f"lmdb:{tmp_path / 'b'}?durable=maybe")
    with pytest.raises(
        ValueError, match=r"unknown fdb option\(s\) \['bogus'\]; known: \['api_version', 'direct', 'timeout'\]"
    ):
        open_database("fdb:?bogus=1")
    with pytest.raises(ValueError, match="direct must be true or false, not 'maybe'"):
        open_database("fdb:?direct=maybe")
    for timeout in ("-1", "nan", "soon", "86401"):
        with pytest.raises(ValueError, match=f"timeout must be a number of seconds from 0 to 86400, not '{timeout}'"):
            open_database(f"fdb:?timeout={timeout}")

    with open_database(f"lmdb:{tmp_path / 'c'}?durable=off&group_commit=no&transaction_seconds=0") as database:
        assert isinstance(database, LmdbDatabase)
        assert (database.durable, database.group_commit) == (False, False)


# -- FoundationDB: direct calls and the binding ---------------------------------------------------


def test_fdb_calls_go_direct_when_the_extension_is_built(store_url: str, db: Database) -> None:
    """``fdb`` makes its calls through ``_fdb_direct`` when it is built, ``fdb-binding`` through the binding
    (both run every test of this module)."""
    if not store_url.startswith("fdb:"):
        pytest.skip("FoundationDB only")
    assert isinstance(db, FdbDatabase)
    assert db.direct == (direct_calls_available() and "direct=false" not in store_url)


def test_the_extension_is_built_where_it_can_be() -> None:
    """With a C compiler and Python's headers (the README's fresh Debian has both), installing builds
    ``_fdb_direct``: a build that failed silently would leave FoundationDB on the slow path."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    headers = Path(sysconfig.get_paths()["include"], "Python.h")
    if shutil.which(compiler) is None or not headers.exists():
        pytest.skip(f"no C compiler ({compiler}) or no {headers}: the binding makes the calls")
    assert direct_calls_available()


INTERRUPTED_READ = """
import signal, sys, threading, time
from fdb_leaderboard.store import open_database

db = open_database(sys.argv[1])
# Ctrl-C as a terminal delivers it, to the main thread, once the read waits.
threading.Timer(1.0, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT)).start()
started = time.monotonic()
try:
    db.read(lambda tr: tr.get(b"x"))
except KeyboardInterrupt:
    print(f"interrupted after {time.monotonic() - started:.1f} s")
"""


@pytest.mark.parametrize("direct", ["true", "false"])
def test_ctrl_c_stops_a_wait_for_a_cluster_that_never_answers(tmp_path: Path, direct: str) -> None:
    """The main thread's waits run signal handlers, through the binding or the direct calls: a
    call to a cluster that does not answer (no timeout) stops at Ctrl-C."""
    fdb_url()  # needs the client library (skips, or fails, without FoundationDB)
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    cluster = tmp_path / "nobody.cluster"
    cluster.write_text(f"nobody:nobody@127.0.0.1:{port}\n")
    done = subprocess.run(
        [sys.executable, "-c", INTERRUPTED_READ, f"fdb:{cluster}?timeout=0&direct={direct}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.startswith("interrupted after"), done.stderr
    assert float(done.stdout.split()[2]) < 5
