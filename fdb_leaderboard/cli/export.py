"""``fdb-leaderboard export``: a window's standings streamed as NDJSON or CSV.

Rows come in rank order, a page per call (a rank scan with continuations), so an export of any
size holds one page in memory.  Each page is read in its own transaction: export a window that
no longer changes (yesterday's, last week's) for a standing that is exact from the first row to
the last; a live window's rows may shift between pages as scores arrive.  An export cut off (the
server gone, Ctrl-C) says how to resume it where it stopped.

Rows are the API's (as ``--json`` prints entries): ``rank`` is 0-based, ``pk``, ``context`` and
``group`` are lists, ``metadata`` an object.  In CSV, a key is a string for one string element and
a JSON list otherwise (as ``load`` reads them), and metadata a JSON object.
"""

from __future__ import annotations

import base64
import binascii
import csv
import json
import sys

import click
import grpc

from .options import TimeSpec, mode_option, window_options
from .output import entry_json, plural, show_key, show_score
from .session import Session, server_command

_CSV_COLUMNS = ["rank", "pk", "score", "timestamp", "context", "group", "metadata"]


def _token(text: str | None) -> bytes:
    if not text:
        return b""
    try:
        return base64.b64decode(text.encode(), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        raise click.BadParameter(f"{text!r} is not a resume token printed by export", param_hint="--resume") from None


@server_command(name="export")
@click.argument("name")
@window_options
@mode_option
@click.option(
    "--format",
    "file_format",
    type=click.Choice(["ndjson", "csv"], case_sensitive=False),
    default="ndjson",
    show_default=True,
    help="One JSON object per line, or CSV with a header.",
)
@click.option(
    "--page-size", type=click.IntRange(1, 2000), default=1000, show_default=True, help="Rows per call to the server."
)
@click.option("--resume", default=None, help="Carry on an export that was cut off, from the token it printed.")
def export(
    session: Session,
    name: str,
    window_type: int,
    at: TimeSpec,
    group: tuple,
    mode: str,
    file_format: str,
    page_size: int,
    resume: str | None,
) -> None:
    """Stream the standings of a window of index NAME (rank, key, score, timestamp, metadata)."""
    scan_type = "BY_RANK" if window_type == 0 else "BY_TIME_WINDOW"
    arguments = session.window(name, window_type, at, group)
    continuation = _token(resume)
    csv_output = file_format.lower() == "csv"
    writer = csv.writer(sys.stdout, lineterminator="\n") if csv_output else None
    if writer is not None and not resume:
        writer.writerow(_CSV_COLUMNS)
    rows = 0
    while True:
        try:
            entries, following = session.client.scan(
                name, scan_type, limit=page_size, continuation=continuation, mode=mode, **arguments
            )
        except (grpc.RpcError, KeyboardInterrupt) as exc:
            if not rows:  # nothing written by this run: where to resume is where it started
                raise
            token = base64.urlsafe_b64encode(continuation).decode()
            reason = "interrupted" if isinstance(exc, KeyboardInterrupt) else session.error_message(exc)
            raise click.ClickException(
                f"{reason}; {plural(rows, 'row')} written: resume with --resume {token}"
            ) from None
        for entry in entries:
            row = entry_json(entry)
            if writer is None:
                sys.stdout.write(json.dumps(row, ensure_ascii=False) + "\n")
            else:
                writer.writerow(
                    [
                        row["rank"],
                        show_key(entry.pk),
                        show_score(entry.score),
                        entry.timestamp,
                        show_key(entry.context) if entry.context else "",
                        show_key(entry.group) if entry.group else "",
                        json.dumps(row["metadata"], ensure_ascii=False) if row["metadata"] else "",
                    ]
                )
        rows += len(entries)
        if not following:
            break
        continuation = following
    sys.stdout.flush()
    session.note(f"exported {plural(rows, 'row')} of {name}")
