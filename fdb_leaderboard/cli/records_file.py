"""Record files for bulk loads: JSON lines, one record per line.

    {"pk": ["alice"], "entries": [{"score": 1200, "timestamp": 1763900000}]}
    {"pk": ["bob", 7], "entries": [{"score": 90.5, "timestamp": 1763900100, "context": ["level-3"], "group": ["eu"]}]}

``pk`` is a list of strings, integers, floats, booleans or nulls (a single string or number
stands for a one-element key, as in every API); each entry needs ``score`` (integer or number) and ``timestamp``
(integer) and may add ``context`` and ``group`` lists.  Blank lines are skipped.  A line
loads the record whole: a pk seen again replaces the record's entries.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from ..index.values import as_key

Record = tuple[tuple, list[tuple]]

_ENTRY_KEYS = {"score", "timestamp", "context", "group"}


class RecordsFileError(ValueError):
    """A line of a records file is not a record; ``line`` is its 1-based number."""

    def __init__(self, line: int, problem: str) -> None:
        super().__init__(f"line {line}: {problem}")
        self.line = line


def _items(value: Any, what: str) -> tuple:
    if not isinstance(value, list):
        raise ValueError(f"{what} must be a list, not {type(value).__name__}")
    for item in value:
        if isinstance(item, dict | list):
            raise ValueError(f"{what} holds a {type(item).__name__}; only strings, numbers, booleans and null")
    return tuple(value)


def _entry(raw: Any) -> tuple:
    if not isinstance(raw, dict):
        raise ValueError(f"an entry must be an object with score and timestamp, not {type(raw).__name__}")
    unknown = set(raw) - _ENTRY_KEYS
    if unknown:
        raise ValueError(f"unknown entry field(s) {sorted(unknown)}; known: {sorted(_ENTRY_KEYS)}")
    if "score" not in raw or "timestamp" not in raw:
        raise ValueError("an entry needs score and timestamp")
    score, timestamp = raw["score"], raw["timestamp"]
    if isinstance(score, list) and all(isinstance(value, int) and not isinstance(value, bool) for value in score):
        score = tuple(score)  # a multi-column score
    elif isinstance(score, bool) or not isinstance(score, int | float):
        raise ValueError(f"score must be a number (or a list of integers, for columns), not {score!r}")
    if isinstance(timestamp, bool) or not isinstance(timestamp, int):
        raise ValueError(f"timestamp must be an integer, not {timestamp!r}")
    return score, timestamp, _items(raw.get("context", []), "context"), _items(raw.get("group", []), "group")


def parse_record(text: str) -> Record:
    """One line as ``(pk, [(score, timestamp, context, group), ...])``; ValueError if malformed."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc.msg} at column {exc.colno}") from None
    if not isinstance(raw, dict) or "pk" not in raw:
        raise ValueError('a record is an object with "pk" and "entries"')
    unknown = set(raw) - {"pk", "entries"}
    if unknown:
        raise ValueError(f"unknown record field(s) {sorted(unknown)}; known: ['entries', 'pk']")
    pk = list(as_key(raw["pk"], "pk"))  # "alice" is ["alice"], as everywhere
    entries = raw.get("entries", [])
    if not isinstance(entries, list):
        raise ValueError("entries must be a list")
    return _items(pk, "pk"), [_entry(entry) for entry in entries]


def read_records(lines: Iterable[str]) -> Iterator[Record]:
    """The records of a JSON-lines file, lazily; RecordsFileError names the first bad line."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield parse_record(line)
        except ValueError as exc:
            raise RecordsFileError(number, str(exc)) from None


__all__ = ["Record", "RecordsFileError", "parse_record", "read_records"]
