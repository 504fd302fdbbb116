"""What every command shares: the server connection, ``--timeout``, ``--json`` output, keys and
windows given on the command line, durations, and errors as one line with a non-zero exit.

A command that talks to the server is declared with :func:`server_command`; it receives a
:class:`Session` (its client, made with the command's ``--timeout``, and its output) and
returns nothing: what it shows goes through ``session.emit``.  Errors raised anywhere (a gRPC
status, a bad file, a store that cannot open) are turned into one line by :class:`CliGroup`.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import json
import logging
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import click
import grpc

from ..client import LeaderboardClient
from ..errors import LeaderboardError, NoWindowsWarning
from ..index import RankedEntry
from ..proto import service_pb2 as pb
from ..store import StoreError

DEFAULT_SERVER = os.environ.get("FDB_LEADERBOARD_SERVER", "127.0.0.1:50051")
DEFAULT_TIMEOUT = 30.0
START_A_SERVER = (
    "start one with `fdb-leaderboard serve` (or ./tools/serve), or point at one with "
    "--server HOST:PORT or $FDB_LEADERBOARD_SERVER"
)

log = logging.getLogger("fdb_leaderboard.cli")

# -- durations -------------------------------------------------------------------------------------

_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m|h|d|w)?\s*$")


def parse_duration(text: str) -> float:
    """``"90"``, ``"30s"``, ``"5m"``, ``"2h"``, ``"1d"``, ``"1w"`` or ``"250ms"`` in seconds; ValueError otherwise."""
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a duration: use a number of seconds or e.g. 30s, 5m, 2h, 1d, 250ms")
    return float(match.group(1)) * _UNITS[match.group(2) or "s"]


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

# -- keys and windows on the command line ------------------------------------------------------------


def parse_key(values: Sequence[str], what: str = "key") -> tuple:
    """Command-line elements as a key: each a string, or one JSON list for other types (``'["bob", 7]'``)."""
    if len(values) == 1 and values[0].lstrip().startswith("["):
        try:
            parsed = json.loads(values[0])
        except json.JSONDecodeError as exc:
            raise click.BadParameter(f"{what} {values[0]!r} is not a JSON list: {exc.msg}") from None
        if not isinstance(parsed, list) or any(isinstance(item, list | dict) for item in parsed):
            raise click.BadParameter(f"{what} must be a JSON list of strings, numbers, booleans or null")
        return tuple(parsed)
    return tuple(values)


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
        help="The group (for indexes with groups): a string, or a JSON list such as '[\"eu\", 3]'.",
    )(fn)


def window_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--type`` and ``--at``: the window of a type containing a time (type 0: all-time)."""
    fn = click.option(
        "--at",
        "at",
        type=int,
        default=None,
        help="A time in the window (default: now, the server's clock in the index's timebase).",
    )(fn)
    return click.option("-t", "--type", "window_type", type=int, default=0, show_default=True, help="Window type.")(fn)


def window_arguments(window_type: int, at: int | None, group: str | None) -> dict[str, Any]:
    """The client's window and group arguments for ``--type``, ``--at`` and ``--group``."""
    return {"window_type": window_type, "timestamp": at if window_type else None, "group": group_key(group)}


def group_key(group: str | None) -> tuple:
    return () if group is None else parse_key((group,), "group")


def mode_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--mode",
        type=click.Choice(["ORDINAL", "COMPETITION"]),
        default="ORDINAL",
        show_default=True,
        help="COMPETITION: equal scores share a rank (0, 0, 2).",
    )(fn)


# -- output ------------------------------------------------------------------------------------------


def json_value(value: object) -> object:
    """A key element or score as JSON: bytes as {"bytes": base64}, the rest as is."""
    if isinstance(value, bytes):
        return {"bytes": base64.b64encode(value).decode()}
    if isinstance(value, tuple | list):
        return [json_value(item) for item in value]
    return value


def show_key(key: tuple) -> str:
    """A key for people: ``alice`` for ``("alice",)``, the tuple otherwise."""
    return key[0] if len(key) == 1 and isinstance(key[0], str) else repr(key)


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


def entry_lines(entries: Iterable[RankedEntry]) -> list[str]:
    """Ranked entries as aligned lines: rank, key, score, timestamp (and context, group if any)."""
    rows = []
    for entry in entries:
        labelled = (("context", entry.context), ("group", entry.group))
        extra = "".join(f"  {name} {show_key(value)}" for name, value in labelled if value)
        rank = "-" if entry.rank is None else str(entry.rank)
        rows.append((rank, show_key(entry.pk), show_score(entry.score), str(entry.timestamp), extra))
    if not rows:
        return []
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return [
        f"{rank:>{widths[0]}}  {key:<{widths[1]}}  {score:>{widths[2]}}  at {ts}{extra}"
        for rank, key, score, ts, extra in rows
    ]


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


@dataclasses.dataclass
class Session:
    """One command's connection and output: ``client`` (made on first use) and ``emit``."""

    server: str
    timeout: float | None
    json: bool
    access: dict[str, Any] = dataclasses.field(default_factory=dict)  # token and TLS files (see main)

    def __post_init__(self) -> None:
        self._client: LeaderboardClient | None = None

    @property
    def client(self) -> LeaderboardClient:
        if self._client is None:
            self._client = LeaderboardClient(self.server, timeout=self.timeout, **self.access)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

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


def server_command(
    group: click.Group | None = None, name: str | None = None, timeout: float | None = DEFAULT_TIMEOUT, **attrs: Any
) -> Callable[[Callable[..., Any]], click.Command]:
    """Declare a command that talks to the server: adds ``--timeout`` and ``--json``.

    The command joins ``group`` if given (else register it with ``main.add_command``).

    The function gets ``session`` (a :class:`Session`) instead of those two options.
    ``timeout`` is the default per-call limit (None: no limit, for calls as long as their data).
    """

    def decorate(fn: Callable[..., Any]) -> click.Command:
        @functools.wraps(fn)
        def run(*args: Any, timeout: float | None, json_output: bool, **kwargs: Any) -> Any:
            ctx = click.get_current_context()
            session = Session(ctx.obj["server"], timeout or None, json_output, ctx.obj.get("access", {}))
            ctx.obj["timeout"] = session.timeout
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
        return (group.command if group is not None else click.command)(name, **attrs)(run)

    return decorate


# -- errors: one line, non-zero exit -------------------------------------------------------------------


def rpc_error_message(exc: grpc.RpcError, server: str, timeout: float | None) -> str:
    code, details = exc.code(), exc.details() or ""
    if code == grpc.StatusCode.UNAVAILABLE:
        reason = "connection refused" if "refused" in details.lower() else details.split("\n")[0]
        return f"cannot reach a server at {server} ({reason}): {START_A_SERVER}"
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        limit = f"within {timeout:g} s" if timeout else "in time"
        return f"DEADLINE_EXCEEDED: the server at {server} did not answer {limit}; give a longer --timeout"
    return f"{code.name}: {details}"


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


class CliGroup(click.Group):
    """The top-level group: any error a command raises ends the process with one line and exit 1.

    Usage mistakes (a bad option value, a missing argument) are one line too, with exit 2.
    """

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
        except grpc.RpcError as exc:
            obj = ctx.obj or {}
            message = rpc_error_message(exc, obj.get("server", DEFAULT_SERVER), obj.get("timeout"))
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
