"""CLI commands for what players see: metadata, friends, pages, percentiles, movement, the bottom.

Each talks to a running server (declared with ``server_command``: ``--timeout``, and ``--json``
for objects built like ``top``'s, with each entry's metadata).  A primary key on the command line
is one element (a string, a JSON list as for ``rank``, or an integer with ``--int-pk``); windows
are chosen with ``--window-type`` and ``--at`` (a timestamp).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ..index import RankedEntry, Window
from .common import Session, entry_json, json_value, parse_key, server_command


def _window_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option("--window-type", "window_type", type=int, default=0, show_default=True, help="0: all-time.")(fn)
    fn = click.option("--at", "timestamp", type=int, default=None, help="A timestamp in the window.")(fn)
    return click.option("--group", "group", multiple=True, help="Group element (repeat for several).")(fn)


def _mode_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--mode", type=click.Choice(["ORDINAL", "COMPETITION", "DENSE"]), default="ORDINAL", show_default=True
    )(fn)


_int_pk = click.option("--int-pk", is_flag=True, help="Parse primary keys as integers.")


def _key(text: str, as_int: bool) -> tuple:
    """A primary key argument: one element (or a JSON list, as for ``rank``); an integer with ``--int-pk``."""
    if not as_int:
        return parse_key((text,), "PK")
    try:
        return (int(text),)
    except ValueError:
        raise click.BadParameter(f"{text!r} is not an integer (--int-pk)") from None


def _entry_json(entry: RankedEntry | None) -> dict[str, object] | None:
    return None if entry is None else entry_json(entry)


def _window_json(window: Window) -> dict[str, object]:
    return {"type": window.type, "start": window.start, "end": window.end}


def _metadata_line(stored: dict[str, str]) -> str:
    return " ".join(f"{name}={value}" for name, value in sorted(stored.items())) or "(no metadata)"


def _line(entry: RankedEntry | None, label: str = "") -> str:
    if entry is None:
        return f"{label}absent"
    rank = "-" if entry.rank is None else str(entry.rank)
    metadata = "".join(f"  {name}={value}" for name, value in sorted((entry.metadata or {}).items()))
    return f"{label or ''}{rank if label else rank.rjust(5)}  {entry.pk!r}  {entry.score}  @{entry.timestamp}{metadata}"


@click.group("meta")
def meta() -> None:
    """A record's display metadata (returned with every listing)."""


@server_command(meta, "set")
@click.argument("index")
@click.argument("pk")
@click.option("-f", "--field", "fields", multiple=True, help="NAME=VALUE (repeat).")
@click.option("--merge", is_flag=True, help="Update these fields only (default: replace all).")
@click.option("--remove", multiple=True, help="With --merge: a field to drop (repeat).")
@_int_pk
def meta_set(
    session: Session, index: str, pk: str, fields: tuple[str, ...], merge: bool, remove: tuple[str, ...], int_pk: bool
) -> None:
    """Set record PK's metadata in INDEX."""
    parsed = {}
    for field in fields:
        name, sep, value = field.partition("=")
        if not sep:
            raise click.BadParameter(f"{field!r} is not NAME=VALUE", param_hint="--field")
        parsed[name] = value
    key = _key(pk, int_pk)
    stored = session.client.set_metadata(index, key, parsed, merge, remove)
    session.emit({"pk": json_value(key), "metadata": stored}, _metadata_line(stored))


@server_command(meta, "get")
@click.argument("index")
@click.argument("pk")
@_int_pk
def meta_get(session: Session, index: str, pk: str, int_pk: bool) -> None:
    """Show record PK's metadata."""
    key = _key(pk, int_pk)
    stored = session.client.metadata(index, key)
    if stored is None:
        raise click.ClickException(f"no record {pk!r} in {index}")
    session.emit({"pk": json_value(key), "metadata": stored}, _metadata_line(stored))


@server_command(name="ranks")
@click.argument("index")
@click.argument("pks", nargs=-1, required=True)
@_window_options
@_mode_option
@_int_pk
@click.option("--board", is_flag=True, help="Show them as a board (window order, absent ones left out).")
def ranks(
    session: Session,
    index: str,
    pks: tuple[str, ...],
    window_type: int,
    timestamp: int | None,
    group: tuple[str, ...],
    mode: str,
    int_pk: bool,
    board: bool,
) -> None:
    """The ranks of several records (friends) in one call: up to 200.

    With --json: a list in the order given (null for a record absent from the window), or with
    --board the board's entries.
    """
    keys = [_key(pk, int_pk) for pk in pks]
    if board:
        entries = session.client.friends_board(index, keys, window_type, timestamp, group, mode)
        session.emit([entry_json(e) for e in entries], [_line(e) for e in entries])
        return
    found = session.client.ranks(index, keys, window_type, timestamp, group, mode)
    lines = [_line(entry, "" if entry is not None else f"{key!r}: ") for key, entry in zip(keys, found, strict=True)]
    session.emit([_entry_json(e) for e in found], lines)


@server_command(name="page")
@click.argument("index")
@click.argument("number", type=int)
@click.option("--size", type=int, default=10, show_default=True)
@_window_options
@_mode_option
def page(
    session: Session,
    index: str,
    number: int,
    size: int,
    window_type: int,
    timestamp: int | None,
    group: tuple[str, ...],
    mode: str,
) -> None:
    """Page NUMBER (1-based) of a window."""
    found = session.client.page(index, number, size, window_type, timestamp, group, mode)
    data = {
        "page": found.page,
        "pages": found.pages,
        "total": found.total,
        "size": found.size,
        "entries": [entry_json(e) for e in found.entries],
    }
    heading = f"page {found.page} of {found.pages} ({found.total} records, {found.size} per page)"
    session.emit(data, [heading, *map(_line, found.entries)])


@server_command(name="percentile")
@click.argument("index")
@click.argument("pk")
@_window_options
@_int_pk
def percentile(
    session: Session,
    index: str,
    pk: str,
    window_type: int,
    timestamp: int | None,
    group: tuple[str, ...],
    int_pk: bool,
) -> None:
    """The share of the window's records behind PK, in percent (null with --json: absent)."""
    found = session.client.percentile(index, _key(pk, int_pk), window_type, timestamp, group)
    session.emit({"percentile": found}, "absent" if found is None else f"{found:.2f}")


@server_command(name="score-at-percentile")
@click.argument("index")
@click.argument("percent", type=float)
@_window_options
def score_at_percentile(
    session: Session, index: str, percent: float, window_type: int, timestamp: int | None, group: tuple[str, ...]
) -> None:
    """The score at PERCENT (0: the worst, 100: the best), interpolated (null with --json: empty window)."""
    found = session.client.score_for_percentile(index, percent, window_type, timestamp, group)
    session.emit({"score": found}, "empty window" if found is None else str(found))


@server_command(name="movement")
@click.argument("index")
@click.argument("pk")
@click.option("--window-type", "window_type", type=int, required=True)
@click.option("--at", "timestamp", type=int, required=True, help="A timestamp in the current window.")
@click.option("--group", "group", multiple=True)
@click.option("--history", "count", type=int, default=0, help="Also list the latest N windows of the type.")
@_mode_option
@_int_pk
def movement(
    session: Session,
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
    key = _key(pk, int_pk)
    moved = session.client.movement(index, key, window_type, timestamp, group, mode)
    history = session.client.rank_history(index, key, window_type, timestamp, count, group, mode) if count else None
    previous = moved.previous_window
    data: dict[str, Any] = {
        "window": _window_json(moved.window),
        "entry": _entry_json(moved.entry),
        "previous_window": None if previous is None else _window_json(previous),
        "previous_entry": _entry_json(moved.previous_entry),
        "change": moved.change,
    }
    lines = [_line(moved.entry, f"now [{moved.window.start}, {moved.window.end}): ")]
    if previous is None:
        lines.append("no previous window")
    else:
        lines.append(_line(moved.previous_entry, f"before [{previous.start}, {previous.end}): "))
    if moved.change is not None:
        lines.append(f"change: {moved.change:+d}")
    if history is not None:
        data["history"] = [{"window": _window_json(w), "entry": _entry_json(e)} for w, e in history.windows]
        data["best"] = None
        for window, entry in history.windows:
            lines.append(_line(entry, f"[{window.start}, {window.end}): "))
        if history.best is not None:
            best_window, best_entry = history.best
            data["best"] = {"window": _window_json(best_window), "entry": entry_json(best_entry)}
            lines.append(f"best: {best_entry.rank} in [{best_window.start}, {best_window.end})")
    session.emit(data, lines)


@server_command(name="bottom")
@click.argument("index")
@click.option("-n", "count", type=int, default=10, show_default=True)
@_window_options
@_mode_option
def bottom(
    session: Session,
    index: str,
    count: int,
    window_type: int,
    timestamp: int | None,
    group: tuple[str, ...],
    mode: str,
) -> None:
    """The last COUNT records of a window, the last first (a reverse rank scan)."""
    scan_type = "BY_RANK" if window_type == 0 else "BY_TIME_WINDOW"
    where = {"window_type": window_type, "timestamp": timestamp, "group": group}
    entries, _ = session.client.scan(index, scan_type, reverse=True, limit=count, mode=mode, **where)
    session.emit([entry_json(e) for e in entries], [_line(e) for e in entries])


@server_command(name="rank-for-score")
@click.argument("index")
@click.argument("score", type=int)
@click.option("--key-timestamp", type=int, default=None, help="Rank the score key (SCORE, TIMESTAMP) instead.")
@_window_options
def rank_for_score(
    session: Session,
    index: str,
    score: int,
    key_timestamp: int | None,
    window_type: int,
    timestamp: int | None,
    group: tuple[str, ...],
) -> None:
    """The rank a record with SCORE (and, given, its timestamp) would have."""
    key: int | tuple = score if key_timestamp is None else (score, key_timestamp)
    found = session.client.rank_for_score(index, key, window_type, timestamp, group)
    session.emit({"rank": found}, str(found))


@server_command(name="score-trim")
@click.argument("index")
@click.argument("entries", nargs=-1, required=True)
def score_trim(session: Session, index: str, entries: tuple[str, ...]) -> None:
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
    kept = session.client.score_trim(index, parsed)
    data = [
        {"score": e.score, "timestamp": e.timestamp, "context": json_value(e.context), "group": json_value(e.group)}
        for e in kept
    ]
    session.emit(data, " ".join(f"{e.score}@{e.timestamp}" for e in kept))


COMMANDS = [meta, ranks, page, percentile, score_at_percentile, movement, bottom, rank_for_score, score_trim]
