"""CLI commands for what players see: metadata, friends, pages, percentiles, movement, the bottom.

Each talks to a running server (declared with ``server_command``: ``--timeout``, and ``--json``
for objects built like ``top``'s, with each entry's metadata).  They take the read commands'
options (``--type``, ``--at``, ``--group``, ``--mode``; see ``reads.py``), keys as ``rank`` does
(a string, or one JSON list), and print the same rows (``#1`` is the best).
"""

from __future__ import annotations

from typing import Any

import click

from ..index import RankedEntry, Window
from .options import (
    TIME,
    TIME_HELP,
    TimeSpec,
    key_argument,
    keys_argument,
    mode_option,
    parse_key,
    parse_score,
    window_options,
)
from .output import Absent, entry_json, entry_lines, json_value, number_hint, show_key, show_rank, show_score, where
from .session import Session, server_command


def _entry_json(entry: RankedEntry | None) -> dict[str, object] | None:
    return None if entry is None else entry_json(entry)


def _window_json(window: Window) -> dict[str, object]:
    return {"type": window.type, "start": window.start, "end": window.end}


def _span(window: Window) -> str:
    return f"[{window.start}, {window.end})"


def _metadata_line(stored: dict[str, str]) -> str:
    return " ".join(f"{name}={value}" for name, value in sorted(stored.items())) or "(no metadata)"


@click.group("meta")
def meta() -> None:
    """A record's display metadata (returned with every listing)."""


@server_command(meta, "set")
@click.argument("index")
@key_argument()
@click.option("-f", "--field", "fields", multiple=True, help="NAME=VALUE (repeat).")
@click.option("--merge", is_flag=True, help="Update these fields only (default: replace all).")
@click.option("--remove", multiple=True, help="With --merge: a field to drop (repeat).")
def meta_set(
    session: Session, index: str, pk: tuple, fields: tuple[str, ...], merge: bool, remove: tuple[str, ...]
) -> None:
    """Set record PK's metadata in INDEX (the field `name` is shown beside its key in every listing)."""
    parsed = {}
    for field in fields:
        name, sep, value = field.partition("=")
        if not sep:
            raise click.BadParameter(f"{field!r} is not NAME=VALUE", param_hint="--field")
        parsed[name] = value
    stored = session.client.set_metadata(index, pk, parsed, merge, remove)
    session.emit({"pk": json_value(pk), "metadata": stored}, _metadata_line(stored))


@server_command(meta, "get")
@click.argument("index")
@key_argument()
def meta_get(session: Session, index: str, pk: tuple) -> None:
    """Show record PK's metadata."""
    stored = session.client.metadata(index, pk)
    if stored is None:
        raise click.ClickException(f"NOT_FOUND: no record {show_key(pk)} in {index}{number_hint(pk)}")
    session.emit({"pk": json_value(pk), "metadata": stored}, _metadata_line(stored))


@server_command(name="ranks")
@click.argument("index")
@keys_argument()
@window_options
@mode_option
@click.option("--board", is_flag=True, help="Show them as a board (window order, absent ones left out).")
def ranks(
    session: Session,
    index: str,
    pks: list[tuple],
    window_type: int,
    at: TimeSpec,
    group: tuple,
    mode: str,
    board: bool,
) -> None:
    """The ranks of several records (friends) in one call: up to 200.

    With --json: a list in the order given (null for a record absent from the window), or with
    --board the board's entries.
    """
    where_ = session.window(index, window_type, at, group)
    if board:
        entries = session.client.friends_board(index, pks, mode=mode, **where_)
        session.emit([entry_json(e) for e in entries], entry_lines(entries))
        return
    found = session.client.ranks(index, pks, mode=mode, **where_)
    rows = [Absent(pk) if entry is None else entry for pk, entry in zip(pks, found, strict=True)]
    session.emit([_entry_json(e) for e in found], entry_lines(rows))


@server_command(name="page")
@click.argument("index")
@click.argument("number", type=click.IntRange(1))
@click.option("--size", type=click.IntRange(1), default=10, show_default=True, help="Records per page.")
@window_options
@mode_option
def page(
    session: Session, index: str, number: int, size: int, window_type: int, at: TimeSpec, group: tuple, mode: str
) -> None:
    """Page NUMBER (1-based) of a window."""
    found = session.client.page(index, number, size, mode=mode, **session.window(index, window_type, at, group))
    data = {
        "page": found.page,
        "pages": found.pages,
        "total": found.total,
        "size": found.size,
        "entries": [entry_json(e) for e in found.entries],
    }
    records = "record" if found.total == 1 else "records"
    heading = f"page {found.page} of {found.pages} ({found.total:,} {records}, {found.size} per page)"
    session.emit(data, [heading, *entry_lines(found.entries)])


@server_command(name="cohort")
@click.argument("index")
@click.argument("pk", nargs=-1, metavar="[PK]")
@click.option("--tier", type=click.IntRange(0), default=None, help="With --cohort: this cohort of this tier.")
@click.option("--cohort", "number", type=click.IntRange(0), default=None, help="The cohort's number in its tier.")
@click.option(
    "--at",
    "at",
    type=TIME,
    default="now",
    show_default=True,
    help=f"A time in the league window: {TIME_HELP}.",
)
@click.option("--page", type=click.IntRange(1), default=1, show_default=True, help="The page, with --size.")
@click.option("--size", type=click.IntRange(0), default=0, show_default=True, help="Records per page (0: all).")
@click.option("--above", type=click.IntRange(0), default=None, help="Around PK: this many above it.")
@click.option("--below", type=click.IntRange(0), default=None, help="Around PK: this many below it.")
@mode_option
def cohort(
    session: Session,
    index: str,
    pk: tuple[str, ...],
    tier: int | None,
    number: int | None,
    at: TimeSpec,
    page: int,
    size: int,
    above: int | None,
    below: int | None,
    mode: str,
) -> None:
    """Leagues: PK's tier and cohort in the league window (at --at), and the cohort's records
    ranked within it; or the cohort --cohort of tier --tier.  --size pages it, --above and
    --below show the records around PK.  Ranks are 0-based in --json, "#1" for the best here."""
    key = parse_key(pk[0], "PK") if len(pk) == 1 else None
    if len(pk) > 1:
        raise click.UsageError("give one PK (a string, or one JSON list)")
    if (key is None) == (tier is None or number is None):
        raise click.UsageError("give a PK, or --tier and --cohort (not both)")
    if (above is not None or below is not None) and key is None:
        raise click.UsageError("--above and --below show the records around a PK: give one")
    league_type = session.league_type(index)
    around = (above or 0, below or 0) if above is not None or below is not None else None
    timestamp = session.timestamp(index, at, league_type)
    found = session.client.cohort(index, key, tier, number, timestamp, mode, page, size, around)
    if found is None:
        session.emit(None, f"{show_key(key)} has joined no cohort in {where(league_type, timestamp)}")  # type: ignore[arg-type]
        return
    window = found.window
    data = {
        "tier": found.tier,
        "cohort": found.cohort,
        "total": found.total,
        "window": {"type": window.type, "start": window.start, "end": window.end, "key": window.lb_key},
        "entry": entry_json(found.entry) if found.entry is not None else None,
        "entries": [entry_json(e) for e in found.entries],
    }
    records = "record" if found.total == 1 else "records"
    heading = (
        f"tier {found.tier}, cohort {found.cohort}: {found.total} {records} "
        f"in the type {window.type} window [{window.start}, {window.end})"
    )
    session.emit(data, [heading, *entry_lines(found.entries)])


@server_command(name="percentile")
@click.argument("index")
@key_argument()
@window_options
def percentile(session: Session, index: str, pk: tuple, window_type: int, at: TimeSpec, group: tuple) -> None:
    """The share of the window's records behind PK, in percent (null with --json: absent)."""
    arguments = session.window(index, window_type, at, group)
    found = session.client.percentile(index, pk, **arguments)
    absent = f"no score in {where(window_type, arguments['timestamp'])}"
    session.emit({"percentile": found}, absent if found is None else f"{found:.2f}")


@server_command(name="score-for-percentile")
@click.argument("index")
@click.argument("percent", type=click.FloatRange(0, 100))
@window_options
def score_for_percentile(
    session: Session, index: str, percent: float, window_type: int, at: TimeSpec, group: tuple
) -> None:
    """The score at PERCENT (0: the worst, 100: the best), interpolated (null with --json: empty window)."""
    found = session.client.score_for_percentile(index, percent, **session.window(index, window_type, at, group))
    session.emit({"score": found}, "empty window" if found is None else show_score(found))


def _rank_as_read(ctx: click.Context, param: click.Parameter, value: str) -> int:
    """A rank as people read it, ``3`` or ``#3`` (#1: the best), as the API's 0-based rank."""
    text = value.strip().removeprefix("#")
    if not text.isdigit() or int(text) < 1:
        raise click.BadParameter(f"{value!r} is not a rank: #1 is the best, e.g. 3 or '#3'", ctx, param)
    return int(text) - 1


@server_command(name="score-for-rank")
@click.argument("index")
@click.argument("rank", callback=_rank_as_read)
@window_options
def score_for_rank(session: Session, index: str, rank: int, window_type: int, at: TimeSpec, group: tuple) -> None:
    """The score at RANK (1 or #1: the best; with --json the API's "rank": 0), or "no record at
    that rank" (null with --json)."""
    found = session.client.score_for_rank(index, rank, **session.window(index, window_type, at, group))
    session.emit({"rank": rank, "score": found}, "no record at that rank" if found is None else show_score(found))


@server_command(name="movement")
@click.argument("index")
@key_argument()
@window_options(type_required=True)
@click.option(
    "--history", "count", type=click.IntRange(0, 100), default=0, help="Also list the latest N windows of the type."
)
@mode_option
def movement(
    session: Session, index: str, pk: tuple, window_type: int, at: TimeSpec, group: tuple, count: int, mode: str
) -> None:
    """PK's rank in the window of the type holding --at (now) and in the one before it."""
    arguments = session.window(index, window_type, at, group)
    moved = session.client.movement(index, pk, mode=mode, **arguments)
    history = None
    if count:
        until = arguments["timestamp"] if arguments["timestamp"] is not None else moved.window.start
        history = session.client.rank_history(index, pk, window_type, until, count, group, mode)
    previous = moved.previous_window
    data: dict[str, Any] = {
        "window": _window_json(moved.window),
        "entry": _entry_json(moved.entry),
        "previous_window": None if previous is None else _window_json(previous),
        "previous_entry": _entry_json(moved.previous_entry),
        "change": moved.change,
    }
    rows: list[RankedEntry | Absent] = [moved.entry or Absent(pk)]
    labels = [f"now {_span(moved.window)}"]
    if previous is not None:
        rows.append(moved.previous_entry or Absent(pk))
        labels.append(f"before {_span(previous)}")
    if history is not None:
        data["history"] = [{"window": _window_json(w), "entry": _entry_json(e)} for w, e in history.windows]
        rows.extend(entry or Absent(pk) for _, entry in history.windows)
        labels.extend(_span(window) for window, _ in history.windows)
    lines = entry_lines(rows, labels)
    summary = "no previous window" if previous is None else None
    if moved.change is not None:
        summary = f"change: {moved.change:+d} {'place' if abs(moved.change) == 1 else 'places'}"
    if summary is not None:
        lines.insert(1 if previous is None else 2, summary)  # after now's and the previous window's rows
    if history is not None:
        data["best"] = None
        if history.best is not None:
            best_window, best_entry = history.best
            data["best"] = {"window": _window_json(best_window), "entry": entry_json(best_entry)}
            lines.append(f"best: {show_rank(best_entry.rank)} in {_span(best_window)}")
    session.emit(data, lines)


@server_command(name="bottom")
@click.argument("index")
@click.option("-n", "--count", "count", type=click.IntRange(1), default=10, show_default=True, help="How many rows.")
@window_options
@mode_option
def bottom(session: Session, index: str, count: int, window_type: int, at: TimeSpec, group: tuple, mode: str) -> None:
    """The last COUNT records of a window, the last first (a reverse rank scan)."""
    scan_type = "BY_RANK" if window_type == 0 else "BY_TIME_WINDOW"
    arguments = session.window(index, window_type, at, group)
    entries, _ = session.client.scan(index, scan_type, reverse=True, limit=count, mode=mode, **arguments)
    session.emit([entry_json(e) for e in entries], entry_lines(entries) or [f"{index}: no scores in this window"])


@server_command(name="rank-for-score")
@click.argument("index")
@click.argument("score")
@click.option("--key-timestamp", type=int, default=None, help="Rank the score key (SCORE, TIMESTAMP) instead.")
@window_options
def rank_for_score(
    session: Session, index: str, score: str, key_timestamp: int | None, window_type: int, at: TimeSpec, group: tuple
) -> None:
    """The rank (#1: the best) a record with SCORE (and, given, its timestamp) would have (SCORE: a
    number, or integers separated by commas for an index ranking by columns)."""
    value = parse_score(score, "SCORE")
    key = (value,) if key_timestamp is None else (value, key_timestamp)  # a key: a column score is no key
    found = session.client.rank_for_score(index, key, **session.window(index, window_type, at, group))
    session.emit({"rank": found}, show_rank(found))


@server_command(name="score-trim")
@click.argument("index")
@click.argument("entries", nargs=-1, required=True)
def score_trim(session: Session, index: str, entries: tuple[str, ...]) -> None:
    """Of ENTRIES (SCORE@TIMESTAMP each; a score of columns as 12,3,95), those the index's windows
    use, best first."""
    parsed = []
    for text in entries:
        score, sep, ts = text.partition("@")
        try:
            if not sep:
                raise ValueError(text)
            parsed.append((parse_score(score, "ENTRIES"), int(ts)))
        except (ValueError, click.BadParameter):
            raise click.BadParameter(f"{text!r} is not SCORE@TIMESTAMP", param_hint="ENTRIES") from None
    kept = session.client.score_trim(index, parsed)
    data = [
        {"score": e.score, "timestamp": e.timestamp, "context": json_value(e.context), "group": json_value(e.group)}
        for e in kept
    ]
    session.emit(data, " ".join(f"{show_score(e.score)}@{e.timestamp}" for e in kept))


@server_command(name="groups")
@click.argument("index")
@click.option("-t", "--type", "window_type", type=click.IntRange(0), default=0, show_default=True, help="Window type.")
@click.option("--at", "at", type=TIME, default="now", show_default=True, help=f"A time in the window: {TIME_HELP}.")
@click.option("-n", "--limit", type=click.IntRange(1), default=None, help="At most this many groups (default: all).")
def groups(session: Session, index: str, window_type: int, at: TimeSpec, limit: int | None) -> None:
    """The groups holding a score in a window of INDEX (a grouped index's boards), in key order,
    one a line, as --group takes them."""
    arguments = session.window(index, window_type, at, ())
    found: list[tuple] = []
    continuation = b""
    while limit is None or len(found) < limit:
        page = min(1000, limit - len(found)) if limit is not None else 1000
        more, continuation = session.client.groups(
            index, arguments["window_type"], arguments["timestamp"], page, continuation
        )
        found += more
        if not continuation:
            break
    session.emit([json_value(g) for g in found], [show_key(g) for g in found] or [f"{index}: no scores in this window"])


COMMANDS = [
    meta,
    ranks,
    page,
    cohort,
    percentile,
    score_for_percentile,
    score_for_rank,
    movement,
    bottom,
    rank_for_score,
    score_trim,
    groups,
]
