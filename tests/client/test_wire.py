"""gRPC message conversions: ranked entries survive the wire with every item keeping its type."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fdb_leaderboard import wire
from fdb_leaderboard.errors import InvalidArgument
from fdb_leaderboard.index import RankedEntry
from fdb_leaderboard.index.reads import _Row
from fdb_leaderboard.proto import service_pb2 as pb

int64 = st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1)
items = st.lists(
    st.one_of(
        int64, st.floats(allow_nan=False, allow_infinity=False), st.text(), st.binary(), st.booleans(), st.none()
    ),
    max_size=4,
).map(tuple)
entries = st.builds(
    RankedEntry,
    pk=items.filter(bool),
    score=st.one_of(int64, st.floats(allow_nan=False, allow_infinity=False)),
    timestamp=int64,
    context=items,
    group=items,
    rank=st.one_of(st.none(), st.integers(min_value=0, max_value=(1 << 63) - 1)),
)


def typed(entry: RankedEntry) -> tuple:
    """The entry with each value's type beside it (True == 1, so equality alone would miss a bool sent as an int)."""
    return tuple(
        tuple((type(v), v) for v in field) if isinstance(field, tuple) else (type(field), field)
        for field in (entry.pk, entry.score, entry.timestamp, entry.context, entry.group, entry.rank)
    )


@settings(max_examples=300)
@given(st.lists(entries, max_size=5))
def test_ranked_entries_round_trip_through_the_wire(sent: list[RankedEntry]) -> None:
    response = pb.EntriesResponse()
    wire.add_ranked_entries(response.entries, sent)
    for message, entry in zip(response.entries, sent, strict=True):  # each item as the one-item converter makes it
        assert list(message.pk) == wire.items_to_proto(entry.pk)
        assert list(message.context) == wire.items_to_proto(entry.context)
        assert list(message.group) == wire.items_to_proto(entry.group)
        assert message.score == wire.score_to_proto(entry.score)
    received = [
        wire.ranked_entry_from_proto(m) for m in pb.EntriesResponse.FromString(response.SerializeToString()).entries
    ]
    assert [typed(e) for e in received] == [typed(e) for e in sent]


def test_an_item_of_an_unsupported_type_is_refused() -> None:
    response = pb.EntriesResponse()
    with pytest.raises(InvalidArgument, match="cannot send a list as a key item"):
        wire.add_ranked_entries(response.entries, [RankedEntry((1, [2]), 5, 6)])


@pytest.mark.parametrize(
    ("convert", "message"),
    [
        (lambda: wire.key_to_proto((1, 2**64), "group"), "group holds 18446744073709551616, outside the int64 range"),
        (lambda: wire.key_to_proto("\ud800"), "primary key holds a string with surrogates not allowed"),
        (lambda: wire.key_to_proto((float("nan"),), "context"), "context holds nan: NaN and infinities"),
        (lambda: wire.score_to_proto("five"), "score must be an integer or a finite float, not str"),
        (lambda: wire.score_to_proto(-(2**63) - 1), "score -9223372036854775809 is outside the int64 range"),
    ],
)
def test_values_a_caller_gives_are_refused_naming_the_field(convert, message: str) -> None:
    """Checked as the index checks them, before anything is sent (protobuf's own errors name no field)."""
    with pytest.raises(InvalidArgument) as refused:
        convert()
    assert message in str(refused.value)


@given(entries, st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2))
def test_the_entries_a_listing_makes_are_the_dataclass_s_own(entry: RankedEntry, metadata: dict[str, str]) -> None:
    """A listing's rows make their entries (``_Row.entry``, ``with_metadata``) without the frozen
    dataclass's ``__init__``: they must hold every field as ``__init__`` and ``replace`` set them."""
    row = _Row(b"", b"", None, entry.pk, entry.score, entry.timestamp, entry.context, entry.group)
    made = row.entry(entry.rank)
    assert made == entry and made.__dict__ == entry.__dict__ and made.metadata is None
    attached = made.with_metadata(metadata)
    assert attached.__dict__ == dataclasses.replace(entry, metadata=metadata).__dict__
    assert made.metadata is None  # the entry it was made from is unchanged
