"""The options an index is created with, fixed for its lifetime, and their stored form."""

from __future__ import annotations

import dataclasses

from ..errors import InvalidArgument
from ..proto import index_pb2
from ..rankedset import HashFunction
from . import columns as cols
from .aggregation import AGGREGATIONS
from .values import SCORE_TYPES

MAX_COHORT_SIZE = 1000  # a cohort is read whole (one range read of at most this many keys)
MAX_TIERS = 100


@dataclasses.dataclass(frozen=True)
class Leagues:
    """Leagues on the windows of ``window_type`` (see leagues.py): in each such window a record
    joins a cohort of at most ``cohort_size`` records of its tier (0, the lowest, to
    ``tiers - 1``); after a window the top ``promote`` of each cohort move up a tier and the
    bottom ``demote`` down."""

    window_type: int
    cohort_size: int
    tiers: int = 1
    promote: int = 0
    demote: int = 0

    def __post_init__(self) -> None:
        limits = {
            "window_type": (1, 0xFFFF_FFFF),
            "cohort_size": (2, MAX_COHORT_SIZE),
            "tiers": (1, MAX_TIERS),
            "promote": (0, MAX_COHORT_SIZE),
            "demote": (0, MAX_COHORT_SIZE),
        }
        for name, (low, high) in limits.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise InvalidArgument(f"leagues: {name} must be an integer between {low} and {high}, not {value!r}")
        if self.promote + self.demote > self.cohort_size:
            raise InvalidArgument(
                f"leagues: promote ({self.promote}) and demote ({self.demote}) together exceed the cohort size "
                f"({self.cohort_size})"
            )
        if self.tiers == 1 and (self.promote or self.demote):
            raise InvalidArgument("leagues: with one tier no one can move up or down: promote and demote must be 0")

    def to_proto(self) -> index_pb2.Leagues:
        return index_pb2.Leagues(**dataclasses.asdict(self))

    @classmethod
    def from_proto(cls, message: index_pb2.Leagues) -> Leagues:
        return cls(message.window_type, message.cohort_size, message.tiers, message.promote, message.demote)


@dataclasses.dataclass(frozen=True)
class IndexSettings:
    """Options fixed when an index is created."""

    aggregation: str = "BEST"
    hash_function: HashFunction = HashFunction.MURMUR3
    count_duplicates: bool = True
    group_size: int = 0
    context_size: int = 0
    high_score_first: bool = True
    score_type: str = "INT"
    # Keep a second ranked set of each window's distinct scores, for exact DENSE ranks.
    dense_ranks: bool = False
    # Rank by 2 to 4 integer columns, each "HIGH" or "LOW" (see columns.py); empty: one score.
    columns: tuple[str, ...] = ()
    # Cohorts and tiers on one window type's windows (see leagues.py); None: none.
    leagues: Leagues | None = None

    def __post_init__(self) -> None:
        if self.aggregation not in AGGREGATIONS:
            raise InvalidArgument(f"aggregation must be one of {sorted(AGGREGATIONS)}, not {self.aggregation!r}")
        if self.score_type not in SCORE_TYPES:
            raise InvalidArgument(f"score_type must be one of {', '.join(SCORE_TYPES)}, not {self.score_type!r}")
        if self.aggregation == "SUM" and self.score_type != "INT":
            raise InvalidArgument("a SUM index adds scores exactly: it needs score_type INT")
        if not isinstance(self.hash_function, HashFunction):
            raise InvalidArgument(f"hash_function must be a HashFunction, not {self.hash_function!r}")
        if not isinstance(self.dense_ranks, bool):
            raise InvalidArgument(f"dense_ranks must be a bool, not {self.dense_ranks!r}")
        for name in ("group_size", "context_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 8:
                raise InvalidArgument(f"{name} must be an integer between 0 and 8, not {value!r}")
        object.__setattr__(self, "columns", cols.check_directions(self.columns))  # a list given: a tuple
        if self.columns:
            self._check_columns()
        if self.leagues is not None:
            if not isinstance(self.leagues, Leagues):
                raise InvalidArgument(f"leagues must be a Leagues, not {type(self.leagues).__name__}")
            if self.group_size:
                raise InvalidArgument("leagues need an index without groups: a cohort ranks one board's records")

    def _check_columns(self) -> None:
        if self.aggregation not in cols.AGGREGATIONS:
            raise InvalidArgument(
                f"a multi-column index takes BEST or LATEST entries, not {self.aggregation}: a SUM would add up "
                "every column (times, counts) alike"
            )
        if self.score_type != "INT":
            raise InvalidArgument("a multi-column index's columns are integers: it needs score_type INT")
        if not self.high_score_first:
            raise InvalidArgument(
                "a multi-column index ranks each column in its own direction (HIGH or LOW): high_score_first "
                "does not apply (leave it true)"
            )

    def to_proto(self, trimmed_before: int | None = None) -> index_pb2.IndexOptions:
        message = index_pb2.IndexOptions(
            aggregation=index_pb2.Aggregation.Value(self.aggregation),
            hash_function=index_pb2.RankHash.Value(self.hash_function.value),
            count_duplicates=self.count_duplicates,
            group_size=self.group_size,
            context_size=self.context_size,
            high_score_first=self.high_score_first,
            score_type=index_pb2.ScoreType.Value(self.score_type),
            dense_ranks=self.dense_ranks,
            columns=[index_pb2.ColumnOrder.Value(direction) for direction in self.columns],
        )
        if self.leagues is not None:
            message.leagues.CopyFrom(self.leagues.to_proto())
        if trimmed_before is not None:
            message.trimmed_before = trimmed_before
        return message

    @classmethod
    def from_proto(cls, message: index_pb2.IndexOptions) -> IndexSettings:
        return cls(
            aggregation=index_pb2.Aggregation.Name(message.aggregation),
            hash_function=HashFunction(index_pb2.RankHash.Name(message.hash_function)),
            count_duplicates=message.count_duplicates,
            group_size=message.group_size,
            context_size=message.context_size,
            high_score_first=message.high_score_first,
            score_type=index_pb2.ScoreType.Name(message.score_type),
            dense_ranks=message.dense_ranks,
            columns=tuple(index_pb2.ColumnOrder.Name(direction) for direction in message.columns),
            leagues=Leagues.from_proto(message.leagues) if message.HasField("leagues") else None,
        )
