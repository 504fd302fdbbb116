"""A check split into parts over key ranges, to run at once: by threads, calls or processes.

A check (``checker.py``) goes through the index in one order: the records in key order, then
each complete window's B-tree entries, ranked-set elements and ranked-set structure.
:func:`plan_parts` cuts that order into about ``parts`` pieces of about the same work, and gives
each as a continuation: a check resumed from one (``check_index``'s ``continuation``, the Verify
call's) starts at its cut and stops where the next piece starts (``CheckCursor.stop``).  Run
together, the pieces check everything one check does: each comparison is one batch's, as in a
check in one piece, so the pieces need no order; their reports add up (:func:`merged`).

Where to cut comes from the ranked sets, which give the element of any rank in a few reads: the
entries, elements and structure of a large set are cut at evenly spaced ranks (its structure's
two lower levels at the nodes there), and the records at pk quantiles of records sampled from
the all-time window at evenly spaced ranks.  An index with groups is cut between its windows and
within its records only.  Without a complete all-time window the records are one piece.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from ..rankedset import StructureCursor, element_suffix
from ..store.api import strinc
from . import tuplecodec as tuples
from .checker import (
    ELEMENTS,
    ENTRIES,
    RECORDS,
    STRUCTURE,
    CheckCursor,
    CheckReport,
    Reader,
    _continuation,
    position,
)
from .directory import ALL_TIME, Window
from .transaction import IndexTransaction

# The work of each kind per item, relative to a record's (as measured on the embedded store).
RECORD_WORK = 1.0
ENTRY_WORK, ELEMENT_WORK, LEVEL0_WORK, LEVEL1_WORK = 0.8, 0.2, 0.15, 0.2
SAMPLES_PER_CUT = 16  # records sampled per cut of the records' range
MAX_CHECK_PARTS = 256


@dataclasses.dataclass
class _Span:
    """A stretch of the check's order: ``kind`` over ``count`` items of ``work`` each."""

    kind: str  # "records", "entries", "elements", "level0", "level1", "whole"
    window: Window | None
    count: int
    work: float


def plan_parts(read: Reader, parts: int) -> list[bytes]:
    """Continuations of about ``parts`` pieces covering one whole check, each about as long."""
    if parts < 1:
        raise ValueError(f"parts must be at least 1, not {parts}")
    prefix = read(lambda txn, _writer: txn.space.prefix)
    cursors = read(lambda txn, _writer: _cuts(txn, parts))
    out = []
    for cursor, following in zip(cursors, [*cursors[1:], None], strict=True):
        cursor.stop = position(following) if following is not None else None
        out.append(_continuation(CheckReport(), cursor, prefix))
    return out


def _cuts(txn: IndexTransaction, parts: int) -> list[CheckCursor]:
    """The pieces' starts, in the check's order: the first is the check's own start."""
    directory = txn.directory()
    start = [CheckCursor()]
    if directory is None or parts == 1:
        return start
    settings = txn.settings
    windows = sorted((w for w in directory.windows if not w.filling), key=lambda w: w.lb_key)
    everyone = next((w for w in windows if w.type == ALL_TIME), None)
    grouped = bool(settings.group_size)
    sizes = {w.lb_key: (0 if grouped else txn.space.ranked_set(w, b"").size(txn.tr)) for w in windows}
    records = sizes[everyone.lb_key] if everyone is not None and not grouped else 0
    spans = [_Span("records", everyone, records, RECORD_WORK)]
    for window in windows:
        size = sizes[window.lb_key]
        if grouped or not size:
            spans.append(_Span("whole", window, 1, max(records, 1) * (ENTRY_WORK + ELEMENT_WORK)))
            continue
        spans += [
            _Span("entries", window, size, ENTRY_WORK),
            _Span("elements", window, size, ELEMENT_WORK),
            _Span("level0", window, size, LEVEL0_WORK),
            _Span("level1", window, size, LEVEL1_WORK),
        ]
    total = sum(span.count * span.work for span in spans)
    wanted = [total * i / parts for i in range(1, parts)]
    cuts: list[tuple[_Span, int]] = []  # (span, rank in it)
    done = 0.0
    for span in spans:
        length = span.count * span.work
        while wanted and wanted[0] < done + length:
            rank = int((wanted.pop(0) - done) / span.work)
            if span.kind == "whole" or rank == 0:
                if cuts and cuts[-1][0] is span:
                    continue
                rank = 0
            cuts.append((span, rank))
        done += length
    samples = _record_samples(txn, everyone, records, sum(span.kind == "records" for span, _ in cuts))
    out = start
    for span, rank in cuts:
        cursor = _cursor(txn, span, rank, samples)
        if cursor is not None and position(cursor) > position(out[-1]):
            out.append(cursor)
    return out


def _cursor(txn: IndexTransaction, span: _Span, rank: int, samples: Sequence[bytes]) -> CheckCursor | None:
    """Where the check is when it reaches item ``rank`` of ``span``."""
    window = span.window
    if span.kind == "records":
        if not samples:
            return None
        return CheckCursor(
            RECORDS, txn.layout.records + samples[min(len(samples) - 1, rank * len(samples) // span.count)]
        )
    assert window is not None
    if span.kind == "whole" or (rank == 0 and span.kind == "entries"):
        return CheckCursor(ENTRIES, None, window.lb_key)
    ranked = txn.space.ranked_set(window, b"")
    element = ranked.get_nth(txn.tr, rank)
    if element is None:
        return None
    if span.kind == "entries":
        return CheckCursor(ENTRIES, txn.layout.window_primary(window.key_bytes) + element, window.lb_key)
    if span.kind == "elements":
        before = ranked.get_nth(txn.tr, rank - 1)
        return CheckCursor(ELEMENTS, before, window.lb_key) if before is not None else None
    if span.kind == "level0":
        return CheckCursor(STRUCTURE, None, window.lb_key, structure=StructureCursor(0, element_suffix(element)))
    node = ranked.node_at_or_before(txn.tr, 1, element)
    return CheckCursor(STRUCTURE, None, window.lb_key, structure=StructureCursor(1, node))


def _record_samples(txn: IndexTransaction, everyone: Window | None, records: int, cuts: int) -> list[bytes]:
    """Nested pks of about SAMPLES_PER_CUT * ``cuts`` records, in key order, drawn from the
    all-time window at evenly spaced ranks (so spread over the records' key range)."""
    if not cuts or everyone is None or not records:
        return []
    ranked = txn.space.ranked_set(everyone, b"")
    count = min(records, SAMPLES_PER_CUT * (cuts + 1))
    elements = [ranked.get_nth(txn.tr, i * records // count) for i in range(count)]
    primary = txn.layout.window_primary(everyone.key_bytes)
    found = txn.tr.get_ranges([(primary + e, strinc(primary + e), 1, False) for e in elements if e is not None])
    pks = []
    for rows, element in zip(found, [e for e in elements if e is not None], strict=True):
        if rows:
            pk = tuples.unpack(rows[0][0][len(primary) + len(element) :])
            pks.append(tuples.pack((pk,)))
    return sorted(set(pks))


def merged(reports: Sequence[CheckReport], max_problems: int) -> CheckReport:
    """The reports of a check's pieces as one: counts added, problems in order, at most ``max_problems``."""
    out = CheckReport()
    for report in reports:
        out.problems.extend(report.problems)
        for field in ("records", "entries", "elements", "ranked_sets", "nodes", "windows", "batches"):
            setattr(out, field, getattr(out, field) + getattr(report, field))
    del out.problems[max_problems:]
    return out


def run_parts(
    run: Callable[[bytes], CheckReport], tokens: Sequence[bytes], max_problems: int, threads: int
) -> CheckReport:
    """Each piece run by ``run(token)`` on up to ``threads`` threads, their reports merged."""
    with ThreadPoolExecutor(max(1, min(threads, len(tokens)))) as pool:
        return merged(list(pool.map(run, tokens)), max_problems)
