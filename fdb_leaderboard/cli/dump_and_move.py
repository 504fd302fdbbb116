"""Dumps and moves: ``dump`` an index to a file, ``restore`` one into a server's store, ``move`` an
index from one server's store to another's while it takes writes, ``compare`` two indexes window
by window, and ``index pause``/``index resume`` its writes.

A dump is taken while the index takes writes and is the index at one moment (the server catches
up with the writes made meanwhile; see ``fdb_leaderboard/service/served_dumps.py``).  A file is checked
whole (every part's CRC and the dump's SHA-256) before a restore sends any of it.
"""

from __future__ import annotations

import time
from pathlib import Path

import click

from ..client import LeaderboardClient, compare_boards
from ..index.dumpfile import check_dump, read_dump, write_dump
from ..proto import service_pb2 as pb
from .options import DURATION
from .session import Session, progress_bar, server_command


def _size(path: Path) -> str:
    return f"{path.stat().st_size / 1e6:,.1f} MB"


@server_command(name="dump", timeout=None)
@click.argument("name")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--catch-up",
    default="10s",
    type=DURATION,
    show_default=True,
    help="Copy the writes made during the dump this long at most before pausing writes for its last ones.",
)
def dump(session: Session, name: str, file: Path, catch_up: float) -> None:
    """Write index NAME, as it is at one moment, to FILE (a versioned, checksummed dump).

    The index keeps taking writes: those made meanwhile are copied too, and if they keep coming
    its writes are refused for the moment the last of them take (clients retry).
    """
    started = time.monotonic()
    with progress_bar(session, unit=" records", desc=f"dumping {name}") as bar:

        def progress(part: pb.DumpPart, written: int) -> None:
            kind = part.WhichOneof("part")
            if kind == "header" and part.header.records_estimate:
                bar.total = part.header.records_estimate
            elif kind == "progress":
                bar.n = part.progress.records
                bar.set_postfix(phase=part.progress.phase, changes=part.progress.changes, mb=f"{written / 1e6:.0f}")
                bar.refresh()

        end = write_dump(session.client.dump(name, catch_up_seconds=catch_up), file, progress)
        bar.n = end.records
    seconds = time.monotonic() - started
    paused = f", writes paused {end.pause_seconds:.2f} s" if end.pause_seconds else ""
    session.emit(
        {
            "index": name,
            "file": str(file),
            "bytes": file.stat().st_size,
            "records": end.records,
            "rows": end.rows,
            "changes": end.changes,
            "pause_seconds": end.pause_seconds,
            "seconds": round(seconds, 3),
        },
        f"dumped {name} to {file}: {end.records:,} records, {end.rows:,} rows ({end.changes:,} changed during the "
        f"dump), {_size(file)} in {seconds:.1f} s{paused}",
    )


@server_command(name="restore", timeout=None)
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--index", "name", default=None, help="Name of the index to create (default: the dumped one's).")
def restore(session: Session, file: Path, name: str | None) -> None:
    """Create an index from the dump FILE in the server's store (embedded or FoundationDB).

    The file is checked whole first; the index appears, under its name, only once complete.
    """
    started = time.monotonic()
    header, end = check_dump(file)
    name = name or header.index
    with progress_bar(session, total=end.rows, unit=" rows", desc=f"restoring {name}") as bar:
        last = pb.RestoreProgress()
        for last in session.client.restore(read_dump(file), name):
            bar.n = min(last.rows, end.rows)
            bar.set_postfix(phase=last.phase, ranked=last.entries_ranked)
            bar.refresh()
    seconds = time.monotonic() - started
    session.emit(
        {
            "index": last.index,
            "file": str(file),
            "rows": last.rows,
            "changes": last.changes,
            "entries_ranked": last.entries_ranked,
            "seconds": round(seconds, 3),
        },
        f"restored {last.index} from {file}: {end.records:,} records, {last.rows:,} rows, {last.entries_ranked:,} "
        f"window entries ranked, in {seconds:.1f} s; `fdb-leaderboard verify {last.index}` checks it",
    )


def _other(session: Session, address: str, token_file: str | None) -> LeaderboardClient:
    """A client of another server, with this command's TLS files and the token of ``token_file``
    (default: this command's)."""
    access = dict(session.access)
    if token_file is not None:
        with open(token_file, encoding="utf-8") as tokens:
            access["token"] = tokens.readline().strip() or None
    return LeaderboardClient(address, timeout=session.timeout, **access)


_TOKEN_FILE = click.Path(exists=True, dir_okay=False)


@server_command(name="move", timeout=None)
@click.argument("name")
@click.option("--to", "target", required=True, help="gRPC address of a server on the store to move the index to.")
@click.option("--to-index", default=None, help="Its name there (default: NAME).")
@click.option("--to-token-file", type=_TOKEN_FILE, help="Token for that server (default: this command's).")
@click.option(
    "--catch-up",
    default="10s",
    type=DURATION,
    show_default=True,
    help="The longest writes go on here once the other store has rebuilt the index, if they never let it catch up.",
)
def move(
    session: Session, name: str, target: str, to_index: str | None, to_token_file: str | None, catch_up: float
) -> None:
    """Move index NAME to the server at --to while it takes writes here.

    The index is copied to the other server's store, which rebuilds it and applies the writes made
    meanwhile while it keeps taking writes here; its writes here are then refused (UNAVAILABLE,
    naming --to) while the last of them are copied, and stay refused: point the writers at the
    other server.  `index resume NAME` takes them here again.
    """
    started = time.monotonic()
    paused_at: float | None = None
    with _other(session, target, to_token_file) as other, progress_bar(session, desc=f"moving {name}") as bar:

        def progress(step: pb.DumpPart | pb.RestoreProgress) -> None:
            nonlocal paused_at
            if isinstance(step, pb.RestoreProgress):
                bar.set_postfix(phase=step.phase, rows=step.rows, changes=step.changes)
            elif step.WhichOneof("part") == "progress" and step.progress.phase == "paused" and paused_at is None:
                paused_at = time.monotonic()

        end, last = session.client.move(name, other, to_index or name, target, catch_up, progress)
    done = time.monotonic()
    refused = done - paused_at if paused_at is not None else 0.0
    session.emit(
        {
            "index": name,
            "to": target,
            "to_index": last.index,
            "records": end.records,
            "rows": last.rows,
            "changes": last.changes,
            "seconds": round(done - started, 3),
            "writes_refused_seconds": round(refused, 3),
        },
        f"moved {name} to {last.index} at {target}: {end.records:,} records, {last.changes:,} changed during "
        f"the move, in {done - started:.1f} s; writes were refused for the last {refused:.2f} s and are now "
        f"refused here: point the writers at {target}",
    )


@server_command(name="compare", timeout=120.0)
@click.argument("name")
@click.option("--with", "other_address", required=True, help="gRPC address of the other server.")
@click.option("--with-index", default=None, help="The index there (default: NAME).")
@click.option("--with-token-file", type=_TOKEN_FILE, help="Token for that server (default: this command's).")
def compare(
    session: Session, name: str, other_address: str, with_index: str | None, with_token_file: str | None
) -> None:
    """Compare index NAME with one on another server, window by window: the same records with
    the same ranks, scores, times and metadata in every window (exit 1 if not)."""
    with _other(session, other_address, with_token_file) as other:
        found = compare_boards(session.client, name, other, with_index or name)
    session.emit(
        {"index": name, "windows": found.windows, "entries": found.entries, "differences": found.differences},
        [*found.differences, f"compared {found.windows} windows, {found.entries:,} ranked entries"],
    )
    if found.differences:
        raise click.ClickException(f"{len(found.differences)} window(s) differ")


@server_command(name="pause")
@click.argument("name")
@click.option("--reason", default="", help="What the refused writes are told.")
def pause(session: Session, name: str, reason: str) -> None:
    """Refuse the writes of index NAME (UNAVAILABLE, clients retry) until `index resume`."""
    session.client.set_writes_paused(name, True, reason)
    session.emit({"index": name, "paused": True}, f"writes to {name} are refused until `index resume {name}`")


@server_command(name="resume")
@click.argument("name")
def resume(session: Session, name: str) -> None:
    """Take the writes of index NAME again (after `index pause`, or a `move` away)."""
    session.client.set_writes_paused(name, False)
    session.emit({"index": name, "paused": False}, f"{name} takes writes again")


COMMANDS = (dump, restore, move, compare)
INDEX_COMMANDS = (pause, resume)
