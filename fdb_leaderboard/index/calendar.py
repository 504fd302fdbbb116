"""Calendar periods as explicit windows: days in a time zone, ISO weeks, months.

Regular specs (base + i * increment) cannot express local days across a daylight-saving
change or months of different lengths; these helpers turn such periods into explicit
``(type, start, end)`` windows in a timebase of seconds or milliseconds since the epoch.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..errors import InvalidArgument

PERIODS = ("daily", "iso-weekly", "monthly")
TIMEBASES = {"seconds": 1, "milliseconds": 1000}


def timebase_scale(timebase: str) -> int:
    """Units per second of a timebase (seconds or milliseconds), or InvalidArgument naming it."""
    if timebase not in TIMEBASES:
        raise InvalidArgument(f"timebase must be one of {', '.join(TIMEBASES)}, not {timebase!r}")
    return TIMEBASES[timebase]


# The calendar boards an index is created with by name (``index create --daily --weekly``):
# their window types and periods.  Pages and examples read type 1 as today, 2 as this week.
BOARDS = {"daily": (1, "daily"), "weekly": (2, "iso-weekly"), "monthly": (3, "monthly")}


def board_periods(boards: Sequence[str], timezone: str = "UTC", timebase: str = "seconds") -> list[CalendarPeriods]:
    """The calendar periods of named ``boards`` (daily, weekly, monthly) in ``timezone``."""
    unknown = [board for board in boards if board not in BOARDS]
    if unknown or isinstance(boards, str):
        raise InvalidArgument(f"unknown board {(unknown or [boards])[0]!r}: use {', '.join(BOARDS)}")
    return [CalendarPeriods(*BOARDS[board], timezone, timebase) for board in dict.fromkeys(boards)]


def zone_info(name: str) -> ZoneInfo:
    """The time zone ``name``, or InvalidArgument naming it."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidArgument(f"unknown time zone {name!r}") from None


def _period_start(day: dt.date, period: str) -> dt.date:
    if period == "daily":
        return day
    if period == "iso-weekly":
        return day - dt.timedelta(days=day.weekday())  # Monday
    return day.replace(day=1)


def _next_start(day: dt.date, period: str) -> dt.date:
    if period == "daily":
        return day + dt.timedelta(days=1)
    if period == "iso-weekly":
        return day + dt.timedelta(days=7)
    return (day.replace(day=28) + dt.timedelta(days=4)).replace(day=1)


def calendar_windows(
    window_type: int,
    period: str,
    timezone: str,
    first_day: dt.date,
    count: int,
    timebase: str = "seconds",
) -> list[tuple[int, int, int]]:
    """``count`` consecutive periods starting with the one containing ``first_day``.

    Each window runs from local midnight at the period's start to local midnight at the
    next period's start, so a local day across a DST change lasts 23 or 25 hours.
    """
    if period not in PERIODS:
        raise InvalidArgument(f"calendar period must be one of {', '.join(PERIODS)}, not {period!r}")
    if timebase not in TIMEBASES:
        raise InvalidArgument(f"timebase must be one of {', '.join(TIMEBASES)}, not {timebase!r}")
    if not 0 <= count <= 2_500:
        raise InvalidArgument(f"count must be between 0 and 2500, not {count}")
    zone = zone_info(timezone)
    scale = TIMEBASES[timebase]

    def instant(day: dt.date) -> int:
        return int(dt.datetime.combine(day, dt.time(), tzinfo=zone).timestamp()) * scale

    out = []
    day = _period_start(first_day, period)
    for _ in range(count):
        following = _next_start(day, period)
        out.append((window_type, instant(day), instant(following)))
        day = following
    return out


# The shortest length of each period, in seconds (a DST change shortens one by an hour): bounds
# how many periods a horizon can hold.
_SHORTEST = {"daily": 23 * 3600, "iso-weekly": 7 * 86400 - 3600, "monthly": 28 * 86400 - 3600}


@dataclasses.dataclass(frozen=True)
class CalendarPeriods:
    """Windows of ``type`` that are calendar periods in ``timezone``, in a timebase (for keep-ahead)."""

    type: int
    period: str
    timezone: str = "UTC"
    timebase: str = "seconds"

    def __post_init__(self) -> None:
        if isinstance(self.type, bool) or not isinstance(self.type, int) or not 1 <= self.type <= 0xFFFF_FFFF:
            raise InvalidArgument(f"a calendar window type must be between 1 and 4294967295, not {self.type!r}")
        if self.period not in PERIODS:
            raise InvalidArgument(f"calendar period must be one of {', '.join(PERIODS)}, not {self.period!r}")
        if self.timebase not in TIMEBASES:
            raise InvalidArgument(f"timebase must be one of {', '.join(TIMEBASES)}, not {self.timebase!r}")
        zone_info(self.timezone)

    def shortest(self) -> int:
        """The shortest period, in the timebase."""
        return _SHORTEST[self.period] * TIMEBASES[self.timebase]

    def between(self, begin: int, end: int) -> list[tuple[int, int, int]]:
        """The periods from the one containing ``begin`` to the one containing ``end``, as windows."""
        scale = TIMEBASES[self.timebase]
        zone = zone_info(self.timezone)
        day = dt.datetime.fromtimestamp(begin // scale, zone).date()
        last = dt.datetime.fromtimestamp(end // scale, zone).date()
        count = 0
        start = _period_start(day, self.period)
        while start <= last:  # bounded by the caller's horizon (check_plan_size)
            count += 1
            start = _next_start(start, self.period)
        return calendar_windows(self.type, self.period, self.timezone, day, count, self.timebase)
