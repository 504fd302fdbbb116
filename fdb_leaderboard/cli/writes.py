"""Commands that fix a board by hand: ``add`` a score, ``delete`` a record."""

from __future__ import annotations

import time
import warnings

import click

from .common import Session, group_key, group_option, parse_key, parse_score, server_command, show_key, show_score


@server_command(name="add")
@click.argument("name")
@click.argument("pk", nargs=-1, required=True)
@click.option(
    "--score",
    required=True,
    help="The score: an integer, a number for DOUBLE indexes, or integers separated by commas for columns.",
)
@click.option("--at", "timestamp", type=int, default=None, help="Its time (default: now, in seconds).")
@click.option("--context", default=None, help="The entry's context: a string or a JSON list.")
@group_option
def add(
    session: Session,
    name: str,
    pk: tuple[str, ...],
    score: str,
    timestamp: int | None,
    context: str | None,
    group: str | None,
) -> None:
    """Add a score to record PK of index NAME (PK: strings, or one JSON list such as '["bob", 7]')."""
    value = parse_score(score)
    key = parse_key(pk, "PK")
    at = int(time.time()) if timestamp is None else timestamp
    with warnings.catch_warnings(record=True) as caught:  # e.g. the index has no windows yet
        warnings.simplefilter("always")
        changed = session.client.add_score(name, key, value, at, group_key(context), group_key(group))
    warning = next((str(w.message) for w in caught), None)
    session.emit(
        {"pk": list(key), "score": value, "timestamp": at, "windows_changed": changed, "warning": warning},
        f"added {show_score(value)} at {at} to {show_key(key)}: {changed} window value(s) changed",
    )
    if warning:
        session.note(f"warning: {warning}")


@server_command(name="delete")
@click.argument("name")
@click.argument("pk", nargs=-1, required=True)
def delete(session: Session, name: str, pk: tuple[str, ...]) -> None:
    """Delete record PK of index NAME from every window (see `add` for PK)."""
    key = parse_key(pk, "PK")
    existed = session.client.delete_record(name, key)
    session.emit(
        {"pk": list(key), "existed": existed},
        f"deleted {show_key(key)}" if existed else f"{show_key(key)}: no such record (nothing to delete)",
    )
