"""Conversions between the gRPC messages and the index's Python values."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .directory import Window
from .errors import InvalidArgument
from .index import Entry
from .proto import service_pb2 as pb
from .scans import RankedEntry


def item_to_python(item: pb.Item) -> object:
    kind = item.WhichOneof("kind")
    if kind is None:
        raise InvalidArgument("an Item has no value set")
    if kind == "null":
        return None
    return getattr(item, kind)


def items_to_tuple(items: Iterable[pb.Item]) -> tuple:
    return tuple(item_to_python(item) for item in items)


def python_to_item(value: object) -> pb.Item:
    if value is None:
        return pb.Item(null=True)
    if isinstance(value, bool):
        return pb.Item(bool=value)
    if isinstance(value, int):
        return pb.Item(int=value)
    if isinstance(value, float):
        return pb.Item(double=value)
    if isinstance(value, str):
        return pb.Item(string=value)
    if isinstance(value, bytes):
        return pb.Item(bytes=value)
    raise InvalidArgument(f"cannot send a {type(value).__name__} as a key item")


def tuple_to_items(values: Sequence[object]) -> list[pb.Item]:
    return [python_to_item(value) for value in values]


def score_to_python(score: pb.Score, name: str = "score") -> int | float:
    kind = score.WhichOneof("kind")
    if kind is None:
        raise InvalidArgument(f"{name} is not set: give an int or a double")
    return getattr(score, kind)


def python_to_score(value: int | float) -> pb.Score:
    return pb.Score(int=value) if isinstance(value, int) else pb.Score(double=value)


def entry_to_python(entry: pb.Entry) -> Entry:
    if not entry.HasField("score"):
        raise InvalidArgument("entry has no score")
    return Entry(
        score_to_python(entry.score),
        entry.timestamp,
        items_to_tuple(entry.context),
        items_to_tuple(entry.group),
    )


def ranked_entry_to_proto(entry: RankedEntry) -> pb.RankedEntry:
    message = pb.RankedEntry(
        pk=tuple_to_items(entry.pk),
        score=python_to_score(entry.score),
        timestamp=entry.timestamp,
        context=tuple_to_items(entry.context),
        group=tuple_to_items(entry.group),
    )
    if entry.rank is not None:
        message.rank = entry.rank
    return message


def window_to_proto(window: Window) -> pb.Window:
    return pb.Window(
        type=window.type,
        start=window.start,
        end=window.end,
        key=window.lb_key,
        nlevels=window.nlevels,
        filling=window.filling,
    )
