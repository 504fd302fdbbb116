"""``fdb-leaderboard load``: stream a records file (JSON lines or CSV) to the server's Load RPC.

The progress bar (on a terminal only) counts records the server has saved (it reports each
transaction), out of the file's records when the file can be read twice.  A refused record is
named by its line; Ctrl-C says how many records were saved.  Rerunning a load is always safe:
each record replaces its record.  A load cut off (the server restarting, say) is sent again from
the file's start by the client, under the same idempotency key, so the server saves only what it
had not; a pipe cannot be read twice, so a load from one is not sent again.
"""

from __future__ import annotations

from typing import Any

import click
import grpc

from ..client import load_refusal
from .output import plural
from .records_file import FORMATS, RecordReader
from .session import Session, progress_bar, server_command

RERUN = "rerunning the load is safe: each record replaces what was stored for it"


def _saved(count: int, where: str = "") -> str:
    """``no record was saved``, ``1 record was saved``, ``the 2 records before line 3 were saved``."""
    if not count:
        return "no record was saved"
    verb = "was" if count == 1 else "were"
    if where:
        return f"the {'record' if count == 1 else plural(count, 'record')}{where} {verb} saved"
    return f"{plural(count, 'record')} {verb} saved"


@server_command(name="load", timeout=None)
@click.argument("name")
@click.argument("source", type=click.File("r"))
@click.option("--batch", default=500, show_default=True, type=click.IntRange(1), help="Records per transaction.")
@click.option(
    "--format",
    "file_format",
    type=click.Choice(FORMATS, case_sensitive=False),
    default="auto",
    show_default=True,
    help="jsonl or csv (auto: csv for a .csv file or one not starting with '{').",
)
@click.option(
    "--rank-as-loaded",
    is_flag=True,
    help="Keep every ranked set current record by record, instead of building those of empty windows at the end.",
)
def load(session: Session, name: str, source: Any, batch: int, file_format: str, rank_as_loaded: bool) -> None:
    """Load records from a JSON-lines or CSV file (- for stdin); each record replaces its record.

    A JSON line is a record, {"pk": "alice", "entries": [{"score": 1200, "timestamp": 1763900000}]},
    or one entry of it, {"pk": "alice", "score": 1200, "timestamp": 1763900000}; entries may add
    "context" and "group" lists.  A CSV file has a header: pk,score,timestamp[,context,group].
    The lines of one record go together.  Rerunning a load is harmless.
    """
    reader = RecordReader(source, file_format.lower())
    saved = 0

    def progress(count: int) -> None:
        nonlocal saved
        if count > saved:  # a load sent again counts from its start
            bar.update(count - saved)
            saved = count

    with progress_bar(session, unit=" records", desc=f"saving into {name}") as bar:
        if not bar.disable and reader.start is not None:
            bar.total = reader.count()
        try:
            records = reader if reader.start is not None else reader.records()  # a pipe is read once
            saved = session.client.bulk_load(
                name, records, batch, rank_as_loaded, progress=progress, timeout=session.timeout
            )
        except KeyboardInterrupt:
            bar.close()
            raise click.ClickException(f"interrupted: {_saved(saved)}; {RERUN}") from None
        except grpc.RpcError as exc:
            position, before = load_refusal(exc)
            if position is None:
                raise click.ClickException(
                    f"{session.error_message(exc)}; {_saved(before if before is not None else saved)}; {RERUN}"
                ) from None
            details = (exc.details() or "").split(" refused: ", 1)[-1].split("; the ", 1)[0]  # type: ignore[attr-defined]
            raise click.ClickException(
                f"{source.name}: line {reader.line_of(position)} refused by the server "
                f"({exc.code().name}: {details}); "  # type: ignore[attr-defined]
                f"{_saved(before or 0, f' before line {reader.line_of(before or 0)}')}; "
                f"fix the line and rerun ({RERUN})"
            ) from None
    if reader.bad_line is not None:
        raise click.ClickException(f"{source.name}: {reader.bad_line}; {_saved(saved, ' before it')}")
    session.emit({"index": name, "records_saved": saved}, f"loaded {plural(saved, 'record')} into {name}")
