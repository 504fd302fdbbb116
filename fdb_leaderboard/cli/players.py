"""CLI commands for what players see: metadata, friends, pages, percentiles, movement, the bottom.

Each talks to a running server through the client.  A primary key on the command line is one
element (a string, or an integer with ``--int-pk``); windows are chosen with ``--window-type``
and ``--at`` (a timestamp), as the other read commands do.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

from ..client import LeaderboardClient
from ..index import RankedEntry


def _client(ctx: click.Context) -> LeaderboardClient:
    return LeaderboardClient(ctx.obj["server"])


def _rpc_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    import grpc

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except grpc.RpcError as exc:
            raise click.ClickException(f"{exc.code().name}: {exc.details()}") from None

    return run


def _window_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option("--window-type", "window_type", type=int, default=0, show_default=True, help="0: all-time.")(fn)
    fn = click.option("--at", "timestamp", type=int, default=None, help="A timestamp in the window.")(fn)
    return click.option("--group", "group", multiple=True, help="Group element (repeat for several).")(fn)


def _mode_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--mode", type=click.Choice(["ORDINAL", "COMPETITION", "DENSE"]), default="ORDINAL", show_default=True
    )(fn)


_int_pk = click.option("--int-pk", is_flag=True, help="Parse primary keys as integers.")


def _pk(text: str, as_int: bool) -> tuple:
    if not as_int:
        return (text,)
    try:
        return (int(text),)
    except ValueError:
        raise click.BadParameter(f"{text!r} is not an integer (--int-pk)") from None


def _line(entry: RankedEntry | None, label: str = "") -> str:
    if entry is None:
        return f"{label}absent"
    rank = "-" if entry.rank is None else str(entry.rank)
    metadata = "".join(f"  {name}={value}" for name, value in sorted((entry.metadata or {}).items()))
    return f"{label or ''}{rank if label else rank.rjust(5)}  {entry.pk!r}  {entry.score}  @{entry.timestamp}{metadata}"


@click.group("meta")
def meta() -> None:
    """A record's display metadata (returned with every listing)."""


@meta.command("set")
@click.argument("index")
@click.argument("pk")
@click.option("-f", "--field", "fields", multiple=True, help="NAME=VALUE (repeat).")
@click.option("--merge", is_flag=True, help="Update these fields only (default: replace all).")
@click.option("--remove", multiple=True, help="With --merge: a field to drop (repeat).")
@_int_pk
@click.pass_context
@_rpc_errors
def meta_set(
    ctx: click.Context, index: str, pk: str, fields: tuple[str, ...], merge: bool, remove: tuple[str, ...], int_pk: bool
) -> None:
    """Set record PK's metadata in INDEX."""
    parsed = {}
    for field in fields:
        name, sep, value = field.partition("=")
        if not sep:
            raise click.BadParameter(f"{field!r} is not NAME=VALUE", param_hint="--field")
        parsed[name] = value
    with _client(ctx) as client:
        stored = client.set_metadata(index, _pk(pk, int_pk), parsed, merge, remove)
    click.echo(" ".join(f"{name}={value}" for name, value in sorted(stored.items())) or "(no metadata)")


@meta.command("get")
@click.argument("index")
@click.argument("pk")
@_int_pk
@click.pass_context
@_rpc_errors
def meta_get(ctx: click.Context, index: str, pk: str, int_pk: bool) -> None:
    """Show record PK's metadata."""
    with _client(ctx) as client:
        stored = client.metadata(index, _pk(pk, int_pk))
    if stored is None:
        raise click.ClickException(f"no record {pk!r} in {index}")
    click.echo(" ".join(f"{name}={value}" for name, value in sorted(stored.items())) or "(no metadata)")


@click.command("ranks")
@click.argument("index")
@click.argument("pks", nargs=-1, required=True)
@_window_options
@_mode_option
@_int_pk
@click.option("--board", is_flag=True, help="Show them as a board (window order, absent ones left out).")
@click.pass_context
@_rpc_errors
def ranks(
    ctx: click.Context,
    index: str,
    pks: tuple[str, ...],
    window_type: int,
    timestamp: int | None,
    group: tuple[str, ...],
    mode: str,
    int_pk: bool,
    board: bool,
) -> None:
    """The ranks of several records (friends) in one call: up to 200."""
    keys = [_pk(pk, int_pk) for pk in pks]
    with _client(ctx) as client:
        if board:
            for entry in client.friends_board(index, keys, window_type, timestamp, group, mode):
                click.echo(_line(entry))
            return
        found = client.ranks(index, keys, window_type, timestamp, group, mode)
    for key, entry in zip(keys, found, strict=True):
        click.echo(_line(entry, "" if entry is not None else f"{key!r}: "))


@click.command("page")
@click.argument("index")
@click.argument("number", type=int)
@click.option("--size", type=int, default=10, show_default=True)
@_window_options
@_mode_option
@click.pass_context
@_rpc_errors
def page(
    ctx: click.Context,
    index: str,
    number: int,
    size: int,
    window_type: int,
    timestamp: int | None,
    group: tuple[str, ...],
    mode: str,
) -> None:
    """Page NUMBER (1-based) of a window."""
    with _client(ctx) as client:
        found = client.page(index, number, size, window_type, timestamp, group, mode)
    click.echo(f"page {found.page} of {found.pages} ({found.total} records, {found.size} per page)")
    for entry in found.entries:
        click.echo(_line(entry))


@click.command("percentile")
@click.argument("index")
@click.argument("pk")
@_window_options
@_int_pk
@click.pass_context
@_rpc_errors
def percentile(
    ctx: click.Context,
    index: str,
    pk: str,
    window_type: int,
    timestamp: int | None,
    group: tuple[str, ...],
    int_pk: bool,
) -> None:
    """The share of the window's records behind PK, in percent."""
    with _client(ctx) as client:
        found = client.percentile(index, _pk(pk, int_pk), window_type, timestamp, group)
    click.echo("absent" if found is None else f"{found:.2f}")


@click.command("score-at-percentile")
@click.argument("index")
@click.argument("percent", type=float)
@_window_options
@click.pass_context
@_rpc_errors
def score_at_percentile(
    ctx: click.Context, index: str, percent: float, window_type: int, timestamp: int | None, group: tuple[str, ...]
) -> None:
    """The score at PERCENT (0: the worst, 100: the best), interpolated."""
    with _client(ctx) as client:
        found = client.score_for_percentile(index, percent, window_type, timestamp, group)
    click.echo("empty window" if found is None else str(found))


@click.command("movement")
@click.argument("index")
@click.argument("pk")
@click.option("--window-type", "window_type", type=int, required=True)
@click.option("--at", "timestamp", type=int, required=True, help="A timestamp in the current window.")
@click.option("--group", "group", multiple=True)
@click.option("--history", "count", type=int, default=0, help="Also list the latest N windows of the type.")
@_mode_option
@_int_pk
@click.pass_context
@_rpc_errors
def movement(
    ctx: click.Context,
    index: str,
    pk: str,
    window_type: int,
    timestamp: int,
    group: tuple[str, ...],
    count: int,
    mode: str,
    int_pk: bool,
) -> None:
    """PK's rank now and in the previous window of the type."""
    key = _pk(pk, int_pk)
    with _client(ctx) as client:
        moved = client.movement(index, key, window_type, timestamp, group, mode)
        history = client.rank_history(index, key, window_type, timestamp, count, group, mode) if count else None
    click.echo(_line(moved.entry, f"now [{moved.window.start}, {moved.window.end}): "))
    if moved.previous_window is None:
        click.echo("no previous window")
    else:
        window = moved.previous_window
        click.echo(_line(moved.previous_entry, f"before [{window.start}, {window.end}): "))
    if moved.change is not None:
        click.echo(f"change: {moved.change:+d}")
    if history is not None:
        for window, entry in history.windows:
            click.echo(_line(entry, f"[{window.start}, {window.end}): "))
        if history.best is not None:
            click.echo(f"best: {history.best[1].rank} in [{history.best[0].start}, {history.best[0].end})")


@click.command("bottom")
@click.argument("index")
@click.option("-n", "count", type=int, default=10, show_default=True)
@_window_options
@_mode_option
@click.pass_context
@_rpc_errors
def bottom(
    ctx: click.Context,
    index: str,
    count: int,
    window_type: int,
    timestamp: int | None,
    group: tuple[str, ...],
    mode: str,
) -> None:
    """The last COUNT records of a window, the last first (a reverse rank scan)."""
    scan_type = "BY_RANK" if window_type == 0 else "BY_TIME_WINDOW"
    with _client(ctx) as client:
        where = {"window_type": window_type, "timestamp": timestamp, "group": group}
        entries, _ = client.scan(index, scan_type, reverse=True, limit=count, mode=mode, **where)
    for entry in entries:
        click.echo(_line(entry))


@click.command("rank-for-score")
@click.argument("index")
@click.argument("score", type=int)
@click.option("--key-timestamp", type=int, default=None, help="Rank the score key (SCORE, TIMESTAMP) instead.")
@_window_options
@click.pass_context
@_rpc_errors
def rank_for_score(
    ctx: click.Context,
    index: str,
    score: int,
    key_timestamp: int | None,
    window_type: int,
    timestamp: int | None,
    group: tuple[str, ...],
) -> None:
    """The rank a record with SCORE (and, given, its timestamp) would have."""
    key: int | tuple = score if key_timestamp is None else (score, key_timestamp)
    with _client(ctx) as client:
        click.echo(client.rank_for_score(index, key, window_type, timestamp, group))


@click.command("score-trim")
@click.argument("index")
@click.argument("entries", nargs=-1, required=True)
@click.pass_context
@_rpc_errors
def score_trim(ctx: click.Context, index: str, entries: tuple[str, ...]) -> None:
    """Of ENTRIES (SCORE@TIMESTAMP each), those the index's windows use, best first."""
    parsed = []
    for text in entries:
        score, sep, ts = text.partition("@")
        try:
            parsed.append((int(score), int(ts)))
        except ValueError:
            raise click.BadParameter(f"{text!r} is not SCORE@TIMESTAMP", param_hint="ENTRIES") from None
        if not sep:
            raise click.BadParameter(f"{text!r} is not SCORE@TIMESTAMP", param_hint="ENTRIES")
    with _client(ctx) as client:
        kept = client.score_trim(index, parsed)
    click.echo(" ".join(f"{e.score}@{e.timestamp}" for e in kept))


COMMANDS = [meta, ranks, page, percentile, score_at_percentile, movement, bottom, rank_for_score, score_trim]
