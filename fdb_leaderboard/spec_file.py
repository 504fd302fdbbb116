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

from .calendar_windows import calendar_windows
from .directory import Rebuild, WindowSpec, WindowUpdate
from .errors import InvalidArgument

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


def parse_window_update(document: dict[str, Any], now: dt.datetime | None = None) -> WindowUpdate:
    if not isinstance(document, dict):
        raise InvalidArgument("a window-update file must hold a mapping")
    unknown = set(document) - _KNOWN
    if unknown:
        raise InvalidArgument(f"unknown key(s) in window-update file: {', '.join(sorted(unknown))}")
    if "high_score_first" not in document:
        raise InvalidArgument("a window-update file must say high_score_first: true or false")
    now = now or dt.datetime.now(dt.UTC)
    timebase = document.get("timebase", "seconds")
    scale = {"seconds": 1, "milliseconds": 1000}.get(timebase)
    if scale is None:
        raise InvalidArgument(f"timebase must be seconds or milliseconds, not {timebase!r}")
    try:
        specs = [
            WindowSpec(s["type"], s["base"], s["increment"], s["duration"], s["count"])
            for s in document.get("specs", [])
        ]
        windows = [(w["type"], w["start"], w["end"]) for w in document.get("windows", [])]
        for period in document.get("calendar", []):
            zone = period.get("timezone", "UTC")
            start = period.get("start", "today")
            if start in ("today", None):
                from zoneinfo import ZoneInfo

                first = now.astimezone(ZoneInfo(zone)).date()
            elif isinstance(start, dt.date):
                first = start
            else:
                first = dt.date.fromisoformat(str(start))
            windows.extend(calendar_windows(period["type"], period["period"], zone, first, period["count"], timebase))
        rebuild = Rebuild[document.get("rebuild", "IF_OVERLAPPING_CHANGED")]
    except KeyError as exc:
        raise InvalidArgument(f"window-update file: missing or unknown {exc}") from None
    except (TypeError, ValueError) as exc:
        raise InvalidArgument(f"window-update file: {exc}") from None
    return WindowUpdate(
        update_timestamp=int(document.get("update_timestamp", now.timestamp() * scale)),
        high_score_first=bool(document["high_score_first"]),
        delete_before=document.get("delete_before"),
        all_time=bool(document.get("all_time", True)),
        specs=specs,
        windows=windows,
        nlevels=document.get("nlevels", 6),
        rebuild=rebuild,
    )


def load_window_update(path: str | pathlib.Path, now: dt.datetime | None = None) -> WindowUpdate:
    text = pathlib.Path(path).read_text()
    try:
        document = json.loads(text) if str(path).endswith(".json") else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise InvalidArgument(f"{path}: not valid {'JSON' if str(path).endswith('.json') else 'YAML'}: {exc}") from None
    return parse_window_update(document, now)
