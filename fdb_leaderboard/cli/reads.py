"""Commands that read a board: ``top``, ``rank``, ``around``, ``count``.

Each names the window with ``--type`` and ``--at`` (default: the all-time window), a group
with ``--group``, and prints aligned rows (``--json``: objects with rank, pk, score,
timestamp, context and group).
"""

from __future__ import annotations

import click

from .common import (
    Session,
    entry_json,
    entry_lines,
    group_option,
    mode_option,
    parse_key,
    server_command,
    show_key,
    window_arguments,
    window_options,
)


def _where(window_type: int, at: int | None) -> str:
    return "all time" if not window_type else f"the type {window_type} window at {at}"


@server_command(name="top")
@click.argument("name")
@click.option("-n", "--count", "n", default=10, show_default=True, help="How many rows.")
@window_options
@group_option
@mode_option
def top(session: Session, name: str, n: int, window_type: int, at: int | None, group: str | None, mode: str) -> None:
    """The best N records of index NAME."""
    entries = session.client.top(name, n, mode=mode, **window_arguments(window_type, at, group))
    session.emit([entry_json(e) for e in entries], entry_lines(entries) or [f"{name}: no scores in this window"])


@server_command(name="rank")
@click.argument("name")
@click.argument("pk", nargs=-1, required=True)
@window_options
@group_option
@mode_option
def rank(
    session: Session, name: str, pk: tuple[str, ...], window_type: int, at: int | None, group: str | None, mode: str
) -> None:
    """The rank (0 = best) and score of record PK in index NAME.

    PK is the key's elements as strings, or one JSON list for other types: '["bob", 7]'.
    """
    key = parse_key(pk, "PK")
    arguments = window_arguments(window_type, at, group)
    entry = session.client.rank_and_entry(name, key, mode=mode, **arguments)
    if entry is None:
        session.emit(None, f"{show_key(key)} has no score in {_where(window_type, arguments['timestamp'])}")
        return
    session.emit(entry_json(entry), entry_lines([entry]))


@server_command(name="around")
@click.argument("name")
@click.argument("pk", nargs=-1, required=True)
@click.option("--above", default=5, show_default=True, help="Rows above the record.")
@click.option("--below", default=5, show_default=True, help="Rows below the record.")
@click.option(
    "--if-absent",
    type=click.Choice(["EMPTY", "TOP", "BOTTOM"]),
    default="EMPTY",
    show_default=True,
    help="What to show when the record has no score in the window.",
)
@window_options
@group_option
@mode_option
def around(
    session: Session,
    name: str,
    pk: tuple[str, ...],
    above: int,
    below: int,
    if_absent: str,
    window_type: int,
    at: int | None,
    group: str | None,
    mode: str,
) -> None:
    """The records ranked around record PK (see `rank` for PK)."""
    key = parse_key(pk, "PK")
    arguments = window_arguments(window_type, at, group)
    entries = session.client.around(name, key, above, below, mode=mode, if_absent=if_absent, **arguments)
    empty = f"{show_key(key)} has no score in {_where(window_type, arguments['timestamp'])}"
    session.emit([entry_json(e) for e in entries], entry_lines(entries) or [empty])


@server_command(name="count")
@click.argument("name")
@window_options
@group_option
def count(session: Session, name: str, window_type: int, at: int | None, group: str | None) -> None:
    """How many records have a score in the window."""
    total = session.client.count(name, **window_arguments(window_type, at, group))
    session.emit({"count": total}, str(total))
