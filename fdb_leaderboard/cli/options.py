"""Values as people type them on the command line: durations, times (``now``, ``latest``, a timestamp, a
date in a zone), keys, scores and columns, as click types; the read commands' options (``--type``,
``--at``, ``--group``, ``--mode``) and key arguments."""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import json
import os
import re
import time
from collections.abc import Callable
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import click

from ..index.calendar import TIMEBASES
from ..proto import service_pb2 as pb

DEFAULT_SERVER = os.environ.get("FDB_LEADERBOARD_SERVER", "127.0.0.1:50051")  # the --server option's
PEM_FILE = click.Path(exists=True, dir_okay=False)  # a certificate, key or token file

MODES = ("ORDINAL", "COMPETITION", "DENSE")

DURATION_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}

_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m|h|d|w)?\s*$")


def parse_duration(text: str) -> float:
    """``"90"``, ``"30s"``, ``"5m"``, ``"2h"``, ``"1d"``, ``"1w"`` or ``"250ms"`` in seconds; ValueError otherwise."""
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a duration: use a number of seconds or e.g. 30s, 5m, 2h, 1d, 250ms")
    return float(match.group(1)) * DURATION_UNITS[match.group(2) or "s"]


class Duration(click.ParamType):
    """A duration option (``30s``, ``5m``...), in seconds; a bad one is a usage error."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, int | float):
            return float(value)
        try:
            return parse_duration(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


DURATION = Duration()

TIME_HELP = "now, latest (the index's latest score), a timestamp, or a date such as 2026-11-23 or 2026-11-23T18:00"

_ZONE = re.compile(r"^(?P<when>.+?)(?:\[(?P<bracketed>[^\]]+)\]|\s+(?P<named>[A-Za-z_]+(?:/[A-Za-z0-9_+\-]+)*))$")


@dataclasses.dataclass(frozen=True)
class TimeSpec:
    """A time as typed: ``now``, ``latest``, a timestamp (in the index's timebase) or a date or
    date-time (in ``zone``, else in its own offset, else in the index's policy's time zone)."""

    text: str
    timestamp: int | None = None
    when: dt.date | dt.datetime | None = None
    zone: str | None = None

    @property
    def is_now(self) -> bool:
        return self.text == "now"

    @property
    def is_latest(self) -> bool:
        return self.text == "latest"


def parse_time(text: str) -> TimeSpec:
    """A :class:`TimeSpec`; ValueError saying what a time may be otherwise."""
    cleaned = text.strip()
    if cleaned.lower() in ("now", "latest"):
        return TimeSpec(cleaned.lower())
    if re.fullmatch(r"[+-]?\d+", cleaned):
        return TimeSpec(cleaned, timestamp=int(cleaned))
    zone = None
    match = _ZONE.match(cleaned)
    if match and (match.group("bracketed") or match.group("named")):
        cleaned, zone = match.group("when").strip(), match.group("bracketed") or match.group("named")
        try:
            ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"{text!r}: unknown time zone {zone!r} (e.g. Europe/Paris, UTC)") from None
    try:
        when: dt.date | dt.datetime = (
            dt.date.fromisoformat(cleaned) if len(cleaned) == 10 else dt.datetime.fromisoformat(cleaned)
        )
    except ValueError:
        raise ValueError(f"{text!r} is not a time: use {TIME_HELP}, with a time zone as [Europe/Paris]") from None
    if zone and isinstance(when, dt.datetime) and when.tzinfo is not None:
        raise ValueError(f"{text!r} gives both an offset and a time zone: give one")
    return TimeSpec(text, when=when, zone=zone)


class Time(click.ParamType):
    """A time option (see :func:`parse_time`); a bad one is a usage error naming the option."""

    name = "time"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> TimeSpec:
        if isinstance(value, TimeSpec):
            return value
        try:
            return parse_time(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


TIME = Time()


def policy_zone(policy: pb.MaintenancePolicy, window_type: int) -> str:
    """The time zone of the policy's calendar boards of ``window_type`` (else of all of them, if
    they share one; else UTC): the one a date typed for those boards is read in."""
    zones = {c.timezone or "UTC" for c in policy.calendar if c.type == window_type}
    zones = zones or {c.timezone or "UTC" for c in policy.calendar}
    return zones.pop() if len(zones) == 1 else "UTC"


def time_in(spec: TimeSpec, policy: pb.MaintenancePolicy, window_type: int = 0) -> int:
    """A date or date-time as a timestamp in the policy's timebase (now's, for ``now``)."""
    scale = TIMEBASES.get(policy.timebase or "seconds", 1)
    if spec.is_now:
        return int(time.time() * scale)
    if spec.timestamp is not None:
        return spec.timestamp
    when = spec.when
    if not isinstance(when, dt.datetime):
        when = dt.datetime.combine(when, dt.time())  # a date: its first instant
    if when.tzinfo is None:
        when = when.replace(tzinfo=ZoneInfo(spec.zone or policy_zone(policy, window_type)))
    return int(when.timestamp() * scale)


def parse_key(text: str, what: str = "key") -> tuple:
    """A key as typed: a string (one element), or a JSON list for several elements or other types
    (``'["bob", 7]'``, ``'[42]'``, bytes as ``{"base64": ...}``).  Empty keys are refused."""
    if text.lstrip().startswith("["):
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError as exc:
            raise click.BadParameter(f"{text!r} is not a JSON list: {exc.msg}", param_hint=what) from None
        if not isinstance(parsed, list) or not all(_is_item(item) for item in parsed):
            raise click.BadParameter(
                'a JSON list of strings, numbers, booleans, null or {"base64": ...} (bytes)', param_hint=what
            )
        if not parsed:
            raise click.BadParameter("[] has no element: give at least one", param_hint=what)
        try:
            return tuple(base64.b64decode(i["base64"], validate=True) if isinstance(i, dict) else i for i in parsed)
        except ValueError:
            raise click.BadParameter("a base64 item is not base64", param_hint=what) from None
    if not text:
        raise click.BadParameter("empty: give the key, e.g. alice", param_hint=what)
    return (text,)


def _is_item(item: object) -> bool:
    """A key item as JSON: a scalar, or bytes as {"base64": ...} (as keys are shown)."""
    if isinstance(item, dict):
        return set(item) == {"base64"} and isinstance(item["base64"], str)
    return not isinstance(item, list)


def _one_key(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> tuple:
    """A single key argument (declared with ``nargs=-1`` to explain what several words mean)."""
    if len(values) > 1:
        together = json.dumps(list(values))
        raise click.BadParameter(
            f"one {param.human_readable_name}, not {len(values)} words: several elements go in one JSON list, "
            f"e.g. '{together}'",
            ctx,
            param,
        )
    return parse_key(values[0], param.human_readable_name)


def key_argument(name: str = "pk") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A record's key (PK): a string, or one JSON list (``'["bob", 7]'``)."""
    return click.argument(name, nargs=-1, required=True, callback=_one_key, metavar=name.upper())


def _keys(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> list[tuple]:
    return [parse_key(value, param.human_readable_name) for value in values]


def keys_argument(name: str = "pks") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Several records' keys, each as :func:`key_argument` takes one."""
    return click.argument(name, nargs=-1, required=True, callback=_keys, metavar=f"{name[:-1].upper()}...")


def _group(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple:
    return () if value is None else parse_key(value, "--group")


def parse_score(text: str, hint: str = "--score") -> int | float | tuple[int, ...]:
    """A score from the command line: an integer, a number (DOUBLE indexes), or integers separated
    by commas for an index ranking by columns (``12,3,95``)."""
    try:
        if "," in text:
            return tuple(int(part) for part in text.split(","))
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise click.BadParameter(
            f"{text!r} is not a number (or integers separated by commas, for columns)", param_hint=hint
        ) from None


def parse_columns(text: str) -> tuple[str, ...]:
    """``--columns``: directions separated by commas (``high,low,low``), each HIGH or LOW."""
    columns = tuple(direction.strip().upper() for direction in text.split(",")) if text else ()
    for direction in columns:
        if direction not in ("HIGH", "LOW"):
            raise click.BadParameter(f"a column is HIGH or LOW, not {direction!r}", param_hint="--columns")
    return columns


def group_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--group",
        "group",
        default=None,
        callback=_group,
        help="The group (for indexes with groups): a string, or a JSON list such as '[\"eu\", 3]'.",
    )(fn)


def window_options(fn: Callable[..., Any] | None = None, *, type_required: bool = False) -> Any:
    """``--type``, ``--at`` and ``--group``: the window of a type holding a time (type 0: all-time),
    of a group.  The command resolves them with :meth:`Session.window`."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn = group_option(fn)
        fn = click.option(
            "--at",
            "at",
            type=TIME,
            default="now",
            show_default=True,
            help=f"A time in the window: {TIME_HELP} (dates in the index's time zone, or add [Europe/Paris]).",
        )(fn)
        return click.option(
            "-t",
            "--type",
            "window_type",
            type=click.IntRange(0),
            required=type_required,
            default=None if type_required else 0,
            show_default=not type_required,
            help="Window type (0: all-time; with index create --daily/--weekly/--monthly, 1/2/3).",
        )(fn)

    return decorate(fn) if fn is not None else decorate


def mode_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--mode",
        type=click.Choice(MODES, case_sensitive=False),
        default="ORDINAL",
        show_default=True,
        help="How ties rank. COMPETITION: equal scores share a rank, the next skips (#1, #1, #3); "
        "DENSE (indexes made with --dense-ranks): the next does not skip (#1, #1, #2).",
    )(fn)
