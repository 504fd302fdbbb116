"""Window-update specification files (YAML or JSON) for the admin tool.

    high_score_first: true        # required: the index-wide direction
    all_time: true                # keep the all-time window (default true)
    delete_before: 1762000000     # optional: drop windows that ended by then
    timebase: seconds             # or milliseconds (for calendar periods and "now")
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

``start`` is a date (YYYY-MM-DD), ``today`` or omitted (today in that time zone).
"""

from __future__ import annotations

import datetime as dt
import json
import pathlib
from typing import Any

import yaml

from ..errors import InvalidArgument
from ..index.calendar import calendar_windows, zone_info
from ..index.directory import Rebuild, WindowSpec, WindowUpdate

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
}


_ENTRY_KEYS = {
    "specs": {"type", "base", "increment", "duration", "count"},
    "windows": {"type", "start", "end"},
    "calendar": {"type", "period", "timezone", "start", "count"},
}


def _entries(document: dict[str, Any], section: str) -> list[dict[str, Any]]:
    """The mappings listed under ``section``, each with only the keys it may hold."""
    entries = document.get(section) or []
    if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        raise InvalidArgument(f"{section} must be a list of mappings")
    for entry in entries:
        unknown = set(entry) - _ENTRY_KEYS[section]
        if unknown:
            raise InvalidArgument(f"unknown key(s) in a {section} entry: {', '.join(sorted(map(str, unknown)))}")
    return entries


def parse_window_update(document: dict[str, Any], now: dt.datetime | None = None) -> WindowUpdate:
    if not isinstance(document, dict):
        raise InvalidArgument("a window-update file must hold a mapping")
    unknown = set(document) - _KNOWN
    if unknown:
        raise InvalidArgument(f"unknown key(s) in window-update file: {', '.join(sorted(map(str, unknown)))}")
    if "high_score_first" not in document:
        raise InvalidArgument("a window-update file must say high_score_first: true or false")
    for flag in ("high_score_first", "all_time"):
        if flag in document and not isinstance(document[flag], bool):
            raise InvalidArgument(f"{flag} must be true or false, not {document[flag]!r}")
    now = now or dt.datetime.now(dt.UTC)
    timebase = document.get("timebase", "seconds")
    scale = {"seconds": 1, "milliseconds": 1000}.get(timebase)
    if scale is None:
        raise InvalidArgument(f"timebase must be seconds or milliseconds, not {timebase!r}")
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
                first = dt.date.fromisoformat(str(start))
            windows.extend(calendar_windows(period["type"], period["period"], zone, first, period["count"], timebase))
        update = WindowUpdate(
            update_timestamp=document.get("update_timestamp", int(now.timestamp() * scale)),
            high_score_first=document["high_score_first"],
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


def load_window_update(path: str | pathlib.Path, now: dt.datetime | None = None) -> WindowUpdate:
    text = pathlib.Path(path).read_text()
    try:
        document = json.loads(text) if str(path).endswith(".json") else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise InvalidArgument(f"{path}: not valid {'JSON' if str(path).endswith('.json') else 'YAML'}: {exc}") from None
    return parse_window_update(document, now)
