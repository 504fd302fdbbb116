"""The options an index is created with, fixed for its lifetime, and their stored form."""

from __future__ import annotations

import dataclasses

from ..errors import InvalidArgument
from ..proto import index_pb2
from ..rankedset import HashFunction
from . import columns as cols
from .aggregation import AGGREGATIONS
from .values import SCORE_TYPES


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
        )
