"""Conversions of the service's requests into the index's arguments, and of its settings (and the
stored formats' status) back."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper

from .. import formats, wire
from ..errors import InvalidArgument
from ..index import (
    CalendarPeriods,
    IndexSettings,
    Leagues,
    RankMode,
    Rebuild,
    WindowRef,
    WindowSpec,
    WindowUpdate,
    check_plan_size,
)
from ..index.calendar import TIMEBASES
from ..index.idempotency import DEFAULT_RETENTION
from ..index.upgrade import UpgradeState
from ..proto import index_pb2
from ..proto import service_pb2 as pb
from ..rankedset import HashFunction
from .upgrades import StoreStatus


def record_from_proto(record: pb.RecordEntries) -> tuple[tuple, list]:
    """A record of a batch or load as the index's (pk, entries)."""
    return wire.items_from_proto(record.pk), [wire.written_entry_from_proto(e) for e in record.entries]


def board(selector: pb.WindowSelector, group: Sequence[pb.Item] = ()) -> WindowRef:
    """The board a read names: the window its selector picks, and the group within it (none: the whole index)."""
    timestamp = selector.timestamp if selector.HasField("timestamp") else None
    return WindowRef(selector.type, timestamp, wire.items_from_proto(group))


def rank_mode(mode: int) -> RankMode:
    if mode == pb.ORDINAL:
        return RankMode.ORDINAL
    if mode == pb.COMPETITION:
        return RankMode.COMPETITION
    if mode == pb.DENSE:
        return RankMode.DENSE
    raise InvalidArgument(f"unknown rank mode {mode}: use ORDINAL (0), COMPETITION (1) or DENSE (2)")


def enum_name(enum_type: EnumTypeWrapper, number: int, field: str) -> str:
    """The name of ``number`` in a request's enum ``field``; an unknown number is refused, naming the field."""
    try:
        return enum_type.Name(number)
    except ValueError:
        raise InvalidArgument(f"{field} {number} is unknown: use one of {', '.join(enum_type.keys())}") from None


def settings_from_proto(options: pb.IndexOptions, reference_layout: bool) -> IndexSettings:
    hash_name = enum_name(pb.RankHash, options.hash_function, "hash_function")
    aggregation = enum_name(pb.Aggregation, options.aggregation, "aggregation")
    score_type = enum_name(pb.ScoreType, options.score_type, "score_type")
    if reference_layout and options.hash_function == pb.MURMUR3:
        hash_name = "JDK"  # the reference's default when none is given
    return IndexSettings(
        aggregation=aggregation,
        hash_function=HashFunction(hash_name),
        count_duplicates=options.count_duplicates if reference_layout else True,
        group_size=options.group_size,
        context_size=options.context_size,
        # Absent: high score first, the default of every API (most games rank high scores first).
        high_score_first=options.high_score_first if options.HasField("high_score_first") else True,
        score_type=score_type,
        dense_ranks=options.dense_ranks,
        columns=tuple(enum_name(pb.ColumnOrder, direction, "columns") for direction in options.columns),
        leagues=leagues_from_proto(options.leagues) if options.HasField("leagues") else None,
    )


def leagues_from_proto(message: pb.Leagues) -> Leagues:
    return Leagues(message.window_type, message.cohort_size, message.tiers, message.promote, message.demote)


def settings_to_proto(settings: IndexSettings) -> pb.IndexOptions:
    return pb.IndexOptions(
        aggregation=pb.Aggregation.Value(settings.aggregation),
        hash_function=pb.RankHash.Value(settings.hash_function.value),
        count_duplicates=settings.count_duplicates,
        group_size=settings.group_size,
        context_size=settings.context_size,
        high_score_first=settings.high_score_first,
        score_type=pb.ScoreType.Value(settings.score_type),
        dense_ranks=settings.dense_ranks,
        columns=[pb.ColumnOrder.Value(direction) for direction in settings.columns],
        leagues=pb.Leagues(**dataclasses.asdict(settings.leagues)) if settings.leagues is not None else None,
    )


# What a policy keeping windows ahead uses when it names no horizon: windows starting within
# two days are added, those within one day always (as a window file's defaults).
DEFAULT_HORIZON_DAYS = 2
DEFAULT_CERTAIN_DAYS = 1
DAY_SECONDS = 86_400


def maintenance_from_proto(policy: pb.MaintenancePolicy) -> index_pb2.MaintenancePolicy:
    timebase = policy.timebase or "seconds"
    if timebase not in TIMEBASES:
        raise InvalidArgument(f"timebase must be one of {', '.join(TIMEBASES)}, not {policy.timebase!r}")
    if policy.idempotency_retention < 0:
        raise InvalidArgument("idempotency_retention must not be negative")
    out = index_pb2.MaintenancePolicy(
        horizon=policy.horizon,
        certain_within=policy.certain_within,
        retain=policy.retain,
        timebase=policy.timebase,
        idempotency_retention=policy.idempotency_retention,
    )
    for regular in policy.windows:
        if regular.increment <= 0 or regular.duration <= 0 or regular.type == 0:
            raise InvalidArgument(
                f"maintained window type {regular.type} needs a type >= 1 and a positive increment and duration"
            )
        out.windows.add(type=regular.type, base=regular.base, increment=regular.increment, duration=regular.duration)
    for periods in policy.calendar:
        CalendarPeriods(periods.type, periods.period, periods.timezone or "UTC", timebase)  # checks it
        out.calendar.add(type=periods.type, period=periods.period, timezone=periods.timezone)
    if policy.horizon < 0 or policy.retain < 0 or policy.certain_within < 0:
        raise InvalidArgument("horizon, certain_within and retain must not be negative")
    if (out.windows or out.calendar) and out.horizon == 0:
        day = DAY_SECONDS * TIMEBASES[timebase]
        out.horizon = DEFAULT_HORIZON_DAYS * day
        out.certain_within = out.certain_within or DEFAULT_CERTAIN_DAYS * day
    check_plan_size(out.horizon, regular_windows(out), calendar_periods(out))
    return out


def policy_now(policy: index_pb2.MaintenancePolicy) -> int:
    """The server's clock in the policy's timebase: what "now" is for the index's windows."""
    return int(time.time() * TIMEBASES[policy.timebase or "seconds"])


def idempotency_retention(policy: index_pb2.MaintenancePolicy) -> int:
    """Seconds the index keeps its writes' idempotency keys."""
    return policy.idempotency_retention or DEFAULT_RETENTION


def regular_windows(policy: index_pb2.MaintenancePolicy) -> list[tuple[int, int, int, int]]:
    return [(w.type, w.base, w.increment, w.duration) for w in policy.windows]


def calendar_periods(policy: index_pb2.MaintenancePolicy) -> list[CalendarPeriods]:
    timebase = policy.timebase or "seconds"
    return [CalendarPeriods(c.type, c.period, c.timezone or "UTC", timebase) for c in policy.calendar]


def maintenance_to_proto(policy: index_pb2.MaintenancePolicy) -> pb.MaintenancePolicy:
    return pb.MaintenancePolicy(
        windows=[
            pb.RegularWindows(type=w.type, base=w.base, increment=w.increment, duration=w.duration)
            for w in policy.windows
        ],
        horizon=policy.horizon,
        certain_within=policy.certain_within,
        retain=policy.retain,
        calendar=[pb.CalendarWindows(type=c.type, period=c.period, timezone=c.timezone) for c in policy.calendar],
        timebase=policy.timebase,
        idempotency_retention=policy.idempotency_retention,
    )


def window_update_from_proto(request: pb.UpdateWindowsRequest) -> WindowUpdate:
    return WindowUpdate(
        update_timestamp=request.update_timestamp,
        high_score_first=request.high_score_first if request.HasField("high_score_first") else None,
        delete_before=request.delete_before if request.HasField("delete_before") else None,
        all_time=request.all_time,
        specs=[WindowSpec(s.type, s.base, s.increment, s.duration, s.count) for s in request.specs],
        windows=[(w.type, w.start, w.end) for w in request.windows],
        nlevels=request.nlevels or 6,
        rebuild=Rebuild[enum_name(pb.Rebuild, request.rebuild, "rebuild")],
    )


# -- stored formats (upgrades.py) ------------------------------------------------------------------


def index_format_to_proto(version: int, recorded: bool, upgrade: UpgradeState | None) -> pb.IndexFormat:
    message = pb.IndexFormat(version=version, recorded=recorded, newest=formats.NEWEST_INDEX)
    if upgrade is not None:
        message.upgrading_to = upgrade.to_format
        message.records_done = upgrade.records_done
    return message


def _format_versions(table: tuple[formats.Format, ...]) -> list[pb.FormatVersion]:
    return [
        pb.FormatVersion(
            version=entry.version,
            release=entry.release,
            read_from=entry.read_from,
            adds=entry.adds,
            upgrade=entry.upgrade,
        )
        for entry in table
    ]


def status_to_proto(status: StoreStatus) -> pb.StoreStatus:
    store = status.store
    return pb.StoreStatus(
        release=formats.RELEASE,
        format=pb.StoreFormatInfo(
            version=store.version,
            recorded=store.recorded,
            newest=formats.NEWEST_STORE,
            raised_by=store.raised_by,
            raised_at=store.raised_at,
        ),
        processes=[
            pb.ProcessInfo(
                id=process.id,
                release=process.release,
                host=process.report.host,
                pid=process.report.pid,
                address=process.report.address,
                started_at=process.report.started_at,
                seen_at=process.report.seen_at,
                live=process.live,
                store_format=process.report.store_format,
                index_format=process.report.index_format,
            )
            for process in status.processes
        ],
        indexes=[
            pb.IndexFormatInfo(
                index=index.name, format=index_format_to_proto(index.version, index.recorded, index.upgrade)
            )
            for index in status.indexes
        ],
        store_formats=_format_versions(formats.STORE_FORMATS),
        index_formats=_format_versions(formats.INDEX_FORMATS),
    )
