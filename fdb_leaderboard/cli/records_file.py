"""Record files for ``load``: JSON lines or CSV, one record per line (or per run of lines).

JSON lines take two forms, which may be mixed:

    {"pk": ["alice"], "entries": [{"score": 1200, "timestamp": 1763900000}]}
    {"pk": "bob", "score": 90, "timestamp": 1763900100, "context": ["level-3"], "group": ["eu"]}

The first is a whole record: its ``entries`` (each with ``score``, ``timestamp`` and optional
``context`` and ``group`` lists) replace the record's.  The second, flat, is one entry of a
record; the flat lines of one record that follow each other are that record's entries.  CSV takes
flat rows under a header naming the columns ``pk``, ``score``, ``timestamp`` and optionally
``context`` and ``group`` (a cell is a string, or a JSON list such as ``["bob", 7]``):

    pk,score,timestamp
    alice,1200,1763900000

``pk`` is a list of strings, integers, floats, booleans or nulls (a single string or number
stands for a one-element key, as in every API); scores are integers or numbers (for an index
ranking by columns, a list of integers in JSON and integers separated by commas in CSV, as
``export`` writes them: ``"12,3,95"``), timestamps integers.  Blank lines are skipped.  A
record is loaded whole: a pk seen again replaces the record's entries, so the flat lines (or
rows) of one record must be together: a record whose lines come apart is refused, naming the
line.
"""

from __future__ import annotations

import csv
import itertools
import json
from array import array
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from typing import IO, Any

from ..index.values import as_key

Record = tuple[tuple, list[tuple]]

_ENTRY_KEYS = {"score", "timestamp", "context", "group"}
_COLUMNS = ["pk", "score", "timestamp", "context", "group"]
FORMATS = ("auto", "jsonl", "csv")


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


def _pk(value: Any) -> tuple:
    pk = _items(list(as_key(value, "pk")), "pk")  # "alice" is ["alice"], as everywhere
    if not pk or pk == ("",):
        raise ValueError("pk is empty: give the record's key")
    return pk


def parse_line(text: str) -> tuple[Record, bool]:
    """One JSON line as ``((pk, [(score, timestamp, context, group), ...]), flat)``; ValueError if malformed."""
    text = text.rstrip("\r\n")  # so a mistake at the end of the line is placed there, not on the next
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        where = "at the end of the line" if exc.pos >= len(text.rstrip()) else f"at column {exc.colno}"
        raise ValueError(f"not JSON: {exc.msg} {where}") from None
    if not isinstance(raw, dict) or "pk" not in raw:
        raise ValueError('a record is an object with "pk" and "entries", or "pk", "score" and "timestamp"')
    if "entries" not in raw and "score" in raw:  # flat: one entry of the record
        fields = dict(raw)
        pk = _pk(fields.pop("pk"))
        return (pk, [_entry(fields)]), True
    unknown = set(raw) - {"pk", "entries"}
    if unknown:
        raise ValueError(f"unknown record field(s) {sorted(unknown)}; known: ['entries', 'pk'] (or a flat line)")
    entries = raw.get("entries", [])
    if not isinstance(entries, list):
        raise ValueError("entries must be a list")
    return (_pk(raw["pk"]), [_entry(entry) for entry in entries]), False


def parse_record(text: str) -> Record:
    """One line as ``(pk, [(score, timestamp, context, group), ...])``; ValueError if malformed."""
    return parse_line(text)[0]


def _cell_key(text: str, what: str) -> tuple:
    if text.lstrip().startswith("["):
        try:
            return _items(json.loads(text), what)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{what} {text!r} is not a JSON list: {exc.msg}") from None
    return (text,) if text else ()


def _number(text: str, what: str, integer: bool = False) -> int | float:
    try:
        return int(text)
    except ValueError:
        if integer:
            raise ValueError(f"{what} must be an integer, not {text!r}") from None
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{what} must be a number, not {text!r}") from None


def _score_cell(text: str) -> int | float | tuple:
    """A CSV score: a number, or integers separated by commas (a multi-column score)."""
    if "," in text:
        return tuple(_number(part, "a score's column", integer=True) for part in text.split(","))
    return _number(text, "score")


class _CsvRows:
    """A CSV source's rows as flat records, under its header."""

    def __init__(self, reader: Any) -> None:
        self.reader = reader
        header = next((row for row in reader if row), None)
        if header is None:
            self.columns: list[str] = []
            return
        self.columns = [name.strip().lower() for name in header]
        unknown = [name for name in self.columns if name not in _COLUMNS]
        missing = [name for name in _COLUMNS[:3] if name not in self.columns]
        if unknown or missing or len(set(self.columns)) != len(self.columns):
            problem = f"unknown column(s) {unknown}" if unknown else f"missing column(s) {missing}"
            if not (unknown or missing):
                problem = "a column named twice"
            raise RecordsFileError(reader.line_num, f"CSV header: {problem}; columns: {', '.join(_COLUMNS)}")

    def record(self, row: list[str]) -> Record:
        if len(row) != len(self.columns):
            raise ValueError(f"{len(row)} cells under a header of {len(self.columns)} columns")
        cells = dict(zip(self.columns, row, strict=True))
        pk = _cell_key(cells["pk"], "pk")
        if not pk:
            raise ValueError("pk is empty: give the record's key")
        entry = (
            _score_cell(cells["score"]),
            _number(cells["timestamp"], "timestamp", integer=True),
            _cell_key(cells.get("context", ""), "context"),
            _cell_key(cells.get("group", ""), "group"),
        )
        return pk, [entry]


class RecordReader:
    """The records of a records file with the line each starts on, from the start each time
    it is iterated when the file can seek (so a load can be sent again).

    A bad line ends the records; :attr:`bad_line` then says which (what came before stays
    loaded).  :meth:`line_of` maps a record's 0-based position back to its line, keeping only
    the positions where records stop following line by line (blank lines, runs of flat lines).
    """

    def __init__(self, source: IO[str], file_format: str = "auto") -> None:
        self.source = source
        self.start = source.tell() if source.seekable() else None
        self.format = file_format
        if file_format == "auto" and str(getattr(source, "name", "")).lower().endswith(".csv"):
            self.format = "csv"
        self.bad_line: RecordsFileError | None = None
        self._positions = array("q")
        self._lines = array("q")

    def __iter__(self) -> Iterator[Record]:
        if self.start is not None:
            self.source.seek(self.start)
        self.bad_line = None
        self._positions, self._lines = array("q"), array("q")
        return self._grouped()

    def records(self) -> Iterator[Record]:
        """The records once, from where the source is (a pipe)."""
        self.bad_line = None
        return self._grouped()

    def count(self) -> int:
        """How many records the file holds (reading it through), leaving it at its start."""
        total = sum(1 for _ in self)
        if self.start is not None:
            self.source.seek(self.start)
        return total

    def line_of(self, position: int) -> int:
        """The line record ``position`` (0-based) starts on."""
        found = bisect_right(self._positions, position) - 1
        if found < 0:
            return position + 1
        return self._lines[found] + position - self._positions[found]

    def _note(self, position: int, line: int) -> None:
        if self.line_of(position) != line:
            self._positions.append(position)
            self._lines.append(line)

    def _grouped(self) -> Iterator[Record]:
        """Records, the consecutive flat lines of one pk joined into one; notes each record's line."""
        seen: set[int] = set()  # hashes of the pks whose flat lines were read, to catch runs apart
        run: Record | None = None
        run_line = position = 0
        try:
            for line, (record, flat) in self._parsed():
                if flat and run is not None and record[0] == run[0]:
                    run[1].extend(record[1])
                    continue
                if run is not None:
                    self._note(position, run_line)
                    yield run
                    position += 1
                    run = None
                if flat:
                    if hash(record[0]) in seen:
                        raise RecordsFileError(
                            line,
                            f"the lines of pk {list(record[0])} are not together: a record's flat lines (or "
                            "rows) must follow each other (sort the file by pk)",
                        )
                    seen.add(hash(record[0]))
                    run, run_line = record, line
                    continue
                self._note(position, line)
                yield record
                position += 1
        except RecordsFileError as exc:  # end the records: what came before is loaded
            self.bad_line = exc
        if run is not None:
            self._note(position, run_line)
            yield run

    def _parsed(self) -> Iterator[tuple[int, tuple[Record, bool]]]:
        lines = enumerate(self.source, start=1)
        peeked = []  # up to the first line with text, which tells JSON lines from CSV
        for number, text in lines:
            peeked.append((number, text))
            if text.strip():
                break
        opening = peeked[-1][1].lstrip() if peeked else ""
        text_lines = itertools.chain(peeked, lines)
        file_format = self.format
        if file_format == "auto":
            file_format = "jsonl" if opening.startswith("{") or not opening else "csv"
        if file_format == "csv":
            yield from self._csv(text for _, text in text_lines)
            return
        for number, text in text_lines:
            if not text.strip():
                continue
            try:
                yield number, parse_line(text)
            except ValueError as exc:
                raise RecordsFileError(number, str(exc)) from None

    @staticmethod
    def _csv(lines: Iterable[str]) -> Iterator[tuple[int, tuple[Record, bool]]]:
        reader = csv.reader(lines)
        rows = _CsvRows(reader)
        for row in reader:
            if not any(cell.strip() for cell in row):
                continue
            try:
                yield reader.line_num, (rows.record(row), True)
            except ValueError as exc:
                raise RecordsFileError(reader.line_num, str(exc)) from None


def read_records(lines: Iterable[str]) -> Iterator[Record]:
    """The records of JSON lines, lazily, each line one record; RecordsFileError names the first bad line."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield parse_record(line)
        except ValueError as exc:
            raise RecordsFileError(number, str(exc)) from None


__all__ = ["FORMATS", "Record", "RecordReader", "RecordsFileError", "parse_line", "parse_record", "read_records"]
