"""Window-update specification files (YAML or JSON) for the admin tool.

    high_score_first: true        # optional: change the index-wide direction (absent: keep it)
    all_time: true                # keep the all-time window (default true)
    delete_before: 1762000000     # optional: drop windows that ended by then
    timebase: seconds             # or milliseconds: the index's (default), checked
    nlevels: 6
    rebuild: IF_OVERLAPPING_CHANGED   # or NEVER, ALWAYS
    specs:                        # regular windows: base + i * increment, lasting duration
      - {type: 1, base: 0, increment: 86400, duration: 86400, count: 30}
    windows:                      # explicit [start, end) windows
      - {type: 9, start: 1764547200, end: 1767225600}
    calendar:                     # calendar periods in a time zone
      - {type: 1, period: daily, timezone: Europe/Paris, start: today, count: 14}
      - {type: 2, period: iso-weekly, timezone: UTC, start: 2026-11-23, count: 4}
      - {type: 3, period: monthly, timezone: UTC, count: 3}
    maintenance:                  # optional: the policy `maintain` follows (keep ahead, expire)
      horizon: 2d                 # add windows starting within this (default 2d)
      certain_within: 1d          # always add those starting within this (default 1d)
      retain: 30d                 # expire windows that ended this long ago (default: keep all)
      idempotency_retention: 24h  # keep writes' idempotency keys this long (default 24h)
      calendar:                   # calendar periods kept ahead
        - {type: 1, period: daily, timezone: Europe/Paris}
      regular:                    # fixed-length windows kept ahead
        - {type: 4, base: 0, increment: 1h, duration: 1h}
    rules:                        # optional: the index's score rules (replaced whole; {}: none)
      min_score: 0                # the lowest accepted score (absent: none)
      max_score: 1000000          # the highest accepted score (absent: none)
      max_per_window: 50          # entries per record, window and group, all-time aside (0: no limit)
      max_per_minute: 10          # entries per record and minute (0: no limit)
    leagues:                      # optional: the leagues the index was created with (checked, not set:
      window_type: 1              #   leagues are fixed at creation, `index create --league-type ...`)
      cohort_size: 30
      tiers: 5
      promote: 5
      demote: 5

``start`` is a date (YYYY-MM-DD), ``today`` or omitted (today in that time zone).  Lengths in
``maintenance`` are integers in the timebase or take a unit (s, m, h, d, w).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import pathlib
from typing import IO, Any

import yaml

from ..errors import InvalidArgument
from ..index import Leagues, ScoreRules
from ..index.calendar import TIMEBASES, CalendarPeriods, calendar_windows, zone_info
from ..index.directory import Rebuild, WindowSpec, WindowUpdate
from ..proto import service_pb2 as pb
from .options import parse_duration

_KNOWN = {
    "index",
    "high_score_first",
    "all_time",
    "delete_before",
    "timebase",
    "nlevels",
    "rebuild",
    "specs",
    "windows",
    "calendar",
    "update_timestamp",
    "maintenance",
    "rules",
    "leagues",
}


_ENTRY_KEYS = {
    "specs": {"type", "base", "increment", "duration", "count"},
    "windows": {"type", "start", "end"},
    "calendar": {"type", "period", "timezone", "start", "count"},
    "regular": {"type", "base", "increment", "duration"},
    "maintenance calendar": {"type", "period", "timezone"},
}
# What an entry of each kind must say, and what that is.
_REQUIRED = {
    "specs": {
        "type": "its window type",
        "base": "the start of its first window",
        "increment": "how far apart windows start",
        "duration": "how long each lasts",
        "count": "how many windows",
    },
    "windows": {"type": "its window type", "start": "its start", "end": "its end"},
    "calendar": {"type": "its window type", "period": "daily, iso-weekly or monthly", "count": "how many periods"},
    "regular": {
        "type": "its window type",
        "increment": "how far apart windows start",
        "duration": "how long each lasts",
    },
    "maintenance calendar": {"type": "its window type", "period": "daily, iso-weekly or monthly"},
}
_EXAMPLES = {"count": "count: 7", "period": "period: daily", "type": "type: 1"}
_MAINTENANCE_KEYS = {"horizon", "certain_within", "retain", "calendar", "regular", "idempotency_retention"}


def _entries(document: dict[str, Any], section: str, kind: str | None = None) -> list[dict[str, Any]]:
    """The mappings listed under ``section``, each with the keys its ``kind`` needs and no others."""
    entries = document.get(section) or []
    if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        raise InvalidArgument(f"{section} must be a list of mappings")
    for entry in entries:
        unknown = set(entry) - _ENTRY_KEYS[kind or section]
        if unknown:
            raise InvalidArgument(f"unknown key(s) in a {section} entry: {', '.join(sorted(map(str, unknown)))}")
        missing = [key for key in _REQUIRED[kind or section] if key not in entry]
        if missing:
            key = missing[0]
            example = f", e.g. {_EXAMPLES[key]}" if key in _EXAMPLES else ""
            raise InvalidArgument(
                f"a {section} entry has no {key} ({_REQUIRED[kind or section][key]}{example}): {_shown(entry)}"
            )
    return entries


def _shown(entry: dict[str, Any]) -> str:
    """An entry as a file writes it: ``{type: 1, period: daily}``."""
    return "{" + ", ".join(f"{key}: {value}" for key, value in entry.items()) + "}"


def file_timebase(document: dict[str, Any], index_timebase: str | None = None) -> str:
    """The timebase of a window-update file's times: the index's (``index_timebase``, if known)
    unless the file names one; a file naming another than the index's is refused."""
    timebase = document.get("timebase", index_timebase or "seconds")
    if timebase not in TIMEBASES:
        raise InvalidArgument(f"timebase must be seconds or milliseconds, not {timebase!r}")
    if index_timebase is not None and timebase != index_timebase:
        raise InvalidArgument(
            f"the file's times are in {timebase}, the index's in {index_timebase}: create an index with "
            f"`index create NAME --timebase {timebase}` for them (or leave timebase out of the file)"
        )
    return timebase


def parse_window_update(
    document: dict[str, Any], now: dt.datetime | None = None, index_timebase: str | None = None
) -> WindowUpdate:
    if not isinstance(document, dict):
        raise InvalidArgument("a window-update file must hold a mapping")
    unknown = set(document) - _KNOWN
    if unknown:
        raise InvalidArgument(f"unknown key(s) in window-update file: {', '.join(sorted(map(str, unknown)))}")
    for flag in ("high_score_first", "all_time"):
        if flag in document and not isinstance(document[flag], bool):
            raise InvalidArgument(f"{flag} must be true or false, not {document[flag]!r}")
    now = now or dt.datetime.now(dt.UTC)
    timebase = file_timebase(document, index_timebase)
    scale = TIMEBASES[timebase]
    rebuild_name = document.get("rebuild", "IF_OVERLAPPING_CHANGED")
    if not isinstance(rebuild_name, str) or rebuild_name not in Rebuild.__members__:
        raise InvalidArgument(f"rebuild must be one of {', '.join(Rebuild.__members__)}, not {rebuild_name!r}")
    try:
        specs = [
            WindowSpec(s["type"], s["base"], s["increment"], s["duration"], s["count"])
            for s in _entries(document, "specs")
        ]
        windows = [(w["type"], w["start"], w["end"]) for w in _entries(document, "windows")]
        for period in _entries(document, "calendar"):
            zone = period.get("timezone", "UTC")
            start = period.get("start", "today")
            if start in ("today", None):
                first = now.astimezone(zone_info(zone)).date()
            elif isinstance(start, dt.date):
                first = start
            else:
                try:
                    first = dt.date.fromisoformat(str(start))
                except ValueError:
                    raise InvalidArgument(
                        f"calendar entry {period}: start {start!r} is not a date: use YYYY-MM-DD (e.g. 2026-11-23) "
                        "or today"
                    ) from None
            periods = calendar_windows(period["type"], period["period"], zone, first, period["count"], timebase)
            delete_before = document.get("delete_before")
            if periods and isinstance(delete_before, int) and all(end <= delete_before for _, _, end in periods):
                raise InvalidArgument(
                    f"calendar entry {period}: every window it adds ends by delete_before {delete_before}, "
                    "which deletes it: move its start later or delete_before earlier"
                )
            windows.extend(periods)
        update = WindowUpdate(
            update_timestamp=document.get("update_timestamp", int(now.timestamp() * scale)),
            high_score_first=document.get("high_score_first"),
            delete_before=document.get("delete_before"),
            all_time=document.get("all_time", True),
            specs=specs,
            windows=windows,
            nlevels=document.get("nlevels", 6),
            rebuild=Rebuild[rebuild_name],
        )
        update.requested_windows()  # types, ranges and counts, checked before anything is sent
    except KeyError as exc:
        raise InvalidArgument(f"window-update file: missing or unknown {exc}") from None
    except (TypeError, ValueError) as exc:
        raise InvalidArgument(f"window-update file: {exc}") from None
    return update


def length(value: object, scale: int, name: str) -> int:
    """A length in the timebase: an integer as is, or a duration with a unit (``2d``) scaled to it."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise InvalidArgument(f"{name} must be an integer or a duration such as 2d, not {value!r}")
    if isinstance(value, int):
        return value
    text = value.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        return round(parse_duration(text) * scale)
    except ValueError as exc:
        raise InvalidArgument(f"{name}: {exc}") from None


def parse_maintenance(section: object, timebase: str = "seconds") -> pb.MaintenancePolicy:
    """A ``maintenance`` section (or the same options from the command line) as a policy."""
    if not isinstance(section, dict):
        raise InvalidArgument("maintenance must be a mapping")
    unknown = set(section) - _MAINTENANCE_KEYS
    if unknown:
        raise InvalidArgument(f"unknown key(s) in maintenance: {', '.join(sorted(map(str, unknown)))}")
    scale = TIMEBASES.get(timebase)
    if scale is None:
        raise InvalidArgument(f"timebase must be seconds or milliseconds, not {timebase!r}")
    policy = pb.MaintenancePolicy(
        horizon=length(section.get("horizon", "2d"), scale, "horizon"),
        certain_within=length(section.get("certain_within", "1d"), scale, "certain_within"),
        retain=length(section.get("retain", 0), scale, "retain"),
        timebase="" if timebase == "seconds" else timebase,
        # in seconds whatever the timebase: keys are timed by the server's clock
        idempotency_retention=length(section.get("idempotency_retention", 0), 1, "idempotency_retention"),
    )
    try:
        for regular in _entries(section, "regular"):
            policy.windows.add(
                type=regular["type"],
                base=length(regular.get("base", 0), scale, "base"),
                increment=length(regular["increment"], scale, "increment"),
                duration=length(regular["duration"], scale, "duration"),
            )
        for periods in _entries(section, "calendar", "maintenance calendar"):
            checked = CalendarPeriods(periods["type"], periods["period"], periods.get("timezone", "UTC"), timebase)
            policy.calendar.add(type=checked.type, period=checked.period, timezone=checked.timezone)
    except KeyError as exc:
        raise InvalidArgument(f"maintenance: missing {exc}") from None
    except (TypeError, ValueError) as exc:
        raise InvalidArgument(f"maintenance: {exc}") from None
    return policy


def parse_document(text: str, name: str) -> Any:
    """A window-update file's text as data: JSON when ``name`` ends with .json, else YAML (which
    takes JSON too); a syntax error names the line and column."""
    if name.endswith(".json"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidArgument(f"{name}: not valid JSON: line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = " ".join(filter(None, [exc.context, exc.problem]))
        raise InvalidArgument(f"{name}: not valid YAML: {where}{problem}") from None
    except yaml.YAMLError as exc:
        raise InvalidArgument(f"{name}: not valid YAML: {exc}") from None


def load_window_update(path: str | pathlib.Path, now: dt.datetime | None = None) -> WindowUpdate:
    return parse_window_update(parse_document(pathlib.Path(path).read_text(), str(path)), now)


@dataclasses.dataclass(frozen=True)
class WindowFile:
    """What a window-update file asks for: the update, and the optional sections' settings."""

    update: WindowUpdate
    maintenance: pb.MaintenancePolicy | None = None  # its maintenance section, if any
    rules: ScoreRules | None = None  # its rules section, if any
    # Seconds the store's audit trail keeps events (the maintenance section's audit_retention;
    # for every index of the store, not this one's policy).
    audit_retention: int | None = None
    leagues: Leagues | None = None  # its leagues section, if any: what the index must have


def load_window_file(path: str | pathlib.Path, now: dt.datetime | None = None) -> WindowFile:
    """A window-update file's update, maintenance policy and score rules."""
    with open(path) as file:
        return read_window_file(file, now)


def read_window_file(file: IO[str], now: dt.datetime | None = None, index_timebase: str | None = None) -> WindowFile:
    """:func:`load_window_file` of an open file (standard input included: its name is ``<stdin>``),
    for an index whose times are in ``index_timebase`` (if known: see :func:`file_timebase`)."""
    document = parse_document(file.read(), getattr(file, "name", "<stdin>"))
    update = parse_window_update(document, now, index_timebase)
    maintenance = document.get("maintenance")
    rules = document.get("rules")
    audit_retention = None
    if isinstance(maintenance, dict) and "audit_retention" in maintenance:
        maintenance = dict(maintenance)
        audit_retention = length(maintenance.pop("audit_retention"), 1, "audit_retention")
        maintenance = maintenance or None  # only the audit trail's retention: the index's policy stays
    leagues = document.get("leagues")
    return WindowFile(
        update,
        None if maintenance is None else parse_maintenance(maintenance, file_timebase(document, index_timebase)),
        None if rules is None else parse_rules(rules),
        audit_retention,
        None if leagues is None else parse_leagues(leagues),
    )


_LEAGUE_KEYS = ("window_type", "cohort_size", "tiers", "promote", "demote")


def parse_leagues(section: object) -> Leagues:
    """A ``leagues`` section: window_type and cohort_size, tiers (default 1), promote and demote (0)."""
    if not isinstance(section, dict):
        raise InvalidArgument("leagues must be a mapping")
    unknown = set(section) - set(_LEAGUE_KEYS)
    missing = [key for key in _LEAGUE_KEYS[:2] if key not in section]
    if unknown or missing:
        problem = f"unknown key(s) {', '.join(sorted(map(str, unknown)))}" if unknown else f"no {missing[0]}"
        raise InvalidArgument(f"leagues: {problem} (keys: {', '.join(_LEAGUE_KEYS)})")
    return Leagues(**section)


_RULE_KEYS = {"min_score", "max_score", "max_per_window", "max_per_minute"}


def parse_rules(section: object) -> ScoreRules:
    """A ``rules`` section as score rules (checked for the index's type by the server)."""
    if not isinstance(section, dict):
        raise InvalidArgument("rules must be a mapping")
    unknown = set(section) - _RULE_KEYS
    if unknown:
        raise InvalidArgument(f"unknown key(s) in rules: {', '.join(sorted(map(str, unknown)))}")
    return ScoreRules(
        section.get("min_score"),
        section.get("max_score"),
        section.get("max_per_window", 0),
        section.get("max_per_minute", 0),
    )
