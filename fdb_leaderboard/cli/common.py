"""What every command shares: the server connection, ``--timeout``, ``--json`` and ``-v``, the
read commands' options (``--type``, ``--at``, ``--group``, ``--mode``), keys and times as people
type them, durations, the one row format of ranked entries, and errors as one line.

A command that talks to the server is declared with :func:`server_command`; it receives a
:class:`Session` (its client, made with the command's ``--timeout``, and its output) and
returns nothing: what it shows goes through ``session.emit``.  Errors raised anywhere (a gRPC
status, a bad file, a store that cannot open) are turned into one line by :class:`CliGroup`.

Ranks: ``#1`` is the best, wherever a person reads a rank (text output); the ``rank`` fields
of ``--json`` output are the API's, 0-based (``"rank": 0``).
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import functools
import json
import logging
import os
import re
import socket
import ssl
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import click
import grpc

from ..client import LeaderboardClient
from ..errors import LeaderboardError, NoWindowsWarning
from ..index import RankedEntry
from ..index.calendar import TIMEBASES
from ..proto import service_pb2 as pb
from ..store import StoreError

DEFAULT_SERVER = os.environ.get("FDB_LEADERBOARD_SERVER", "127.0.0.1:50051")
DEFAULT_TIMEOUT = 30.0
START_A_SERVER = (
    "start one with `fdb-leaderboard serve` (or ./tools/serve), or point at one with "
    "--server HOST:PORT or $FDB_LEADERBOARD_SERVER"
)
MODES = ("ORDINAL", "COMPETITION", "DENSE")
DISPLAY_FIELD = "name"  # the metadata field shown beside each key

log = logging.getLogger("fdb_leaderboard.cli")


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``1 record``, ``2 records`` (``nouns`` for an irregular plural)."""
    return f"{count:,} {noun if count == 1 else nouns or noun + 's'}"


# -- durations -------------------------------------------------------------------------------------

_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m|h|d|w)?\s*$")


def parse_duration(text: str) -> float:
    """``"90"``, ``"30s"``, ``"5m"``, ``"2h"``, ``"1d"``, ``"1w"`` or ``"250ms"`` in seconds; ValueError otherwise."""
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a duration: use a number of seconds or e.g. 30s, 5m, 2h, 1d, 250ms")
    return float(match.group(1)) * _UNITS[match.group(2) or "s"]


def show_duration(length: int, timebase: str = "seconds") -> str:
    """A length in the timebase as people type it: ``2d``, ``90m``, ``45s``, ``250ms``."""
    if timebase == "milliseconds" and length % 1000:
        return f"{length}ms"
    seconds = length // 1000 if timebase == "milliseconds" else length
    for unit in ("d", "h", "m"):
        if seconds and seconds % _UNITS[unit] == 0:
            return f"{seconds // int(_UNITS[unit])}{unit}"
    return f"{seconds}s"


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

# -- times: what people type -------------------------------------------------------------------------

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


# -- keys and windows on the command line ------------------------------------------------------------


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


def show_score(score: object) -> str:
    """A score for people: a multi-column score as its columns separated by commas."""
    return ",".join(str(value) for value in score) if isinstance(score, tuple | list) else str(score)


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


# -- output ------------------------------------------------------------------------------------------


def json_value(value: object) -> object:
    """A key element or score as JSON, in the API's one shape: bytes as {"base64": ...}, the rest as is."""
    if isinstance(value, bytes):
        return {"base64": base64.b64encode(value).decode()}
    if isinstance(value, tuple | list):
        return [json_value(item) for item in value]
    return value


def show_key(key: tuple) -> str:
    """A key as people type it: ``alice`` for ``("alice",)``, a JSON list otherwise (``["bob", 7]``)."""
    if len(key) == 1 and isinstance(key[0], str) and key[0] and not key[0].lstrip().startswith("["):
        return key[0]
    return json.dumps(json_value(key), ensure_ascii=False)


def number_hint(key: tuple) -> str:
    """For a key typed as a number (``42``, read as the string "42"), how to name the number."""
    if len(key) == 1 and isinstance(key[0], str) and re.fullmatch(r"[+-]?\d+(\.\d+)?", key[0]):
        return f" (the key is the string {key[0]!r}; for the number, give it as a JSON list: '[{key[0]}]')"
    return ""


def no_score(key: tuple, window: str) -> str:
    """What a command says of a record with no score in the window read."""
    return f"{show_key(key)} has no score in {window}{number_hint(key)}"


def show_rank(rank: int | None) -> str:
    """A 0-based rank as people read it: ``#1`` is the best."""
    return "-" if rank is None else f"#{rank + 1}"


def entry_json(entry: RankedEntry) -> dict[str, object]:
    return {
        "rank": entry.rank,
        "pk": json_value(entry.pk),
        "score": entry.score,
        "timestamp": entry.timestamp,
        "context": json_value(entry.context),
        "group": json_value(entry.group),
        "metadata": dict(entry.metadata or {}),
    }


@dataclasses.dataclass(frozen=True)
class Absent:
    """A row for a record with no score in the window read."""

    pk: tuple


def entry_lines(entries: Sequence[RankedEntry | Absent], labels: Sequence[str] | None = None) -> list[str]:
    """Ranked entries as aligned rows, the one format of every command:

        [label]  #rank  key  [name]  score  at timestamp  [context ...]  [group ...]  [field=value ...]

    ``name`` is the metadata's display field; the other fields follow it.  An :class:`Absent`
    record's row says it has no score."""
    rows = []
    for entry in entries:
        if isinstance(entry, Absent):
            rows.append(["-", show_key(entry.pk), "", "", "", ""])
            continue
        metadata = dict(entry.metadata or {})
        name = metadata.pop(DISPLAY_FIELD, "")
        labelled = (("context", entry.context), ("group", entry.group))
        extra = [f"{what} {show_key(value)}" for what, value in labelled if value]
        extra += [f"{field}={value}" for field, value in sorted(metadata.items())]
        when = f"at {entry.timestamp}"
        rows.append([show_rank(entry.rank), show_key(entry.pk), name, show_score(entry.score), when, "  ".join(extra)])
    if not rows:
        return []
    first = 0 if labels is None else 1  # the rank's column
    if labels is not None:
        rows = [[label, *row] for label, row in zip(labels, rows, strict=True)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    right = {first, first + 3}  # the rank and the score
    lines = []
    for entry, row in zip(entries, rows, strict=True):
        cells = [
            cell.rjust(width) if i in right else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
            if width  # a column no row fills (no names, no extras) is left out
        ]
        if isinstance(entry, Absent):
            cells = [*cells[: first + 2], f"no score in this window{number_hint(entry.pk)}"]
        lines.append("  ".join(cells).rstrip())
    return lines


def listing_json(entries: Any) -> dict[str, object]:
    """Entries read from one window as the API answers them: ``{"entries": [...], "window": {...}}``."""
    window = getattr(entries, "window", None)
    shown = None if window is None else {"type": window.type, "start": window.start, "end": window.end}
    return {"entries": [entry_json(entry) for entry in entries], "window": shown}


def window_json(window: pb.Window) -> dict[str, object]:
    data: dict[str, object] = {
        "type": window.type,
        "start": window.start,
        "end": window.end,
        "key": window.key,
        "nlevels": window.nlevels,
        "filling": window.filling,
    }
    if window.filling:
        data["fill"] = {
            "records_processed": window.records_processed,
            "entries_ranked": window.entries_ranked,
            "records_total": window.records_total if window.HasField("records_total") else None,
        }
    return data


def window_line(window: pb.Window) -> str:
    label = "all-time" if window.type == 0 else f"type {window.type} [{window.start}, {window.end})"
    return f"  key {window.key:>4}  {label}{fill_note(window)}"


def fill_note(window: pb.Window) -> str:
    """How far a filling window got, as ``windows show`` prints it (nothing for a complete one)."""
    if not window.filling:
        return ""
    total = f" of {window.records_total:,}" if window.HasField("records_total") else ""
    if window.entries_ranked:
        return f"  (filling: {window.entries_ranked:,}{total} ranked)"
    return f"  (filling: {window.records_processed:,}{total} records in)"


def confirm_or_yes(question: str, yes: bool, what: str) -> None:
    """Go on only if the user agrees: ``--yes`` given, or asked on a terminal and answered yes.
    Off a terminal (a script, a pipe) nobody can answer, so ``--yes`` is required: a usage error."""
    if yes:
        return
    if not sys.stdin.isatty():
        raise click.UsageError(f"{what}: give --yes to confirm (there is no terminal to ask on)")
    click.confirm(question, abort=True, err=True)


def progress_bar(session: Session, **options: Any) -> Any:
    """A tqdm bar on stderr, drawn only when stderr is a terminal (and not for ``--json``)."""
    from tqdm import tqdm

    return tqdm(disable=session.json or not sys.stderr.isatty(), **options)


@dataclasses.dataclass
class Session:
    """One command's connection and output: ``client`` (made on first use) and ``emit``."""

    server: str
    timeout: float | None
    json: bool
    access: dict[str, Any] = dataclasses.field(default_factory=dict)  # token and TLS files (see main)

    def __post_init__(self) -> None:
        self._client: LeaderboardClient | None = None
        self._policies: dict[str, pb.MaintenancePolicy] | None = None

    @property
    def client(self) -> LeaderboardClient:
        if self._client is None:
            self._client = LeaderboardClient(self.server, timeout=self.timeout, **self.access)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def policy(self, index: str) -> pb.MaintenancePolicy:
        """The maintenance policy of ``index`` (its timebase and time zones); NOT_FOUND if none."""
        if self._policies is None:
            self._policies = {info.name: info.maintenance for info in self.client.list_indexes()}
        if index not in self._policies:
            raise click.ClickException(f"NOT_FOUND: no index named {index!r}")
        return self._policies[index]

    def league_type(self, index: str) -> int:
        """The window type of ``index``'s leagues (a usage error if it has none)."""
        info = {info.name: info for info in self.client.list_indexes()}.get(index)
        if info is None:
            raise click.ClickException(f"NOT_FOUND: no index named {index!r}")
        if not info.options.HasField("leagues"):
            raise click.ClickException(f"FAILED_PRECONDITION: index {index!r} has no leagues")
        return info.options.leagues.window_type

    def timestamp(self, index: str, at: TimeSpec, window_type: int = 0) -> int | None:
        """``at`` as a timestamp of ``index`` (None for now: the server's clock decides)."""
        if at.is_now:
            return None
        if at.timestamp is not None:
            return at.timestamp
        if at.is_latest:
            listing = self.client.list_windows(index)
            if not listing.HasField("latest_timestamp"):
                raise click.ClickException(f"{index} has no scores yet: there is no latest time")
            return listing.latest_timestamp
        return time_in(at, self.policy(index), window_type)

    def time_of(self, index: str, at: TimeSpec) -> int:
        """``at`` as a timestamp of ``index``, now included (for writes, which carry their time)."""
        if at.is_now:
            return time_in(at, self.policy(index))
        return self.timestamp(index, at)  # type: ignore[return-value]

    def window(self, index: str, window_type: int, at: TimeSpec, group: tuple) -> dict[str, Any]:
        """The client's window and group arguments for ``--type``, ``--at`` and ``--group``."""
        timestamp = self.timestamp(index, at, window_type) if window_type else None
        return {"window_type": window_type, "timestamp": timestamp, "group": group}

    def emit(self, data: object, lines: str | Iterable[str] = ()) -> None:
        """Show ``data`` as JSON with ``--json``, else ``lines`` (a string or lines)."""
        if self.json:
            click.echo(json.dumps(data, default=json_value))
        else:
            for line in [lines] if isinstance(lines, str) else lines:
                click.echo(line)

    def note(self, line: str) -> None:
        """Progress or advice for people: on stderr, so ``--json`` output stays parseable."""
        click.echo(line, err=True)

    def error_message(self, exc: grpc.RpcError) -> str:
        """One line for a failed call of this command (see :func:`rpc_error_message`)."""
        tls = bool(self.access.get("ca") or self.access.get("cert"))
        return rpc_error_message(exc, self.server, self.timeout, tls)


def where(window_type: int, timestamp: int | None) -> str:
    """The window a read named, for people: ``the all-time window``, ``the type 1 window holding now``."""
    if not window_type:
        return "the all-time window"
    return f"the type {window_type} window holding {'now' if timestamp is None else timestamp}"


def server_command(
    group: click.Group | None = None, name: str | None = None, timeout: float | None = DEFAULT_TIMEOUT, **attrs: Any
) -> Callable[[Callable[..., Any]], click.Command]:
    """Declare a command that talks to the server: adds ``--timeout``, ``--json`` and ``--server``
    (which may come after the command's name too).

    The command joins ``group`` if given (else register it with ``main.add_command``).

    The function gets ``session`` (a :class:`Session`) instead of those two options.
    ``timeout`` is the default per-call limit (None: no limit, for calls as long as their data).
    """

    def decorate(fn: Callable[..., Any]) -> click.Command:
        @functools.wraps(fn)
        def run(*args: Any, timeout: float | None, json_output: bool, server: str | None, **kwargs: Any) -> Any:
            ctx = click.get_current_context()
            root = ctx.find_root().obj
            if server is not None:  # given after the command's name
                root["server"] = server
            session = Session(root["server"], timeout or None, json_output, root.get("access", {}))
            root["timeout"] = session.timeout
            try:
                return fn(*args, session=session, **kwargs)
            finally:
                session.close()

        shown = "none" if timeout is None else f"{timeout:g}s"
        run = click.option(
            "--timeout",
            type=DURATION,
            default=timeout,
            help=f"Give up on a call after this long (e.g. 30s, 5m; 0: never) [default: {shown}].",
        )(run)
        run = click.option("--json", "json_output", is_flag=True, help="Print JSON for scripts.")(run)
        run = click.option(
            "--server",
            default=None,
            metavar="HOST:PORT",
            help="gRPC address of a running server (as before the command's name).",
        )(run)
        return (group.command if group is not None else click.command)(name, **attrs)(run)

    return decorate


# -- errors: one line, non-zero exit -------------------------------------------------------------------


def _host_port(address: str) -> tuple[str, int] | None:
    """The host and port of a ``HOST:PORT`` gRPC address (None for unix sockets and other schemes)."""
    match = re.fullmatch(r"(?:dns:(?:///)?|ipv4:|ipv6:)?\[?([^\[\]]+?)\]?:(\d+)", address)
    return (match.group(1), int(match.group(2))) if match else None


def speaks_tls(address: str, timeout: float = 2.0) -> bool:
    """Whether the server at ``address`` answers a TLS handshake (certificate not checked)."""
    where = _host_port(address)
    if where is None:
        return False
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    try:
        with socket.create_connection(where, timeout=timeout) as sock, context.wrap_socket(sock):
            return True
    except (OSError, ssl.SSLError):
        return False


# What gRPC itself says when it found no server to send a call to (the transport's words, not a
# server's): only these UNAVAILABLE statuses mean the server was not reached.
_TRANSPORT_FAILURES = (
    "failed to connect to all addresses",
    "connections to all backends failing",
    "dns resolution failed",
    "name resolution failure",
    "socket closed",
    "connection reset",
    "broken pipe",
    "keepalive watchdog timeout",
)
_HOSTNAME_MISMATCH = ("hostname verification check failed", "peer name", "not in peer certificate")


def rpc_error_message(exc: grpc.RpcError, server: str, timeout: float | None, tls: bool = False) -> str:
    """One line for a failed call; ``tls``: whether the command used TLS (``--ca`` or ``--cert``).

    An UNAVAILABLE status that the server itself answered (an index whose writes are paused or
    that moved elsewhere) is its message, as any other status is; only a connection refused
    means no server runs there, and only then is the advice to start one."""
    code, details = exc.code(), exc.details() or ""  # type: ignore[attr-defined]
    lowered = details.lower()
    if code == grpc.StatusCode.UNAVAILABLE and any(words in lowered for words in _TRANSPORT_FAILURES):
        if tls and any(words in lowered for words in _HOSTNAME_MISMATCH):
            host = _host_port(server)
            name = host[0] if host else server
            return (
                f"TLS: the certificate of the server at {server} is not made out to {name}: reach it by a "
                "name its certificate holds (--server NAME:PORT)"
            )
        if tls and ("wrong_version_number" in lowered or "handshake failed" in lowered):
            if "certificate_verify_failed" in lowered or "certificate verify failed" in lowered:
                return f"TLS: the certificate of the server at {server} is not signed by the CA given with --ca"
            return f"the server at {server} does not speak TLS: leave out --ca (or serve it with --tls-cert/--tls-key)"
        if "refused" in lowered:
            return f"cannot reach a server at {server} (connection refused): {START_A_SERVER}"
        if not tls and speaks_tls(server):
            return f"the server at {server} speaks TLS: give the CA that signed its certificate with --ca FILE"
        reason = details.split("\n")[0]
        return f"cannot reach the server at {server} ({reason}): check --server HOST:PORT or $FDB_LEADERBOARD_SERVER"
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        limit = f"within {timeout:g} s" if timeout else "in time"
        return f"DEADLINE_EXCEEDED: the server at {server} did not answer {limit}; give a longer --timeout"
    return f"{code.name}: {details}"


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _set_verbose(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        root = ctx.find_root()
        if isinstance(root.obj, dict):
            root.obj["verbose"] = True
        logging.getLogger().setLevel(logging.INFO)
        log.setLevel(logging.DEBUG)


def verbose_option() -> click.Option:
    return click.Option(
        ["-v", "--verbose"],
        is_flag=True,
        expose_value=False,
        is_eager=True,
        callback=_set_verbose,
        help="Log more, and show tracebacks of unexpected errors.",
    )


def _with_verbose(command: click.Command) -> click.Command:
    """``command`` (and every command under it) taking ``-v`` after its name too."""
    if not any(param.name == "verbose" for param in command.params):
        command.params.append(verbose_option())
    for sub in getattr(command, "commands", {}).values():
        _with_verbose(sub)
    return command


class CliGroup(click.Group):
    """The top-level group: any error a command raises ends the process with one line and exit 1.

    Usage mistakes (a bad option value, a missing argument) are one line too, with exit 2.  A
    closed pipe (``| head``) ends it without a word and exit 0: the reader had what it wanted, as
    with any Unix filter.  Every command
    takes ``-v`` after its name as well as before it.
    """

    # Former names of commands, still taken (not listed): the API's names are the commands'.
    ALIASES = {"score-at-percentile": "score-for-percentile"}

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, self.ALIASES.get(cmd_name, cmd_name))
        return None if command is None else _with_verbose(command)

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        try:
            result = super().main(*args, standalone_mode=False, **kwargs)
        except click.UsageError as exc:
            where = f" (see {exc.ctx.command_path} --help)" if exc.ctx is not None else ""
            click.echo(f"Error: {one_line(exc.format_message())}{where}", err=True)
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click.exceptions.Abort:
            click.echo("Aborted.", err=True)
            sys.exit(1)
        sys.exit(result if isinstance(result, int) else 0)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except BrokenPipeError:  # the reader is gone (| head): stop writing, quietly, successfully
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())  # so the flush at exit finds nowhere to fail
            raise click.exceptions.Exit(0) from None
        except grpc.RpcError as exc:
            obj = ctx.obj or {}
            access = obj.get("access", {})
            tls = bool(access.get("ca") or access.get("cert"))
            message = rpc_error_message(exc, obj.get("server", DEFAULT_SERVER), obj.get("timeout"), tls)
            raise click.ClickException(message) from None
        except (LeaderboardError, StoreError, OSError, ValueError) as exc:
            if log.isEnabledFor(logging.DEBUG):
                log.exception("command failed")
            raise click.ClickException(one_line(exc)) from None
        except Exception as exc:  # a defect: still one line, with the way to see more
            if (ctx.obj or {}).get("verbose"):
                raise
            raise click.ClickException(
                f"unexpected {type(exc).__name__}: {one_line(exc)} (run with -v for the traceback)"
            ) from None


def show_warnings_briefly() -> None:
    """Show warnings (e.g. a score ranked in no window) as ``warning: ...`` on stderr."""

    def show(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        click.echo(f"warning: {message}", err=True)

    warnings.showwarning = show  # type: ignore[assignment]
    warnings.simplefilter("always", NoWindowsWarning)  # the product's own; others keep their filters
