"""Bad input: generated calls to the Python API and raw gRPC requests with random fields.

Inputs mix valid values with wrong types, huge or empty keys (many elements, long strings
and bytes), NaN and infinite scores, scores and timestamps at and beyond the int64 limits,
windows that end before they start, overlapping specs, unknown window types, unknown enum
values, timestamps far in the past and future, and continuations from other indexes,
windows and scans or random bytes.  Every call must either succeed (and leave the index
consistent: ``index.check()`` == []) or be refused with a precise error:

- Python: the project's own refusals only, :class:`LeaderboardError` subclasses (each with a
  message) or the store's ``TransactionTooLarge``: a ``TypeError`` or ``ValueError`` from a
  library or a comparison inside the index is a defect, not a refusal;
- gRPC: INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION (ALREADY_EXISTS for CreateIndex),
  never UNKNOWN or INTERNAL, and nothing logged as unexpected;
- HTTP: 400, 404, 409 or 412 with the code and a message, never a 5xx;

and a refused call must leave the store byte for byte as it was (a full range read before
and after).  The server must keep serving.  Explicit tests then pin the exact error of each
category, and regression tests pin the bugs the fuzzing found.
"""

from __future__ import annotations

import collections
import functools
import json
import logging
import math
import subprocess
import sys
import textwrap
import urllib.parse
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import fdb.tuple
import grpc
import httpx
import pytest
from conftest import store_rows
from google.protobuf import json_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.errors import FailedPrecondition, InvalidArgument, LeaderboardError, NotFound
from fdb_leaderboard.http import HttpServer
from fdb_leaderboard.index import Entry, IfAbsent, IndexSettings, LeaderboardIndex, RankMode, ScanType
from fdb_leaderboard.index.directory import INT64_MAX, INT64_MIN, Rebuild, WindowSpec, WindowUpdate
from fdb_leaderboard.proto import service_pb2 as pb
from fdb_leaderboard.service import Server
from fdb_leaderboard.service.status import status_of
from fdb_leaderboard.store import Database, TransactionTooLarge, open_database

Code = grpc.StatusCode
PY_EXAMPLES = 300
GRPC_EXAMPLES = 500
HTTP_EXAMPLES = 400

BOUNDARY_INTS = [
    INT64_MIN - 1,
    INT64_MIN,
    INT64_MIN + 1,
    -1,
    0,
    1,
    INT64_MAX - 1,
    INT64_MAX,
    INT64_MAX + 1,
    1 << 64,
    -(1 << 64),
    1 << 100,
]
JUNK = [None, "7", b"7", [], {}, set(), object(), 1j, Decimal("1.5"), bytearray(b"1"), True, 1.5]


def snapshot(db: Database) -> list[tuple[bytes, bytes]]:
    """Every key and value in the store (the server processes' own reports aside)."""
    return store_rows(db)


# -- Python API strategies -------------------------------------------------------------------------

valid_elements = st.one_of(
    st.integers(-1000, 1000),
    st.text(max_size=8),
    st.binary(max_size=8),
    st.none(),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False),
)
odd_elements = st.one_of(
    st.sampled_from(BOUNDARY_INTS),
    st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 5e-324, 1.7e308]),
    st.text(min_size=150, max_size=700),
    st.binary(min_size=150, max_size=700),
    st.just("\ud800"),  # a lone surrogate: not encodable as UTF-8
    st.sampled_from([object(), 1j, Decimal("2"), bytearray(b"x"), {}, frozenset()]),
    st.tuples(valid_elements, valid_elements),  # nested tuples are valid tuple-layer items
    st.tuples(st.just(math.nan)),
)
any_elements = st.one_of(valid_elements, odd_elements)


def key_tuples(size: int | None) -> st.SearchStrategy:
    """Tuples for a pk (size None), group or context (exact size expected)."""
    return _key_tuples(size)


def _key_tuples(size: int | None) -> st.SearchStrategy:
    exact = (
        st.lists(valid_elements, min_size=size, max_size=size).map(tuple)
        if size is not None
        else st.lists(valid_elements, min_size=1, max_size=3).map(tuple)
    )
    return st.one_of(
        st.sampled_from([("a",), ("b",), ("c",), ("d",)]) if size is None else exact,
        exact,
        st.lists(any_elements, max_size=4).map(tuple),
        st.lists(valid_elements, min_size=40, max_size=200).map(tuple),  # many elements
        st.lists(valid_elements, max_size=3),  # a list: accepted as a tuple
        st.just(()),
        st.sampled_from(JUNK),
    )


scores = st.one_of(
    st.integers(-100, 100),
    st.sampled_from(BOUNDARY_INTS),
    st.floats(),
    st.sampled_from(JUNK),
)
timestamps = st.one_of(
    st.integers(0, 12_000),  # inside the windows
    st.sampled_from(BOUNDARY_INTS),
    st.integers(),  # far in the past and future
    st.sampled_from(JUNK),
)
window_types = st.one_of(st.integers(0, 3), st.sampled_from([(1 << 32) - 1, 1 << 32, -1, True, "1", None, 1.0]))
counts = st.one_of(st.integers(0, 20), st.sampled_from([-1, 1 << 63, 1 << 64, True, "3", None, 1.5]))
modes = st.sampled_from([None, RankMode.ORDINAL, RankMode.COMPETITION, "COMPETITION", 3])


def entries_for(settings_: IndexSettings) -> st.SearchStrategy:
    entry = st.builds(
        Entry,
        scores,
        timestamps,
        key_tuples(settings_.context_size),
        key_tuples(settings_.group_size),
    )
    return st.one_of(
        st.lists(entry, max_size=4),
        st.lists(st.one_of(entry, st.sampled_from([(1, 2), None, "entry"])), max_size=3),
        st.sampled_from(JUNK),
    )


window_specs = st.builds(
    WindowSpec,
    window_types,
    st.one_of(st.integers(-2000, 12_000), st.sampled_from(BOUNDARY_INTS)),
    st.one_of(st.integers(-10, 3000), st.sampled_from(BOUNDARY_INTS)),
    st.one_of(st.integers(-10, 3000), st.sampled_from(BOUNDARY_INTS)),
    st.one_of(st.integers(0, 4), st.sampled_from([-1, 2500, 2501, 10**9, "2"])),
)
window_updates = st.builds(
    WindowUpdate,
    update_timestamp=timestamps,
    high_score_first=st.one_of(st.booleans(), st.sampled_from(JUNK)),
    delete_before=st.one_of(st.none(), timestamps),
    all_time=st.booleans(),
    specs=st.lists(window_specs, max_size=2),
    windows=st.lists(
        st.one_of(
            st.tuples(window_types, timestamps, timestamps),
            st.tuples(st.integers(1, 3), st.integers(0, 12_000), st.integers(0, 12_000)),  # end <= start too
            st.sampled_from([(1, 5), "window", None]),
        ),
        max_size=3,
    ),
    nlevels=st.one_of(st.integers(0, 10), st.sampled_from(JUNK)),
    rebuild=st.one_of(st.sampled_from(list(Rebuild)), st.sampled_from(["ALWAYS", None])),
)


def continuations(tokens: list[bytes]) -> st.SearchStrategy:
    return st.one_of(
        st.none(),
        st.sampled_from(tokens),
        st.binary(max_size=40),
        st.sampled_from(["token", 5, bytearray(b"\x01")]),
    )


class Operation:
    """One call of the Python API: ``method(*args, **kwargs)`` on an index."""

    def __init__(self, index: LeaderboardIndex, method: str, *args: Any, **kwargs: Any) -> None:
        self.index, self.method, self.args, self.kwargs = index, method, args, kwargs
        self.writes = method in WRITES

    def __call__(self) -> Any:
        return getattr(self.index, self.method)(*self.args, **self.kwargs)

    def __repr__(self) -> str:
        args = [repr(a)[:300] for a in self.args] + [f"{k}={v!r}"[:300] for k, v in self.kwargs.items()]
        return f"index {self.index.prefix!r}.{self.method}({', '.join(args)})"


WRITES = {
    "add_score",
    "add_entries",
    "save_record",
    "delete_record",
    "write_batch",
    "update_windows",
    "expire",
    "trim",
    "fill_step",
    "save_sub_directory",
}
READS = ["rank", "rank_and_entry", "top", "around", "count", "score_for_rank", "rank_for_score", "scan"]


def point_read(
    op: Callable[..., Operation],
    kind: str,
    draw: Callable,
    pks: st.SearchStrategy,
    counts: st.SearchStrategy,
    scores: st.SearchStrategy,
    modes: st.SearchStrategy,
    if_absents: st.SearchStrategy,
    group: object,
    where: dict,
) -> Operation | None:
    """The call of ``kind`` if it is a read other than a scan, its arguments drawn from these; else None."""
    if kind in ("rank", "rank_and_entry"):
        return op(draw(pks), group=group, mode=draw(modes), **where)
    if kind == "top":
        return op(draw(counts), group=group, mode=draw(modes), **where)
    if kind == "around":
        above, below = draw(counts), draw(counts)
        return op(draw(pks), above, below, group=group, mode=draw(modes), if_absent=draw(if_absents), **where)
    if kind == "count":
        return op(group=group, **where)
    if kind == "score_for_rank":
        return op(draw(counts), group=group, **where)
    if kind == "rank_for_score":
        return op(draw(scores), group=group, **where)
    return None


def draw_operation(draw: Callable, index: LeaderboardIndex, tokens: list[bytes]) -> Operation:
    """One random call of the index's Python API."""
    s = index.settings
    pks = key_tuples(None)
    groups = key_tuples(s.group_size)
    kind = draw(st.sampled_from(sorted(WRITES) + READS))
    op = functools.partial(Operation, index, kind)
    if kind == "add_score":
        return op(draw(pks), draw(scores), draw(timestamps), draw(key_tuples(s.context_size)), draw(groups))
    if kind in ("add_entries", "save_record"):
        return op(draw(pks), draw(entries_for(s)))
    if kind == "delete_record":
        return op(draw(pks))
    if kind == "write_batch":
        return op(draw(st.lists(st.tuples(pks, entries_for(s)), max_size=3)), replace=draw(st.booleans()))
    if kind == "update_windows":
        return op(draw(window_updates))
    if kind in ("expire", "trim"):
        return op(draw(timestamps))
    if kind == "fill_step":
        return op(draw(st.one_of(st.integers(1, 20), st.sampled_from(["x", None, 1.5]))))
    if kind == "save_sub_directory":
        return op(draw(groups), draw(st.booleans()))
    where = {"window_type": draw(window_types), "timestamp": draw(st.one_of(st.none(), timestamps))}
    group = draw(groups)
    if_absents = st.sampled_from([None, *IfAbsent, "TOP"])
    if (read := point_read(op, kind, draw, pks, counts, scores, modes, if_absents, group, where)) is not None:
        return read
    scan = {
        "low": draw(st.one_of(st.none(), scores)),
        "high": draw(st.one_of(st.none(), scores)),
        "low_inclusive": draw(st.booleans()),
        "high_inclusive": draw(st.booleans()),
        "group": group,
        "reverse": draw(st.booleans()),
        "limit": draw(counts),
        "continuation": draw(continuations(tokens)),
        "mode": draw(st.sampled_from(list(RankMode))),
        **where,
    }
    return op(draw(st.sampled_from([*ScanType, "BY_RANK", None])), **scan)


def draw_well_formed_operation(draw: Callable, index: LeaderboardIndex, tokens: list[bytes]) -> Operation:
    """One call of the Python API whose arguments have the right types and ranges (it may still be
    refused: a window that does not exist, a fill running...).  Such calls reach every operation's
    deep paths, where an internal defect would show: the junk of :func:`draw_operation` mostly
    stops at the first check."""
    kind = draw(st.sampled_from(sorted(WRITES) + READS))
    s = index.settings
    pks = st.one_of(
        st.sampled_from([("a",), ("b",), ("c",), ("d",), ("e",)]),
        st.lists(valid_elements, min_size=1, max_size=3).map(tuple),
    )
    groups = st.one_of(
        st.just(("g",) * s.group_size),
        st.lists(valid_elements, min_size=s.group_size, max_size=s.group_size).map(tuple),
    )
    contexts = st.lists(valid_elements, min_size=s.context_size, max_size=s.context_size).map(tuple)
    good_scores = st.integers(-100, 100)
    good_times = st.integers(0, 12_000)
    good_counts = st.integers(0, 20)
    entries = st.lists(st.builds(Entry, good_scores, good_times, contexts, groups), max_size=4)
    op = functools.partial(Operation, index, kind)
    if kind == "add_score":
        return op(draw(pks), draw(good_scores), draw(good_times), draw(contexts), draw(groups))
    if kind in ("add_entries", "save_record"):
        return op(draw(pks), draw(entries))
    if kind == "delete_record":
        return op(draw(pks))
    if kind == "write_batch":
        return op(draw(st.lists(st.tuples(pks, entries), max_size=3)), replace=draw(st.booleans()))
    if kind == "update_windows":
        # Windows before a trim, or a rebuild of them (ALWAYS, a change of direction), are refused
        # once junk trimmed: mostly new windows, possibly in the future, keeping the direction.
        starts = st.integers(0, 20_000)
        spec = st.builds(
            WindowSpec, st.integers(1, 3), starts, st.integers(1, 3000), st.integers(1, 3000), st.integers(0, 4)
        )
        window = st.tuples(st.integers(1, 3), starts, st.integers(1, 3000)).map(lambda w: (w[0], w[1], w[1] + w[2]))
        rebuild = Rebuild.IF_OVERLAPPING_CHANGED
        update = WindowUpdate(
            update_timestamp=draw(good_times),
            high_score_first=draw(st.sampled_from([None, None, None, True, False])),
            delete_before=draw(st.one_of(st.none(), st.none(), good_times)),
            all_time=draw(st.booleans()),
            specs=draw(st.lists(spec, max_size=2)),
            windows=draw(st.lists(window, max_size=2)),
            nlevels=draw(st.integers(2, 8)),
            rebuild=draw(st.sampled_from([rebuild, rebuild, rebuild, *Rebuild])),
        )
        return op(update)
    if kind in ("expire", "trim"):
        return op(draw(good_times))
    if kind == "fill_step":
        return op(draw(st.integers(1, 20)))
    if kind == "save_sub_directory":
        return op(draw(groups), draw(st.booleans()))
    # A window the index has (junk calls expire and add windows): the n-th, or all-time by default.
    directory = index.directory()
    windows = [w for w in directory.windows if not w.filling] if directory is not None else []
    pick = draw(st.integers(-1, 40))
    where = {}
    if windows and pick >= 0:
        window = windows[pick % len(windows)]
        where = {"window_type": window.type, "timestamp": window.start} if window.type else {"window_type": 0}
    group, modes = draw(groups), st.sampled_from([None, RankMode.ORDINAL, RankMode.COMPETITION])
    if_absents = st.sampled_from([None, *IfAbsent])
    if (read := point_read(op, kind, draw, pks, good_counts, good_scores, modes, if_absents, group, where)) is not None:
        return read
    scan_type = draw(st.sampled_from(list(ScanType)))
    if scan_type is not ScanType.BY_TIME_WINDOW:
        where = {}  # the all-time window: these scans take no window
    elif "timestamp" not in where:
        where = {"window_type": 0, "timestamp": 0}
    bound = st.one_of(st.none(), good_scores if scan_type is ScanType.BY_VALUE else good_counts)
    return op(
        scan_type,
        low=draw(bound),
        high=draw(bound),
        low_inclusive=draw(st.booleans()),
        high_inclusive=draw(st.booleans()),
        group=group,
        reverse=draw(st.booleans()),
        limit=draw(good_counts),
        continuation=draw(st.one_of(st.none(), st.none(), st.sampled_from(tokens))),
        mode=draw(st.sampled_from(list(RankMode)[:2])),
        **where,
    )


# The project's own refusals only: a TypeError or ValueError from a library or a comparison is a defect.
PY_ALLOWED = (LeaderboardError, TransactionTooLarge)


def make_indexes(db: Database) -> dict[str, LeaderboardIndex]:
    """Three indexes with data, all-time and type 1 windows of 1000."""
    indexes = {
        "best": LeaderboardIndex.create(db, b"\x15\x10", IndexSettings(high_score_first=True)),
        "sum": LeaderboardIndex.create(
            db, b"\x15\x11", IndexSettings(aggregation="SUM", group_size=1, context_size=1, high_score_first=False)
        ),
        "latest": LeaderboardIndex.create(db, b"\x15\x12", IndexSettings(aggregation="LATEST", high_score_first=False)),
    }
    for index in indexes.values():
        hsf = index.settings.high_score_first
        index.update_windows(WindowUpdate(high_score_first=hsf, specs=[WindowSpec(1, 0, 1000, 1000, 12)]))
        s = index.settings
        for i, pk in enumerate("abcd"):
            index.add_score((pk,), 10 * i, 500 + i, ("c",) * s.context_size, ("g",) * s.group_size)
    return indexes


def scan_tokens(indexes: dict[str, LeaderboardIndex]) -> list[bytes]:
    """Valid continuations of each index, window and kind of scan (foreign to the others)."""
    tokens = []
    for index in indexes.values():
        group = ("g",) * index.settings.group_size
        for scan_type, extra in (
            (ScanType.BY_RANK, {}),
            (ScanType.BY_VALUE, {}),
            (ScanType.BY_TIME_WINDOW, {"window_type": 1, "timestamp": 500}),
        ):
            page = index.scan(scan_type, limit=1, group=group, **extra)
            assert page.continuation is not None
            tokens.append(page.continuation)
    return tokens


def attempt(
    db: Database, indexes: dict[str, LeaderboardIndex], op: Operation, tally: collections.Counter, history: list
) -> None:
    """Run one call; check the outcome is a success or a precise refusal that changed nothing."""
    history.append(op)
    context = "\n".join(f"  {i}: {past!r}" for i, past in enumerate(history[-12:]))
    before = snapshot(db)
    try:
        op()
    except PY_ALLOWED as exc:
        assert str(exc).strip(), f"{op!r}: {type(exc).__name__} without a message"
        assert snapshot(db) == before, f"{op!r} was refused ({exc!r}) but changed the store"
        tally[f"refused {type(exc).__name__}"] += 1
    else:
        tally["succeeded"] += 1
        tally[f"succeeded {op.method}"] += 1
        if op.writes:
            for name, index in indexes.items():
                try:
                    problems = index.check()
                except Exception as exc:
                    raise AssertionError(f"{name}.check() raised {exc!r}; last calls:\n{context}") from exc
                assert problems == [], f"{name}: {problems}; last calls:\n{context}"
        else:
            assert snapshot(db) == before, f"the read {op!r} changed the store"


@pytest.mark.slow
def test_python_api_generated_bad_input(tmp_path: Path) -> None:
    db = open_database(f"lmdb:{tmp_path / 'store'}?durable=false")
    indexes = make_indexes(db)
    tokens = scan_tokens(indexes)
    tally: collections.Counter[str] = collections.Counter()
    history: list[Operation] = []  # across examples: the store carries state from one to the next

    @settings(max_examples=PY_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data: st.DataObject) -> None:
        for _ in range(data.draw(st.integers(1, 3))):
            index = indexes[data.draw(st.sampled_from(sorted(indexes)))]
            if data.draw(st.booleans()):
                operation = draw_operation(data.draw, index, tokens)
            else:
                index.fill()  # windows the junk left filling would refuse most well-formed reads
                operation = draw_well_formed_operation(data.draw, index, tokens)
            attempt(db, indexes, operation, tally, history)
            tally["inputs"] += 1

    try:
        run()
    finally:
        db.close()
    print(f"\npython API: {dict(tally)}")
    assert sum(v for k, v in tally.items() if k.startswith("refused")) > 0
    # Reads and record writes ran to their end (where an internal defect would show) many times:
    # the generated calls reach past the checks (about a hundred of each in a run).
    assert sum(tally[f"succeeded {kind}"] for kind in READS) >= 30, tally
    assert sum(tally[f"succeeded {kind}"] for kind in ("add_score", "add_entries", "write_batch")) >= 30, tally


# -- gRPC strategies -------------------------------------------------------------------------------

SINT64 = st.one_of(
    st.integers(0, 12_000),
    st.sampled_from([INT64_MIN, INT64_MIN + 1, -1, INT64_MAX]),
    st.integers(INT64_MIN, INT64_MAX),
)
UINT32 = st.one_of(st.integers(0, 20), st.sampled_from([(1 << 32) - 1, 1 << 31]), st.integers(0, (1 << 32) - 1))
ENUMS = st.one_of(st.integers(0, 2), st.sampled_from([3, 7, (1 << 31) - 1, -1]))
NAMES = st.sampled_from(["best", "sum", "", "missing", "x" * 101, "bad name", "ü", "best\x00", "new"])

pb_item = st.one_of(
    st.integers(INT64_MIN, INT64_MAX).map(lambda v: pb.Item(int=v)),
    st.text(max_size=10).map(lambda v: pb.Item(string=v)),
    st.text(min_size=150, max_size=2000).map(lambda v: pb.Item(string=v)),
    st.binary(max_size=10).map(lambda v: pb.Item(bytes=v)),
    st.binary(min_size=150, max_size=2000).map(lambda v: pb.Item(bytes=v)),
    st.floats().map(lambda v: pb.Item(double=v)),
    st.booleans().map(lambda v: pb.Item(bool=v)),
    st.just(pb.Item(null=True)),
    st.just(pb.Item()),  # no value set
)


def pb_items(size: int | None) -> st.SearchStrategy:
    valid = [pb.Item(string="g")] * (size or 0) if size is not None else None
    items = st.one_of(
        st.just(valid) if valid is not None else st.sampled_from([[pb.Item(string=c)] for c in "abcd"]),
        st.lists(pb_item, max_size=3),
        st.lists(st.just(pb.Item(int=1)), min_size=40, max_size=300),
    )
    return items


pb_score = st.one_of(
    st.none(),
    st.integers(-100, 100).map(lambda v: pb.Score(int=v)),
    st.sampled_from([INT64_MIN, INT64_MAX]).map(lambda v: pb.Score(int=v)),
    st.floats().map(lambda v: pb.Score(double=v)),
)


def pb_entries(group_size: int | None, context_size: int | None) -> st.SearchStrategy:
    return st.lists(
        st.builds(
            lambda score, ts, context, group: pb.Entry(score=score, timestamp=ts, context=context, group=group),
            pb_score,
            SINT64,
            pb_items(context_size),
            pb_items(group_size),
        ),
        max_size=3,
    )


def selector() -> st.SearchStrategy:
    return st.builds(
        lambda t, ts: pb.WindowSelector(type=t) if ts is None else pb.WindowSelector(type=t, timestamp=ts),
        st.one_of(st.integers(0, 3), UINT32),
        st.one_of(st.none(), SINT64),
    )


policies = st.builds(
    lambda windows, horizon, certain, retain: pb.MaintenancePolicy(
        windows=windows, horizon=horizon, certain_within=certain, retain=retain
    ),
    st.lists(
        st.builds(
            lambda t, b, i, d: pb.RegularWindows(type=t, base=b, increment=i, duration=d),
            st.integers(0, 3),
            SINT64,
            st.one_of(st.integers(-5, 5000), st.sampled_from([INT64_MAX, INT64_MIN])),
            st.one_of(st.integers(-5, 5000), st.sampled_from([INT64_MAX])),
        ),
        max_size=2,
    ),
    st.one_of(st.integers(-5, 20_000), st.sampled_from([INT64_MAX])),
    st.one_of(st.integers(-5, 20_000), st.sampled_from([INT64_MAX])),
    st.one_of(st.integers(-5, 20_000), st.sampled_from([INT64_MAX])),
)


def draw_request(draw: Callable, tokens: list[bytes]) -> tuple[str, Any]:
    """A random RPC and its request (index names, sizes and enums from valid and invalid values)."""
    name = draw(NAMES)
    group_size = {"best": 0, "sum": 1}.get(name)
    context_size = group_size
    pk = pb_items(None)
    group = pb_items(group_size)
    rpc = draw(
        st.sampled_from(
            [
                "CreateIndex",
                "SetMaintenancePolicy",
                "UpdateWindows",
                "ListWindows",
                "SaveSubDirectory",
                "ListSubDirectories",
                "Expire",
                "Fill",
                "Trim",
                "KeepAhead",
                "Verify",
                "AddScore",
                "AddEntries",
                "SaveRecord",
                "DeleteRecord",
                "WriteBatch",
                "GetRank",
                "GetRankAndEntry",
                "AroundMe",
                "Top",
                "Count",
                "ScoreForRank",
                "RankForScore",
                "Scan",
            ]
        )
    )
    if rpc == "CreateIndex":
        options = pb.IndexOptions(
            aggregation=draw(ENUMS),
            hash_function=draw(ENUMS),
            count_duplicates=draw(st.booleans()),
            group_size=draw(st.one_of(st.integers(0, 9), UINT32)),
            context_size=draw(st.one_of(st.integers(0, 9), UINT32)),
            high_score_first=draw(st.booleans()),
        )
        return rpc, pb.CreateIndexRequest(
            name=name, options=options, reference_layout=draw(st.booleans()), maintenance=draw(policies)
        )
    if rpc == "SetMaintenancePolicy":
        return rpc, pb.SetMaintenancePolicyRequest(index=name, maintenance=draw(policies))
    if rpc == "UpdateWindows":
        request = pb.UpdateWindowsRequest(
            index=name,
            update_timestamp=draw(SINT64),
            high_score_first=draw(st.booleans()),
            all_time=draw(st.booleans()),
            specs=draw(
                st.lists(
                    st.builds(
                        lambda t, b, i, d, c: pb.WindowSpec(type=t, base=b, increment=i, duration=d, count=c),
                        st.one_of(st.integers(0, 3), UINT32),
                        SINT64,
                        st.one_of(st.integers(-10, 3000), SINT64),
                        st.one_of(st.integers(-10, 3000), SINT64),
                        st.one_of(st.integers(0, 4), st.sampled_from([2500, 2501, (1 << 32) - 1])),
                    ),
                    max_size=2,
                )
            ),
            windows=draw(
                st.lists(
                    st.builds(lambda t, s, e: pb.ExplicitWindow(type=t, start=s, end=e), UINT32, SINT64, SINT64),
                    max_size=2,
                )
            ),
            nlevels=draw(st.one_of(st.integers(-1, 10), st.sampled_from([1 << 30, -(1 << 31)]))),
            rebuild=draw(ENUMS),
        )
        delete_before = draw(st.one_of(st.none(), SINT64))
        if delete_before is not None:
            request.delete_before = delete_before
        return rpc, request
    if rpc in ("ListWindows", "ListSubDirectories"):
        return rpc, getattr(pb, f"{rpc}Request")(index=name)
    if rpc == "SaveSubDirectory":
        return rpc, pb.SaveSubDirectoryRequest(index=name, group=draw(group), high_score_first=draw(st.booleans()))
    if rpc in ("Expire", "Trim"):
        return rpc, getattr(pb, f"{rpc}Request")(index=name, before=draw(SINT64))
    if rpc == "Fill":
        return rpc, pb.FillRequest(index=name, max_records=draw(UINT32), max_batches=draw(st.integers(0, 3)))
    if rpc == "KeepAhead":
        return rpc, pb.KeepAheadRequest(index=name, now=draw(SINT64))
    if rpc == "Verify":
        return rpc, pb.VerifyRequest(index=name, max_problems=draw(UINT32))
    if rpc == "AddScore":
        entries = draw(pb_entries(group_size, context_size))
        request = pb.AddScoreRequest(index=name, pk=draw(pk))
        if entries:
            request.entry.CopyFrom(entries[0])
        return rpc, request
    if rpc in ("AddEntries", "SaveRecord"):
        entries = draw(pb_entries(group_size, context_size))
        return rpc, getattr(pb, f"{rpc}Request")(index=name, pk=draw(pk), entries=entries)
    if rpc == "DeleteRecord":
        return rpc, pb.DeleteRecordRequest(index=name, pk=draw(pk))
    if rpc == "WriteBatch":
        records = draw(
            st.lists(
                st.builds(lambda p, e: pb.RecordEntries(pk=p, entries=e), pk, pb_entries(group_size, context_size)),
                max_size=3,
            )
        )
        return rpc, pb.WriteBatchRequest(index=name, records=records, replace=draw(st.booleans()))
    if rpc in ("GetRank", "GetRankAndEntry"):
        return rpc, pb.RankRequest(
            index=name, pk=draw(pk), window=draw(selector()), group=draw(group), mode=draw(ENUMS)
        )
    if rpc == "AroundMe":
        return rpc, pb.AroundMeRequest(
            index=name,
            pk=draw(pk),
            window=draw(selector()),
            group=draw(group),
            mode=draw(ENUMS),
            above=draw(UINT32),
            below=draw(UINT32),
            if_absent=draw(ENUMS),
        )
    if rpc == "Top":
        return rpc, pb.TopRequest(
            index=name, window=draw(selector()), group=draw(group), mode=draw(ENUMS), n=draw(UINT32)
        )
    if rpc == "Count":
        return rpc, pb.CountRequest(index=name, window=draw(selector()), group=draw(group))
    if rpc == "ScoreForRank":
        rank = draw(st.one_of(st.integers(0, 10), st.sampled_from([(1 << 63) - 1, 1 << 63, (1 << 64) - 1])))
        return rpc, pb.ScoreForRankRequest(index=name, window=draw(selector()), group=draw(group), rank=rank)
    if rpc == "RankForScore":
        score = draw(pb_score)
        return rpc, pb.RankForScoreRequest(index=name, window=draw(selector()), group=draw(group), score=score)
    request = pb.ScanRequest(
        index=name,
        type=draw(ENUMS),
        window=draw(selector()),
        group=draw(group),
        low_exclusive=draw(st.booleans()),
        high_exclusive=draw(st.booleans()),
        reverse=draw(st.booleans()),
        limit=draw(UINT32),
        continuation=draw(st.one_of(st.just(b""), st.sampled_from(tokens), st.binary(max_size=40))),
        mode=draw(ENUMS),
    )
    for bound in ("low", "high"):
        score = draw(pb_score)
        if score is not None:
            getattr(request, bound).CopyFrom(score)
    return "Scan", request


WELL_FORMED_RPCS = [
    *("AddScore", "AddEntries", "SaveRecord", "DeleteRecord", "WriteBatch", "Expire", "Trim", "Verify"),
    *("GetRank", "GetRankAndEntry", "AroundMe", "Top", "Count", "ScoreForRank", "RankForScore", "Scan"),
]


def draw_well_formed_request(draw: Callable, tokens: list[bytes], lb: LeaderboardClient) -> tuple[str, Any]:
    """A request of the index's RPCs whose fields have the right types and ranges, on a window the
    index has (windows left filling are filled first): it reaches the service's and the index's
    deep paths, where :func:`draw_request`'s junk mostly stops at the first check."""
    name = draw(st.sampled_from(["best", "sum"]))
    size = {"best": 0, "sum": 1}[name]
    item = st.one_of(
        st.integers(-1000, 1000).map(lambda v: pb.Item(int=v)),
        st.text(max_size=8).map(lambda v: pb.Item(string=v)),
        st.binary(max_size=8).map(lambda v: pb.Item(bytes=v)),
        st.floats(allow_nan=False, allow_infinity=False).map(lambda v: pb.Item(double=v)),
        st.booleans().map(lambda v: pb.Item(bool=v)),
        st.just(pb.Item(null=True)),
    )
    pk = st.one_of(st.sampled_from([[pb.Item(string=c)] for c in "abcde"]), st.lists(item, min_size=1, max_size=3))
    group = st.one_of(st.just([pb.Item(string="g")] * size), st.lists(item, min_size=size, max_size=size))
    score = st.integers(-100, 100).map(lambda v: pb.Score(int=v))
    times, counts = st.integers(0, 12_000), st.integers(0, 20)
    entries = st.lists(
        st.builds(
            lambda s, t, c, g: pb.Entry(score=s, timestamp=t, context=c, group=g),
            score,
            times,
            st.lists(item, min_size=size, max_size=size),
            group,
        ),
        max_size=3,
    )
    lb.fill(name)
    known = [w for w in lb.list_windows(name).windows if not w.filling]
    pick = draw(st.integers(-1, 40))
    window = (
        pb.WindowSelector(type=known[pick % len(known)].type, timestamp=known[pick % len(known)].start)
        if known and pick >= 0
        else pb.WindowSelector(type=0)
    )
    mode = draw(st.sampled_from([pb.ORDINAL, pb.COMPETITION]))
    rpc = draw(st.sampled_from(WELL_FORMED_RPCS))
    if rpc == "AddScore":
        return rpc, pb.AddScoreRequest(index=name, pk=draw(pk), entry=draw(entries.filter(bool))[0])
    if rpc in ("AddEntries", "SaveRecord"):
        return rpc, getattr(pb, f"{rpc}Request")(index=name, pk=draw(pk), entries=draw(entries))
    if rpc == "DeleteRecord":
        return rpc, pb.DeleteRecordRequest(index=name, pk=draw(pk))
    if rpc == "WriteBatch":
        records = draw(st.lists(st.builds(lambda p, e: pb.RecordEntries(pk=p, entries=e), pk, entries), max_size=3))
        return rpc, pb.WriteBatchRequest(index=name, records=records, replace=draw(st.booleans()))
    if rpc in ("Expire", "Trim"):
        return rpc, getattr(pb, f"{rpc}Request")(index=name, before=draw(times))
    if rpc == "Verify":
        return rpc, pb.VerifyRequest(index=name)
    where = {"index": name, "window": window, "group": draw(group)}
    if rpc in ("GetRank", "GetRankAndEntry"):
        return rpc, pb.RankRequest(pk=draw(pk), mode=mode, **where)
    if rpc == "AroundMe":
        above, below, if_absent = draw(counts), draw(counts), draw(st.sampled_from([pb.EMPTY, pb.TOP, pb.BOTTOM]))
        return rpc, pb.AroundMeRequest(pk=draw(pk), mode=mode, above=above, below=below, if_absent=if_absent, **where)
    if rpc == "Top":
        return rpc, pb.TopRequest(n=draw(counts), mode=mode, **where)
    if rpc == "Count":
        return rpc, pb.CountRequest(**where)
    if rpc == "ScoreForRank":
        return rpc, pb.ScoreForRankRequest(rank=draw(counts), **where)
    if rpc == "RankForScore":
        return rpc, pb.RankForScoreRequest(score=draw(score), **where)
    scan_type = draw(st.sampled_from([pb.BY_RANK, pb.BY_VALUE, pb.BY_TIME_WINDOW]))
    if scan_type != pb.BY_TIME_WINDOW:
        where["window"] = pb.WindowSelector(type=0)
    elif not where["window"].HasField("timestamp"):
        where["window"] = pb.WindowSelector(type=0, timestamp=0)
    request = pb.ScanRequest(type=scan_type, reverse=draw(st.booleans()), limit=draw(counts), mode=mode, **where)
    request.continuation = draw(st.one_of(st.just(b""), st.just(b""), st.sampled_from(tokens)))
    for bound in ("low", "high"):
        value = draw(st.one_of(st.none(), st.integers(0, 20) if scan_type != pb.BY_VALUE else st.integers(-100, 100)))
        if value is not None:
            getattr(request, bound).CopyFrom(pb.Score(int=value))
    return rpc, request


GRPC_ALLOWED = {Code.INVALID_ARGUMENT, Code.NOT_FOUND, Code.FAILED_PRECONDITION}


def populate(lb: LeaderboardClient) -> list[bytes]:
    """Indexes "best" (BEST, high score first) and "sum" (SUM, a group and a context element),
    with data and windows; returns continuations of each (foreign to the other)."""
    lb.create_index("best", high_score_first=True)
    lb.create_index("sum", aggregation="SUM", group_size=1, context_size=1)
    tokens = []
    for name, hsf, group, context in (("best", True, (), ()), ("sum", False, ("g",), ("c",))):
        lb.update_windows(name, specs=[(1, 0, 1000, 1000, 12)], high_score_first=hsf)
        for i, pk in enumerate("abcd"):
            lb.add_score(name, (pk,), 10 * i, 500 + i, context=context, group=group)
        for scan_type in (pb.BY_RANK, pb.BY_VALUE):
            page = lb.stub.Scan(
                pb.ScanRequest(index=name, type=scan_type, limit=1, group=[pb.Item(string=g) for g in group])
            )
            assert page.continuation
            tokens.append(page.continuation)
    return tokens


@pytest.mark.slow
def test_grpc_generated_bad_requests(server: Server, no_unexpected_server_errors: None) -> None:
    with LeaderboardClient(server.address, timeout=30) as lb:
        tokens = populate(lb)
        tally: collections.Counter[str] = collections.Counter()

        @settings(max_examples=GRPC_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
        @given(st.data())
        def run(data: st.DataObject) -> None:
            for _ in range(data.draw(st.integers(1, 3))):
                if data.draw(st.booleans()):
                    rpc, request = draw_request(data.draw, tokens)
                else:
                    rpc, request = draw_well_formed_request(data.draw, tokens, lb)
                before = snapshot(server.db)
                tally["inputs"] += 1
                try:
                    getattr(lb.stub, rpc)(request, timeout=30)
                except grpc.RpcError as exc:
                    code = exc.code()
                    allowed = GRPC_ALLOWED | ({Code.ALREADY_EXISTS} if rpc == "CreateIndex" else set())
                    assert code in allowed, f"{rpc} answered {code.name}: {exc.details()}\n{request}"
                    assert exc.details(), f"{rpc}: {code.name} without a message"
                    assert snapshot(server.db) == before, f"{rpc} was refused ({exc.details()}) but changed the store"
                    tally[f"refused {code.name}"] += 1
                else:
                    tally["succeeded"] += 1
                    tally[f"succeeded {rpc}"] += 1

        run()
        # The server is alive and every index is still consistent.
        names = [info.name for info in lb.list_indexes()]
        assert {"best", "sum"} <= set(names)
        for name in names:
            assert lb.verify(name) == [], name
    print(f"\ngRPC: {dict(tally)}")
    assert tally["refused INVALID_ARGUMENT"] > 0 and tally["refused NOT_FOUND"] > 0
    reads = ("GetRank", "GetRankAndEntry", "AroundMe", "Top", "Count", "ScoreForRank", "RankForScore", "Scan")
    assert sum(tally[f"succeeded {rpc}"] for rpc in reads) >= 30, tally  # about two hundred in a run


# -- HTTP: the JSON RPCs and the REST routes --------------------------------------------------------------

# Query parameter values and path parts: valid ones, near misses and junk.
HTTP_TEXT = st.one_of(
    st.sampled_from(["0", "1", "2", "3", "7", "-1", "4294967296", "99999999999999999999", "1e3", "1.5", "NaN", ""]),
    st.sampled_from(["now", "latest", "500", "ORDINAL", "COMPETITION", "DENSE", "TOP", "BOTTOM", "EMPTY", "0.2"]),
    st.sampled_from(['["g"]', '["eu", 1]', "[1,", "[[1]]", '[{"int": "99999999999999999999"}]', '[{"base64": "!"}]']),
    st.sampled_from(['[{"int": [1]}]', '[{"x": 1}]', "[NaN]", '["\\ud800"]', "[1e999]", "[null, true, 1.5]"]),
    st.integers(INT64_MIN - 5, INT64_MAX + 5).map(str),
    st.text(max_size=12),
)
REST_GETS = [
    ("/v1/indexes/{index}/windows/{type}/top", ["at", "group", "mode", "n"]),
    ("/v1/indexes/{index}/windows/{type}/count", ["at", "group"]),
    ("/v1/indexes/{index}/windows/{type}/records/{pk}/rank", ["at", "group", "mode"]),
    ("/v1/indexes/{index}/windows/{type}/records/{pk}/around", ["at", "group", "mode", "above", "below", "if_absent"]),
    ("/v1/indexes/{index}/windows", []),
]
json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(INT64_MIN - 5, INT64_MAX + 5),
        st.sampled_from([1 << 70, -(1 << 70)]),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=8),
        st.sampled_from(["\ud800", "AAE=", "!!"]),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=8,
)
score_bodies = st.one_of(
    st.fixed_dictionaries(
        {"pk": st.one_of(st.just("a"), json_values), "score": json_values},
        optional={"timestamp": json_values, "group": json_values, "context": json_values, "when": json_values},
    ),
    json_values,
)
HTTP_ALLOWED = {400, 404, 409, 412}


def draw_http_request(draw: Callable, tokens: list[bytes]) -> tuple[str, str, dict[str, str], bytes | None]:
    """A random HTTP request: (method, path, query, body) for a JSON RPC or a REST route."""
    kind = draw(st.sampled_from(["rpc", "rpc-junk", "rest", "score"]))
    if kind in ("rpc", "rpc-junk"):
        rpc, request = draw_request(draw, tokens)
        if kind == "rpc":
            body = json_format.MessageToJson(request).encode()
        else:  # the RPC's fields, with values of any JSON type
            fields = [f.name for f in request.DESCRIPTOR.fields]
            junk = draw(st.dictionaries(st.sampled_from(fields), json_values, max_size=3))
            body = json.dumps({**json_format.MessageToDict(request, preserving_proto_field_name=True), **junk}).encode()
        return "POST", f"/v1/{rpc}", {}, body
    # A path segment is never empty and holds no "/" (either way no route matches: a plain 404).
    segment = HTTP_TEXT.filter(lambda text: text and "/" not in text)
    index = urllib.parse.quote(draw(NAMES.filter(bool)), safe="")
    if kind == "score":
        body = json.dumps(draw(score_bodies)).encode()
        return "POST", f"/v1/indexes/{index}/scores", {}, body
    template, params = draw(st.sampled_from(REST_GETS))
    pk = draw(st.one_of(st.sampled_from(["a", "b", "[1]", '["a"]']), segment))
    path = template.format(
        index=index, type=urllib.parse.quote(draw(segment), safe=""), pk=urllib.parse.quote(pk, safe="")
    )
    names = draw(st.lists(st.sampled_from([*params, "colour"]), unique=True, max_size=4))
    return "GET", path, {name: draw(HTTP_TEXT) for name in names}, None


@pytest.mark.slow
def test_http_generated_bad_requests(server: Server, no_unexpected_server_errors: None) -> None:
    """Every answer is 200 or a refusal with the RPC's code and a message (never a 5xx), and a
    refused request leaves the store as it was."""
    http = HttpServer(server, "127.0.0.1:0").start()
    with LeaderboardClient(server.address, timeout=30) as lb, httpx.Client(base_url=http.url, timeout=30) as web:
        tokens = populate(lb)
        tally: collections.Counter[str] = collections.Counter()

        @settings(max_examples=HTTP_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
        @given(st.data())
        def run(data: st.DataObject) -> None:
            method, path, query, body = draw_http_request(data.draw, tokens)
            before = snapshot(server.db)
            # JSON bodies typed as JSON (as every client sends them): an untyped one is refused (415) first
            headers = {"Content-Type": "application/json"} if body is not None else {}
            response = web.request(method, path, params=query, content=body, headers=headers)
            tally["inputs"] += 1
            if response.status_code == 200:
                tally["succeeded"] += 1
                return
            where = f"{method} {path} {query} {body[:300] if body else b''!r}"
            assert response.status_code in HTTP_ALLOWED, f"{response.status_code} {response.text[:300]}: {where}"
            answer = response.json()
            assert answer["code"] and answer["message"], f"{answer}: {where}"
            assert snapshot(server.db) == before, f"refused ({answer['message']}) but changed the store: {where}"
            tally[f"refused {response.status_code}"] += 1

        run()
        assert lb.verify("best") == [] and lb.verify("sum") == []
    print(f"\nHTTP: {dict(tally)}")
    assert tally["succeeded"] > 0 and tally["refused 400"] > 0 and tally["refused 404"] > 0


# -- internal errors are not refusals ------------------------------------------------------------------


def test_an_internal_error_is_answered_internal_and_logged_never_blamed_on_the_caller(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    """A TypeError inside the index (a defect: a comparison with None, say) answers INTERNAL over
    gRPC and 500 over HTTP, with one log record each; only the project's own errors are refusals."""
    for defect in (TypeError(), ValueError(), OverflowError(), KeyError(), AttributeError()):
        assert status_of(defect) is None, defect
    assert status_of(InvalidArgument("score must be...")) is Code.INVALID_ARGUMENT
    caplog.set_level(logging.ERROR, logger="fdb_leaderboard.service")
    http = HttpServer(server, "127.0.0.1:0").start()
    with LeaderboardClient(server.address, timeout=30) as lb, httpx.Client(base_url=http.url, timeout=30) as web:
        populate(lb)
        index = server.catalog.get("best")

        def broken(*args: Any, **kwargs: Any) -> None:
            raise TypeError("'<' not supported between instances of 'int' and 'NoneType'")

        index.top = broken  # type: ignore[method-assign]
        with pytest.raises(grpc.RpcError) as caught:
            lb.stub.Top(pb.TopRequest(index="best", n=3), timeout=30)
        assert caught.value.code() is Code.INTERNAL
        assert caught.value.details() == "Top failed unexpectedly; see the server log"
        response = web.get("/v1/indexes/best/windows/0/top", params={"n": 3})
        assert response.status_code == 500 and response.json()["code"] == "INTERNAL", response.text
        response = web.post("/v1/Top", json={"index": "best", "n": 3})
        assert response.status_code == 500 and response.json()["code"] == "INTERNAL", response.text
    logged = [r for r in caplog.records if r.name == "fdb_leaderboard.service" and r.levelno >= logging.ERROR]
    assert [r.getMessage() for r in logged] == ["Top failed"] * 3
    assert all(r.exc_info and r.exc_info[0] is TypeError for r in logged)


# -- each category, with its exact error -------------------------------------------------------------


@pytest.fixture
def best(tmp_path: Path) -> Iterator[LeaderboardIndex]:
    db = open_database(f"lmdb:{tmp_path / 'store'}?durable=false")
    index = LeaderboardIndex.create(db, b"\x15\x10", IndexSettings(high_score_first=True))
    index.update_windows(WindowUpdate(high_score_first=True, specs=[WindowSpec(1, 0, 1000, 1000, 12)]))
    for i, pk in enumerate("abcd"):
        index.add_score((pk,), 10 * i, 500 + i)
    yield index
    db.close()


def refused(index: LeaderboardIndex, error: type[BaseException], needle: str, call: Callable[[], Any]) -> None:
    before = snapshot(index.db)
    with pytest.raises(error) as caught:
        call()
    assert needle in str(caught.value), str(caught.value)
    assert snapshot(index.db) == before


def test_each_kind_of_bad_python_input_gets_its_error(best: LeaderboardIndex) -> None:
    ix = best
    refused(ix, InvalidArgument, "not finite", lambda: ix.add_score(("a",), math.nan, 1))
    refused(ix, InvalidArgument, "not finite", lambda: ix.add_score(("a",), -math.inf, 1))
    refused(ix, InvalidArgument, "int64", lambda: ix.add_score(("a",), INT64_MAX + 1, 1))
    refused(ix, InvalidArgument, "int64", lambda: ix.add_score(("a",), 1, INT64_MIN - 1))
    refused(ix, InvalidArgument, "timestamp must be an integer", lambda: ix.add_score(("a",), 1, 1.0))
    refused(ix, InvalidArgument, "score must be", lambda: ix.add_score(("a",), "1", 1))
    refused(ix, InvalidArgument, "must not be empty", lambda: ix.add_score((), 1, 1))
    refused(ix, InvalidArgument, "at most 200", lambda: ix.add_score(("x" * 300,), 1, 1))
    refused(ix, InvalidArgument, "at most 200", lambda: ix.add_score(tuple(range(150)), 1, 1))
    refused(ix, InvalidArgument, "NaN", lambda: ix.add_score(("a", math.nan), 1, 1))
    refused(ix, InvalidArgument, "primary key must be a tuple", lambda: ix.add_score(None, 1, 1))
    refused(ix, InvalidArgument, "holds a dict", lambda: ix.add_score(({},), 1, 1))
    refused(ix, InvalidArgument, "context", lambda: ix.add_score(("a",), 1, 1, context=("c",)))
    refused(
        ix,
        InvalidArgument,
        "end after it starts",
        lambda: ix.update_windows(WindowUpdate(high_score_first=True, windows=[(1, 10, 10)])),
    )
    refused(
        ix,
        InvalidArgument,
        "end after it starts",
        lambda: ix.update_windows(WindowUpdate(high_score_first=True, windows=[(1, 10, 5)])),
    )
    refused(
        ix,
        InvalidArgument,
        "4294967295",
        lambda: ix.update_windows(WindowUpdate(high_score_first=True, windows=[(1 << 32, 0, 5)])),
    )
    refused(
        ix,
        InvalidArgument,
        "between 1 and",
        lambda: ix.update_windows(WindowUpdate(high_score_first=True, windows=[(0, 0, 5)])),
    )
    refused(
        ix,
        InvalidArgument,
        "int64",
        lambda: ix.update_windows(WindowUpdate(high_score_first=True, windows=[(1, 0, INT64_MAX + 1)])),
    )
    refused(
        ix,
        InvalidArgument,
        "window end",
        lambda: ix.update_windows(WindowUpdate(high_score_first=True, specs=[WindowSpec(1, INT64_MAX - 10, 5, 5, 3)])),
    )
    refused(
        ix,
        InvalidArgument,
        "at most 2500",
        lambda: ix.update_windows(WindowUpdate(high_score_first=True, specs=[WindowSpec(1, 0, 1, 1, 2501)])),
    )
    refused(
        ix,
        FailedPrecondition,
        "rebuild=NEVER",
        lambda: ix.update_windows(WindowUpdate(high_score_first=True, windows=[(2, 0, 600)], rebuild=Rebuild.NEVER)),
    )
    # Overlapping windows of one type are allowed: reads use the oldest one containing the timestamp.
    ix.update_windows(
        WindowUpdate(high_score_first=True, specs=[WindowSpec(3, 0, 100, 1000, 3), WindowSpec(3, 50, 100, 10, 2)])
    )
    ix.fill()
    assert ix.check() == []
    assert [e.pk for e in ix.top(10, 3, 500)] == [("d",), ("c",), ("b",), ("a",)]

    for window_type in (1 << 32, -1):
        refused(ix, InvalidArgument, "window type must be between", lambda t=window_type: ix.top(3, t, 500))
    refused(ix, NotFound, "no window of type 7", lambda: ix.top(3, 7, 500))
    refused(ix, NotFound, "no window of type 1 contains timestamp", lambda: ix.top(3, 1, INT64_MIN))
    refused(ix, NotFound, "no window of type 1 contains timestamp", lambda: ix.top(3, 1, 10**15))
    refused(ix, NotFound, "no window of type 1 contains now", lambda: ix.top(3, 1))  # no time: now
    refused(ix, InvalidArgument, "must not be negative", lambda: ix.top(-1))

    other_db_index = LeaderboardIndex.create(ix.db, b"\x15\x11", IndexSettings(high_score_first=True))
    other_db_index.update_windows(WindowUpdate(high_score_first=True))
    for pk in "xyz":
        other_db_index.add_score((pk,), 1, 1)
    foreign = other_db_index.scan(ScanType.BY_RANK, limit=1).continuation
    own_value = ix.scan(ScanType.BY_VALUE, limit=1).continuation
    refused(
        ix,
        InvalidArgument,
        "belongs to another index",
        lambda: ix.scan(ScanType.BY_RANK, limit=1, continuation=foreign),
    )
    refused(
        ix,
        InvalidArgument,
        "another window, group or kind",
        lambda: ix.scan(ScanType.BY_RANK, limit=1, continuation=own_value),
    )
    refused(
        ix,
        InvalidArgument,
        "not one this server handed out",
        lambda: ix.scan(ScanType.BY_RANK, limit=1, continuation=b"\xff\x00garbage"),
    )
    refused(ix, InvalidArgument, "must be bytes", lambda: ix.scan(ScanType.BY_RANK, limit=1, continuation="token"))

    # Scores at the int64 limits are valid (high-score-first stores -INT64_MIN = 2**63).
    ix.add_score(("lowest",), INT64_MIN, 700)
    ix.add_score(("highest",), INT64_MAX, 700)
    assert ix.rank(("highest",)) == 0 and ix.rank(("lowest",)) == ix.count() - 1
    assert ix.score_for_rank(ix.count() - 1) == INT64_MIN
    # Timestamps far in the past are valid: only the all-time window holds them.
    ix.add_score(("ancient",), 5, INT64_MIN)
    assert ix.rank_and_entry(("ancient",)).timestamp == INT64_MIN
    assert ix.check() == []


def test_each_kind_of_bad_grpc_request_gets_its_code(server: Server, no_unexpected_server_errors: None) -> None:
    with LeaderboardClient(server.address, timeout=30) as lb:
        populate(lb)
        stub = lb.stub
        cases = [
            (
                Code.INVALID_ARGUMENT,
                "AddScore",
                pb.AddScoreRequest(
                    index="best", pk=[pb.Item(string="a")], entry=pb.Entry(score=pb.Score(double=math.nan), timestamp=1)
                ),
            ),
            (
                Code.INVALID_ARGUMENT,
                "AddScore",
                pb.AddScoreRequest(index="best", pk=[pb.Item()], entry=pb.Entry(score=pb.Score(int=1), timestamp=1)),
            ),
            (
                Code.INVALID_ARGUMENT,
                "AddScore",
                pb.AddScoreRequest(index="best", pk=[pb.Item(string="a")], entry=pb.Entry(timestamp=1)),
            ),
            (
                Code.INVALID_ARGUMENT,
                "AddScore",
                pb.AddScoreRequest(
                    index="best", pk=[pb.Item(string="x" * 300)], entry=pb.Entry(score=pb.Score(int=1), timestamp=1)
                ),
            ),
            (
                Code.INVALID_ARGUMENT,
                "AddScore",
                pb.AddScoreRequest(
                    index="sum",
                    pk=[pb.Item(string="a")],
                    entry=pb.Entry(
                        score=pb.Score(double=1.5),
                        timestamp=1,
                        group=[pb.Item(string="g")],
                        context=[pb.Item(string="c")],
                    ),
                ),
            ),
            (
                Code.INVALID_ARGUMENT,
                "UpdateWindows",
                pb.UpdateWindowsRequest(
                    index="best", high_score_first=True, windows=[pb.ExplicitWindow(type=1, start=5, end=5)]
                ),
            ),
            (
                Code.INVALID_ARGUMENT,
                "UpdateWindows",
                pb.UpdateWindowsRequest(index="best", high_score_first=True, rebuild=9),
            ),
            (Code.INVALID_ARGUMENT, "Top", pb.TopRequest(index="best", n=3, mode=5)),
            (
                Code.INVALID_ARGUMENT,
                "AroundMe",
                pb.AroundMeRequest(index="best", pk=[pb.Item(string="a")], if_absent=9),
            ),
            (Code.INVALID_ARGUMENT, "Scan", pb.ScanRequest(index="best", type=9)),
            (
                Code.INVALID_ARGUMENT,
                "Scan",
                pb.ScanRequest(index="best", type=pb.BY_RANK, limit=1, continuation=b"\x01random"),
            ),
            (
                Code.NOT_FOUND,
                "Top",
                pb.TopRequest(index="best", n=3, window=pb.WindowSelector(type=(1 << 32) - 1, timestamp=1)),
            ),
            (Code.NOT_FOUND, "Top", pb.TopRequest(index="missing", n=3)),
            (Code.INVALID_ARGUMENT, "Top", pb.TopRequest(index="bad name!", n=3)),
            (
                Code.INVALID_ARGUMENT,
                "SetMaintenancePolicy",
                pb.SetMaintenancePolicyRequest(
                    index="best",
                    maintenance=pb.MaintenancePolicy(
                        windows=[pb.RegularWindows(type=1, base=0, increment=1, duration=1)], horizon=INT64_MAX
                    ),
                ),
            ),
        ]
        for code, rpc, request in cases:
            before = snapshot(server.db)
            with pytest.raises(grpc.RpcError) as caught:
                getattr(stub, rpc)(request, timeout=30)
            assert caught.value.code() == code, (rpc, request, caught.value.details())
            assert snapshot(server.db) == before
        # The continuation of one index is refused by another.
        token = stub.Scan(
            pb.ScanRequest(index="sum", type=pb.BY_RANK, limit=1, group=[pb.Item(string="g")])
        ).continuation
        with pytest.raises(grpc.RpcError) as caught:
            stub.Scan(pb.ScanRequest(index="best", type=pb.BY_RANK, limit=1, continuation=token))
        assert caught.value.code() == Code.INVALID_ARGUMENT and "belongs to another index" in caught.value.details()
        assert lb.verify("best") == [] and lb.verify("sum") == []


# -- regressions: bugs the fuzzing found, fixed in the index and its layout ------------------------------------


def test_timestamp_int64_max_is_refused_or_ranked(best: LeaderboardIndex) -> None:
    try:
        best.add_score(("z",), 5, INT64_MAX)
    except InvalidArgument:
        return
    assert best.rank(("z",)) is not None


def test_fill_with_zero_max_records_completes_or_is_refused(best: LeaderboardIndex) -> None:
    best.update_windows(WindowUpdate(high_score_first=True, windows=[(2, 0, 1000)]))  # overlaps data: filling
    try:
        for _ in range(5):
            if best.fill_step(max_records=0).done:
                break
    except InvalidArgument:
        return
    assert best.directory().filling() == []


def test_keep_ahead_with_an_enormous_horizon_is_refused_at_once(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        from fdb_leaderboard.errors import InvalidArgument
        from fdb_leaderboard.index import LeaderboardIndex, IndexSettings
        from fdb_leaderboard.store import open_database
        db = open_database("lmdb:{tmp_path / "ka"}?durable=false")
        index = LeaderboardIndex.create(db, b"\\x15\\x01", IndexSettings())
        try:
            index.keep_ahead(0, [(1, 0, 1, 1)], horizon=2**62)
        except InvalidArgument as exc:
            print("refused:", exc)
        """
    )
    try:  # refused before any window is planned: planning 2**62 of them would never end
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("keep_ahead with a 2**62 horizon still runs after 120 s")
    assert result.stdout.startswith("refused:"), result.stderr


def test_a_record_does_not_own_the_entries_of_a_longer_pk_ending_in_none(best: LeaderboardIndex) -> None:
    best.add_score(("a", None), 70, 400)
    best.save_record(("a",), [Entry(1, 5)])
    best.delete_record(("a",))
    entries = best.read(lambda ops: ops.txn.read_entries(fdb.tuple.pack((("a", None),))))
    assert [(ts, score) for ts, _seq, (_group, score, _context) in entries] == [(400, 70)]
    assert best.check() == []
