"""Index and window administration: ``index create/list/drop``, ``windows apply/show``, ``subdir``,
``expire``, ``keep-ahead``, ``trim``, ``fill`` and ``verify``."""

from __future__ import annotations

import dataclasses
from typing import Any

import click

from ..errors import InvalidArgument
from ..index import Leagues
from ..index.calendar import BOARDS
from ..proto import service_pb2 as pb
from . import upgrades
from .options import TIME, TIME_HELP, TimeSpec, key_argument, parse_columns
from .output import plural, show_duration, show_key, window_json, window_line
from .session import Session, progress_bar, server_command


@click.group()
def index() -> None:
    """Create, list and drop indexes."""


@server_command(index, "create")
@click.argument("name")
@click.option(
    "--aggregation",
    type=click.Choice(["BEST", "SUM", "LATEST"], case_sensitive=False),
    default="BEST",
    show_default=True,
    help="A record's value in a window: its best score, the sum of its scores, or its latest.",
)
@click.option(
    "--hash",
    "hash_function",
    type=click.Choice(["MURMUR3", "JDK", "CRC"], case_sensitive=False),
    default="MURMUR3",
    show_default=True,
    help="The ranked sets' level hash (the reference layout uses JDK).",
)
@click.option("--group-size", default=0, show_default=True, type=click.IntRange(0), help="Elements of a group.")
@click.option("--context-size", default=0, show_default=True, type=click.IntRange(0), help="Elements of a context.")
@click.option("--high-score-first/--low-score-first", default=True, show_default=True, help="Which scores rank first.")
@click.option(
    "--score-type",
    type=click.Choice(["INT", "DOUBLE"], case_sensitive=False),
    default="INT",
    show_default=True,
    help="Integer scores, or finite doubles (not with SUM).",
)
@click.option("--reference-layout", is_flag=True, help="Ranked sets exactly as the Record Layer lays them out.")
@click.option("--dense-ranks", is_flag=True, help="Also rank each window's distinct scores (DENSE rank mode).")
@click.option(
    "--columns",
    default="",
    callback=lambda ctx, param, value: parse_columns(value),
    help="Rank by 2-4 integer columns, compared in order, each HIGH or LOW first: e.g. high,low,low "
    "(most kills, then fewest deaths, then earliest time).",
)
@click.option(
    "--league-type",
    type=click.IntRange(1),
    default=None,
    help="Leagues on this window type: in each of its windows a record joins a cohort of its tier.",
)
@click.option(
    "--cohort-size", type=click.IntRange(2, 1000), default=30, show_default=True, help="Leagues: records per cohort."
)
@click.option(
    "--tiers", type=click.IntRange(1, 100), default=1, show_default=True, help="Leagues: tiers (0 the lowest)."
)
@click.option(
    "--promote", type=click.IntRange(0), default=0, show_default=True, help="Leagues: top of a cohort moving up."
)
@click.option("--demote", type=click.IntRange(0), default=0, show_default=True, help="Leagues: bottom moving down.")
@click.option("--daily", is_flag=True, help="Keep a board per day (window type 1), today's from the start.")
@click.option("--weekly", is_flag=True, help="Keep a board per ISO week (window type 2).")
@click.option("--monthly", is_flag=True, help="Keep a board per month (window type 3).")
@click.option("--timezone", default="UTC", show_default=True, help="Time zone of the days, weeks and months.")
@click.option(
    "--timebase",
    type=click.Choice(["seconds", "milliseconds"]),
    default="seconds",
    show_default=True,
    help="The unit of the index's times: a timestamp that cannot be one (after the year 9999) is refused.",
)
@click.option("--all-time/--no-all-time", default=True, show_default=True, help="Rank every score all-time too.")
def index_create(
    session: Session,
    name: str,
    aggregation: str,
    hash_function: str,
    group_size: int,
    context_size: int,
    high_score_first: bool,
    score_type: str,
    reference_layout: bool,
    dense_ranks: bool,
    columns: tuple[str, ...],
    league_type: int | None,
    cohort_size: int,
    tiers: int,
    promote: int,
    demote: int,
    daily: bool,
    weekly: bool,
    monthly: bool,
    timezone: str,
    timebase: str,
    all_time: bool,
) -> None:
    """Create index NAME; high score first by default.

    It ranks scores all-time from the first one, and on the calendar boards named: --daily
    --weekly --monthly keep today's, this week's and this month's windows (types 1, 2, 3) in
    --timezone, added ahead and expired by the server (see `policy show`).  --league-type adds
    leagues (see `cohort`): e.g. --daily --league-type 1 --cohort-size 30 --tiers 5 --promote 5
    --demote 5.  Its times are seconds unless --timebase milliseconds.

    Run again on an existing index, it adds the boards asked for that the index lacks; other
    options, or a board kept otherwise, are refused, naming what differs.
    """
    leagues = None
    if league_type is not None:
        try:
            leagues = Leagues(league_type, cohort_size, tiers, promote, demote)
        except InvalidArgument as exc:
            raise click.UsageError(str(exc)) from None
    elif (cohort_size, tiers, promote, demote) != (30, 1, 0, 0):
        raise click.UsageError("--cohort-size, --tiers, --promote and --demote shape leagues: give --league-type too")
    boards = [board for board, wanted in (("daily", daily), ("weekly", weekly), ("monthly", monthly)) if wanted]
    before = {info.name: info.maintenance for info in session.client.list_indexes()}.get(name)
    created = session.client.create_index(
        name,
        aggregation,
        hash_function,
        group_size,
        context_size,
        high_score_first,
        reference_layout,
        score_type=score_type,
        dense_ranks=dense_ranks,
        boards=boards,
        timezone=timezone,
        all_time=all_time,
        columns=columns,
        leagues=leagues,
        timebase=None if timebase == "seconds" else timebase,
    )
    what = ", ".join(["all-time"] * all_time + boards) or "no"
    data = {"index": name, "created": created, "boards": ["all-time"] * all_time + boards, "timezone": timezone}
    if created:
        session.emit(data, f"index {name} created ({what} board{'s' if len(boards) + all_time != 1 else ''})")
        return
    kept = {periods.type for periods in before.calendar} if before is not None else set()
    added = [board for board in boards if BOARDS[board][0] not in kept]
    data["boards_added"] = added
    session.emit(
        data,
        f"index {name} exists: {', '.join(added)} board{'s' if len(added) != 1 else ''} added ({timezone}), "
        "filled from its stored scores"
        if added
        else f"index {name} already exists with these options and boards",
    )


def _leagues_json(leagues: pb.Leagues) -> dict[str, int]:
    names = ("window_type", "cohort_size", "tiers", "promote", "demote")
    return {name: getattr(leagues, name) for name in names}


def _leagues_text(leagues: pb.Leagues) -> str:
    return (
        f"leagues on type {leagues.window_type}: cohorts of {leagues.cohort_size}, {leagues.tiers} tier(s), "
        f"top {leagues.promote} up, bottom {leagues.demote} down"
    )


@server_command(index, "list")
def index_list(session: Session) -> None:
    """List the indexes with their options and stored formats, then the store's format and the
    releases of the server processes on it."""
    infos = session.client.list_indexes()
    lines = []
    for info in infos:
        options = info.options
        aggregation, hash_name = pb.Aggregation.Name(options.aggregation), pb.RankHash.Name(options.hash_function)
        lines.append(
            f"{info.name}: {aggregation}, hash {hash_name}, "
            f"group size {options.group_size}, context size {options.context_size}, "
            + (
                f"columns {','.join(pb.ColumnOrder.Name(c) for c in options.columns)}"
                if options.columns
                else f"{'high' if options.high_score_first else 'low'} score first"
            )
            + (f"; {_leagues_text(options.leagues)}" if options.HasField("leagues") else "")
            + f"; {upgrades.format_text(info.format)}"
            + (f"; writes refused: {info.writes_paused}" if info.writes_paused else "")
        )
    if not session.json:  # `store status --json` has it
        lines.append(upgrades.summary_line(session.client.store_status()))
    data = [
        {
            "name": info.name,
            "aggregation": pb.Aggregation.Name(info.options.aggregation),
            "hash": pb.RankHash.Name(info.options.hash_function),
            "group_size": info.options.group_size,
            "context_size": info.options.context_size,
            "high_score_first": info.options.high_score_first,
            "score_type": pb.ScoreType.Name(info.options.score_type),
            "columns": [pb.ColumnOrder.Name(c) for c in info.options.columns],
            "leagues": _leagues_json(info.options.leagues) if info.options.HasField("leagues") else None,
            "writes_paused": info.writes_paused or None,
            "format": upgrades.format_json(info.format),
        }
        for info in infos
    ]
    session.emit(data, lines)


@server_command(index, "drop")
@click.argument("name")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def index_drop(session: Session, name: str, yes: bool) -> None:
    """Delete index NAME and all its data."""
    session.policy(name)  # NOT_FOUND before asking about an index that is not there
    if not yes:
        click.confirm(f"Delete index {name} and all its scores?", abort=True, err=True)
    session.client.drop_index(name)
    session.emit({"index": name, "dropped": True}, f"index {name} dropped")


@click.group()
def windows() -> None:
    """Apply window-update specifications and show the directory."""


@server_command(windows, "apply")
@click.argument("name")
@click.argument("spec_file", type=click.File("r"))
def windows_apply(session: Session, name: str, spec_file: Any) -> None:
    """Apply SPEC_FILE (YAML or JSON, - for standard input; see the README) to index NAME.

    Applying the same file again changes nothing.  A maintenance section sets the index's
    maintenance policy too (what the server, or `maintain`, keeps ahead and expires), a rules
    section its score rules.
    """
    from .spec_file import read_window_file

    asked = read_window_file(spec_file, index_timebase=session.policy(name).timebase or "seconds")
    update, maintenance = asked.update, asked.maintenance
    if asked.leagues is not None:
        _check_leagues(session, name, asked.leagues)
    result = session.client.update_windows(
        name,
        specs=[(s.type, s.base, s.increment, s.duration, s.count) for s in update.specs],
        windows=list(update.windows),
        high_score_first=update.high_score_first,
        all_time=update.all_time,
        delete_before=update.delete_before,
        update_timestamp=update.update_timestamp,
        nlevels=update.nlevels,
        rebuild=update.rebuild.value,
    )
    if maintenance is not None:
        session.client.set_maintenance(name, maintenance)
    rules = None if asked.rules is None else session.client.set_score_rules(name, asked.rules)
    audit_kept = None
    if asked.audit_retention is not None:
        audit_kept = session.client.set_audit_retention(asked.audit_retention)
    lines = [f"added {len(result.added)}, deleted {len(result.deleted)}, filling {len(result.filling)}"]
    lines.extend(window_line(window) for window in result.added)
    if maintenance is not None:
        lines.append(f"maintenance policy of {name} set: see `fdb-leaderboard policy show {name}`")
    if rules is not None:
        lines.append(f"score rules of {name} set: {rules.describe()}")
    if audit_kept is not None:
        lines.append(f"the audit trail keeps events {show_duration(audit_kept)}")
    if result.filling:
        lines.append(f"run `fdb-leaderboard fill {name}` to fill the new windows from stored scores")
    session.emit(
        {
            "added": [window_json(w) for w in result.added],
            "deleted": [window_json(w) for w in result.deleted],
            "filling": [window_json(w) for w in result.filling],
            "maintenance_set": maintenance is not None,
            "rules_set": rules is not None,
            "audit_retention": audit_kept,
        },
        lines,
    )


def _check_leagues(session: Session, name: str, wanted: Leagues) -> None:
    """Refuse a window file whose leagues section is not what index ``name`` was created with."""
    info = next((info for info in session.client.list_indexes() if info.name == name), None)
    if info is None:
        raise click.ClickException(f"NOT_FOUND: no index named {name!r}")
    has = info.options.leagues if info.options.HasField("leagues") else None
    if has is None or _leagues_json(has) != dataclasses.asdict(wanted):
        now = _leagues_text(has) if has is not None else "no leagues"
        raise click.ClickException(
            f"FAILED_PRECONDITION: the file's leagues are not index {name}'s ({now}): leagues are set when an "
            "index is created (index create --league-type ...); nothing was applied"
        )


@server_command(windows, "show")
@click.argument("name")
@click.option(
    "-t", "--type", "window_type", type=click.IntRange(0), default=None, help="Only the windows of this type."
)
def windows_show(session: Session, name: str, window_type: int | None) -> None:
    """Show the windows of index NAME (or those of one type), its direction and its sub-directories."""
    listing = session.client.list_windows(name, window_type)
    subs = session.client.sub_directories(name)
    data: dict[str, object] = {
        "exists": listing.exists,
        "high_score_first": listing.high_score_first,
        "windows": [window_json(w) for w in listing.windows],
        "latest_timestamp": listing.latest_timestamp if listing.HasField("latest_timestamp") else None,
        "trimmed_before": listing.trimmed_before if listing.HasField("trimmed_before") else None,
        "sub_directories": [{"group": list(g), "high_score_first": hsf} for g, hsf in subs.items()],
        "format": upgrades.format_json(listing.format),
    }
    if not listing.exists:
        session.emit(data, f"{name}: no window update yet")
        return
    lines = [f"{name}: {'high' if listing.high_score_first else 'low'} score first, {len(listing.windows)} windows"]
    lines.extend(window_line(window) for window in listing.windows)
    if listing.HasField("latest_timestamp"):
        lines.append(f"latest indexed timestamp: {listing.latest_timestamp}")
    if listing.HasField("trimmed_before"):
        lines.append(f"entries trimmed before: {listing.trimmed_before}")
    if listing.format.upgrading_to or listing.format.version < listing.format.newest:  # else nothing to say
        lines.append(f"stored in index {upgrades.format_text(listing.format)}")
    lines.extend(f"sub-directory {show_key(g)}: {'high' if hsf else 'low'} score first" for g, hsf in subs.items())
    session.emit(data, lines)


@server_command(name="subdir")
@click.argument("name")
@key_argument("group")
@click.option("--high-score-first/--low-score-first", required=True, help="Whether the group ranks high scores first.")
def subdir(session: Session, name: str, group: tuple, high_score_first: bool) -> None:
    """Set the score direction of GROUP (a string, or a JSON list such as '["golf", 7]'), before it has scores."""
    session.client.save_sub_directory(name, group, high_score_first)
    session.emit(
        {"group": list(group), "high_score_first": high_score_first},
        f"group {show_key(group)} of {name}: {'high' if high_score_first else 'low'} score first",
    )


@server_command()
@click.argument("name")
@click.option("--before", type=TIME, required=True, help=f"Delete windows ending at or before this time: {TIME_HELP}.")
def expire(session: Session, name: str, before: TimeSpec) -> None:
    """Delete old windows and all their data."""
    gone = session.client.expire(name, session.time_of(name, before))
    session.emit(
        {"deleted": [window_json(w) for w in gone]},
        [f"deleted {plural(len(gone), 'window')}", *map(window_line, gone)],
    )


@server_command(name="keep-ahead")
@click.argument("name")
@click.option("--now", type=TIME, default="now", help=f"The time to plan from: {TIME_HELP} [default: the server's].")
def keep_ahead(session: Session, name: str, now: TimeSpec) -> None:
    """Add the windows the index's maintenance policy needs soon."""
    added = session.client.keep_ahead(name, session.timestamp(name, now))
    session.emit(
        {"added": [window_json(w) for w in added]},
        [f"added {plural(len(added), 'window')}", *map(window_line, added)],
    )


@server_command()
@click.argument("name")
@click.option("--before", type=TIME, required=True, help=f"Trim entries before this time: {TIME_HELP}.")
def trim(session: Session, name: str, before: TimeSpec) -> None:
    """Drop entries no window depends on (windows starting earlier can no longer be added)."""
    removed = session.client.trim(name, session.time_of(name, before))
    session.emit({"entries_removed": removed}, f"removed {plural(removed, 'entry', 'entries')}")


@server_command()
@click.argument("name")
@click.option("--batch", default=200, show_default=True, type=click.IntRange(1), help="Records per transaction.")
def fill(session: Session, name: str, batch: int) -> None:
    """Fill new windows from stored records, batch by batch (interrupt and rerun to resume)."""
    processed = ranked = 0
    with progress_bar(session, unit=" records", desc=f"filling {name}") as bar:
        while True:
            step = session.client.fill(name, max_records=batch, max_batches=1)
            processed += step.records_processed
            bar.update(step.records_processed)
            if step.entries_ranked:  # phase 2: ranked sets built from the primary B-trees
                ranked += step.entries_ranked
                bar.set_postfix(entries_ranked=ranked)
            if step.done:
                break
    session.emit({"records_processed": processed, "entries_ranked": ranked}, "every window is complete")


@server_command(timeout=600.0)
@click.argument("name")
@click.option("--max-problems", default=100, show_default=True, help="Stop after this many problems.")
@click.option(
    "--parts",
    default=4,
    show_default=True,
    type=click.IntRange(1, 256),
    help="Check in this many pieces over key ranges at once (a server with several processes spreads them).",
)
def verify(session: Session, name: str, max_problems: int, parts: int) -> None:
    """Recompute every window from the records and compare with the B-tree and ranked sets.

    A large index is checked in calls, each within the server's deadline, until the whole
    index is checked (interrupted, nothing is lost but the time: rerun it), in --parts pieces
    at once."""
    bar: Any = None  # shown once the check takes more than one part
    found = 0

    def progress(part: pb.VerifyResponse) -> None:
        nonlocal bar, found
        found += len(part.problems)
        if bar is None and not part.complete:
            bar = progress_bar(session, unit=" records", desc=f"verifying {name}")
        if bar is not None:
            bar.update(part.records - bar.n)
            bar.set_postfix(windows=part.windows, problems=found)

    try:
        report = session.client.verify_report(
            name, max_problems, timeout=session.timeout, progress=progress, parts=parts
        )
    finally:
        if bar is not None:
            bar.close()
    checked = (
        f"checked {report.records} records, {report.entries} B-tree entries, {report.elements} ranked-set "
        f"elements and {report.ranked_sets} ranked sets in {report.windows} windows ({report.batches} batches)"
    )
    session.emit(
        {
            "index": name,
            "problems": list(report.problems),
            "complete": report.complete,
            "records": report.records,
            "entries": report.entries,
            "elements": report.elements,
            "ranked_sets": report.ranked_sets,
            "windows": report.windows,
            "batches": report.batches,
        },
        [*report.problems, checked],
    )
    if report.problems:
        raise click.ClickException(f"{len(report.problems)} problem(s) found in {name}")
    if not session.json:
        click.echo(f"{name}: every window matches the records")


# The top-level ones; index and windows are groups of their own.
COMMANDS = (subdir, expire, keep_ahead, trim, fill, verify)
