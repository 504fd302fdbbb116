"""Commands that read a board: ``top``, ``rank``, ``watch``, ``around``, ``count``.

Like every read command, each names the window with ``--type`` and ``--at`` (default: the
all-time window; a type's window holding now), a group with ``--group``, ranks ties with
``--mode``, and prints the one row format of ``output.entry_lines`` (``#1`` is the best;
``--json``: objects with the API's 0-based rank, pk, score, timestamp, context, group and metadata).
"""

from __future__ import annotations

import click

from ..client import InvalidArgument
from .options import TimeSpec, key_argument, mode_option, window_options
from .output import entry_json, entry_lines, listing_json, no_score, where
from .session import Session, server_command


@server_command(name="top")
@click.argument("name")
@click.option("-n", "--count", "n", default=10, show_default=True, type=click.IntRange(1), help="How many rows.")
@window_options
@mode_option
def top(session: Session, name: str, n: int, window_type: int, at: TimeSpec, group: tuple, mode: str) -> None:
    """The best N records of index NAME (for a whole board, see `export`)."""
    try:
        entries = session.client.top(name, n, mode=mode, **session.window(name, window_type, at, group))
    except InvalidArgument as exc:
        if not str(exc).startswith("Top n asks for"):
            raise
        most = str(exc).split("; page further")[0]
        raise click.ClickException(
            f"INVALID_ARGUMENT: {most}: `fdb-leaderboard export {name}` writes a whole board, page by page "
            f"(or see `fdb-leaderboard page {name} N`)"
        ) from None
    session.emit(listing_json(entries), entry_lines(entries) or [f"{name}: no scores in this window"])


@server_command(name="rank")
@click.argument("name")
@key_argument()
@window_options
@mode_option
def rank(session: Session, name: str, pk: tuple, window_type: int, at: TimeSpec, group: tuple, mode: str) -> None:
    """The rank (#1: the best) and score of record PK in index NAME.

    PK is the record's key: a string, or one JSON list for several elements or other types:
    '["bob", 7]', '[42]'.
    """
    arguments = session.window(name, window_type, at, group)
    entry = session.client.rank_and_entry(name, pk, mode=mode, **arguments)
    if entry is None:
        session.emit(None, no_score(pk, where(window_type, arguments["timestamp"])))
        return
    session.emit(entry_json(entry), entry_lines([entry]))


@server_command(name="watch")
@click.argument("name")
@key_argument()
@click.option("--updates", type=click.IntRange(1), default=None, help="Stop after this many rows (default: at Ctrl-C).")
@window_options
@mode_option
def watch(
    session: Session, name: str, pk: tuple, updates: int | None, window_type: int, at: TimeSpec, group: tuple, mode: str
) -> None:
    """Follow the rank and score of record PK in index NAME: a row now, then one each time they
    change (at most one a second), until Ctrl-C.  Without --at, a type's window follows the clock."""
    arguments = session.window(name, window_type, at, group)
    with session.client.watch_rank(name, pk, mode=mode, **arguments) as stream:
        for shown, entry in enumerate(stream, 1):
            if entry is None:
                session.emit(None, no_score(pk, where(window_type, arguments["timestamp"])))
            else:
                session.emit(entry_json(entry), entry_lines([entry]))
            if updates is not None and shown >= updates:
                break


@server_command(name="around")
@click.argument("name")
@key_argument()
@click.option("--above", default=5, show_default=True, type=click.IntRange(0), help="Rows above the record.")
@click.option("--below", default=5, show_default=True, type=click.IntRange(0), help="Rows below the record.")
@click.option(
    "--if-absent",
    type=click.Choice(["EMPTY", "TOP", "BOTTOM"], case_sensitive=False),
    default="EMPTY",
    show_default=True,
    help="What to show when the record has no score in the window.",
)
@window_options
@mode_option
def around(
    session: Session,
    name: str,
    pk: tuple,
    above: int,
    below: int,
    if_absent: str,
    window_type: int,
    at: TimeSpec,
    group: tuple,
    mode: str,
) -> None:
    """The records ranked around record PK (see `rank` for PK)."""
    arguments = session.window(name, window_type, at, group)
    entries = session.client.around(name, pk, above, below, mode=mode, if_absent=if_absent, **arguments)
    empty = no_score(pk, where(window_type, arguments["timestamp"]))
    session.emit(listing_json(entries), entry_lines(entries) or [empty])


@server_command(name="count")
@click.argument("name")
@window_options
def count(session: Session, name: str, window_type: int, at: TimeSpec, group: tuple) -> None:
    """How many records have a score in the window."""
    arguments = session.window(name, window_type, at, group)
    total = session.client.count(name, **arguments)
    if session.json:  # the window read, as the API names it (a top of none answers it)
        window = listing_json(session.client.top(name, 0, **arguments))["window"]
        session.emit({"count": total, "window": window})
        return
    session.emit({"count": total}, str(total))
