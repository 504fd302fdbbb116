"""Stored formats and releases: ``store status``, ``store upgrade``, ``index upgrade``.

What the store and each index are stored as, which release every server process on the store
runs (as each reports itself), and the raising of the formats once every process reads the newer
one (``fdb_leaderboard/formats.py``; the server's maintenance raises them by itself too).
"""

from __future__ import annotations

import time
from typing import Any

import click

from ..proto import service_pb2 as pb
from .output import plural
from .session import Session, progress_bar, server_command


def format_text(fmt: pb.IndexFormat) -> str:
    """An index's format as ``index list`` and ``windows show`` print it."""
    text = f"format {fmt.version}" + ("" if fmt.recorded else " (not recorded: written before release 0.3.0)")
    if fmt.upgrading_to:
        text += f", upgrading to {fmt.upgrading_to}: {fmt.records_done:,} records done"
    elif fmt.newest and fmt.version < fmt.newest:
        text += f" (the server writes {fmt.newest}: `fdb-leaderboard index upgrade` raises it)"
    return text


def format_json(fmt: pb.IndexFormat) -> dict[str, Any]:
    return {
        "version": fmt.version,
        "recorded": fmt.recorded,
        "newest": fmt.newest,
        "upgrading_to": fmt.upgrading_to or None,
        "records_done": fmt.records_done if fmt.upgrading_to else None,
    }


def process_line(process: pb.ProcessInfo, now: float) -> str:
    state = f"seen {max(0.0, now - process.seen_at):.0f} s ago" if process.live else "not live"
    serving = f" {process.address}" if process.address else ""
    return (
        f"  {process.host}:{process.pid}{serving} release {process.release} ({state}; reads store format "
        f"{process.store_format}, index format {process.index_format})"
    )


def process_json(process: pb.ProcessInfo) -> dict[str, Any]:
    names = ("id", "release", "host", "pid", "address", "started_at", "seen_at", "live", "store_format", "index_format")
    return {name: getattr(process, name) for name in names}


def summary_line(status: pb.StoreStatus) -> str:
    """The store's format and the releases of the live processes on it, in one line (``index list``)."""
    store = status.format
    recorded = "" if store.recorded else " (not recorded: written before release 0.3.0)"
    newer = ""
    if store.version < store.newest:
        newer = f"; the server writes {store.newest}: `fdb-leaderboard store upgrade` raises it"
    live = [p for p in status.processes if p.live]
    releases = sorted({p.release for p in live})
    running = f"{plural(len(live), 'live process', 'live processes')}" + (
        f" of release{'s' if len(releases) > 1 else ''} {', '.join(releases)}" if releases else ""
    )
    return f"store format {store.version}{recorded}{newer}; {running}"


def status_lines(status: pb.StoreStatus) -> list[str]:
    """The store's format, who set it, and each process on the store (``store status``)."""
    store = status.format
    lines = [summary_line(status)]
    if store.raised_by:
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(store.raised_at))
        lines.append(f"store format {store.version} set by release {store.raised_by} at {when}")
    now = time.time()
    lines.extend(process_line(process, now) for process in status.processes)
    return lines


def status_json(status: pb.StoreStatus) -> dict[str, Any]:
    def versions(table: Any) -> list[dict[str, Any]]:
        return [
            {"version": v.version, "release": v.release, "read_from": v.read_from, "adds": v.adds, "upgrade": v.upgrade}
            for v in table
        ]

    store = status.format
    return {
        "release": status.release,
        "store_format": {
            "version": store.version,
            "recorded": store.recorded,
            "newest": store.newest,
            "raised_by": store.raised_by or None,
            "raised_at": store.raised_at or None,
        },
        "processes": [process_json(p) for p in status.processes],
        "indexes": {entry.index: format_json(entry.format) for entry in status.indexes},
        "store_formats": versions(status.store_formats),
        "index_formats": versions(status.index_formats),
    }


@click.group()
def store() -> None:
    """The store's format and the releases of the processes on it."""


@server_command(store, "status")
def store_status(session: Session) -> None:
    """Show the store's format, every server process on it with its release, and each index's format."""
    status = session.client.store_status()
    lines = status_lines(status)
    lines.extend(f"index {entry.index}: {format_text(entry.format)}" for entry in status.indexes)
    session.emit(status_json(status), lines)


@server_command(store, "upgrade", timeout=600.0)
def store_upgrade(session: Session) -> None:
    """Raise the store, then every index, to the newest formats the server writes.

    Run it once every process on the store runs this release or a later one: it is refused while
    a live process reports an older one, and processes of releases that do not report theirs
    (0.2.0 and earlier) must be stopped first.  An index's data is rewritten where its new format
    needs it, in bounded batches while it serves (interrupted, run it again)."""
    status = session.client.upgrade_store()
    lines = [summary_line(status)]
    lines.extend(f"index {entry.index}: {format_text(entry.format)}" for entry in status.indexes)
    session.emit(status_json(status), lines)


@server_command(None, "upgrade", timeout=600.0)
@click.argument("name")
@click.option("--batch", default=200, show_default=True, type=click.IntRange(1), help="Records per transaction.")
def index_upgrade(session: Session, name: str, batch: int) -> None:
    """Raise index NAME to the newest format the server writes, rewriting its data in batches
    where that format needs it (interrupt and rerun to resume); the server's maintenance does it
    by itself once every process reads the new format."""
    with progress_bar(session, unit=" records", desc=f"upgrading {name}") as bar:
        answer = session.client.upgrade_index(
            name, max_records=batch, max_batches=10, progress=lambda step: bar.update(step.records_processed)
        )
    session.emit(
        {
            "index": name,
            "format": format_json(answer.format),
            "records_processed": answer.records_processed,
            "heads_changed": answer.heads_changed,
        },
        f"index {name}: {format_text(answer.format)} ({plural(answer.records_processed, 'record')} gone over, "
        f"{plural(answer.heads_changed, 'record head')} rewritten)",
    )
