"""CLI commands for fair play and operations: ``hide-record`` and ``restore-record``, list the
``hidden-records``, score ``rules``, ``delete-records`` (a group's or every record).

Hiding takes a record out of every window at once and keeps its entries; restoring puts it back
as if it had never been hidden.  Hidden records are listed with who hid them (the token's name),
when and why.  ``rules show`` / ``rules set`` read and replace an index's score rules (the score
range, submissions per record and window or minute); a refused write names its rule.
``delete-records`` deletes a group's data or every record in bounded batches, reporting progress,
and leaves the index and its windows.  All but ``rules show`` need the admin role.
"""

from __future__ import annotations

import datetime as dt

import click

from ..index import DeletionProgress, HiddenRecord, ScoreRules
from .options import group_option, key_argument, parse_score
from .output import confirm_or_yes, json_value, show_key
from .session import Session, server_command


def _hidden_json(record: HiddenRecord) -> dict[str, object]:
    return {"pk": json_value(record.pk), "actor": record.actor, "hidden_at": record.hidden_at, "reason": record.reason}


def _hidden_line(record: HiddenRecord) -> str:
    when = dt.datetime.fromtimestamp(record.hidden_at, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    reason = f": {record.reason}" if record.reason else ""
    return f"{show_key(record.pk)}  hidden by {record.actor or '(unknown)'} at {when}{reason}"


@server_command(name="hide-record")
@click.argument("index")
@key_argument()
@click.option("--reason", default="", help="Why (listed with the record by `hidden`).")
def hide(session: Session, index: str, pk: tuple, reason: str) -> None:
    """Hide record PK of INDEX from every window, keeping its entries (undo with `restore-record`)."""
    changed = session.client.hide_record(index, pk, reason)
    session.emit(
        {"pk": json_value(pk), "changed": changed},
        f"{show_key(pk)} hidden" if changed else f"{show_key(pk)} was hidden already",
    )


@server_command(name="restore-record")
@click.argument("index")
@key_argument()
def restore(session: Session, index: str, pk: tuple) -> None:
    """Put hidden record PK of INDEX back in every window, as if it had never been hidden."""
    changed = session.client.restore_record(index, pk)
    session.emit(
        {"pk": json_value(pk), "changed": changed},
        f"{show_key(pk)} restored" if changed else f"{show_key(pk)} was not hidden",
    )


@server_command(name="hidden-records")
@click.argument("index")
def hidden(session: Session, index: str) -> None:
    """List the hidden records of INDEX: who hid each, when and why (all pages)."""
    found: list[HiddenRecord] = []
    continuation = None
    while True:
        page, continuation = session.client.hidden_records(index, 1000, continuation)
        found.extend(page)
        if continuation is None:
            break
    session.emit(
        {"records": [_hidden_json(record) for record in found]},
        [_hidden_line(record) for record in found] or ["(no hidden records)"],
    )


def _rules_json(rules: ScoreRules) -> dict[str, object]:
    return {
        "min_score": rules.min_score,
        "max_score": rules.max_score,
        "max_per_window": rules.max_per_window,
        "max_per_minute": rules.max_per_minute,
    }


@click.group("rules")
def rules() -> None:
    """An index's score rules: the accepted score range, submissions per record and window or minute."""


@server_command(rules, "show")
@click.argument("index")
def rules_show(session: Session, index: str) -> None:
    """Show INDEX's score rules."""
    kept = session.client.score_rules(index)
    session.emit(_rules_json(kept), kept.describe())


@server_command(rules, "set")
@click.argument("index")
@click.option("--min-score", default=None, help="The lowest accepted score (default: none).")
@click.option("--max-score", default=None, help="The highest accepted score (default: none).")
@click.option(
    "--max-per-window",
    type=click.IntRange(0),
    default=0,
    help="Entries a record may submit into one window and group, all-time aside (0: no limit).",
)
@click.option(
    "--max-per-minute", type=click.IntRange(0), default=0, help="Entries a record may submit per minute (0: no limit)."
)
def rules_set(
    session: Session,
    index: str,
    min_score: str | None,
    max_score: str | None,
    max_per_window: int,
    max_per_minute: int,
) -> None:
    """Replace INDEX's score rules with these (a rule not given: none)."""
    wanted = ScoreRules(
        None if min_score is None else parse_score(min_score, "--min-score"),
        None if max_score is None else parse_score(max_score, "--max-score"),
        max_per_window,
        max_per_minute,
    )
    kept = session.client.set_score_rules(index, wanted)
    session.emit(_rules_json(kept), kept.describe())


def _deletion_json(done: DeletionProgress) -> dict[str, object]:
    return {
        "records_changed": done.records_changed,
        "records_deleted": done.records_deleted,
        "entries_deleted": done.entries_deleted,
    }


def _deletion_line(done: DeletionProgress) -> str:
    return (
        f"{done.records_changed} record(s) changed, {done.records_deleted} of them deleted whole, "
        f"{done.entries_deleted} entries deleted"
    )


@server_command(name="delete-records", timeout=None)
@click.argument("index")
@group_option
@click.option("--all-records", is_flag=True, help="Delete every record of INDEX instead of a group's.")
@click.option(
    "--batch", type=click.IntRange(1, 10_000), default=200, show_default=True, help="Records per transaction."
)
@click.option("--yes", is_flag=True, help="Delete every record without asking (needed off a terminal).")
def delete_records(session: Session, index: str, group: tuple, all_records: bool, batch: int, yes: bool) -> None:
    """Delete the data of a group (--group) or every record (--all-records) of INDEX, in batches;
    the index and its windows stay.  Progress goes to stderr; run it again if it is stopped.

    --all-records asks first on a terminal, and needs --yes elsewhere."""
    if bool(group) == all_records:
        raise click.UsageError("give --group GROUP or --all-records (one of them)")
    if all_records:
        session.policy(index)  # NOT_FOUND before asking about an index that is not there
        confirm_or_yes(
            f"Delete every record of {index} (its windows stay)?",
            yes,
            f"--all-records deletes every record of {index}",
        )

    def progress(total: DeletionProgress) -> None:
        if not total.done:
            session.note(f"{_deletion_line(total)} so far")

    done = session.client.delete_records(index, group or None, all_records, batch, progress)
    session.emit(_deletion_json(done), _deletion_line(done))


COMMANDS = [hide, restore, hidden, rules, delete_records]
