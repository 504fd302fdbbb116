"""The fast tuple codec must give exactly what the FoundationDB tuple layer gives."""

from __future__ import annotations

import math
import uuid

import fdb.tuple
from hypothesis import given, settings
from hypothesis import strategies as st

from fdb_leaderboard.index import tuplecodec

scalars = st.one_of(
    st.integers(min_value=-(1 << 64) + 1, max_value=(1 << 64) - 1),
    st.sampled_from([0, 1, -1, 255, 256, -255, -256, (1 << 63) - 1, -(1 << 63), 1 << 63, (1 << 64) - 1]),
    st.integers(min_value=-(1 << 80), max_value=1 << 80),  # beyond 64 bits: the fallback
    st.text(),
    st.binary(),
    st.sampled_from([b"\x00", b"\x00\xff", b"\xff", "\x00", ""]),
    st.floats(allow_nan=False),
    st.sampled_from([0.0, -0.0, math.inf, -math.inf, 5e-324, -5e-324]),
    st.booleans(),
    st.none(),
    st.uuids(),
)
values = st.recursive(scalars, lambda children: st.lists(children, max_size=4).map(tuple), max_leaves=12)


@settings(max_examples=600)
@given(st.lists(values, max_size=6).map(tuple))
def test_pack_and_unpack_match_the_tuple_layer(items: tuple) -> None:
    packed = fdb.tuple.pack(items)
    assert tuplecodec.pack(items) == packed
    assert tuplecodec.unpack(packed) == fdb.tuple.unpack(packed)


@settings(max_examples=300)
@given(st.lists(values, max_size=6).map(tuple))
def test_pack_nested_matches_packing_the_tuple_as_one_item(items: tuple) -> None:
    assert tuplecodec.pack_nested(items, fdb.tuple.pack(items)) == fdb.tuple.pack((items,))


@given(st.lists(st.tuples(st.integers(-(1 << 63), (1 << 63) - 1), st.text(max_size=3)), min_size=2, max_size=2))
def test_order_of_packed_keys_is_the_order_of_values(pairs: list[tuple[int, str]]) -> None:
    a, b = (tuplecodec.pack(pair) for pair in pairs)
    assert (a < b) == (pairs[0] < pairs[1])


def test_fallbacks_decode_what_the_fast_path_cannot() -> None:
    odd = (uuid.UUID(int=7), 1 << 70, ("nested", None, -(1 << 70)))
    assert tuplecodec.unpack(tuplecodec.pack(odd)) == odd


@given(st.lists(values, max_size=6).map(tuple))
def test_offsets_slice_each_item(items: tuple) -> None:
    packed = fdb.tuple.pack(items)
    decoded, offsets = tuplecodec.unpack_with_offsets(packed)
    assert decoded == fdb.tuple.unpack(packed)
    assert offsets[0] == 0 and offsets[-1] == len(packed) and len(offsets) == len(items) + 1
    for i, item in enumerate(items):
        assert packed[offsets[i] : offsets[i + 1]] == fdb.tuple.pack((item,))


@given(st.lists(values, max_size=6).map(tuple), st.integers(0, 6))
def test_item_ends_and_first_items(items: tuple, count: int) -> None:
    count = min(count, len(items))
    packed = fdb.tuple.pack(items)
    assert tuplecodec.item_ends(packed, count) == [len(fdb.tuple.pack(items[: i + 1])) for i in range(count)]
    decoded, offsets = tuplecodec.unpack_with_offsets(packed, count)
    assert decoded == items[:count] and offsets == [0, *tuplecodec.item_ends(packed, count)]
