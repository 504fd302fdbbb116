from fdb_leaderboard.proto import index_pb2 as _index_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TimeWindowLeaderboardDirectory(_message.Message):
    __slots__ = ("update_timestamp", "high_score_first", "next_key", "leaderboards", "score_rules")
    UPDATE_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    HIGH_SCORE_FIRST_FIELD_NUMBER: _ClassVar[int]
    NEXT_KEY_FIELD_NUMBER: _ClassVar[int]
    LEADERBOARDS_FIELD_NUMBER: _ClassVar[int]
    SCORE_RULES_FIELD_NUMBER: _ClassVar[int]
    update_timestamp: int
    high_score_first: bool
    next_key: int
    leaderboards: _containers.RepeatedCompositeFieldContainer[TimeWindowLeaderboard]
    score_rules: _index_pb2.ScoreRules
    def __init__(self, update_timestamp: _Optional[int] = ..., high_score_first: _Optional[bool] = ..., next_key: _Optional[int] = ..., leaderboards: _Optional[_Iterable[_Union[TimeWindowLeaderboard, _Mapping]]] = ..., score_rules: _Optional[_Union[_index_pb2.ScoreRules, _Mapping]] = ...) -> None: ...

class TimeWindowLeaderboardSubDirectory(_message.Message):
    __slots__ = ("high_score_first",)
    HIGH_SCORE_FIRST_FIELD_NUMBER: _ClassVar[int]
    high_score_first: bool
    def __init__(self, high_score_first: _Optional[bool] = ...) -> None: ...

class TimeWindowLeaderboard(_message.Message):
    __slots__ = ("type", "start_timestamp", "end_timestamp", "subspace_key", "nlevels", "filling")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    START_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    END_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    SUBSPACE_KEY_FIELD_NUMBER: _ClassVar[int]
    NLEVELS_FIELD_NUMBER: _ClassVar[int]
    FILLING_FIELD_NUMBER: _ClassVar[int]
    type: int
    start_timestamp: int
    end_timestamp: int
    subspace_key: bytes
    nlevels: int
    filling: bool
    def __init__(self, type: _Optional[int] = ..., start_timestamp: _Optional[int] = ..., end_timestamp: _Optional[int] = ..., subspace_key: _Optional[bytes] = ..., nlevels: _Optional[int] = ..., filling: _Optional[bool] = ...) -> None: ...
