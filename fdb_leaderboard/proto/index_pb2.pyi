from collections.abc import Iterable as _Iterable
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar

from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper

DESCRIPTOR: _descriptor.FileDescriptor

class Aggregation(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BEST: _ClassVar[Aggregation]
    SUM: _ClassVar[Aggregation]
    LATEST: _ClassVar[Aggregation]

class RankHash(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MURMUR3: _ClassVar[RankHash]
    JDK: _ClassVar[RankHash]
    CRC: _ClassVar[RankHash]
BEST: Aggregation
SUM: Aggregation
LATEST: Aggregation
MURMUR3: RankHash
JDK: RankHash
CRC: RankHash

class IndexOptions(_message.Message):
    __slots__ = ("aggregation", "hash_function", "count_duplicates", "group_size", "context_size", "high_score_first", "trimmed_before")
    AGGREGATION_FIELD_NUMBER: _ClassVar[int]
    HASH_FUNCTION_FIELD_NUMBER: _ClassVar[int]
    COUNT_DUPLICATES_FIELD_NUMBER: _ClassVar[int]
    GROUP_SIZE_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_SIZE_FIELD_NUMBER: _ClassVar[int]
    HIGH_SCORE_FIRST_FIELD_NUMBER: _ClassVar[int]
    TRIMMED_BEFORE_FIELD_NUMBER: _ClassVar[int]
    aggregation: Aggregation
    hash_function: RankHash
    count_duplicates: bool
    group_size: int
    context_size: int
    high_score_first: bool
    trimmed_before: int
    def __init__(self, aggregation: Aggregation | str | None = ..., hash_function: RankHash | str | None = ..., count_duplicates: bool | None = ..., group_size: int | None = ..., context_size: int | None = ..., high_score_first: bool | None = ..., trimmed_before: int | None = ...) -> None: ...

class WindowState(_message.Message):
    __slots__ = ("lb_key", "group", "element", "ts", "seq", "total")
    LB_KEY_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    ELEMENT_FIELD_NUMBER: _ClassVar[int]
    TS_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    lb_key: int
    group: bytes
    element: bytes
    ts: int
    seq: int
    total: int
    def __init__(self, lb_key: int | None = ..., group: bytes | None = ..., element: bytes | None = ..., ts: int | None = ..., seq: int | None = ..., total: int | None = ...) -> None: ...

class CarriedTotal(_message.Message):
    __slots__ = ("group", "total", "ts", "seq", "context")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    TS_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    group: bytes
    total: int
    ts: int
    seq: int
    context: bytes
    def __init__(self, group: bytes | None = ..., total: int | None = ..., ts: int | None = ..., seq: int | None = ..., context: bytes | None = ...) -> None: ...

class RecordHead(_message.Message):
    __slots__ = ("next_seq", "windows", "carried")
    NEXT_SEQ_FIELD_NUMBER: _ClassVar[int]
    WINDOWS_FIELD_NUMBER: _ClassVar[int]
    CARRIED_FIELD_NUMBER: _ClassVar[int]
    next_seq: int
    windows: _containers.RepeatedCompositeFieldContainer[WindowState]
    carried: _containers.RepeatedCompositeFieldContainer[CarriedTotal]
    def __init__(self, next_seq: int | None = ..., windows: _Iterable[WindowState | _Mapping] | None = ..., carried: _Iterable[CarriedTotal | _Mapping] | None = ...) -> None: ...
