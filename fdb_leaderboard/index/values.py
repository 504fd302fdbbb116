"""What the index accepts as primary keys, groups, contexts, scores and timestamps."""

from __future__ import annotations

import datetime as dt
import math

from ..errors import InvalidArgument
from .columns import check_column_score
from .directory import INT64_MAX, INT64_MIN, check_int64

_ALLOWED_ITEMS = (int, str, bytes, float, bool, type(None), tuple)


def check_items(items: object, name: str) -> tuple:
    """``items`` as a tuple of tuple-layer values with a total order (no NaN, int64 ints)."""
    if isinstance(items, list):
        items = tuple(items)
    if not isinstance(items, tuple):
        raise InvalidArgument(f"{name} must be a tuple, not {type(items).__name__}")
    for item in items:
        if isinstance(item, float) and not math.isfinite(item):
            raise InvalidArgument(f"{name} holds {item!r}: NaN and infinities are not ordered keys")
        if isinstance(item, int) and not isinstance(item, bool) and not INT64_MIN <= item <= INT64_MAX:
            raise InvalidArgument(f"{name} holds {item}, outside the int64 range")
        if isinstance(item, str) and not item.isascii():
            _check_encodable(item, name)
        elif isinstance(item, tuple):
            check_items(item, name)
        elif not isinstance(item, _ALLOWED_ITEMS):
            raise InvalidArgument(f"{name} holds a {type(item).__name__}; allowed: int, float, str, bytes, bool, None")
    return items


def _check_encodable(text: str, name: str) -> None:
    try:
        text.encode()
    except UnicodeEncodeError as exc:
        raise InvalidArgument(f"{name} holds a string with {exc.reason} (not valid Unicode text)") from None


# A lone value of these types is a one-element key: "zed" is ("zed",), never ("z", "e", "d").
_LONE_KEY_TYPES = (str, bytes, int, float)


def as_key(value: object, name: str) -> tuple:
    """``value`` as a key tuple: a list or tuple as is, a lone str, bytes or number as one element.

    Anything else (None, a set, a generator...) is refused rather than guessed at.
    """
    if isinstance(value, _LONE_KEY_TYPES):
        return (value,)
    if isinstance(value, list | tuple):
        return tuple(value)
    raise InvalidArgument(
        f"{name} must be a tuple or list of elements, or a single str, bytes or number, not {type(value).__name__}"
    )


def check_pk(pk: object) -> tuple:
    pk = check_items(as_key(pk, "primary key"), "primary key")
    if not pk:
        raise InvalidArgument("primary key must not be empty")
    return pk


def check_score(score: object) -> int | float:
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        raise InvalidArgument(f"score must be an integer or a finite float, not {type(score).__name__}")
    if isinstance(score, float) and not math.isfinite(score):
        raise InvalidArgument(f"score {score!r} is not finite")
    if isinstance(score, int) and not INT64_MIN <= score <= INT64_MAX:
        raise InvalidArgument(f"score {score} is outside the int64 range")
    return score


SCORE_TYPES = ("INT", "DOUBLE")


def normalize_score(score: object, score_type: str, columns: tuple[str, ...] = ()) -> int | float | tuple:
    """``score`` as the index stores it: an int64 for INT indexes, a finite float for DOUBLE, a
    tuple of int64s for an index with ``columns``.

    One type per index keeps scores in numeric order: the tuple layer sorts every integer
    before every float.
    """
    if columns:
        return check_column_score(score, len(columns))
    score = check_score(score)
    if score_type == "DOUBLE":
        # + 0.0 turns -0.0 into 0.0: the tuple layer would sort it before 0.0, so equal
        # scores would rank by sign instead of by who reached them first.
        return float(score) + 0.0
    if isinstance(score, float):
        raise InvalidArgument(f"this index takes integer scores, not {score!r} (create it with score type DOUBLE)")
    return score


def check_at_least(value: object, minimum: int, name: str) -> int:
    """``value`` as an integer of at least ``minimum`` (counts, ranks, batch sizes)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(f"{name} must be an integer, not {type(value).__name__}")
    if value < minimum:
        bound = {0: "must not be negative", 1: "must be positive"}.get(minimum, f"must be at least {minimum}")
        raise InvalidArgument(f"{name} {bound}, not {value}")
    return value


# Unix seconds of 0001-01-01 and 10000-01-01 UTC: a timestamp of an index with a timebase is a
# time of years 1 to 9999 in it, so one in a finer unit (milliseconds sent to an index of seconds)
# is refused, naming the unit it looks like, instead of topping the board and landing in no window.
FIRST_SECOND = -62_135_596_800
END_SECOND = 253_402_300_800
_UNITS = {1: "seconds", 1000: "milliseconds", 1_000_000: "microseconds", 1_000_000_000: "nanoseconds"}


def check_timestamp(ts: object, timebase: int | None = None) -> int:
    """``ts`` as an int64; with ``timebase`` (units per second), a time of years 1 to 9999 in it."""
    ts = check_int64(ts, "timestamp")
    if timebase is not None and not FIRST_SECOND * timebase <= ts < END_SECOND * timebase:
        raise InvalidArgument(timestamp_refusal(ts, timebase))
    return ts


def timestamp_refusal(ts: int, timebase: int) -> str:
    """Why ``ts`` cannot be a time in ``timebase``, and the unit it looks like."""
    unit = _UNITS.get(timebase, f"1/{timebase} s")
    if ts < FIRST_SECOND * timebase:
        return f"timestamp {ts} is before the year 1 in {unit}, this index's timebase"
    why = f"timestamp {ts} is after the year 9999 in {unit}, this index's timebase"
    for finer, name in _UNITS.items():
        if finer > timebase and ts < END_SECOND * finer:
            when = dt.datetime.fromtimestamp(ts // finer, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
            return (
                f"{why}: it looks like {name} ({when}); send {unit} ({ts * timebase // finer}), or keep the "
                f"index's times in {name} (create it with timebase {name})"
                if name == "milliseconds"
                else f"{why}: it looks like {name} ({when}); send {unit} ({ts * timebase // finer})"
            )
    return why


def negate(score: int | float) -> int | float:
    """The stored form of a high-score-first score.  -INT64_MIN is 2**63, which the tuple
    layer encodes as the reference's BigInteger does."""
    return -score
