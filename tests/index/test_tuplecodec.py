"""The fast tuple codec must give exactly what the FoundationDB tuple layer gives, decoding in
Python and in the C extension (``_tuplecodec``) alike."""

from __future__ import annotations

import math
import os
import shutil
import struct
import subprocess
import sys
import sysconfig
import uuid
from collections.abc import Iterator
from pathlib import Path

import fdb.tuple
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fdb_leaderboard.index import tuplecodec

NOT_BUILT = "the C extension _tuplecodec is not built (no C compiler or Python headers at install)"


@pytest.fixture(scope="module", params=["python", "compiled"])
def implementation(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each test taking it runs with the pure-Python decoder and with the C extension's."""
    was_compiled = tuplecodec.compiled()
    if tuplecodec.use_compiled(request.param == "compiled") != (request.param == "compiled"):
        pytest.skip(NOT_BUILT)
    yield request.param
    tuplecodec.use_compiled(was_compiled)


@pytest.fixture(scope="module")
def compiled() -> Iterator[list[bytes]]:
    """The C extension decodes; yields the list of inputs it handed to the tuple layer (cleared
    by each test that reads it)."""
    was_compiled = tuplecodec.compiled()
    if not tuplecodec.use_compiled(True):
        pytest.skip(NOT_BUILT)
    handed: list[bytes] = []

    def tuple_layer(data: bytes, count: int | None) -> tuple[tuple, list[int]]:
        handed.append(data)
        return tuplecodec._tuple_layer_unpack(data, count)

    extension = tuplecodec._tuplecodec
    extension.set_fallbacks(tuplecodec._python_unpack_with_offsets, tuplecodec._python_item_ends, tuple_layer)
    yield handed
    extension.set_fallbacks(
        tuplecodec._python_unpack_with_offsets, tuplecodec._python_item_ends, tuplecodec._tuple_layer_unpack
    )
    tuplecodec.use_compiled(was_compiled)


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
def test_pack_and_unpack_match_the_tuple_layer(implementation: str, items: tuple) -> None:
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


def test_fallbacks_decode_what_the_fast_path_cannot(implementation: str) -> None:
    odd = (uuid.UUID(int=7), 1 << 70, ("nested", None, -(1 << 70)))
    assert tuplecodec.unpack(tuplecodec.pack(odd)) == odd


@given(st.lists(values, max_size=6).map(tuple))
def test_offsets_slice_each_item(implementation: str, items: tuple) -> None:
    packed = fdb.tuple.pack(items)
    decoded, offsets = tuplecodec.unpack_with_offsets(packed)
    assert decoded == fdb.tuple.unpack(packed)
    assert offsets[0] == 0 and offsets[-1] == len(packed) and len(offsets) == len(items) + 1
    for i, item in enumerate(items):
        assert packed[offsets[i] : offsets[i + 1]] == fdb.tuple.pack((item,))


@given(st.lists(values, max_size=6).map(tuple), st.integers(0, 6))
def test_item_ends_and_first_items(implementation: str, items: tuple, count: int) -> None:
    count = min(count, len(items))
    packed = fdb.tuple.pack(items)
    assert tuplecodec.item_ends(packed, count) == [len(fdb.tuple.pack(items[: i + 1])) for i in range(count)]
    decoded, offsets = tuplecodec.unpack_with_offsets(packed, count)
    assert decoded == items[:count] and offsets == [0, *tuplecodec.item_ends(packed, count)]


def same(a: object, b: object) -> bool:
    """Equal values of the same types; floats bit for bit (NaNs and their payloads too)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return struct.pack(">d", a) == struct.pack(">d", b)  # type: ignore[arg-type]
    if isinstance(a, tuple):
        return len(a) == len(b) and all(map(same, a, b))  # type: ignore[arg-type]
    return a == b


def tuple_layer_outcome(data: bytes) -> tuple | type[BaseException]:
    try:
        return fdb.tuple.unpack(data)
    except Exception as exc:  # what the tuple layer raises on malformed input varies
        return type(exc)


def fallback_error(data: bytes, count: int | None) -> type[BaseException] | None:
    """What the Python path's hand-over to the tuple layer raises on ``data`` (which re-packs each
    item to measure it: a versionstamp cannot be packed before an API version is selected)."""
    try:
        tuplecodec._tuple_layer_unpack(data, count)
    except Exception as exc:
        return type(exc)
    return None


encodings = st.lists(values, max_size=6).map(lambda items: fdb.tuple.pack(tuple(items)))


@st.composite
def damaged(draw: st.DrawFn) -> bytes:
    """A valid encoding cut short, or with bytes changed or inserted: malformed input near real keys."""
    data = bytearray(draw(encodings))
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(data)))
        change = draw(st.sampled_from(["cut", "insert", "replace"]))
        if change == "cut":
            del data[at:]
        elif change == "insert":
            data[at:at] = bytes([draw(st.integers(0, 255))])
        elif at < len(data):
            data[at] = draw(st.integers(0, 255))
    return bytes(data)


@settings(max_examples=1500)
@given(st.one_of(st.binary(max_size=40), damaged()))
@example(b"\x02abc")  # a string with no terminating byte: the tuple layer takes it to the end
@example(b"\x05\x15\x01")  # a nested tuple with no terminating byte
@example(b"\x18\x01")  # an integer cut short
@example(b"\x21\x80\x00")  # a double cut short
@example(b"\x02\xff\x00")  # not UTF-8
@example(b"\x05" * 200 + b"\x00" * 200)  # nesting deeper than the C decoder goes: the tuple layer's
def test_compiled_decoder_on_any_bytes(compiled: list[bytes], data: bytes) -> None:
    """On any input the C decoder raises ValueError, or gives what the tuple layer gives; input it
    hands to the tuple layer fails there as it would have anyway."""
    compiled.clear()
    expected = tuple_layer_outcome(data)
    try:
        items, offsets = tuplecodec.unpack_with_offsets(data)
    except ValueError:
        return
    except Exception as exc:  # only from the tuple layer, on input the Python path fails on too
        assert compiled == [data] and fallback_error(data, None) is type(exc)
        return
    assert not isinstance(expected, type), f"the tuple layer raises {expected.__name__}"
    assert same(items, expected)
    if compiled:  # handed over: offsets as the Python path measures them, by packing each item again
        assert compiled == [data] and offsets == tuplecodec._tuple_layer_unpack(data, None)[1]
        return
    assert offsets[0] == 0 and offsets[-1] == len(data) and len(offsets) == len(items) + 1
    for i, item in enumerate(items):
        assert same(fdb.tuple.unpack(data[offsets[i] : offsets[i + 1]]), (item,))


@settings(max_examples=800)
@given(st.one_of(st.binary(max_size=40), damaged(), encodings), st.integers(-1, 8))
def test_compiled_decoder_on_prefixes(compiled: list[bytes], data: bytes, count: int) -> None:
    """The first ``count`` items are what the tuple layer decodes from the bytes they span, each
    where its offsets say; ``item_ends`` ends them at the same places."""
    compiled.clear()
    try:
        items, offsets = tuplecodec.unpack_with_offsets(data, count)
    except ValueError:
        return
    except Exception as exc:
        assert compiled == [data] and fallback_error(data, count) is type(exc)
        return
    if compiled:
        assert same(items, fdb.tuple.unpack(data)[: max(count, 0)])
        return
    assert len(items) <= max(count, 0) and (len(items) == max(count, 0) or offsets[-1] == len(data))
    assert same(fdb.tuple.unpack(data[: offsets[-1]]), items)
    for i, item in enumerate(items):
        assert same(fdb.tuple.unpack(data[offsets[i] : offsets[i + 1]]), (item,))
    if len(items) == max(count, 0):  # asking for more items than there are is a caller's mistake
        assert tuplecodec.item_ends(data, count) == offsets[1:]


@settings(max_examples=300)
@given(encodings, st.integers(0, 8))
def test_compiled_and_python_decoders_agree_on_valid_keys(data: bytes, count: int) -> None:
    was_compiled = tuplecodec.compiled()
    results = []
    try:
        for compiled in (True, False):
            if tuplecodec.use_compiled(compiled) != compiled:
                pytest.skip(NOT_BUILT)
            items, offsets = tuplecodec.unpack_with_offsets(data, count)
            everything = tuplecodec.unpack(data)
            results.append((items, offsets, everything, tuplecodec.item_ends(data, min(count, len(everything)))))
    finally:
        tuplecodec.use_compiled(was_compiled)
    (items, offsets, everything, ends), expected = results
    assert same(items, expected[0]) and offsets == expected[1]
    assert same(everything, expected[2]) and ends == expected[3]


def test_compiled_decoder_hands_other_input_to_python(compiled: list[bytes]) -> None:
    """Input other than bytes decodes as the Python functions decode it."""
    data = bytearray(fdb.tuple.pack((b"raw", 5, "text")))
    assert tuplecodec.unpack_with_offsets(data) == ((bytearray(b"raw"), 5, "text"), [0, 5, 7, 13])
    assert tuplecodec.item_ends(data, 2) == [5, 7]
    assert tuplecodec.unpack_with_offsets(fdb.tuple.pack((1, 2, 3)), count=2) == ((1, 2), [0, 2, 4])
    with pytest.raises(TypeError):
        tuplecodec.unpack_with_offsets(b"\x15\x01", "2")


def test_the_pure_python_switch() -> None:
    """``FDB_LEADERBOARD_PURE_PYTHON_CODEC=1`` at import selects the Python decoder; without it the
    extension decodes when it is built."""
    check = "from fdb_leaderboard.index import tuplecodec; print(tuplecodec.compiled())"
    for value, expected in (("1", False), ("0", tuplecodec._tuplecodec is not None)):
        env = {**os.environ, tuplecodec.PURE_PYTHON_VARIABLE: value}
        done = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True, check=True)
        assert done.stdout.strip() == str(expected)


def test_the_extension_is_built_where_it_can_be() -> None:
    """With a C compiler and Python's headers, installing builds ``_tuplecodec``: a build that failed
    silently would leave every listing decoding in Python."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    headers = Path(sysconfig.get_paths()["include"], "Python.h")
    if shutil.which(compiler) is None or not headers.exists():
        pytest.skip(f"no C compiler ({compiler}) or no {headers}: the Python functions decode")
    assert tuplecodec._tuplecodec is not None
