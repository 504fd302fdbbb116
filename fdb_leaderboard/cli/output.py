"""What the commands print: the one row format of ranked entries (``#1`` is the best wherever a person
reads a rank; ``--json`` keeps the API's 0-based ``rank``), keys, scores, windows and durations for
people, JSON for scripts, confirmations and progress bars."""

from __future__ import annotations

import base64
import dataclasses
import json
import re
import sys
from collections.abc import Sequence
from typing import Any

import click

from ..index import RankedEntry
from ..proto import service_pb2 as pb
from .options import DURATION_UNITS

DISPLAY_FIELD = "name"  # the metadata field shown beside each key


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``1 record``, ``2 records`` (``nouns`` for an irregular plural)."""
    return f"{count:,} {noun if count == 1 else nouns or noun + 's'}"


def show_duration(length: int, timebase: str = "seconds") -> str:
    """A length in the timebase as people type it: ``2d``, ``90m``, ``45s``, ``250ms``."""
    if timebase == "milliseconds" and length % 1000:
        return f"{length}ms"
    seconds = length // 1000 if timebase == "milliseconds" else length
    for unit in ("d", "h", "m"):
        if seconds and seconds % DURATION_UNITS[unit] == 0:
            return f"{seconds // int(DURATION_UNITS[unit])}{unit}"
    return f"{seconds}s"


def show_score(score: object) -> str:
    """A score for people: a multi-column score as its columns separated by commas."""
    return ",".join(str(value) for value in score) if isinstance(score, tuple | list) else str(score)


def json_value(value: object) -> object:
    """A key element or score as JSON, in the API's one shape: bytes as {"base64": ...}, the rest as is."""
    if isinstance(value, bytes):
        return {"base64": base64.b64encode(value).decode()}
    if isinstance(value, tuple | list):
        return [json_value(item) for item in value]
    return value


def show_key(key: tuple) -> str:
    """A key as people type it: ``alice`` for ``("alice",)``, a JSON list otherwise (``["bob", 7]``)."""
    if len(key) == 1 and isinstance(key[0], str) and key[0] and not key[0].lstrip().startswith("["):
        return key[0]
    return json.dumps(json_value(key), ensure_ascii=False)


def number_hint(key: tuple) -> str:
    """For a key typed as a number (``42``, read as the string "42"), how to name the number."""
    if len(key) == 1 and isinstance(key[0], str) and re.fullmatch(r"[+-]?\d+(\.\d+)?", key[0]):
        return f" (the key is the string {key[0]!r}; for the number, give it as a JSON list: '[{key[0]}]')"
    return ""


def no_score(key: tuple, window: str) -> str:
    """What a command says of a record with no score in the window read."""
    return f"{show_key(key)} has no score in {window}{number_hint(key)}"


def show_rank(rank: int | None) -> str:
    """A 0-based rank as people read it: ``#1`` is the best."""
    return "-" if rank is None else f"#{rank + 1}"


def entry_json(entry: RankedEntry) -> dict[str, object]:
    return {
        "rank": entry.rank,
        "pk": json_value(entry.pk),
        "score": entry.score,
        "timestamp": entry.timestamp,
        "context": json_value(entry.context),
        "group": json_value(entry.group),
        "metadata": dict(entry.metadata or {}),
    }


@dataclasses.dataclass(frozen=True)
class Absent:
    """A row for a record with no score in the window read."""

    pk: tuple


def entry_lines(entries: Sequence[RankedEntry | Absent], labels: Sequence[str] | None = None) -> list[str]:
    """Ranked entries as aligned rows, the one format of every command:

        [label]  #rank  key  [name]  score  at timestamp  [context ...]  [group ...]  [field=value ...]

    ``name`` is the metadata's display field; the other fields follow it.  An :class:`Absent`
    record's row says it has no score."""
    rows = []
    for entry in entries:
        if isinstance(entry, Absent):
            rows.append(["-", show_key(entry.pk), "", "", "", ""])
            continue
        metadata = dict(entry.metadata or {})
        name = metadata.pop(DISPLAY_FIELD, "")
        labelled = (("context", entry.context), ("group", entry.group))
        extra = [f"{what} {show_key(value)}" for what, value in labelled if value]
        extra += [f"{field}={value}" for field, value in sorted(metadata.items())]
        when = f"at {entry.timestamp}"
        rows.append([show_rank(entry.rank), show_key(entry.pk), name, show_score(entry.score), when, "  ".join(extra)])
    if not rows:
        return []
    first = 0 if labels is None else 1  # the rank's column
    if labels is not None:
        rows = [[label, *row] for label, row in zip(labels, rows, strict=True)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    right = {first, first + 3}  # the rank and the score
    lines = []
    for entry, row in zip(entries, rows, strict=True):
        cells = [
            cell.rjust(width) if i in right else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
            if width  # a column no row fills (no names, no extras) is left out
        ]
        if isinstance(entry, Absent):
            cells = [*cells[: first + 2], f"no score in this window{number_hint(entry.pk)}"]
        lines.append("  ".join(cells).rstrip())
    return lines


def listing_json(entries: Any) -> dict[str, object]:
    """Entries read from one window as the API answers them: ``{"entries": [...], "window": {...}}``."""
    window = getattr(entries, "window", None)
    shown = None if window is None else {"type": window.type, "start": window.start, "end": window.end}
    return {"entries": [entry_json(entry) for entry in entries], "window": shown}


def window_json(window: pb.Window) -> dict[str, object]:
    data: dict[str, object] = {
        "type": window.type,
        "start": window.start,
        "end": window.end,
        "key": window.key,
        "nlevels": window.nlevels,
        "filling": window.filling,
    }
    if window.filling:
        data["fill"] = {
            "records_processed": window.records_processed,
            "entries_ranked": window.entries_ranked,
            "records_total": window.records_total if window.HasField("records_total") else None,
        }
    return data


def window_line(window: pb.Window) -> str:
    label = "all-time" if window.type == 0 else f"type {window.type} [{window.start}, {window.end})"
    return f"  key {window.key:>4}  {label}{fill_note(window)}"


def fill_note(window: pb.Window) -> str:
    """How far a filling window got, as ``windows show`` prints it (nothing for a complete one)."""
    if not window.filling:
        return ""
    total = f" of {window.records_total:,}" if window.HasField("records_total") else ""
    if window.entries_ranked:
        return f"  (filling: {window.entries_ranked:,}{total} ranked)"
    return f"  (filling: {window.records_processed:,}{total} records in)"


def confirm_or_yes(question: str, yes: bool, what: str) -> None:
    """Go on only if the user agrees: ``--yes`` given, or asked on a terminal and answered yes.
    Off a terminal (a script, a pipe) nobody can answer, so ``--yes`` is required: a usage error."""
    if yes:
        return
    if not sys.stdin.isatty():
        raise click.UsageError(f"{what}: give --yes to confirm (there is no terminal to ask on)")
    click.confirm(question, abort=True, err=True)


def where(window_type: int, timestamp: int | None) -> str:
    """The window a read named, for people: ``the all-time window``, ``the type 1 window holding now``."""
    if not window_type:
        return "the all-time window"
    return f"the type {window_type} window holding {'now' if timestamp is None else timestamp}"
