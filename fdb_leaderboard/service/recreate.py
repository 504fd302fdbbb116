"""Creating an index that exists already: what differs, and the boards asked for.

An index's options (aggregation, direction, groups, columns...) are fixed when it is created:
asked again with others, the creation is refused, naming each difference and what to do.  Its
calendar boards and regular windows are its maintenance policy, which may grow: the boards asked
for that the index does not keep yet join its policy (and their current windows are added by the
caller), while a board kept otherwise (another period or time zone for the same window type), or
another timebase, horizon or retention asked for, is refused, naming the difference and the
command that changes a policy.  Asking again for what the index has changes nothing.
"""

from __future__ import annotations

import dataclasses

from ..errors import AlreadyExists
from ..index import IndexSettings
from ..index.calendar import TIMEBASES
from ..proto import index_pb2
from ..proto import service_pb2 as pb


def _shown(name: str, value: object) -> str:
    if name == "columns":
        return ",".join(value) if value else "none (one score)"  # type: ignore[arg-type]
    if name == "leagues":
        return "none" if value is None else ", ".join(f"{k} {v}" for k, v in dataclasses.asdict(value).items())
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(getattr(value, "value", value))


def settings_differences(stored: IndexSettings, asked: IndexSettings) -> list[str]:
    """Each option ``asked`` sets otherwise than ``stored``: ``aggregation BEST, not SUM``."""
    return [
        f"{field.name.replace('_', ' ')} {_shown(field.name, getattr(stored, field.name))}, "
        f"not {_shown(field.name, getattr(asked, field.name))}"
        for field in dataclasses.fields(IndexSettings)
        if getattr(stored, field.name) != getattr(asked, field.name)
    ]


def refuse_other_options(name: str, stored: IndexSettings, asked: IndexSettings) -> AlreadyExists:
    """The refusal of creating ``name`` again with options other than its own."""
    return AlreadyExists(
        f"index {name!r} exists with other options ({'; '.join(settings_differences(stored, asked))}): options "
        f"are fixed when an index is created: drop it first (`fdb-leaderboard index drop {name}`), or create "
        "the new one under another name"
    )


def _board(periods: index_pb2.MaintenancePolicy.Calendar) -> str:
    return f"{periods.period} in {periods.timezone or 'UTC'}"


def _regular(regular: index_pb2.MaintenancePolicy.Regular) -> str:
    return f"every {regular.increment} from {regular.base}, lasting {regular.duration}"


def policy_with_asked(
    name: str, stored: index_pb2.MaintenancePolicy, asked: pb.MaintenancePolicy
) -> index_pb2.MaintenancePolicy:
    """``stored`` with the boards and regular windows ``asked`` for (a creation's policy, as sent)
    that it does not keep yet; AlreadyExists naming what ``asked`` sets otherwise."""
    merged = index_pb2.MaintenancePolicy()
    merged.CopyFrom(stored)
    differences = []
    calendar = {periods.type: periods for periods in stored.calendar}
    regular = {windows.type: windows for windows in stored.windows}
    for periods in asked.calendar:
        kept = calendar.get(periods.type)
        if kept is not None and (kept.period, kept.timezone or "UTC") != (periods.period, periods.timezone or "UTC"):
            differences.append(f"window type {periods.type} is {_board(kept)}, not {_board(periods)}")  # type: ignore[arg-type]
        elif periods.type in regular:
            differences.append(
                f"window type {periods.type} is {_regular(regular[periods.type])}, not {_board(periods)}"  # type: ignore[arg-type]
            )
        elif kept is None:
            calendar[periods.type] = merged.calendar.add(
                type=periods.type, period=periods.period, timezone=periods.timezone
            )
    for windows in asked.windows:
        kept_regular = regular.get(windows.type)
        wanted = (windows.base, windows.increment, windows.duration)
        if kept_regular is not None and (kept_regular.base, kept_regular.increment, kept_regular.duration) != wanted:
            differences.append(
                f"window type {windows.type} is {_regular(kept_regular)}, not {_regular(windows)}"  # type: ignore[arg-type]
            )
        elif windows.type in calendar:
            differences.append(
                f"window type {windows.type} is {_board(calendar[windows.type])}, not {_regular(windows)}"  # type: ignore[arg-type]
            )
        elif kept_regular is None:
            regular[windows.type] = merged.windows.add(
                type=windows.type, base=windows.base, increment=windows.increment, duration=windows.duration
            )
    if asked.timebase and (asked.timebase or "seconds") != (stored.timebase or "seconds"):
        differences.append(f"its times are in {stored.timebase or 'seconds'}, not {asked.timebase}")
    scale = TIMEBASES[stored.timebase or "seconds"]
    for field in ("horizon", "certain_within", "retain"):
        wanted_length, kept_length = getattr(asked, field), getattr(stored, field)
        if wanted_length and wanted_length != kept_length:
            differences.append(
                f"its {field.replace('_', ' ')} is {kept_length / scale:g} s, not {wanted_length / scale:g} s"
            )
    if asked.idempotency_retention and asked.idempotency_retention != stored.idempotency_retention:
        differences.append(
            f"it keeps idempotency keys {stored.idempotency_retention} s, not {asked.idempotency_retention} s"
        )
    if differences:
        raise AlreadyExists(
            f"index {name!r} exists with another policy ({'; '.join(differences)}): change an index's boards and "
            f"policy with `fdb-leaderboard policy set {name} ...` (see `fdb-leaderboard policy show {name}`)"
        )
    return merged
