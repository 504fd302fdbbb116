"""How a record's entries in one window become its one value there: a small strategy.

Each strategy answers two questions about a window and a group:

- ``add``: the record's value was ``current`` (or absent); a new entry arrives: what is the
  value now?  None means unchanged, so the window's index entries are left alone.  O(1).
- ``fold``: the value from scratch, from every entry in the window (fills, saves, checks).

Values carry their ranked-set ``element``, ``pack((stored score, ts, context...))``, built by
the ``pack`` function the index passes in (it knows whether the group is high-score-first).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from typing import NamedTuple

from ..errors import InvalidArgument
from .directory import INT64_MAX, INT64_MIN


class Value(NamedTuple):
    """A record's value in one window (or one entry seen as such)."""

    score: int | float | tuple  # a tuple of ints in an index ranking by columns
    ts: int
    seq: int
    context: tuple
    element: bytes


Packer = Callable[[int | float, int, tuple], bytes]


class Aggregation(abc.ABC):
    name: str

    @abc.abstractmethod
    def add(self, current: Value | None, entry: Value, pack: Packer) -> Value | None: ...

    @abc.abstractmethod
    def fold(self, entries: Sequence[Value], pack: Packer, carried: Value | None = None) -> Value | None:
        """``entries`` are in (ts, seq) order; ``carried`` is a SUM index's folded past."""


def _later(a: Value, b: Value) -> bool:
    return (a.ts, a.seq) > (b.ts, b.seq)


class Best(Aggregation):
    """The reference: the best entry (lowest element: stored score, then earlier ts, then context)."""

    name = "BEST"

    def add(self, current: Value | None, entry: Value, pack: Packer) -> Value | None:
        if current is None or entry.element < current.element:
            return entry
        return None

    def fold(self, entries: Sequence[Value], pack: Packer, carried: Value | None = None) -> Value | None:
        return min(entries, key=lambda value: value.element, default=None)


class Latest(Aggregation):
    """The most recent entry: highest timestamp, and of equal timestamps the last added."""

    name = "LATEST"

    def add(self, current: Value | None, entry: Value, pack: Packer) -> Value | None:
        if current is None or _later(entry, current):
            return entry
        return None

    def fold(self, entries: Sequence[Value], pack: Packer, carried: Value | None = None) -> Value | None:
        return max(entries, key=lambda value: (value.ts, value.seq), default=None)


class Sum(Aggregation):
    """Points accumulate: the total of the window's scores.

    The value's timestamp is when the total was reached (the latest contributing entry),
    so of two equal totals the one reached first ranks better; its context is that entry's.
    """

    name = "SUM"

    def _total(self, total: int) -> int:
        if not INT64_MIN <= total <= INT64_MAX:
            raise InvalidArgument(f"the total {total} would leave the int64 range")
        return total

    def add(self, current: Value | None, entry: Value, pack: Packer) -> Value | None:
        if current is None:
            return entry
        total = self._total(current.score + entry.score)
        latest = entry if _later(entry, current) else current
        return Value(total, latest.ts, latest.seq, latest.context, pack(total, latest.ts, latest.context))

    def fold(self, entries: Sequence[Value], pack: Packer, carried: Value | None = None) -> Value | None:
        parts = [*entries, carried] if carried is not None else list(entries)
        if not parts:
            return None
        total = self._total(sum(value.score for value in parts))
        latest = max(parts, key=lambda value: (value.ts, value.seq))
        return Value(total, latest.ts, latest.seq, latest.context, pack(total, latest.ts, latest.context))


AGGREGATIONS: dict[str, Aggregation] = {strategy.name: strategy for strategy in (Best(), Sum(), Latest())}
