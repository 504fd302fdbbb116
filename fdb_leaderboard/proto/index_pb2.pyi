from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Aggregation(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BEST: _ClassVar[Aggregation]
    SUM: _ClassVar[Aggregation]
    LATEST: _ClassVar[Aggregation]

class ScoreType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INT: _ClassVar[ScoreType]
    DOUBLE: _ClassVar[ScoreType]

class ColumnOrder(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    HIGH: _ClassVar[ColumnOrder]
    LOW: _ClassVar[ColumnOrder]

class RankHash(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MURMUR3: _ClassVar[RankHash]
    JDK: _ClassVar[RankHash]
    CRC: _ClassVar[RankHash]
BEST: Aggregation
SUM: Aggregation
LATEST: Aggregation
INT: ScoreType
DOUBLE: ScoreType
HIGH: ColumnOrder
LOW: ColumnOrder
MURMUR3: RankHash
JDK: RankHash
CRC: RankHash

class IndexOptions(_message.Message):
    __slots__ = ("aggregation", "hash_function", "count_duplicates", "group_size", "context_size", "high_score_first", "trimmed_before", "score_type", "dense_ranks", "columns", "leagues", "format")
    AGGREGATION_FIELD_NUMBER: _ClassVar[int]
    HASH_FUNCTION_FIELD_NUMBER: _ClassVar[int]
    COUNT_DUPLICATES_FIELD_NUMBER: _ClassVar[int]
    GROUP_SIZE_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_SIZE_FIELD_NUMBER: _ClassVar[int]
    HIGH_SCORE_FIRST_FIELD_NUMBER: _ClassVar[int]
    TRIMMED_BEFORE_FIELD_NUMBER: _ClassVar[int]
    SCORE_TYPE_FIELD_NUMBER: _ClassVar[int]
    DENSE_RANKS_FIELD_NUMBER: _ClassVar[int]
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    LEAGUES_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    aggregation: Aggregation
    hash_function: RankHash
    count_duplicates: bool
    group_size: int
    context_size: int
    high_score_first: bool
    trimmed_before: int
    score_type: ScoreType
    dense_ranks: bool
    columns: _containers.RepeatedScalarFieldContainer[ColumnOrder]
    leagues: Leagues
    format: int
    def __init__(self, aggregation: _Optional[_Union[Aggregation, str]] = ..., hash_function: _Optional[_Union[RankHash, str]] = ..., count_duplicates: _Optional[bool] = ..., group_size: _Optional[int] = ..., context_size: _Optional[int] = ..., high_score_first: _Optional[bool] = ..., trimmed_before: _Optional[int] = ..., score_type: _Optional[_Union[ScoreType, str]] = ..., dense_ranks: _Optional[bool] = ..., columns: _Optional[_Iterable[_Union[ColumnOrder, str]]] = ..., leagues: _Optional[_Union[Leagues, _Mapping]] = ..., format: _Optional[int] = ...) -> None: ...

class Leagues(_message.Message):
    __slots__ = ("window_type", "cohort_size", "tiers", "promote", "demote")
    WINDOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    COHORT_SIZE_FIELD_NUMBER: _ClassVar[int]
    TIERS_FIELD_NUMBER: _ClassVar[int]
    PROMOTE_FIELD_NUMBER: _ClassVar[int]
    DEMOTE_FIELD_NUMBER: _ClassVar[int]
    window_type: int
    cohort_size: int
    tiers: int
    promote: int
    demote: int
    def __init__(self, window_type: _Optional[int] = ..., cohort_size: _Optional[int] = ..., tiers: _Optional[int] = ..., promote: _Optional[int] = ..., demote: _Optional[int] = ...) -> None: ...

class WindowState(_message.Message):
    __slots__ = ("lb_key", "group", "element", "seq", "submissions")
    LB_KEY_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    ELEMENT_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    SUBMISSIONS_FIELD_NUMBER: _ClassVar[int]
    lb_key: int
    group: bytes
    element: bytes
    seq: int
    submissions: int
    def __init__(self, lb_key: _Optional[int] = ..., group: _Optional[bytes] = ..., element: _Optional[bytes] = ..., seq: _Optional[int] = ..., submissions: _Optional[int] = ...) -> None: ...

class RecordMetadata(_message.Message):
    __slots__ = ("fields",)
    class FieldsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    fields: _containers.ScalarMap[str, str]
    def __init__(self, fields: _Optional[_Mapping[str, str]] = ...) -> None: ...

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
    def __init__(self, group: _Optional[bytes] = ..., total: _Optional[int] = ..., ts: _Optional[int] = ..., seq: _Optional[int] = ..., context: _Optional[bytes] = ...) -> None: ...

class RecordHead(_message.Message):
    __slots__ = ("next_seq", "windows", "carried", "hidden", "minute", "in_minute")
    NEXT_SEQ_FIELD_NUMBER: _ClassVar[int]
    WINDOWS_FIELD_NUMBER: _ClassVar[int]
    CARRIED_FIELD_NUMBER: _ClassVar[int]
    HIDDEN_FIELD_NUMBER: _ClassVar[int]
    MINUTE_FIELD_NUMBER: _ClassVar[int]
    IN_MINUTE_FIELD_NUMBER: _ClassVar[int]
    next_seq: int
    windows: _containers.RepeatedCompositeFieldContainer[WindowState]
    carried: _containers.RepeatedCompositeFieldContainer[CarriedTotal]
    hidden: bool
    minute: int
    in_minute: int
    def __init__(self, next_seq: _Optional[int] = ..., windows: _Optional[_Iterable[_Union[WindowState, _Mapping]]] = ..., carried: _Optional[_Iterable[_Union[CarriedTotal, _Mapping]]] = ..., hidden: _Optional[bool] = ..., minute: _Optional[int] = ..., in_minute: _Optional[int] = ...) -> None: ...

class HiddenRecord(_message.Message):
    __slots__ = ("actor", "hidden_at", "reason")
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    HIDDEN_AT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    actor: str
    hidden_at: int
    reason: str
    def __init__(self, actor: _Optional[str] = ..., hidden_at: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class ScoreBound(_message.Message):
    __slots__ = ("int", "double")
    INT_FIELD_NUMBER: _ClassVar[int]
    DOUBLE_FIELD_NUMBER: _ClassVar[int]
    int: int
    double: float
    def __init__(self, int: _Optional[int] = ..., double: _Optional[float] = ...) -> None: ...

class ScoreRules(_message.Message):
    __slots__ = ("min_score", "max_score", "max_per_window", "max_per_minute")
    MIN_SCORE_FIELD_NUMBER: _ClassVar[int]
    MAX_SCORE_FIELD_NUMBER: _ClassVar[int]
    MAX_PER_WINDOW_FIELD_NUMBER: _ClassVar[int]
    MAX_PER_MINUTE_FIELD_NUMBER: _ClassVar[int]
    min_score: ScoreBound
    max_score: ScoreBound
    max_per_window: int
    max_per_minute: int
    def __init__(self, min_score: _Optional[_Union[ScoreBound, _Mapping]] = ..., max_score: _Optional[_Union[ScoreBound, _Mapping]] = ..., max_per_window: _Optional[int] = ..., max_per_minute: _Optional[int] = ...) -> None: ...

class FillCursor(_message.Message):
    __slots__ = ("records_through", "records_done", "ranked_through", "records_processed", "entries_ranked", "held_until", "entries_put_in", "sorted_build")
    RECORDS_THROUGH_FIELD_NUMBER: _ClassVar[int]
    RECORDS_DONE_FIELD_NUMBER: _ClassVar[int]
    RANKED_THROUGH_FIELD_NUMBER: _ClassVar[int]
    RECORDS_PROCESSED_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_RANKED_FIELD_NUMBER: _ClassVar[int]
    HELD_UNTIL_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_PUT_IN_FIELD_NUMBER: _ClassVar[int]
    SORTED_BUILD_FIELD_NUMBER: _ClassVar[int]
    records_through: bytes
    records_done: bool
    ranked_through: bytes
    records_processed: int
    entries_ranked: int
    held_until: int
    entries_put_in: int
    sorted_build: bool
    def __init__(self, records_through: _Optional[bytes] = ..., records_done: _Optional[bool] = ..., ranked_through: _Optional[bytes] = ..., records_processed: _Optional[int] = ..., entries_ranked: _Optional[int] = ..., held_until: _Optional[int] = ..., entries_put_in: _Optional[int] = ..., sorted_build: _Optional[bool] = ...) -> None: ...

class MaintenancePolicy(_message.Message):
    __slots__ = ("windows", "horizon", "certain_within", "retain", "calendar", "timebase", "idempotency_retention")
    class Regular(_message.Message):
        __slots__ = ("type", "base", "increment", "duration")
        TYPE_FIELD_NUMBER: _ClassVar[int]
        BASE_FIELD_NUMBER: _ClassVar[int]
        INCREMENT_FIELD_NUMBER: _ClassVar[int]
        DURATION_FIELD_NUMBER: _ClassVar[int]
        type: int
        base: int
        increment: int
        duration: int
        def __init__(self, type: _Optional[int] = ..., base: _Optional[int] = ..., increment: _Optional[int] = ..., duration: _Optional[int] = ...) -> None: ...
    class Calendar(_message.Message):
        __slots__ = ("type", "period", "timezone")
        TYPE_FIELD_NUMBER: _ClassVar[int]
        PERIOD_FIELD_NUMBER: _ClassVar[int]
        TIMEZONE_FIELD_NUMBER: _ClassVar[int]
        type: int
        period: str
        timezone: str
        def __init__(self, type: _Optional[int] = ..., period: _Optional[str] = ..., timezone: _Optional[str] = ...) -> None: ...
    WINDOWS_FIELD_NUMBER: _ClassVar[int]
    HORIZON_FIELD_NUMBER: _ClassVar[int]
    CERTAIN_WITHIN_FIELD_NUMBER: _ClassVar[int]
    RETAIN_FIELD_NUMBER: _ClassVar[int]
    CALENDAR_FIELD_NUMBER: _ClassVar[int]
    TIMEBASE_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_RETENTION_FIELD_NUMBER: _ClassVar[int]
    windows: _containers.RepeatedCompositeFieldContainer[MaintenancePolicy.Regular]
    horizon: int
    certain_within: int
    retain: int
    calendar: _containers.RepeatedCompositeFieldContainer[MaintenancePolicy.Calendar]
    timebase: str
    idempotency_retention: int
    def __init__(self, windows: _Optional[_Iterable[_Union[MaintenancePolicy.Regular, _Mapping]]] = ..., horizon: _Optional[int] = ..., certain_within: _Optional[int] = ..., retain: _Optional[int] = ..., calendar: _Optional[_Iterable[_Union[MaintenancePolicy.Calendar, _Mapping]]] = ..., timebase: _Optional[str] = ..., idempotency_retention: _Optional[int] = ...) -> None: ...

class AppliedRequest(_message.Message):
    __slots__ = ("digest", "answer", "applied_at")
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    APPLIED_AT_FIELD_NUMBER: _ClassVar[int]
    digest: bytes
    answer: bytes
    applied_at: int
    def __init__(self, digest: _Optional[bytes] = ..., answer: _Optional[bytes] = ..., applied_at: _Optional[int] = ...) -> None: ...

class ChangeCapture(_message.Message):
    __slots__ = ("id", "until")
    ID_FIELD_NUMBER: _ClassVar[int]
    UNTIL_FIELD_NUMBER: _ClassVar[int]
    id: bytes
    until: int
    def __init__(self, id: _Optional[bytes] = ..., until: _Optional[int] = ...) -> None: ...

class CatalogEntry(_message.Message):
    __slots__ = ("prefix", "options", "maintenance", "captures", "writes_paused_until", "pause_reason")
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    MAINTENANCE_FIELD_NUMBER: _ClassVar[int]
    CAPTURES_FIELD_NUMBER: _ClassVar[int]
    WRITES_PAUSED_UNTIL_FIELD_NUMBER: _ClassVar[int]
    PAUSE_REASON_FIELD_NUMBER: _ClassVar[int]
    prefix: bytes
    options: IndexOptions
    maintenance: MaintenancePolicy
    captures: _containers.RepeatedCompositeFieldContainer[ChangeCapture]
    writes_paused_until: int
    pause_reason: str
    def __init__(self, prefix: _Optional[bytes] = ..., options: _Optional[_Union[IndexOptions, _Mapping]] = ..., maintenance: _Optional[_Union[MaintenancePolicy, _Mapping]] = ..., captures: _Optional[_Iterable[_Union[ChangeCapture, _Mapping]]] = ..., writes_paused_until: _Optional[int] = ..., pause_reason: _Optional[str] = ...) -> None: ...

class UpgradeCursor(_message.Message):
    __slots__ = ("to_format", "records_through", "records_done", "heads_changed", "started_at")
    TO_FORMAT_FIELD_NUMBER: _ClassVar[int]
    RECORDS_THROUGH_FIELD_NUMBER: _ClassVar[int]
    RECORDS_DONE_FIELD_NUMBER: _ClassVar[int]
    HEADS_CHANGED_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    to_format: int
    records_through: bytes
    records_done: int
    heads_changed: int
    started_at: int
    def __init__(self, to_format: _Optional[int] = ..., records_through: _Optional[bytes] = ..., records_done: _Optional[int] = ..., heads_changed: _Optional[int] = ..., started_at: _Optional[int] = ...) -> None: ...

class StoreFormat(_message.Message):
    __slots__ = ("version", "raised_by", "raised_at")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    RAISED_BY_FIELD_NUMBER: _ClassVar[int]
    RAISED_AT_FIELD_NUMBER: _ClassVar[int]
    version: int
    raised_by: str
    raised_at: int
    def __init__(self, version: _Optional[int] = ..., raised_by: _Optional[str] = ..., raised_at: _Optional[int] = ...) -> None: ...

class ProcessReport(_message.Message):
    __slots__ = ("release", "host", "pid", "address", "started_at", "seen_at", "store_format", "index_format")
    RELEASE_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    SEEN_AT_FIELD_NUMBER: _ClassVar[int]
    STORE_FORMAT_FIELD_NUMBER: _ClassVar[int]
    INDEX_FORMAT_FIELD_NUMBER: _ClassVar[int]
    release: str
    host: str
    pid: int
    address: str
    started_at: int
    seen_at: int
    store_format: int
    index_format: int
    def __init__(self, release: _Optional[str] = ..., host: _Optional[str] = ..., pid: _Optional[int] = ..., address: _Optional[str] = ..., started_at: _Optional[int] = ..., seen_at: _Optional[int] = ..., store_format: _Optional[int] = ..., index_format: _Optional[int] = ...) -> None: ...

class AuditEvent(_message.Message):
    __slots__ = ("at_us", "actor", "action", "index", "details")
    class DetailsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    AT_US_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    at_us: int
    actor: str
    action: str
    index: str
    details: _containers.ScalarMap[str, str]
    def __init__(self, at_us: _Optional[int] = ..., actor: _Optional[str] = ..., action: _Optional[str] = ..., index: _Optional[str] = ..., details: _Optional[_Mapping[str, str]] = ...) -> None: ...

class AuditPolicy(_message.Message):
    __slots__ = ("retention",)
    RETENTION_FIELD_NUMBER: _ClassVar[int]
    retention: int
    def __init__(self, retention: _Optional[int] = ...) -> None: ...
