"""Commands that fix a board by hand: ``add`` a score, ``delete`` a record."""

from __future__ import annotations

import warnings

import click

from .options import TIME, TIME_HELP, TimeSpec, group_option, key_argument, parse_key, parse_score
from .output import number_hint, plural, show_key, show_score
from .session import Session, server_command


@server_command(name="add")
@click.argument("name")
@key_argument()
@click.option(
    "--score",
    required=True,
    help="The score: an integer, a number for DOUBLE indexes, or integers separated by commas for columns.",
)
@click.option("--at", "at", type=TIME, default="now", show_default=True, help=f"Its time: {TIME_HELP}.")
@click.option("--context", default=None, help="The entry's context: a string or a JSON list.")
@group_option
def add(session: Session, name: str, pk: tuple, score: str, at: TimeSpec, context: str | None, group: tuple) -> None:
    """Add a score to record PK of index NAME (PK: a string, or one JSON list such as '["bob", 7]')."""
    value = parse_score(score, "--score")
    timestamp = session.time_of(name, at)
    entry_context = () if context is None else parse_key(context, "--context")
    with warnings.catch_warnings(record=True) as caught:  # e.g. the index has no windows yet
        warnings.simplefilter("always")
        changed = session.client.add_score(name, pk, value, timestamp, entry_context, group)
    warning = next((str(w.message) for w in caught), None)
    session.emit(
        {"pk": list(pk), "score": value, "timestamp": timestamp, "windows_changed": changed, "warning": warning},
        f"added {show_score(value)} at {timestamp} to {show_key(pk)}: {plural(changed, 'window value')} changed",
    )
    if warning:
        session.note(f"warning: {warning}")


@server_command(name="delete")
@click.argument("name")
@key_argument()
def delete(session: Session, name: str, pk: tuple) -> None:
    """Delete record PK of index NAME from every window (see `add` for PK)."""
    existed = session.client.delete_record(name, pk)
    session.emit(
        {"pk": list(pk), "existed": existed},
        f"deleted {show_key(pk)}"
        if existed
        else f"{show_key(pk)}: no such record (nothing to delete){number_hint(pk)}",
    )
