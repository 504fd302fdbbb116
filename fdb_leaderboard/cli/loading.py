"""``fdb-leaderboard load``: stream a JSON-lines file of records to the server's Load RPC.

The progress bar counts records the server has saved (it reports each transaction), out of
the file's records when the file can be counted first.  A refused record is named by its line;
Ctrl-C says how many records were saved.  Rerunning a load is always safe: each line replaces
its record.  A load cut off (the server restarting, say) is sent again from the file's start by
the client, under the same idempotency key, so the server saves only what it had not; a pipe
cannot be read twice, so a load from one is not sent again.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from typing import IO, Any

import click
import grpc
from tqdm import tqdm

from ..client import load_refusal
from .common import Session, rpc_error_message, server_command
from .records_file import Record, RecordsFileError, parse_record

RERUN = "rerunning the load is safe: each line replaces its record"


class _Lines:
    """The records of a file with the line of each: blank lines are remembered, not stored per record."""

    def __init__(self, source: IO[str]) -> None:
        self.source = source
        self.start = source.tell() if source.seekable() else None
        self.blank: list[int] = []  # line numbers of the blank lines read so far
        self.bad_line: RecordsFileError | None = None

    def __iter__(self) -> Iterator[Record]:
        """The file's records from its start, each time (a file that can be read again)."""
        if self.start is not None:
            self.source.seek(self.start)
        self.blank, self.bad_line = [], None
        return self.records()

    def records(self) -> Iterator[Record]:
        for number, text in enumerate(self.source, start=1):
            if not text.strip():
                self.blank.append(number)
                continue
            try:
                yield parse_record(text)
            except ValueError as exc:  # end the stream: what came before is loaded
                self.bad_line = RecordsFileError(number, str(exc))
                return

    def line_of(self, position: int) -> int:
        """The line of the record at 0-based ``position``: its number plus the blank lines before it."""
        line = position + 1
        skipped = 0
        while True:  # the blank lines before that line shift it down, which may pass more blank lines
            more = bisect.bisect_right(self.blank, line + skipped) - skipped
            if more <= 0:
                return line + skipped
            skipped += more


def _count_records(source: IO[str]) -> int | None:
    """How many records a seekable file holds (non-blank lines), leaving it at its start; None for a pipe."""
    if not source.seekable():
        return None
    start = source.tell()
    total = sum(1 for line in source if line.strip())
    source.seek(start)
    return total


@server_command(name="load", timeout=None)
@click.argument("name")
@click.argument("source", type=click.File("r"))
@click.option("--batch", default=500, show_default=True, help="Records per transaction.")
@click.option(
    "--rank-as-loaded",
    is_flag=True,
    help="Keep every ranked set current record by record, instead of building those of empty windows at the end.",
)
def load(session: Session, name: str, source: Any, batch: int, rank_as_loaded: bool) -> None:
    """Load records from a JSON-lines file (- for stdin); each line replaces one record.

    A line looks like {"pk": ["alice"], "entries": [{"score": 1200, "timestamp": 1763900000}]};
    entries may add "context" and "group" lists.  Rerunning a load is harmless.
    """
    lines = _Lines(source)
    saved = 0

    def progress(count: int) -> None:
        nonlocal saved
        if count > saved:  # a load sent again counts from its start
            bar.update(count - saved)
            saved = count

    total = _count_records(source)
    with tqdm(total=total, unit=" records", desc=f"saving into {name}", disable=session.json) as bar:
        try:
            records = lines if lines.start is not None else lines.records()  # a pipe is read once
            saved = session.client.bulk_load(
                name, records, batch, rank_as_loaded, progress=progress, timeout=session.timeout
            )
        except KeyboardInterrupt:
            bar.close()
            raise click.ClickException(f"interrupted: {saved} records were saved; {RERUN}") from None
        except grpc.RpcError as exc:
            position, before = load_refusal(exc)
            if position is None:
                raise click.ClickException(
                    f"{rpc_error_message(exc, session.server, session.timeout)}; "
                    f"{before if before is not None else saved} records were saved; {RERUN}"
                ) from None
            details = (exc.details() or "").split(" refused: ", 1)[-1].split("; the ", 1)[0]
            raise click.ClickException(
                f"{source.name}: line {lines.line_of(position)} refused by the server "
                f"({exc.code().name}: {details}); "
                f"the {before} records before line {lines.line_of(before or 0)} were saved; "
                f"fix the line and rerun ({RERUN})"
            ) from None
    if lines.bad_line is not None:
        raise click.ClickException(f"{source.name}: {lines.bad_line}; the {saved} records before it were saved")
    session.emit({"index": name, "records_saved": saved}, f"loaded {saved} records into {name}")
