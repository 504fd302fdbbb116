"""A fast path for the FoundationDB tuple encoding of the values the index uses.

``pack`` and ``unpack`` give exactly the bytes and values of ``fdb.tuple.pack`` and
``fdb.tuple.unpack`` (a property test holds them to it), several times faster for what
the hot paths carry: int64 integers, strings, byte strings, doubles, booleans, None and
nested tuples of those.  Anything else (big integers, UUIDs, versionstamps, single
floats) goes to ``fdb.tuple``.

Encodings (type code, then data):
``00`` None (``00 ff`` inside a nested tuple); ``01`` bytes and ``02`` UTF-8 string, each
with ``00`` escaped as ``00 ff`` and ending in ``00``; ``05`` nested tuple ending in ``00``;
``0c``..``13`` negative and ``15``..``1c`` positive integers of 8..1 / 1..8 big-endian
bytes (negatives in one's complement), ``14`` zero; ``21`` double, big-endian with the sign
bit flipped (all bits when negative) so bytes order like numbers; ``26``/``27`` false/true.

Decoding (``unpack_with_offsets``, ``item_ends`` and ``unpack`` through them) runs in C when the
optional extension ``_tuplecodec`` (``_tuplecodec.c``) was built at install, which needs a C
compiler and Python's headers; it decodes the same types, gives the same values and offsets,
hands the rest to ``fdb.tuple`` as the Python path does, and raises ValueError on malformed
input.  Listings decode one primary B-tree key per row: in Python that was the largest single
cost of a top 10 on the embedded store.  Without the extension, or with the environment variable
``FDB_LEADERBOARD_PURE_PYTHON_CODEC=1`` when this module is imported, the Python functions below
decode; ``use_compiled`` switches between them (the tests run both).
"""

from __future__ import annotations

import os
import struct

import fdb.tuple

_DOUBLE = struct.Struct(">d")
_U64 = struct.Struct(">Q")
_INT_LIMIT = (1 << 64) - 1  # the tuple layer writes 2**64-1 and beyond as big integers
_SIGN = 1 << 63
_ALL = (1 << 64) - 1
# Integer type codes indexed by byte length, and the bounds of each length.
_POSITIVE_CODES = [bytes([0x14 + n]) for n in range(9)]
_NEGATIVE_CODES = [bytes([0x14 - n]) for n in range(9)]


def _int(value: int) -> bytes | None:
    if value == 0:
        return b"\x14"
    if value > 0:
        if value >= _INT_LIMIT:
            return None
        n = (value.bit_length() + 7) >> 3
        return _POSITIVE_CODES[n] + value.to_bytes(n, "big")
    if -value >= _INT_LIMIT:
        return None
    n = ((-value).bit_length() + 7) >> 3
    return _NEGATIVE_CODES[n] + (value + (1 << (8 * n)) - 1).to_bytes(n, "big")


def _double(value: float) -> bytes:
    bits = _U64.unpack(_DOUBLE.pack(value))[0]
    bits = bits ^ _ALL if bits & _SIGN else bits | _SIGN
    return b"\x21" + _U64.pack(bits)


def _encode(value: object, nested: bool) -> bytes | None:
    kind = type(value)
    if kind is int:
        return _int(value)  # type: ignore[arg-type]
    if kind is str:
        return b"\x02" + value.encode("utf-8").replace(b"\x00", b"\x00\xff") + b"\x00"  # type: ignore[attr-defined]
    if kind is bytes:
        return b"\x01" + value.replace(b"\x00", b"\x00\xff") + b"\x00"  # type: ignore[attr-defined]
    if value is None:
        return b"\x00\xff" if nested else b"\x00"
    if kind is float:
        return _double(value)  # type: ignore[arg-type]
    if kind is bool:
        return b"\x27" if value else b"\x26"
    if kind is tuple:
        parts = [b"\x05"]
        for item in value:  # type: ignore[attr-defined]
            encoded = _encode(item, True)
            if encoded is None:
                return None
            parts.append(encoded)
        parts.append(b"\x00")
        return b"".join(parts)
    return None


def pack(items: tuple) -> bytes:
    """``fdb.tuple.pack(items)``, faster for the common value types."""
    parts = []
    for item in items:
        encoded = _encode(item, False)
        if encoded is None:
            return fdb.tuple.pack(items)
        parts.append(encoded)
    return b"".join(parts)


def pack_nested(items: tuple, packed: bytes) -> bytes:
    """``pack((items,))``, ``items`` as one nested-tuple item, given ``packed = pack(items)``.

    Nesting changes only how a top-level None encodes (``00 ff`` instead of ``00``), so
    without one it is ``packed`` between ``05`` and ``00``: no second encoding pass.
    """
    if None in items:
        return pack((items,))
    return b"\x05" + packed + b"\x00"


class _Unsupported(Exception):
    pass


def _end_of_string(data: bytes, pos: int) -> int:
    """The position of the terminating 00 of an escaped byte string starting at ``pos``."""
    while True:
        end = data.index(b"\x00", pos)
        if end + 1 < len(data) and data[end + 1] == 0xFF:
            pos = end + 2
            continue
        return end


def _decode(data: bytes, pos: int, nested: bool) -> tuple[object, int]:
    """One item that is not an integer (``_items`` decodes those) at ``pos``: (item, end)."""
    code = data[pos]
    if code == 0x02 or code == 0x01:
        end = _end_of_string(data, pos + 1)
        raw = data[pos + 1 : end].replace(b"\x00\xff", b"\x00")
        return (raw.decode("utf-8") if code == 0x02 else raw), end + 1
    if code == 0x00:
        if nested:
            return None, pos + 2  # 00 ff
        return None, pos + 1
    if code == 0x21:
        bits = _U64.unpack(data[pos + 1 : pos + 9])[0]
        bits = bits ^ _SIGN if bits & _SIGN else bits ^ _ALL
        return _DOUBLE.unpack(_U64.pack(bits))[0], pos + 9
    if code == 0x26 or code == 0x27:
        return code == 0x27, pos + 1
    if code == 0x05:
        items, end = _items(data, pos + 1, len(data), [], nested=True)
        return tuple(items), end
    raise _Unsupported


def _items(data: bytes, pos: int, wanted: int, offsets: list[int], nested: bool) -> tuple[list, int]:
    """Items from ``pos`` on, with where each ends appended to ``offsets``: up to ``wanted`` of
    them, or, ``nested``, those of a nested tuple through its terminating 00.  Returns (items,
    end).  Integers are decoded here rather than in ``_decode``: index keys are mostly scores,
    timestamps and numeric pks, and a call per item costs a third of a key's decoding."""
    items: list[object] = []
    size = len(data)
    from_bytes = int.from_bytes
    while pos < size and len(items) < wanted:
        code = data[pos]
        if 0x14 < code <= 0x1C:
            end = pos + 1 + code - 0x14
            item: object = from_bytes(data[pos + 1 : end], "big")
        elif 0x0C <= code < 0x14:
            end = pos + 1 + 0x14 - code
            item = from_bytes(data[pos + 1 : end], "big") - (1 << (8 * (end - pos - 1))) + 1
        elif code == 0x14:
            end, item = pos + 1, 0
        elif nested and code == 0x00 and not (pos + 1 < size and data[pos + 1] == 0xFF):
            return items, pos + 1
        else:
            item, end = _decode(data, pos, nested)
        items.append(item)
        pos = end
        offsets.append(pos)
    if nested:
        raise ValueError("a nested tuple has no terminating byte")
    return items, pos


def unpack(data: bytes) -> tuple:
    """``fdb.tuple.unpack(data)``, faster for the common value types."""
    return unpack_with_offsets(data)[0]


def _python_item_ends(data: bytes, count: int) -> list[int]:
    """Where each of the first ``count`` items of ``data`` ends, found without decoding them."""
    ends = []
    pos = 0
    while len(ends) < count:
        code = data[pos]
        if 0x0C <= code <= 0x1C:
            pos += 1 + abs(code - 0x14)
        elif code == 0x01 or code == 0x02:
            pos = _end_of_string(data, pos + 1) + 1
        elif code == 0x21:
            pos += 9
        elif code == 0x00 or code == 0x26 or code == 0x27:
            pos += 1
        else:  # nested tuples and the types fdb.tuple handles
            return unpack_with_offsets(data, count)[1][1:]
        ends.append(pos)
    return ends


def _python_unpack_with_offsets(data: bytes, count: int | None = None) -> tuple[tuple, list[int]]:
    """The items of ``data`` (only the first ``count`` if given) and where each starts (plus
    where the last ends), so a run of items can be sliced out as bytes without packing it again."""
    offsets = [0]
    try:
        items, _ = _items(data, 0, len(data) if count is None else count, offsets, nested=False)
    except _Unsupported:
        return _tuple_layer_unpack(data, count)
    return tuple(items), offsets


def _tuple_layer_unpack(data: bytes, count: int | None) -> tuple[tuple, list[int]]:
    """``unpack_with_offsets`` through ``fdb.tuple``: for the types the fast paths leave to it."""
    items = list(fdb.tuple.unpack(data))[:count]
    offsets = [0]
    for item in items:
        offsets.append(offsets[-1] + len(fdb.tuple.pack((item,))))
    return tuple(items), offsets


try:
    from . import _tuplecodec
except ImportError:  # not built (no C compiler at install): the Python functions decode
    _tuplecodec = None  # type: ignore[assignment]
else:
    _tuplecodec.set_fallbacks(_python_unpack_with_offsets, _python_item_ends, _tuple_layer_unpack)

PURE_PYTHON_VARIABLE = "FDB_LEADERBOARD_PURE_PYTHON_CODEC"

unpack_with_offsets = _python_unpack_with_offsets
item_ends = _python_item_ends


def use_compiled(enabled: bool) -> bool:
    """Decode with the C extension (if built and ``enabled``) or in Python; returns whether the
    extension is now in use.  Callers look the functions up on this module at each use (a
    listing's row decoder, once per listing), so the switch reaches them."""
    global unpack_with_offsets, item_ends
    compiled = enabled and _tuplecodec is not None
    if compiled:
        unpack_with_offsets, item_ends = _tuplecodec.unpack_with_offsets, _tuplecodec.item_ends
    else:
        unpack_with_offsets, item_ends = _python_unpack_with_offsets, _python_item_ends
    return compiled


def compiled() -> bool:
    """Whether decoding runs in the C extension."""
    return _tuplecodec is not None and unpack_with_offsets is _tuplecodec.unpack_with_offsets


use_compiled(os.environ.get(PURE_PYTHON_VARIABLE, "") in ("", "0"))
