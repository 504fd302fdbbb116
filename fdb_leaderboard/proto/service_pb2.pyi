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

class RankHash(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MURMUR3: _ClassVar[RankHash]
    JDK: _ClassVar[RankHash]
    CRC: _ClassVar[RankHash]

class ScoreType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INT: _ClassVar[ScoreType]
    DOUBLE: _ClassVar[ScoreType]

class ColumnOrder(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    HIGH: _ClassVar[ColumnOrder]
    LOW: _ClassVar[ColumnOrder]

class RankMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ORDINAL: _ClassVar[RankMode]
    COMPETITION: _ClassVar[RankMode]
    DENSE: _ClassVar[RankMode]

class IfAbsent(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EMPTY: _ClassVar[IfAbsent]
    TOP: _ClassVar[IfAbsent]
    BOTTOM: _ClassVar[IfAbsent]

class ScanType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BY_VALUE: _ClassVar[ScanType]
    BY_RANK: _ClassVar[ScanType]
    BY_TIME_WINDOW: _ClassVar[ScanType]

class Rebuild(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    IF_OVERLAPPING_CHANGED: _ClassVar[Rebuild]
    NEVER: _ClassVar[Rebuild]
    ALWAYS: _ClassVar[Rebuild]
BEST: Aggregation
SUM: Aggregation
LATEST: Aggregation
MURMUR3: RankHash
JDK: RankHash
CRC: RankHash
INT: ScoreType
DOUBLE: ScoreType
HIGH: ColumnOrder
LOW: ColumnOrder
ORDINAL: RankMode
COMPETITION: RankMode
DENSE: RankMode
EMPTY: IfAbsent
TOP: IfAbsent
BOTTOM: IfAbsent
BY_VALUE: ScanType
BY_RANK: ScanType
BY_TIME_WINDOW: ScanType
IF_OVERLAPPING_CHANGED: Rebuild
NEVER: Rebuild
ALWAYS: Rebuild

class Item(_message.Message):
    __slots__ = ("int", "string", "bytes", "double", "bool", "null")
    INT_FIELD_NUMBER: _ClassVar[int]
    STRING_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    DOUBLE_FIELD_NUMBER: _ClassVar[int]
    BOOL_FIELD_NUMBER: _ClassVar[int]
    NULL_FIELD_NUMBER: _ClassVar[int]
    int: int
    string: str
    bytes: bytes
    double: float
    bool: bool
    null: bool
    def __init__(self, int: _Optional[int] = ..., string: _Optional[str] = ..., bytes: _Optional[bytes] = ..., double: _Optional[float] = ..., bool: _Optional[bool] = ..., null: _Optional[bool] = ...) -> None: ...

class Score(_message.Message):
    __slots__ = ("int", "double", "columns")
    INT_FIELD_NUMBER: _ClassVar[int]
    DOUBLE_FIELD_NUMBER: _ClassVar[int]
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    int: int
    double: float
    columns: ScoreColumns
    def __init__(self, int: _Optional[int] = ..., double: _Optional[float] = ..., columns: _Optional[_Union[ScoreColumns, _Mapping]] = ...) -> None: ...

class ScoreColumns(_message.Message):
    __slots__ = ("values",)
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, values: _Optional[_Iterable[int]] = ...) -> None: ...

class Entry(_message.Message):
    __slots__ = ("score", "timestamp", "context", "group")
    SCORE_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    score: Score
    timestamp: int
    context: _containers.RepeatedCompositeFieldContainer[Item]
    group: _containers.RepeatedCompositeFieldContainer[Item]
    def __init__(self, score: _Optional[_Union[Score, _Mapping]] = ..., timestamp: _Optional[int] = ..., context: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., group: _Optional[_Iterable[_Union[Item, _Mapping]]] = ...) -> None: ...

class IndexOptions(_message.Message):
    __slots__ = ("aggregation", "hash_function", "count_duplicates", "group_size", "context_size", "high_score_first", "score_type", "dense_ranks", "columns", "leagues")
    AGGREGATION_FIELD_NUMBER: _ClassVar[int]
    HASH_FUNCTION_FIELD_NUMBER: _ClassVar[int]
    COUNT_DUPLICATES_FIELD_NUMBER: _ClassVar[int]
    GROUP_SIZE_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_SIZE_FIELD_NUMBER: _ClassVar[int]
    HIGH_SCORE_FIRST_FIELD_NUMBER: _ClassVar[int]
    SCORE_TYPE_FIELD_NUMBER: _ClassVar[int]
    DENSE_RANKS_FIELD_NUMBER: _ClassVar[int]
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    LEAGUES_FIELD_NUMBER: _ClassVar[int]
    aggregation: Aggregation
    hash_function: RankHash
    count_duplicates: bool
    group_size: int
    context_size: int
    high_score_first: bool
    score_type: ScoreType
    dense_ranks: bool
    columns: _containers.RepeatedScalarFieldContainer[ColumnOrder]
    leagues: Leagues
    def __init__(self, aggregation: _Optional[_Union[Aggregation, str]] = ..., hash_function: _Optional[_Union[RankHash, str]] = ..., count_duplicates: _Optional[bool] = ..., group_size: _Optional[int] = ..., context_size: _Optional[int] = ..., high_score_first: _Optional[bool] = ..., score_type: _Optional[_Union[ScoreType, str]] = ..., dense_ranks: _Optional[bool] = ..., columns: _Optional[_Iterable[_Union[ColumnOrder, str]]] = ..., leagues: _Optional[_Union[Leagues, _Mapping]] = ...) -> None: ...

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

class RegularWindows(_message.Message):
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

class CalendarWindows(_message.Message):
    __slots__ = ("type", "period", "timezone")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    PERIOD_FIELD_NUMBER: _ClassVar[int]
    TIMEZONE_FIELD_NUMBER: _ClassVar[int]
    type: int
    period: str
    timezone: str
    def __init__(self, type: _Optional[int] = ..., period: _Optional[str] = ..., timezone: _Optional[str] = ...) -> None: ...

class MaintenancePolicy(_message.Message):
    __slots__ = ("windows", "horizon", "certain_within", "retain", "calendar", "timebase", "idempotency_retention")
    WINDOWS_FIELD_NUMBER: _ClassVar[int]
    HORIZON_FIELD_NUMBER: _ClassVar[int]
    CERTAIN_WITHIN_FIELD_NUMBER: _ClassVar[int]
    RETAIN_FIELD_NUMBER: _ClassVar[int]
    CALENDAR_FIELD_NUMBER: _ClassVar[int]
    TIMEBASE_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_RETENTION_FIELD_NUMBER: _ClassVar[int]
    windows: _containers.RepeatedCompositeFieldContainer[RegularWindows]
    horizon: int
    certain_within: int
    retain: int
    calendar: _containers.RepeatedCompositeFieldContainer[CalendarWindows]
    timebase: str
    idempotency_retention: int
    def __init__(self, windows: _Optional[_Iterable[_Union[RegularWindows, _Mapping]]] = ..., horizon: _Optional[int] = ..., certain_within: _Optional[int] = ..., retain: _Optional[int] = ..., calendar: _Optional[_Iterable[_Union[CalendarWindows, _Mapping]]] = ..., timebase: _Optional[str] = ..., idempotency_retention: _Optional[int] = ...) -> None: ...

class WindowSelector(_message.Message):
    __slots__ = ("type", "timestamp")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    type: int
    timestamp: int
    def __init__(self, type: _Optional[int] = ..., timestamp: _Optional[int] = ...) -> None: ...

class RankedEntry(_message.Message):
    __slots__ = ("pk", "score", "timestamp", "context", "group", "rank", "metadata")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    PK_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    pk: _containers.RepeatedCompositeFieldContainer[Item]
    score: Score
    timestamp: int
    context: _containers.RepeatedCompositeFieldContainer[Item]
    group: _containers.RepeatedCompositeFieldContainer[Item]
    rank: int
    metadata: _containers.ScalarMap[str, str]
    def __init__(self, pk: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., score: _Optional[_Union[Score, _Mapping]] = ..., timestamp: _Optional[int] = ..., context: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., group: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., rank: _Optional[int] = ..., metadata: _Optional[_Mapping[str, str]] = ...) -> None: ...

class Window(_message.Message):
    __slots__ = ("type", "start", "end", "key", "nlevels", "filling", "records_processed", "entries_ranked", "records_total")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    NLEVELS_FIELD_NUMBER: _ClassVar[int]
    FILLING_FIELD_NUMBER: _ClassVar[int]
    RECORDS_PROCESSED_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_RANKED_FIELD_NUMBER: _ClassVar[int]
    RECORDS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    type: int
    start: int
    end: int
    key: int
    nlevels: int
    filling: bool
    records_processed: int
    entries_ranked: int
    records_total: int
    def __init__(self, type: _Optional[int] = ..., start: _Optional[int] = ..., end: _Optional[int] = ..., key: _Optional[int] = ..., nlevels: _Optional[int] = ..., filling: _Optional[bool] = ..., records_processed: _Optional[int] = ..., entries_ranked: _Optional[int] = ..., records_total: _Optional[int] = ...) -> None: ...

class CreateIndexRequest(_message.Message):
    __slots__ = ("name", "options", "reference_layout", "maintenance", "all_time")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_LAYOUT_FIELD_NUMBER: _ClassVar[int]
    MAINTENANCE_FIELD_NUMBER: _ClassVar[int]
    ALL_TIME_FIELD_NUMBER: _ClassVar[int]
    name: str
    options: IndexOptions
    reference_layout: bool
    maintenance: MaintenancePolicy
    all_time: bool
    def __init__(self, name: _Optional[str] = ..., options: _Optional[_Union[IndexOptions, _Mapping]] = ..., reference_layout: _Optional[bool] = ..., maintenance: _Optional[_Union[MaintenancePolicy, _Mapping]] = ..., all_time: _Optional[bool] = ...) -> None: ...

class CreateIndexResponse(_message.Message):
    __slots__ = ("created", "added")
    CREATED_FIELD_NUMBER: _ClassVar[int]
    ADDED_FIELD_NUMBER: _ClassVar[int]
    created: bool
    added: _containers.RepeatedCompositeFieldContainer[Window]
    def __init__(self, created: _Optional[bool] = ..., added: _Optional[_Iterable[_Union[Window, _Mapping]]] = ...) -> None: ...

class ListIndexesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class IndexInfo(_message.Message):
    __slots__ = ("name", "options", "maintenance", "writes_paused", "format")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    MAINTENANCE_FIELD_NUMBER: _ClassVar[int]
    WRITES_PAUSED_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    name: str
    options: IndexOptions
    maintenance: MaintenancePolicy
    writes_paused: str
    format: IndexFormat
    def __init__(self, name: _Optional[str] = ..., options: _Optional[_Union[IndexOptions, _Mapping]] = ..., maintenance: _Optional[_Union[MaintenancePolicy, _Mapping]] = ..., writes_paused: _Optional[str] = ..., format: _Optional[_Union[IndexFormat, _Mapping]] = ...) -> None: ...

class ListIndexesResponse(_message.Message):
    __slots__ = ("indexes",)
    INDEXES_FIELD_NUMBER: _ClassVar[int]
    indexes: _containers.RepeatedCompositeFieldContainer[IndexInfo]
    def __init__(self, indexes: _Optional[_Iterable[_Union[IndexInfo, _Mapping]]] = ...) -> None: ...

class IndexFormat(_message.Message):
    __slots__ = ("version", "recorded", "newest", "upgrading_to", "records_done")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    RECORDED_FIELD_NUMBER: _ClassVar[int]
    NEWEST_FIELD_NUMBER: _ClassVar[int]
    UPGRADING_TO_FIELD_NUMBER: _ClassVar[int]
    RECORDS_DONE_FIELD_NUMBER: _ClassVar[int]
    version: int
    recorded: bool
    newest: int
    upgrading_to: int
    records_done: int
    def __init__(self, version: _Optional[int] = ..., recorded: _Optional[bool] = ..., newest: _Optional[int] = ..., upgrading_to: _Optional[int] = ..., records_done: _Optional[int] = ...) -> None: ...

class FormatVersion(_message.Message):
    __slots__ = ("version", "release", "read_from", "adds", "upgrade")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    RELEASE_FIELD_NUMBER: _ClassVar[int]
    READ_FROM_FIELD_NUMBER: _ClassVar[int]
    ADDS_FIELD_NUMBER: _ClassVar[int]
    UPGRADE_FIELD_NUMBER: _ClassVar[int]
    version: int
    release: str
    read_from: str
    adds: str
    upgrade: str
    def __init__(self, version: _Optional[int] = ..., release: _Optional[str] = ..., read_from: _Optional[str] = ..., adds: _Optional[str] = ..., upgrade: _Optional[str] = ...) -> None: ...

class StoreFormatInfo(_message.Message):
    __slots__ = ("version", "recorded", "newest", "raised_by", "raised_at")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    RECORDED_FIELD_NUMBER: _ClassVar[int]
    NEWEST_FIELD_NUMBER: _ClassVar[int]
    RAISED_BY_FIELD_NUMBER: _ClassVar[int]
    RAISED_AT_FIELD_NUMBER: _ClassVar[int]
    version: int
    recorded: bool
    newest: int
    raised_by: str
    raised_at: int
    def __init__(self, version: _Optional[int] = ..., recorded: _Optional[bool] = ..., newest: _Optional[int] = ..., raised_by: _Optional[str] = ..., raised_at: _Optional[int] = ...) -> None: ...

class ProcessInfo(_message.Message):
    __slots__ = ("id", "release", "host", "pid", "address", "started_at", "seen_at", "live", "store_format", "index_format")
    ID_FIELD_NUMBER: _ClassVar[int]
    RELEASE_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    SEEN_AT_FIELD_NUMBER: _ClassVar[int]
    LIVE_FIELD_NUMBER: _ClassVar[int]
    STORE_FORMAT_FIELD_NUMBER: _ClassVar[int]
    INDEX_FORMAT_FIELD_NUMBER: _ClassVar[int]
    id: str
    release: str
    host: str
    pid: int
    address: str
    started_at: int
    seen_at: int
    live: bool
    store_format: int
    index_format: int
    def __init__(self, id: _Optional[str] = ..., release: _Optional[str] = ..., host: _Optional[str] = ..., pid: _Optional[int] = ..., address: _Optional[str] = ..., started_at: _Optional[int] = ..., seen_at: _Optional[int] = ..., live: _Optional[bool] = ..., store_format: _Optional[int] = ..., index_format: _Optional[int] = ...) -> None: ...

class GetStoreStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StoreStatus(_message.Message):
    __slots__ = ("release", "format", "processes", "indexes", "store_formats", "index_formats")
    RELEASE_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    PROCESSES_FIELD_NUMBER: _ClassVar[int]
    INDEXES_FIELD_NUMBER: _ClassVar[int]
    STORE_FORMATS_FIELD_NUMBER: _ClassVar[int]
    INDEX_FORMATS_FIELD_NUMBER: _ClassVar[int]
    release: str
    format: StoreFormatInfo
    processes: _containers.RepeatedCompositeFieldContainer[ProcessInfo]
    indexes: _containers.RepeatedCompositeFieldContainer[IndexFormatInfo]
    store_formats: _containers.RepeatedCompositeFieldContainer[FormatVersion]
    index_formats: _containers.RepeatedCompositeFieldContainer[FormatVersion]
    def __init__(self, release: _Optional[str] = ..., format: _Optional[_Union[StoreFormatInfo, _Mapping]] = ..., processes: _Optional[_Iterable[_Union[ProcessInfo, _Mapping]]] = ..., indexes: _Optional[_Iterable[_Union[IndexFormatInfo, _Mapping]]] = ..., store_formats: _Optional[_Iterable[_Union[FormatVersion, _Mapping]]] = ..., index_formats: _Optional[_Iterable[_Union[FormatVersion, _Mapping]]] = ...) -> None: ...

class IndexFormatInfo(_message.Message):
    __slots__ = ("index", "format")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    index: str
    format: IndexFormat
    def __init__(self, index: _Optional[str] = ..., format: _Optional[_Union[IndexFormat, _Mapping]] = ...) -> None: ...

class UpgradeStoreRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class UpgradeStoreResponse(_message.Message):
    __slots__ = ("status", "done")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    status: StoreStatus
    done: bool
    def __init__(self, status: _Optional[_Union[StoreStatus, _Mapping]] = ..., done: _Optional[bool] = ...) -> None: ...

class UpgradeIndexRequest(_message.Message):
    __slots__ = ("index", "max_records", "max_batches")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    MAX_RECORDS_FIELD_NUMBER: _ClassVar[int]
    MAX_BATCHES_FIELD_NUMBER: _ClassVar[int]
    index: str
    max_records: int
    max_batches: int
    def __init__(self, index: _Optional[str] = ..., max_records: _Optional[int] = ..., max_batches: _Optional[int] = ...) -> None: ...

class UpgradeIndexResponse(_message.Message):
    __slots__ = ("format", "records_processed", "heads_changed", "done")
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    RECORDS_PROCESSED_FIELD_NUMBER: _ClassVar[int]
    HEADS_CHANGED_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    format: IndexFormat
    records_processed: int
    heads_changed: int
    done: bool
    def __init__(self, format: _Optional[_Union[IndexFormat, _Mapping]] = ..., records_processed: _Optional[int] = ..., heads_changed: _Optional[int] = ..., done: _Optional[bool] = ...) -> None: ...

class DropIndexRequest(_message.Message):
    __slots__ = ("index",)
    INDEX_FIELD_NUMBER: _ClassVar[int]
    index: str
    def __init__(self, index: _Optional[str] = ...) -> None: ...

class DropIndexResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SetMaintenancePolicyRequest(_message.Message):
    __slots__ = ("index", "maintenance")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    MAINTENANCE_FIELD_NUMBER: _ClassVar[int]
    index: str
    maintenance: MaintenancePolicy
    def __init__(self, index: _Optional[str] = ..., maintenance: _Optional[_Union[MaintenancePolicy, _Mapping]] = ...) -> None: ...

class SetMaintenancePolicyResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class WindowSpec(_message.Message):
    __slots__ = ("type", "base", "increment", "duration", "count")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    BASE_FIELD_NUMBER: _ClassVar[int]
    INCREMENT_FIELD_NUMBER: _ClassVar[int]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    type: int
    base: int
    increment: int
    duration: int
    count: int
    def __init__(self, type: _Optional[int] = ..., base: _Optional[int] = ..., increment: _Optional[int] = ..., duration: _Optional[int] = ..., count: _Optional[int] = ...) -> None: ...

class ExplicitWindow(_message.Message):
    __slots__ = ("type", "start", "end")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    type: int
    start: int
    end: int
    def __init__(self, type: _Optional[int] = ..., start: _Optional[int] = ..., end: _Optional[int] = ...) -> None: ...

class UpdateWindowsRequest(_message.Message):
    __slots__ = ("index", "update_timestamp", "high_score_first", "delete_before", "all_time", "specs", "windows", "nlevels", "rebuild")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    HIGH_SCORE_FIRST_FIELD_NUMBER: _ClassVar[int]
    DELETE_BEFORE_FIELD_NUMBER: _ClassVar[int]
    ALL_TIME_FIELD_NUMBER: _ClassVar[int]
    SPECS_FIELD_NUMBER: _ClassVar[int]
    WINDOWS_FIELD_NUMBER: _ClassVar[int]
    NLEVELS_FIELD_NUMBER: _ClassVar[int]
    REBUILD_FIELD_NUMBER: _ClassVar[int]
    index: str
    update_timestamp: int
    high_score_first: bool
    delete_before: int
    all_time: bool
    specs: _containers.RepeatedCompositeFieldContainer[WindowSpec]
    windows: _containers.RepeatedCompositeFieldContainer[ExplicitWindow]
    nlevels: int
    rebuild: Rebuild
    def __init__(self, index: _Optional[str] = ..., update_timestamp: _Optional[int] = ..., high_score_first: _Optional[bool] = ..., delete_before: _Optional[int] = ..., all_time: _Optional[bool] = ..., specs: _Optional[_Iterable[_Union[WindowSpec, _Mapping]]] = ..., windows: _Optional[_Iterable[_Union[ExplicitWindow, _Mapping]]] = ..., nlevels: _Optional[int] = ..., rebuild: _Optional[_Union[Rebuild, str]] = ...) -> None: ...

class UpdateWindowsResponse(_message.Message):
    __slots__ = ("changed", "added", "deleted", "filling")
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    ADDED_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    FILLING_FIELD_NUMBER: _ClassVar[int]
    changed: bool
    added: _containers.RepeatedCompositeFieldContainer[Window]
    deleted: _containers.RepeatedCompositeFieldContainer[Window]
    filling: _containers.RepeatedCompositeFieldContainer[Window]
    def __init__(self, changed: _Optional[bool] = ..., added: _Optional[_Iterable[_Union[Window, _Mapping]]] = ..., deleted: _Optional[_Iterable[_Union[Window, _Mapping]]] = ..., filling: _Optional[_Iterable[_Union[Window, _Mapping]]] = ...) -> None: ...

class ListWindowsRequest(_message.Message):
    __slots__ = ("index", "window_type")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    WINDOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    index: str
    window_type: int
    def __init__(self, index: _Optional[str] = ..., window_type: _Optional[int] = ...) -> None: ...

class ListWindowsResponse(_message.Message):
    __slots__ = ("exists", "update_timestamp", "high_score_first", "windows", "latest_timestamp", "trimmed_before", "format")
    EXISTS_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    HIGH_SCORE_FIRST_FIELD_NUMBER: _ClassVar[int]
    WINDOWS_FIELD_NUMBER: _ClassVar[int]
    LATEST_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    TRIMMED_BEFORE_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    exists: bool
    update_timestamp: int
    high_score_first: bool
    windows: _containers.RepeatedCompositeFieldContainer[Window]
    latest_timestamp: int
    trimmed_before: int
    format: IndexFormat
    def __init__(self, exists: _Optional[bool] = ..., update_timestamp: _Optional[int] = ..., high_score_first: _Optional[bool] = ..., windows: _Optional[_Iterable[_Union[Window, _Mapping]]] = ..., latest_timestamp: _Optional[int] = ..., trimmed_before: _Optional[int] = ..., format: _Optional[_Union[IndexFormat, _Mapping]] = ...) -> None: ...

class SaveSubDirectoryRequest(_message.Message):
    __slots__ = ("index", "group", "high_score_first")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    HIGH_SCORE_FIRST_FIELD_NUMBER: _ClassVar[int]
    index: str
    group: _containers.RepeatedCompositeFieldContainer[Item]
    high_score_first: bool
    def __init__(self, index: _Optional[str] = ..., group: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., high_score_first: _Optional[bool] = ...) -> None: ...

class SaveSubDirectoryResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListSubDirectoriesRequest(_message.Message):
    __slots__ = ("index",)
    INDEX_FIELD_NUMBER: _ClassVar[int]
    index: str
    def __init__(self, index: _Optional[str] = ...) -> None: ...

class SubDirectory(_message.Message):
    __slots__ = ("group", "high_score_first")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    HIGH_SCORE_FIRST_FIELD_NUMBER: _ClassVar[int]
    group: _containers.RepeatedCompositeFieldContainer[Item]
    high_score_first: bool
    def __init__(self, group: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., high_score_first: _Optional[bool] = ...) -> None: ...

class ListSubDirectoriesResponse(_message.Message):
    __slots__ = ("sub_directories",)
    SUB_DIRECTORIES_FIELD_NUMBER: _ClassVar[int]
    sub_directories: _containers.RepeatedCompositeFieldContainer[SubDirectory]
    def __init__(self, sub_directories: _Optional[_Iterable[_Union[SubDirectory, _Mapping]]] = ...) -> None: ...

class ExpireRequest(_message.Message):
    __slots__ = ("index", "before")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    BEFORE_FIELD_NUMBER: _ClassVar[int]
    index: str
    before: int
    def __init__(self, index: _Optional[str] = ..., before: _Optional[int] = ...) -> None: ...

class ExpireResponse(_message.Message):
    __slots__ = ("deleted",)
    DELETED_FIELD_NUMBER: _ClassVar[int]
    deleted: _containers.RepeatedCompositeFieldContainer[Window]
    def __init__(self, deleted: _Optional[_Iterable[_Union[Window, _Mapping]]] = ...) -> None: ...

class FillRequest(_message.Message):
    __slots__ = ("index", "max_records", "max_batches")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    MAX_RECORDS_FIELD_NUMBER: _ClassVar[int]
    MAX_BATCHES_FIELD_NUMBER: _ClassVar[int]
    index: str
    max_records: int
    max_batches: int
    def __init__(self, index: _Optional[str] = ..., max_records: _Optional[int] = ..., max_batches: _Optional[int] = ...) -> None: ...

class FillResponse(_message.Message):
    __slots__ = ("done", "records_processed", "filling", "entries_ranked")
    DONE_FIELD_NUMBER: _ClassVar[int]
    RECORDS_PROCESSED_FIELD_NUMBER: _ClassVar[int]
    FILLING_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_RANKED_FIELD_NUMBER: _ClassVar[int]
    done: bool
    records_processed: int
    filling: _containers.RepeatedCompositeFieldContainer[Window]
    entries_ranked: int
    def __init__(self, done: _Optional[bool] = ..., records_processed: _Optional[int] = ..., filling: _Optional[_Iterable[_Union[Window, _Mapping]]] = ..., entries_ranked: _Optional[int] = ...) -> None: ...

class TrimRequest(_message.Message):
    __slots__ = ("index", "before")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    BEFORE_FIELD_NUMBER: _ClassVar[int]
    index: str
    before: int
    def __init__(self, index: _Optional[str] = ..., before: _Optional[int] = ...) -> None: ...

class TrimResponse(_message.Message):
    __slots__ = ("entries_removed",)
    ENTRIES_REMOVED_FIELD_NUMBER: _ClassVar[int]
    entries_removed: int
    def __init__(self, entries_removed: _Optional[int] = ...) -> None: ...

class KeepAheadRequest(_message.Message):
    __slots__ = ("index", "now")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    NOW_FIELD_NUMBER: _ClassVar[int]
    index: str
    now: int
    def __init__(self, index: _Optional[str] = ..., now: _Optional[int] = ...) -> None: ...

class KeepAheadResponse(_message.Message):
    __slots__ = ("added",)
    ADDED_FIELD_NUMBER: _ClassVar[int]
    added: _containers.RepeatedCompositeFieldContainer[Window]
    def __init__(self, added: _Optional[_Iterable[_Union[Window, _Mapping]]] = ...) -> None: ...

class VerifyRequest(_message.Message):
    __slots__ = ("index", "max_problems", "continuation", "max_batches", "split")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    MAX_PROBLEMS_FIELD_NUMBER: _ClassVar[int]
    CONTINUATION_FIELD_NUMBER: _ClassVar[int]
    MAX_BATCHES_FIELD_NUMBER: _ClassVar[int]
    SPLIT_FIELD_NUMBER: _ClassVar[int]
    index: str
    max_problems: int
    continuation: bytes
    max_batches: int
    split: int
    def __init__(self, index: _Optional[str] = ..., max_problems: _Optional[int] = ..., continuation: _Optional[bytes] = ..., max_batches: _Optional[int] = ..., split: _Optional[int] = ...) -> None: ...

class VerifyResponse(_message.Message):
    __slots__ = ("problems", "records", "entries", "elements", "ranked_sets", "windows", "batches", "complete", "continuation", "parts")
    PROBLEMS_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    ELEMENTS_FIELD_NUMBER: _ClassVar[int]
    RANKED_SETS_FIELD_NUMBER: _ClassVar[int]
    WINDOWS_FIELD_NUMBER: _ClassVar[int]
    BATCHES_FIELD_NUMBER: _ClassVar[int]
    COMPLETE_FIELD_NUMBER: _ClassVar[int]
    CONTINUATION_FIELD_NUMBER: _ClassVar[int]
    PARTS_FIELD_NUMBER: _ClassVar[int]
    problems: _containers.RepeatedScalarFieldContainer[str]
    records: int
    entries: int
    elements: int
    ranked_sets: int
    windows: int
    batches: int
    complete: bool
    continuation: bytes
    parts: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, problems: _Optional[_Iterable[str]] = ..., records: _Optional[int] = ..., entries: _Optional[int] = ..., elements: _Optional[int] = ..., ranked_sets: _Optional[int] = ..., windows: _Optional[int] = ..., batches: _Optional[int] = ..., complete: _Optional[bool] = ..., continuation: _Optional[bytes] = ..., parts: _Optional[_Iterable[bytes]] = ...) -> None: ...

class ExpireIdempotencyKeysRequest(_message.Message):
    __slots__ = ("index", "before", "max_keys")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    BEFORE_FIELD_NUMBER: _ClassVar[int]
    MAX_KEYS_FIELD_NUMBER: _ClassVar[int]
    index: str
    before: int
    max_keys: int
    def __init__(self, index: _Optional[str] = ..., before: _Optional[int] = ..., max_keys: _Optional[int] = ...) -> None: ...

class ExpireIdempotencyKeysResponse(_message.Message):
    __slots__ = ("expired", "done", "kept")
    EXPIRED_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    KEPT_FIELD_NUMBER: _ClassVar[int]
    expired: int
    done: bool
    kept: int
    def __init__(self, expired: _Optional[int] = ..., done: _Optional[bool] = ..., kept: _Optional[int] = ...) -> None: ...

class AddScoreRequest(_message.Message):
    __slots__ = ("index", "pk", "entry", "metadata", "idempotency_key")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    INDEX_FIELD_NUMBER: _ClassVar[int]
    PK_FIELD_NUMBER: _ClassVar[int]
    ENTRY_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    index: str
    pk: _containers.RepeatedCompositeFieldContainer[Item]
    entry: Entry
    metadata: _containers.ScalarMap[str, str]
    idempotency_key: str
    def __init__(self, index: _Optional[str] = ..., pk: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., entry: _Optional[_Union[Entry, _Mapping]] = ..., metadata: _Optional[_Mapping[str, str]] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class AddScoreResponse(_message.Message):
    __slots__ = ("windows_changed", "warning")
    WINDOWS_CHANGED_FIELD_NUMBER: _ClassVar[int]
    WARNING_FIELD_NUMBER: _ClassVar[int]
    windows_changed: int
    warning: str
    def __init__(self, windows_changed: _Optional[int] = ..., warning: _Optional[str] = ...) -> None: ...

class AddEntriesRequest(_message.Message):
    __slots__ = ("index", "pk", "entries", "idempotency_key")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    PK_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    index: str
    pk: _containers.RepeatedCompositeFieldContainer[Item]
    entries: _containers.RepeatedCompositeFieldContainer[Entry]
    idempotency_key: str
    def __init__(self, index: _Optional[str] = ..., pk: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., entries: _Optional[_Iterable[_Union[Entry, _Mapping]]] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class SaveRecordRequest(_message.Message):
    __slots__ = ("index", "pk", "entries", "idempotency_key")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    PK_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    index: str
    pk: _containers.RepeatedCompositeFieldContainer[Item]
    entries: _containers.RepeatedCompositeFieldContainer[Entry]
    idempotency_key: str
    def __init__(self, index: _Optional[str] = ..., pk: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., entries: _Optional[_Iterable[_Union[Entry, _Mapping]]] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class WriteResponse(_message.Message):
    __slots__ = ("windows_changed", "warning")
    WINDOWS_CHANGED_FIELD_NUMBER: _ClassVar[int]
    WARNING_FIELD_NUMBER: _ClassVar[int]
    windows_changed: int
    warning: str
    def __init__(self, windows_changed: _Optional[int] = ..., warning: _Optional[str] = ...) -> None: ...

class DeleteRecordRequest(_message.Message):
    __slots__ = ("index", "pk", "idempotency_key")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    PK_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    index: str
    pk: _containers.RepeatedCompositeFieldContainer[Item]
    idempotency_key: str
    def __init__(self, index: _Optional[str] = ..., pk: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class DeleteRecordResponse(_message.Message):
    __slots__ = ("existed",)
    EXISTED_FIELD_NUMBER: _ClassVar[int]
    existed: bool
    def __init__(self, existed: _Optional[bool] = ...) -> None: ...

class RecordEntries(_message.Message):
    __slots__ = ("pk", "entries")
    PK_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    pk: _containers.RepeatedCompositeFieldContainer[Item]
    entries: _containers.RepeatedCompositeFieldContainer[Entry]
    def __init__(self, pk: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., entries: _Optional[_Iterable[_Union[Entry, _Mapping]]] = ...) -> None: ...

class WriteBatchRequest(_message.Message):
    __slots__ = ("index", "records", "replace", "idempotency_key")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    REPLACE_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    index: str
    records: _containers.RepeatedCompositeFieldContainer[RecordEntries]
    replace: bool
    idempotency_key: str
    def __init__(self, index: _Optional[str] = ..., records: _Optional[_Iterable[_Union[RecordEntries, _Mapping]]] = ..., replace: _Optional[bool] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class WriteBatchResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class BulkLoadRequest(_message.Message):
    __slots__ = ("index", "records", "batch_size", "rank_as_loaded", "idempotency_key")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    BATCH_SIZE_FIELD_NUMBER: _ClassVar[int]
    RANK_AS_LOADED_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    index: str
    records: _containers.RepeatedCompositeFieldContainer[RecordEntries]
    batch_size: int
    rank_as_loaded: bool
    idempotency_key: str
    def __init__(self, index: _Optional[str] = ..., records: _Optional[_Iterable[_Union[RecordEntries, _Mapping]]] = ..., batch_size: _Optional[int] = ..., rank_as_loaded: _Optional[bool] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class BulkLoadResponse(_message.Message):
    __slots__ = ("records_written",)
    RECORDS_WRITTEN_FIELD_NUMBER: _ClassVar[int]
    records_written: int
    def __init__(self, records_written: _Optional[int] = ...) -> None: ...

class SetMetadataRequest(_message.Message):
    __slots__ = ("index", "pk", "metadata", "merge", "remove", "idempotency_key")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    INDEX_FIELD_NUMBER: _ClassVar[int]
    PK_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    MERGE_FIELD_NUMBER: _ClassVar[int]
    REMOVE_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    index: str
    pk: _containers.RepeatedCompositeFieldContainer[Item]
    metadata: _containers.ScalarMap[str, str]
    merge: bool
    remove: _containers.RepeatedScalarFieldContainer[str]
    idempotency_key: str
    def __init__(self, index: _Optional[str] = ..., pk: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., metadata: _Optional[_Mapping[str, str]] = ..., merge: _Optional[bool] = ..., remove: _Optional[_Iterable[str]] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class MetadataRequest(_message.Message):
    __slots__ = ("index", "pk")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    PK_FIELD_NUMBER: _ClassVar[int]
    index: str
    pk: _containers.RepeatedCompositeFieldContainer[Item]
    def __init__(self, index: _Optional[str] = ..., pk: _Optional[_Iterable[_Union[Item, _Mapping]]] = ...) -> None: ...

class MetadataResponse(_message.Message):
    __slots__ = ("exists", "metadata")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    EXISTS_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    exists: bool
    metadata: _containers.ScalarMap[str, str]
    def __init__(self, exists: _Optional[bool] = ..., metadata: _Optional[_Mapping[str, str]] = ...) -> None: ...

class LoadProgress(_message.Message):
    __slots__ = ("records_saved",)
    RECORDS_SAVED_FIELD_NUMBER: _ClassVar[int]
    records_saved: int
    def __init__(self, records_saved: _Optional[int] = ...) -> None: ...

class RankRequest(_message.Message):
    __slots__ = ("index", "pk", "window", "group", "mode")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    PK_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    index: str
    pk: _containers.RepeatedCompositeFieldContainer[Item]
    window: WindowSelector
    group: _containers.RepeatedCompositeFieldContainer[Item]
    mode: RankMode
    def __init__(self, index: _Optional[str] = ..., pk: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., window: _Optional[_Union[WindowSelector, _Mapping]] = ..., group: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., mode: _Optional[_Union[RankMode, str]] = ...) -> None: ...

class RankResponse(_message.Message):
    __slots__ = ("rank",)
    RANK_FIELD_NUMBER: _ClassVar[int]
    rank: int
    def __init__(self, rank: _Optional[int] = ...) -> None: ...

class RankAndEntryResponse(_message.Message):
    __slots__ = ("entry", "window")
    ENTRY_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    entry: RankedEntry
    window: Window
    def __init__(self, entry: _Optional[_Union[RankedEntry, _Mapping]] = ..., window: _Optional[_Union[Window, _Mapping]] = ...) -> None: ...

class AroundMeRequest(_message.Message):
    __slots__ = ("index", "pk", "window", "group", "mode", "above", "below", "if_absent")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    PK_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    ABOVE_FIELD_NUMBER: _ClassVar[int]
    BELOW_FIELD_NUMBER: _ClassVar[int]
    IF_ABSENT_FIELD_NUMBER: _ClassVar[int]
    index: str
    pk: _containers.RepeatedCompositeFieldContainer[Item]
    window: WindowSelector
    group: _containers.RepeatedCompositeFieldContainer[Item]
    mode: RankMode
    above: int
    below: int
    if_absent: IfAbsent
    def __init__(self, index: _Optional[str] = ..., pk: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., window: _Optional[_Union[WindowSelector, _Mapping]] = ..., group: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., mode: _Optional[_Union[RankMode, str]] = ..., above: _Optional[int] = ..., below: _Optional[int] = ..., if_absent: _Optional[_Union[IfAbsent, str]] = ...) -> None: ...

class TopRequest(_message.Message):
    __slots__ = ("index", "window", "group", "mode", "n")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    N_FIELD_NUMBER: _ClassVar[int]
    index: str
    window: WindowSelector
    group: _containers.RepeatedCompositeFieldContainer[Item]
    mode: RankMode
    n: int
    def __init__(self, index: _Optional[str] = ..., window: _Optional[_Union[WindowSelector, _Mapping]] = ..., group: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., mode: _Optional[_Union[RankMode, str]] = ..., n: _Optional[int] = ...) -> None: ...

class EntriesResponse(_message.Message):
    __slots__ = ("entries", "window")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[RankedEntry]
    window: Window
    def __init__(self, entries: _Optional[_Iterable[_Union[RankedEntry, _Mapping]]] = ..., window: _Optional[_Union[Window, _Mapping]] = ...) -> None: ...

class CountRequest(_message.Message):
    __slots__ = ("index", "window", "group")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    index: str
    window: WindowSelector
    group: _containers.RepeatedCompositeFieldContainer[Item]
    def __init__(self, index: _Optional[str] = ..., window: _Optional[_Union[WindowSelector, _Mapping]] = ..., group: _Optional[_Iterable[_Union[Item, _Mapping]]] = ...) -> None: ...

class CountResponse(_message.Message):
    __slots__ = ("count", "window")
    COUNT_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    count: int
    window: Window
    def __init__(self, count: _Optional[int] = ..., window: _Optional[_Union[Window, _Mapping]] = ...) -> None: ...

class ScoreForRankRequest(_message.Message):
    __slots__ = ("index", "window", "group", "rank")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    index: str
    window: WindowSelector
    group: _containers.RepeatedCompositeFieldContainer[Item]
    rank: int
    def __init__(self, index: _Optional[str] = ..., window: _Optional[_Union[WindowSelector, _Mapping]] = ..., group: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., rank: _Optional[int] = ...) -> None: ...

class ScoreForRankResponse(_message.Message):
    __slots__ = ("score",)
    SCORE_FIELD_NUMBER: _ClassVar[int]
    score: Score
    def __init__(self, score: _Optional[_Union[Score, _Mapping]] = ...) -> None: ...

class RankForScoreRequest(_message.Message):
    __slots__ = ("index", "window", "group", "score", "key_timestamp", "key_context")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    KEY_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    KEY_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    index: str
    window: WindowSelector
    group: _containers.RepeatedCompositeFieldContainer[Item]
    score: Score
    key_timestamp: int
    key_context: _containers.RepeatedCompositeFieldContainer[Item]
    def __init__(self, index: _Optional[str] = ..., window: _Optional[_Union[WindowSelector, _Mapping]] = ..., group: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., score: _Optional[_Union[Score, _Mapping]] = ..., key_timestamp: _Optional[int] = ..., key_context: _Optional[_Iterable[_Union[Item, _Mapping]]] = ...) -> None: ...

class ScanRequest(_message.Message):
    __slots__ = ("index", "type", "window", "group", "low", "high", "low_exclusive", "high_exclusive", "reverse", "limit", "continuation", "mode")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    LOW_FIELD_NUMBER: _ClassVar[int]
    HIGH_FIELD_NUMBER: _ClassVar[int]
    LOW_EXCLUSIVE_FIELD_NUMBER: _ClassVar[int]
    HIGH_EXCLUSIVE_FIELD_NUMBER: _ClassVar[int]
    REVERSE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    CONTINUATION_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    index: str
    type: ScanType
    window: WindowSelector
    group: _containers.RepeatedCompositeFieldContainer[Item]
    low: Score
    high: Score
    low_exclusive: bool
    high_exclusive: bool
    reverse: bool
    limit: int
    continuation: bytes
    mode: RankMode
    def __init__(self, index: _Optional[str] = ..., type: _Optional[_Union[ScanType, str]] = ..., window: _Optional[_Union[WindowSelector, _Mapping]] = ..., group: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., low: _Optional[_Union[Score, _Mapping]] = ..., high: _Optional[_Union[Score, _Mapping]] = ..., low_exclusive: _Optional[bool] = ..., high_exclusive: _Optional[bool] = ..., reverse: _Optional[bool] = ..., limit: _Optional[int] = ..., continuation: _Optional[bytes] = ..., mode: _Optional[_Union[RankMode, str]] = ...) -> None: ...

class ScanResponse(_message.Message):
    __slots__ = ("entries", "continuation")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    CONTINUATION_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[RankedEntry]
    continuation: bytes
    def __init__(self, entries: _Optional[_Iterable[_Union[RankedEntry, _Mapping]]] = ..., continuation: _Optional[bytes] = ...) -> None: ...

class RecordKey(_message.Message):
    __slots__ = ("pk",)
    PK_FIELD_NUMBER: _ClassVar[int]
    pk: _containers.RepeatedCompositeFieldContainer[Item]
    def __init__(self, pk: _Optional[_Iterable[_Union[Item, _Mapping]]] = ...) -> None: ...

class RanksRequest(_message.Message):
    __slots__ = ("index", "records", "window", "group", "mode")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    index: str
    records: _containers.RepeatedCompositeFieldContainer[RecordKey]
    window: WindowSelector
    group: _containers.RepeatedCompositeFieldContainer[Item]
    mode: RankMode
    def __init__(self, index: _Optional[str] = ..., records: _Optional[_Iterable[_Union[RecordKey, _Mapping]]] = ..., window: _Optional[_Union[WindowSelector, _Mapping]] = ..., group: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., mode: _Optional[_Union[RankMode, str]] = ...) -> None: ...

class RankSlot(_message.Message):
    __slots__ = ("entry",)
    ENTRY_FIELD_NUMBER: _ClassVar[int]
    entry: RankedEntry
    def __init__(self, entry: _Optional[_Union[RankedEntry, _Mapping]] = ...) -> None: ...

class RanksResponse(_message.Message):
    __slots__ = ("ranks",)
    RANKS_FIELD_NUMBER: _ClassVar[int]
    ranks: _containers.RepeatedCompositeFieldContainer[RankSlot]
    def __init__(self, ranks: _Optional[_Iterable[_Union[RankSlot, _Mapping]]] = ...) -> None: ...

class PageRequest(_message.Message):
    __slots__ = ("index", "window", "group", "mode", "page", "size")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    index: str
    window: WindowSelector
    group: _containers.RepeatedCompositeFieldContainer[Item]
    mode: RankMode
    page: int
    size: int
    def __init__(self, index: _Optional[str] = ..., window: _Optional[_Union[WindowSelector, _Mapping]] = ..., group: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., mode: _Optional[_Union[RankMode, str]] = ..., page: _Optional[int] = ..., size: _Optional[int] = ...) -> None: ...

class PageResponse(_message.Message):
    __slots__ = ("entries", "page", "size", "total", "pages", "window")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    PAGES_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[RankedEntry]
    page: int
    size: int
    total: int
    pages: int
    window: Window
    def __init__(self, entries: _Optional[_Iterable[_Union[RankedEntry, _Mapping]]] = ..., page: _Optional[int] = ..., size: _Optional[int] = ..., total: _Optional[int] = ..., pages: _Optional[int] = ..., window: _Optional[_Union[Window, _Mapping]] = ...) -> None: ...

class PercentileRequest(_message.Message):
    __slots__ = ("index", "pk", "window", "group")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    PK_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    index: str
    pk: _containers.RepeatedCompositeFieldContainer[Item]
    window: WindowSelector
    group: _containers.RepeatedCompositeFieldContainer[Item]
    def __init__(self, index: _Optional[str] = ..., pk: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., window: _Optional[_Union[WindowSelector, _Mapping]] = ..., group: _Optional[_Iterable[_Union[Item, _Mapping]]] = ...) -> None: ...

class PercentileResponse(_message.Message):
    __slots__ = ("percentile",)
    PERCENTILE_FIELD_NUMBER: _ClassVar[int]
    percentile: float
    def __init__(self, percentile: _Optional[float] = ...) -> None: ...

class ScoreForPercentileRequest(_message.Message):
    __slots__ = ("index", "window", "group", "percentile")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    PERCENTILE_FIELD_NUMBER: _ClassVar[int]
    index: str
    window: WindowSelector
    group: _containers.RepeatedCompositeFieldContainer[Item]
    percentile: float
    def __init__(self, index: _Optional[str] = ..., window: _Optional[_Union[WindowSelector, _Mapping]] = ..., group: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., percentile: _Optional[float] = ...) -> None: ...

class MovementResponse(_message.Message):
    __slots__ = ("window", "entry", "previous_window", "previous_entry", "change")
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    ENTRY_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_WINDOW_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_ENTRY_FIELD_NUMBER: _ClassVar[int]
    CHANGE_FIELD_NUMBER: _ClassVar[int]
    window: Window
    entry: RankedEntry
    previous_window: Window
    previous_entry: RankedEntry
    change: int
    def __init__(self, window: _Optional[_Union[Window, _Mapping]] = ..., entry: _Optional[_Union[RankedEntry, _Mapping]] = ..., previous_window: _Optional[_Union[Window, _Mapping]] = ..., previous_entry: _Optional[_Union[RankedEntry, _Mapping]] = ..., change: _Optional[int] = ...) -> None: ...

class RankHistoryRequest(_message.Message):
    __slots__ = ("index", "pk", "window_type", "until", "count", "group", "mode")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    PK_FIELD_NUMBER: _ClassVar[int]
    WINDOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    UNTIL_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    index: str
    pk: _containers.RepeatedCompositeFieldContainer[Item]
    window_type: int
    until: int
    count: int
    group: _containers.RepeatedCompositeFieldContainer[Item]
    mode: RankMode
    def __init__(self, index: _Optional[str] = ..., pk: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., window_type: _Optional[int] = ..., until: _Optional[int] = ..., count: _Optional[int] = ..., group: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., mode: _Optional[_Union[RankMode, str]] = ...) -> None: ...

class HistoryRow(_message.Message):
    __slots__ = ("window", "entry")
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    ENTRY_FIELD_NUMBER: _ClassVar[int]
    window: Window
    entry: RankedEntry
    def __init__(self, window: _Optional[_Union[Window, _Mapping]] = ..., entry: _Optional[_Union[RankedEntry, _Mapping]] = ...) -> None: ...

class RankHistoryResponse(_message.Message):
    __slots__ = ("windows", "best")
    WINDOWS_FIELD_NUMBER: _ClassVar[int]
    BEST_FIELD_NUMBER: _ClassVar[int]
    windows: _containers.RepeatedCompositeFieldContainer[HistoryRow]
    best: HistoryRow
    def __init__(self, windows: _Optional[_Iterable[_Union[HistoryRow, _Mapping]]] = ..., best: _Optional[_Union[HistoryRow, _Mapping]] = ...) -> None: ...

class ScoreTrimRequest(_message.Message):
    __slots__ = ("index", "entries")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    index: str
    entries: _containers.RepeatedCompositeFieldContainer[Entry]
    def __init__(self, index: _Optional[str] = ..., entries: _Optional[_Iterable[_Union[Entry, _Mapping]]] = ...) -> None: ...

class ScoreTrimResponse(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[Entry]
    def __init__(self, entries: _Optional[_Iterable[_Union[Entry, _Mapping]]] = ...) -> None: ...

class HideRecordRequest(_message.Message):
    __slots__ = ("index", "pk", "reason", "idempotency_key")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    PK_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    index: str
    pk: _containers.RepeatedCompositeFieldContainer[Item]
    reason: str
    idempotency_key: str
    def __init__(self, index: _Optional[str] = ..., pk: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., reason: _Optional[str] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class RestoreRecordRequest(_message.Message):
    __slots__ = ("index", "pk", "idempotency_key")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    PK_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    index: str
    pk: _containers.RepeatedCompositeFieldContainer[Item]
    idempotency_key: str
    def __init__(self, index: _Optional[str] = ..., pk: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class HiddenChangeResponse(_message.Message):
    __slots__ = ("changed",)
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    changed: bool
    def __init__(self, changed: _Optional[bool] = ...) -> None: ...

class HiddenRecord(_message.Message):
    __slots__ = ("pk", "actor", "hidden_at", "reason")
    PK_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    HIDDEN_AT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    pk: _containers.RepeatedCompositeFieldContainer[Item]
    actor: str
    hidden_at: int
    reason: str
    def __init__(self, pk: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., actor: _Optional[str] = ..., hidden_at: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class ListHiddenRecordsRequest(_message.Message):
    __slots__ = ("index", "limit", "continuation")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    CONTINUATION_FIELD_NUMBER: _ClassVar[int]
    index: str
    limit: int
    continuation: bytes
    def __init__(self, index: _Optional[str] = ..., limit: _Optional[int] = ..., continuation: _Optional[bytes] = ...) -> None: ...

class ListHiddenRecordsResponse(_message.Message):
    __slots__ = ("records", "continuation")
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    CONTINUATION_FIELD_NUMBER: _ClassVar[int]
    records: _containers.RepeatedCompositeFieldContainer[HiddenRecord]
    continuation: bytes
    def __init__(self, records: _Optional[_Iterable[_Union[HiddenRecord, _Mapping]]] = ..., continuation: _Optional[bytes] = ...) -> None: ...

class ScoreRules(_message.Message):
    __slots__ = ("min_score", "max_score", "max_per_window", "max_per_minute")
    MIN_SCORE_FIELD_NUMBER: _ClassVar[int]
    MAX_SCORE_FIELD_NUMBER: _ClassVar[int]
    MAX_PER_WINDOW_FIELD_NUMBER: _ClassVar[int]
    MAX_PER_MINUTE_FIELD_NUMBER: _ClassVar[int]
    min_score: Score
    max_score: Score
    max_per_window: int
    max_per_minute: int
    def __init__(self, min_score: _Optional[_Union[Score, _Mapping]] = ..., max_score: _Optional[_Union[Score, _Mapping]] = ..., max_per_window: _Optional[int] = ..., max_per_minute: _Optional[int] = ...) -> None: ...

class GetScoreRulesRequest(_message.Message):
    __slots__ = ("index",)
    INDEX_FIELD_NUMBER: _ClassVar[int]
    index: str
    def __init__(self, index: _Optional[str] = ...) -> None: ...

class SetScoreRulesRequest(_message.Message):
    __slots__ = ("index", "rules")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    index: str
    rules: ScoreRules
    def __init__(self, index: _Optional[str] = ..., rules: _Optional[_Union[ScoreRules, _Mapping]] = ...) -> None: ...

class ScoreRulesResponse(_message.Message):
    __slots__ = ("rules",)
    RULES_FIELD_NUMBER: _ClassVar[int]
    rules: ScoreRules
    def __init__(self, rules: _Optional[_Union[ScoreRules, _Mapping]] = ...) -> None: ...

class DeleteRecordsRequest(_message.Message):
    __slots__ = ("index", "group", "all_records", "max_records", "continuation", "idempotency_key")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    ALL_RECORDS_FIELD_NUMBER: _ClassVar[int]
    MAX_RECORDS_FIELD_NUMBER: _ClassVar[int]
    CONTINUATION_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    index: str
    group: _containers.RepeatedCompositeFieldContainer[Item]
    all_records: bool
    max_records: int
    continuation: bytes
    idempotency_key: str
    def __init__(self, index: _Optional[str] = ..., group: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., all_records: _Optional[bool] = ..., max_records: _Optional[int] = ..., continuation: _Optional[bytes] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class DeleteRecordsResponse(_message.Message):
    __slots__ = ("done", "records_changed", "records_deleted", "entries_deleted", "continuation")
    DONE_FIELD_NUMBER: _ClassVar[int]
    RECORDS_CHANGED_FIELD_NUMBER: _ClassVar[int]
    RECORDS_DELETED_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_DELETED_FIELD_NUMBER: _ClassVar[int]
    CONTINUATION_FIELD_NUMBER: _ClassVar[int]
    done: bool
    records_changed: int
    records_deleted: int
    entries_deleted: int
    continuation: bytes
    def __init__(self, done: _Optional[bool] = ..., records_changed: _Optional[int] = ..., records_deleted: _Optional[int] = ..., entries_deleted: _Optional[int] = ..., continuation: _Optional[bytes] = ...) -> None: ...

class DumpRequest(_message.Message):
    __slots__ = ("index", "keep_paused", "moved_to", "catch_up_seconds")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    KEEP_PAUSED_FIELD_NUMBER: _ClassVar[int]
    MOVED_TO_FIELD_NUMBER: _ClassVar[int]
    CATCH_UP_SECONDS_FIELD_NUMBER: _ClassVar[int]
    index: str
    keep_paused: bool
    moved_to: str
    catch_up_seconds: float
    def __init__(self, index: _Optional[str] = ..., keep_paused: _Optional[bool] = ..., moved_to: _Optional[str] = ..., catch_up_seconds: _Optional[float] = ...) -> None: ...

class DumpHeader(_message.Message):
    __slots__ = ("format_version", "index", "options", "maintenance", "created_at", "source", "records_estimate", "index_format")
    FORMAT_VERSION_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    MAINTENANCE_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    RECORDS_ESTIMATE_FIELD_NUMBER: _ClassVar[int]
    INDEX_FORMAT_FIELD_NUMBER: _ClassVar[int]
    format_version: int
    index: str
    options: IndexOptions
    maintenance: MaintenancePolicy
    created_at: int
    source: str
    records_estimate: int
    index_format: int
    def __init__(self, format_version: _Optional[int] = ..., index: _Optional[str] = ..., options: _Optional[_Union[IndexOptions, _Mapping]] = ..., maintenance: _Optional[_Union[MaintenancePolicy, _Mapping]] = ..., created_at: _Optional[int] = ..., source: _Optional[str] = ..., records_estimate: _Optional[int] = ..., index_format: _Optional[int] = ...) -> None: ...

class DumpRows(_message.Message):
    __slots__ = ("keys", "values")
    KEYS_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    keys: _containers.RepeatedScalarFieldContainer[bytes]
    values: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, keys: _Optional[_Iterable[bytes]] = ..., values: _Optional[_Iterable[bytes]] = ...) -> None: ...

class DumpUnit(_message.Message):
    __slots__ = ("unit", "rows", "more")
    UNIT_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    MORE_FIELD_NUMBER: _ClassVar[int]
    unit: bytes
    rows: DumpRows
    more: bool
    def __init__(self, unit: _Optional[bytes] = ..., rows: _Optional[_Union[DumpRows, _Mapping]] = ..., more: _Optional[bool] = ...) -> None: ...

class DumpChanges(_message.Message):
    __slots__ = ("units",)
    UNITS_FIELD_NUMBER: _ClassVar[int]
    units: _containers.RepeatedCompositeFieldContainer[DumpUnit]
    def __init__(self, units: _Optional[_Iterable[_Union[DumpUnit, _Mapping]]] = ...) -> None: ...

class DumpCopied(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DumpProgress(_message.Message):
    __slots__ = ("phase", "rows", "records", "records_estimate", "changes")
    PHASE_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    RECORDS_ESTIMATE_FIELD_NUMBER: _ClassVar[int]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    phase: str
    rows: int
    records: int
    records_estimate: int
    changes: int
    def __init__(self, phase: _Optional[str] = ..., rows: _Optional[int] = ..., records: _Optional[int] = ..., records_estimate: _Optional[int] = ..., changes: _Optional[int] = ...) -> None: ...

class DumpEnd(_message.Message):
    __slots__ = ("sha256", "parts", "rows", "records", "changes", "pause_seconds")
    SHA256_FIELD_NUMBER: _ClassVar[int]
    PARTS_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    PAUSE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    sha256: bytes
    parts: int
    rows: int
    records: int
    changes: int
    pause_seconds: float
    def __init__(self, sha256: _Optional[bytes] = ..., parts: _Optional[int] = ..., rows: _Optional[int] = ..., records: _Optional[int] = ..., changes: _Optional[int] = ..., pause_seconds: _Optional[float] = ...) -> None: ...

class DumpPart(_message.Message):
    __slots__ = ("header", "rows", "copied", "changes", "state", "progress", "end")
    HEADER_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    COPIED_FIELD_NUMBER: _ClassVar[int]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    header: DumpHeader
    rows: DumpRows
    copied: DumpCopied
    changes: DumpChanges
    state: DumpRows
    progress: DumpProgress
    end: DumpEnd
    def __init__(self, header: _Optional[_Union[DumpHeader, _Mapping]] = ..., rows: _Optional[_Union[DumpRows, _Mapping]] = ..., copied: _Optional[_Union[DumpCopied, _Mapping]] = ..., changes: _Optional[_Union[DumpChanges, _Mapping]] = ..., state: _Optional[_Union[DumpRows, _Mapping]] = ..., progress: _Optional[_Union[DumpProgress, _Mapping]] = ..., end: _Optional[_Union[DumpEnd, _Mapping]] = ...) -> None: ...

class RestoreRequest(_message.Message):
    __slots__ = ("index", "part")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    PART_FIELD_NUMBER: _ClassVar[int]
    index: str
    part: DumpPart
    def __init__(self, index: _Optional[str] = ..., part: _Optional[_Union[DumpPart, _Mapping]] = ...) -> None: ...

class RestoreProgress(_message.Message):
    __slots__ = ("phase", "rows", "changes", "entries_ranked", "index")
    PHASE_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_RANKED_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    phase: str
    rows: int
    changes: int
    entries_ranked: int
    index: str
    def __init__(self, phase: _Optional[str] = ..., rows: _Optional[int] = ..., changes: _Optional[int] = ..., entries_ranked: _Optional[int] = ..., index: _Optional[str] = ...) -> None: ...

class SetWritesPausedRequest(_message.Message):
    __slots__ = ("index", "paused", "reason")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    index: str
    paused: bool
    reason: str
    def __init__(self, index: _Optional[str] = ..., paused: _Optional[bool] = ..., reason: _Optional[str] = ...) -> None: ...

class SetWritesPausedResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

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

class ListAuditEventsRequest(_message.Message):
    __slots__ = ("index", "action", "since_us", "until_us", "limit", "continuation", "newest_first")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    SINCE_US_FIELD_NUMBER: _ClassVar[int]
    UNTIL_US_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    CONTINUATION_FIELD_NUMBER: _ClassVar[int]
    NEWEST_FIRST_FIELD_NUMBER: _ClassVar[int]
    index: str
    action: str
    since_us: int
    until_us: int
    limit: int
    continuation: bytes
    newest_first: bool
    def __init__(self, index: _Optional[str] = ..., action: _Optional[str] = ..., since_us: _Optional[int] = ..., until_us: _Optional[int] = ..., limit: _Optional[int] = ..., continuation: _Optional[bytes] = ..., newest_first: _Optional[bool] = ...) -> None: ...

class ListAuditEventsResponse(_message.Message):
    __slots__ = ("events", "continuation", "retention")
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    CONTINUATION_FIELD_NUMBER: _ClassVar[int]
    RETENTION_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[AuditEvent]
    continuation: bytes
    retention: int
    def __init__(self, events: _Optional[_Iterable[_Union[AuditEvent, _Mapping]]] = ..., continuation: _Optional[bytes] = ..., retention: _Optional[int] = ...) -> None: ...

class SetAuditRetentionRequest(_message.Message):
    __slots__ = ("retention",)
    RETENTION_FIELD_NUMBER: _ClassVar[int]
    retention: int
    def __init__(self, retention: _Optional[int] = ...) -> None: ...

class SetAuditRetentionResponse(_message.Message):
    __slots__ = ("retention",)
    RETENTION_FIELD_NUMBER: _ClassVar[int]
    retention: int
    def __init__(self, retention: _Optional[int] = ...) -> None: ...

class ExpireAuditEventsRequest(_message.Message):
    __slots__ = ("before_us", "max_events")
    BEFORE_US_FIELD_NUMBER: _ClassVar[int]
    MAX_EVENTS_FIELD_NUMBER: _ClassVar[int]
    before_us: int
    max_events: int
    def __init__(self, before_us: _Optional[int] = ..., max_events: _Optional[int] = ...) -> None: ...

class ExpireAuditEventsResponse(_message.Message):
    __slots__ = ("expired", "done")
    EXPIRED_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    expired: int
    done: bool
    def __init__(self, expired: _Optional[int] = ..., done: _Optional[bool] = ...) -> None: ...

class ListGroupsRequest(_message.Message):
    __slots__ = ("index", "window", "limit", "continuation")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    CONTINUATION_FIELD_NUMBER: _ClassVar[int]
    index: str
    window: WindowSelector
    limit: int
    continuation: bytes
    def __init__(self, index: _Optional[str] = ..., window: _Optional[_Union[WindowSelector, _Mapping]] = ..., limit: _Optional[int] = ..., continuation: _Optional[bytes] = ...) -> None: ...

class GroupKey(_message.Message):
    __slots__ = ("group",)
    GROUP_FIELD_NUMBER: _ClassVar[int]
    group: _containers.RepeatedCompositeFieldContainer[Item]
    def __init__(self, group: _Optional[_Iterable[_Union[Item, _Mapping]]] = ...) -> None: ...

class ListGroupsResponse(_message.Message):
    __slots__ = ("groups", "continuation", "window")
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    CONTINUATION_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    groups: _containers.RepeatedCompositeFieldContainer[GroupKey]
    continuation: bytes
    window: Window
    def __init__(self, groups: _Optional[_Iterable[_Union[GroupKey, _Mapping]]] = ..., continuation: _Optional[bytes] = ..., window: _Optional[_Union[Window, _Mapping]] = ...) -> None: ...

class Webhook(_message.Message):
    __slots__ = ("id", "index", "url", "window_types", "top", "created", "pending", "last_error", "secret")
    ID_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    WINDOW_TYPES_FIELD_NUMBER: _ClassVar[int]
    TOP_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    id: str
    index: str
    url: str
    window_types: _containers.RepeatedScalarFieldContainer[int]
    top: int
    created: int
    pending: int
    last_error: str
    secret: str
    def __init__(self, id: _Optional[str] = ..., index: _Optional[str] = ..., url: _Optional[str] = ..., window_types: _Optional[_Iterable[int]] = ..., top: _Optional[int] = ..., created: _Optional[int] = ..., pending: _Optional[int] = ..., last_error: _Optional[str] = ..., secret: _Optional[str] = ...) -> None: ...

class AddWebhookRequest(_message.Message):
    __slots__ = ("index", "url", "secret", "window_types", "top")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    WINDOW_TYPES_FIELD_NUMBER: _ClassVar[int]
    TOP_FIELD_NUMBER: _ClassVar[int]
    index: str
    url: str
    secret: str
    window_types: _containers.RepeatedScalarFieldContainer[int]
    top: int
    def __init__(self, index: _Optional[str] = ..., url: _Optional[str] = ..., secret: _Optional[str] = ..., window_types: _Optional[_Iterable[int]] = ..., top: _Optional[int] = ...) -> None: ...

class AddWebhookResponse(_message.Message):
    __slots__ = ("webhook",)
    WEBHOOK_FIELD_NUMBER: _ClassVar[int]
    webhook: Webhook
    def __init__(self, webhook: _Optional[_Union[Webhook, _Mapping]] = ...) -> None: ...

class ListWebhooksRequest(_message.Message):
    __slots__ = ("index",)
    INDEX_FIELD_NUMBER: _ClassVar[int]
    index: str
    def __init__(self, index: _Optional[str] = ...) -> None: ...

class ListWebhooksResponse(_message.Message):
    __slots__ = ("webhooks",)
    WEBHOOKS_FIELD_NUMBER: _ClassVar[int]
    webhooks: _containers.RepeatedCompositeFieldContainer[Webhook]
    def __init__(self, webhooks: _Optional[_Iterable[_Union[Webhook, _Mapping]]] = ...) -> None: ...

class DeleteWebhookRequest(_message.Message):
    __slots__ = ("index", "id")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    index: str
    id: str
    def __init__(self, index: _Optional[str] = ..., id: _Optional[str] = ...) -> None: ...

class DeleteWebhookResponse(_message.Message):
    __slots__ = ("deleted", "events_dropped")
    DELETED_FIELD_NUMBER: _ClassVar[int]
    EVENTS_DROPPED_FIELD_NUMBER: _ClassVar[int]
    deleted: bool
    events_dropped: int
    def __init__(self, deleted: _Optional[bool] = ..., events_dropped: _Optional[int] = ...) -> None: ...

class NoticeWindowEndsRequest(_message.Message):
    __slots__ = ("index", "now")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    NOW_FIELD_NUMBER: _ClassVar[int]
    index: str
    now: int
    def __init__(self, index: _Optional[str] = ..., now: _Optional[int] = ...) -> None: ...

class NoticeWindowEndsResponse(_message.Message):
    __slots__ = ("windows", "events")
    WINDOWS_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    windows: _containers.RepeatedCompositeFieldContainer[Window]
    events: int
    def __init__(self, windows: _Optional[_Iterable[_Union[Window, _Mapping]]] = ..., events: _Optional[int] = ...) -> None: ...

class WatchWindowEndsRequest(_message.Message):
    __slots__ = ("index", "after", "top")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    TOP_FIELD_NUMBER: _ClassVar[int]
    index: str
    after: int
    top: int
    def __init__(self, index: _Optional[str] = ..., after: _Optional[int] = ..., top: _Optional[int] = ...) -> None: ...

class WindowEndEvent(_message.Message):
    __slots__ = ("id", "index", "window", "count", "entries", "noticed_at", "cursor")
    ID_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    NOTICED_AT_FIELD_NUMBER: _ClassVar[int]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    id: str
    index: str
    window: Window
    count: int
    entries: _containers.RepeatedCompositeFieldContainer[RankedEntry]
    noticed_at: int
    cursor: int
    def __init__(self, id: _Optional[str] = ..., index: _Optional[str] = ..., window: _Optional[_Union[Window, _Mapping]] = ..., count: _Optional[int] = ..., entries: _Optional[_Iterable[_Union[RankedEntry, _Mapping]]] = ..., noticed_at: _Optional[int] = ..., cursor: _Optional[int] = ...) -> None: ...

class CohortRequest(_message.Message):
    __slots__ = ("index", "window", "pk", "tier", "cohort", "mode", "page", "size", "above", "below")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    PK_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    COHORT_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    ABOVE_FIELD_NUMBER: _ClassVar[int]
    BELOW_FIELD_NUMBER: _ClassVar[int]
    index: str
    window: WindowSelector
    pk: _containers.RepeatedCompositeFieldContainer[Item]
    tier: int
    cohort: int
    mode: RankMode
    page: int
    size: int
    above: int
    below: int
    def __init__(self, index: _Optional[str] = ..., window: _Optional[_Union[WindowSelector, _Mapping]] = ..., pk: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., tier: _Optional[int] = ..., cohort: _Optional[int] = ..., mode: _Optional[_Union[RankMode, str]] = ..., page: _Optional[int] = ..., size: _Optional[int] = ..., above: _Optional[int] = ..., below: _Optional[int] = ...) -> None: ...

class CohortResponse(_message.Message):
    __slots__ = ("tier", "cohort", "entries", "total", "entry", "window")
    TIER_FIELD_NUMBER: _ClassVar[int]
    COHORT_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    ENTRY_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    tier: int
    cohort: int
    entries: _containers.RepeatedCompositeFieldContainer[RankedEntry]
    total: int
    entry: RankedEntry
    window: Window
    def __init__(self, tier: _Optional[int] = ..., cohort: _Optional[int] = ..., entries: _Optional[_Iterable[_Union[RankedEntry, _Mapping]]] = ..., total: _Optional[int] = ..., entry: _Optional[_Union[RankedEntry, _Mapping]] = ..., window: _Optional[_Union[Window, _Mapping]] = ...) -> None: ...
