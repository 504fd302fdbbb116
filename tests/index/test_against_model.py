"""The index against the brute-force model of tests/support/model.py, driven by random operations.

A hypothesis state machine applies the same random writes (add_score, add_entries,
save_record, delete_record, write_batch), window updates (specs, explicit windows,
delete_before, the three rebuild policies, high_score_first flips), expiries, fills in
small resumable steps (from this index object or a newly opened one) interleaved with
writes (some aimed at the record where the fill stopped), trims (some followed by a full
refill, which must rebuild the same results from what the trim kept) and sub-directory
saves, hides and restores of records, score rules (score ranges, submissions per window
and per minute, the clock pinned and ticked) and deletions of a group's data or of every
record (in batches of one to three records) to a real LeaderboardIndex (LMDB, not durable)
and to the model; a refused write must name the model's rule.  After every step it compares
the directory and every read of every readable window and group: count, top,
rank and rank_and_entry of each primary key and of an absent one (the three rank modes: the
indexes keep dense ranks),
around (absent keys with EMPTY/TOP/BOTTOM too), score_for_rank, rank_for_score, and the
BY_VALUE, BY_RANK and BY_TIME_WINDOW scans (rank scans also reversed), unpaged and paged
until exhausted.  Every
bound combination is scanned unpaged at every step; the paged repeats, and the around()
spans, rotate with the step number.  Reads resolving to a window still being filled must
raise WindowNotReady, reads of no window WindowNotFound.  The checker (``verify``) finds
nothing after every hide, restore and deletion and every fourth step.  At the end of each
example the fill is completed, everything is compared once more, and the checker runs.

Small domains keep ties frequent: scores 0..5, timestamps 0..30, six primary keys (one a
two-element key whose packed bytes extend another's), windows of type 1 (width 10) and
type 2 (width 20, some overlapping).  One run per aggregation x high_score_first x
grouped (group_size 1 with two groups and a context element) or not, and runs of indexes
ranking by three columns (HIGH, LOW, HIGH: drawn so that each column often ties), BEST and
LATEST (their direction is fixed: no flips, no sub-directories).
"""

from __future__ import annotations

import functools
import itertools
import random
import uuid
import warnings
from collections.abc import Callable
from typing import Any, ClassVar

import fdb.tuple
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from fdb_leaderboard.errors import (
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    NoWindowsWarning,
    RuleRefusal,
    ScoreOutOfRange,
    SubmissionLimited,
    WindowNotFound,
    WindowNotReady,
)
from fdb_leaderboard.index import Entry, IfAbsent, IndexSettings, LeaderboardIndex, RankMode, ScanType, ScoreRules
from fdb_leaderboard.index.aggregation import AGGREGATIONS, Value
from fdb_leaderboard.index.build import HOLD_SECONDS, BuildLost, WindowsBuild
from fdb_leaderboard.index.directory import INT64_MAX, INT64_MIN, Rebuild, WindowSpec, WindowUpdate
from fdb_leaderboard.index.loading import BulkLoad
from fdb_leaderboard.store import Database, open_database
from tests.support.model import (
    ALL_TIME,
    Listed,
    Model,
    ModelInvalid,
    ModelNoRecord,
    ModelNotFound,
    ModelNotReady,
    ModelPrecondition,
    ModelRefused,
    MRules,
)

PKS = [("a",), ("b",), ("b", 1), ("c",), ("d",), ("e",)]
ABSENT_PK = ("zz",)
MODES = {"ORDINAL": RankMode.ORDINAL, "COMPETITION": RankMode.COMPETITION, "DENSE": RankMode.DENSE}

pks = st.sampled_from(PKS)
# (group index, score, timestamp, context item): mapped to the machine's groups and contexts
raw_entries = st.tuples(st.integers(0, 1), st.integers(0, 5), st.integers(0, 30), st.integers(0, 1))
specs = st.one_of(
    st.tuples(st.just(1), st.sampled_from([0, 10, 20, 30]), st.just(10), st.just(10), st.integers(1, 3)),
    st.tuples(st.just(2), st.sampled_from([0, 10, 20]), st.sampled_from([10, 20]), st.just(20), st.integers(1, 2)),
)
explicit_windows = st.sampled_from(
    [
        (1, 5, 15),
        (2, 0, 20),
        (2, 25, 45),
        (1, 30, 40),
        (2, -20, 0),
        (1, 0, 10),
        (1, 12, 13),
        (1, 0, 20),
        (2, 0, 30),
        (1, 10, 15),
    ]
)
rebuilds = st.sampled_from(["IF_OVERLAPPING_CHANGED", "IF_OVERLAPPING_CHANGED", "NEVER", "ALWAYS"])

# BY_VALUE bounds: (low, high, low_inclusive, high_inclusive)
VALUE_BOUNDS = [
    (None, None, True, True),
    (1, 4, True, True),
    (1, 4, False, False),
    (2, 2, True, True),
    (2, 2, False, True),
    (None, 3, True, False),
    (3, None, False, True),
    (0, 5, False, True),
]
# BY_RANK / BY_TIME_WINDOW bounds (ranks); "last" stands for the board's last position
RANK_BOUNDS = [
    (None, None, True, True),
    (0, 2, True, True),
    (1, 3, False, False),
    (2, 2, True, True),
    ("last", "last", True, True),
    (1, None, True, True),
    (None, 1, True, False),
    (3, 10, True, True),
    (0, 0, False, True),
]
AROUND = [(0, 0), (1, 1), (2, 0), (0, 2), (3, 3), (1, 0), (0, 5)]


class _Junk(Exception):
    """A write that raised after writing (``writes_together``)."""


def listed(entry: Any) -> Listed | None:
    if entry is None:
        return None
    return Listed(tuple(entry.pk), entry.score, entry.timestamp, tuple(entry.context), tuple(entry.group), entry.rank)


def expand(spec: tuple[int, int, int, int, int]) -> list[tuple[int, int, int]]:
    window_type, base, increment, duration, count = spec
    return [(window_type, base + i * increment, base + i * increment + duration) for i in range(count)]


class IndexMachine(RuleBasedStateMachine):
    db: ClassVar[Database]
    aggregation: ClassVar[str]
    high_score_first: ClassVar[bool]
    grouped: ClassVar[bool]
    columns: ClassVar[tuple[str, ...]] = ()

    def __init__(self) -> None:
        super().__init__()
        self.groups = [(1,), (2,)] if self.grouped else [()]
        self.prefix = b"\x15\x7e" + uuid.uuid4().bytes[:8].replace(b"\xff", b"\xfe")
        self.settings = IndexSettings(
            aggregation=self.aggregation,
            high_score_first=self.high_score_first,
            group_size=1 if self.grouped else 0,
            context_size=1 if self.grouped else 0,
            dense_ranks=True,
            columns=self.columns,
        )
        # The model starts with no window: so does the index (all_time=False)
        self.index = LeaderboardIndex.create(self.db, self.prefix, self.settings, all_time=False)
        self.model = Model(self.aggregation, self.high_score_first, self.settings.group_size, self.columns)
        self.steps = 0
        self.cursors: list[tuple] = []  # where the last fill step stopped
        self.clock = 1_800_000_000.0  # the index's clock (the minutes of submission limits)
        self.hidden_by: dict[tuple, tuple[str, int, str]] = {}  # who hid a record, when, why
        self.index.clock = lambda: self.clock
        self.build: WindowsBuild | None = None  # a build from sorted data under way
        self.build_reads = False  # whether it reads the records (a fill's) or takes a load's
        self.built: set[tuple[int, int, int]] = set()  # the windows the build still holds

    def teardown(self) -> None:
        try:
            # However the example ended, finishing the fill must give the model's result.
            if self.build is not None:
                self.finish_build()
            self.index.fill(max_records=2)
            self.model.finish_fill()
            self.check_everything()
            assert self.index.check() == []
        finally:
            self.db.run(lambda tr: tr.clear_range_startswith(self.prefix))

    # -- helpers ----------------------------------------------------------------------------

    def entry(self, raw: tuple[int, int, int, int]) -> tuple[tuple, int | tuple, int, tuple]:
        group_index, score, ts, context = raw
        group = self.groups[group_index % len(self.groups)]
        return group, self.score(score, (ts + context) % 2), ts, (context,) if self.grouped else ()

    def score(self, score: int, middle: int = 1) -> int | tuple:
        """A drawn score (0..5) as the index takes it: with columns, three of them."""
        return (score // 2, middle, score % 2) if self.columns else score

    def entries(self, raws: list) -> list[tuple]:
        return [self.entry(raw) for raw in raws]

    @staticmethod
    def to_entries(entries: list[tuple]) -> list[Entry]:
        return [Entry(score, ts, context, group) for group, score, ts, context in entries]

    # -- writes -----------------------------------------------------------------------------

    @initialize(
        start=st.sampled_from(["none", "before", "after", "after"]),
        records=st.lists(st.tuples(pks, st.lists(raw_entries, min_size=1, max_size=3)), max_size=6),
        all_time_only=st.booleans(),
    )
    def start(self, start: str, records: list, all_time_only: bool) -> None:
        """Some records, and a directory created before them, after them (so its windows
        must be filled), or not at all (writes are then only stored)."""
        windows = [] if all_time_only else [*expand((1, 0, 10, 10, 3)), *expand((2, 0, 20, 20, 1))]
        hsf = self.model.hsf()
        if start == "before":
            self.index.update_windows(WindowUpdate(high_score_first=hsf, windows=windows, nlevels=3))
            self.model.update_windows(hsf, windows)
        for pk, raws in records:
            entries = self.entries(raws)
            self.warns_when_unranked(entries, functools.partial(self.index.add_entries, pk, self.to_entries(entries)))
            self.model.add(pk, entries)
        if start == "after":
            self.index.update_windows(WindowUpdate(high_score_first=hsf, windows=windows, nlevels=3))
            self.model.update_windows(hsf, windows)

    @rule(pk=pks, raw=raw_entries)
    def add_score(self, pk: tuple, raw: tuple) -> None:
        group, score, ts, context = self.entry(raw)
        entries = [(group, score, ts, context)]
        self.write(pk, entries, False, lambda: self.index.add_score(pk, score, ts, context=context, group=group))

    @rule(pk=pks, raws=st.lists(raw_entries, min_size=1, max_size=3))
    def add_entries(self, pk: tuple, raws: list) -> None:
        entries = self.entries(raws)
        self.write(pk, entries, False, lambda: self.index.add_entries(pk, self.to_entries(entries)))

    @rule(pk=pks, raws=st.lists(raw_entries, max_size=4))
    def save_record(self, pk: tuple, raws: list) -> None:
        entries = self.entries(raws)
        self.write(pk, entries, True, lambda: self.index.save_record(pk, self.to_entries(entries)))

    def write(self, pk: tuple, entries: list, replace: bool, call: Callable[[], int]) -> None:
        """One record's write: refused as the model's rules say, else applied to both."""
        try:
            self.model.check_write(pk, entries, replace, self.clock)
        except ModelRefused as refused:
            self.refused(refused.rule, call)
            return
        self.warns_when_unranked(entries, call)
        if replace:
            self.model.save(pk, entries)
        else:
            self.model.add(pk, entries)

    @staticmethod
    def refused(rule: str, call: Callable[[], object]) -> None:
        kind = ScoreOutOfRange if rule in ("min_score", "max_score") else SubmissionLimited
        with pytest.raises(RuleRefusal) as raised:
            call()
        assert isinstance(raised.value, kind) and raised.value.rule == rule, (raised.value, rule)

    def warns_when_unranked(self, entries: list, write: Callable[[], int]) -> None:
        """Run ``write``: it warns exactly when it stores entries in an index with no window."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            write()
        warned = any(issubclass(w.category, NoWindowsWarning) for w in caught)
        assert warned == (bool(entries) and not self.model.windows), (entries, self.model.windows)

    # -- fair play: score rules, hiding, deleting many records ------------------------------------

    @rule(
        low=st.sampled_from([None, None, 1, 2]),
        high=st.sampled_from([None, None, 4, 5]),
        per_window=st.sampled_from([0, 0, 2, 3, 5]),
        per_minute=st.sampled_from([0, 0, 2, 4]),
    )
    def set_rules(self, low: int | None, high: int | None, per_window: int, per_minute: int) -> None:
        if self.columns:  # a column index takes no score range (tests/index/test_columns.py), its limits do apply
            low = high = None
        kept = self.index.set_score_rules(ScoreRules(low, high, per_window, per_minute))
        assert kept == ScoreRules(low, high, per_window, per_minute) == self.index.score_rules()
        self.model.rules = MRules(low, high, per_window, per_minute)
        if self.model.windows is None:  # the rules live in the directory: it exists from now on
            self.model.windows, self.model.directory_hsf = {}, self.model.hsf()

    @rule(seconds=st.sampled_from([1, 20, 61]))
    def tick(self, seconds: int) -> None:
        self.clock += seconds

    @rule(pk=pks, reason=st.sampled_from(["", "aimbot"]))
    def hide(self, pk: tuple, reason: str) -> None:
        try:
            expected = self.model.hide(pk)
        except ModelNoRecord:
            with pytest.raises(NotFound):
                self.index.hide_record(pk, reason, actor="ops")
            return
        assert self.index.hide_record(pk, reason, actor=f"ops{self.steps}") == expected
        if expected:
            self.hidden_by[pk] = (f"ops{self.steps}", int(self.clock), reason)
        found = self.index.hidden_record(pk)
        assert found is not None and (found.actor, found.hidden_at, found.reason) == self.hidden_by[pk]
        self.check_soon = True

    @precondition(lambda self: self.model.records)
    @rule(which=st.integers(0, 5), reason=st.sampled_from(["", "aimbot"]))
    def hide_or_restore(self, which: int, reason: str) -> None:
        """Hide a record that exists, or restore it if it is hidden (``hide`` and ``restore``
        mostly name absent records, or records in the other state)."""
        ordered = sorted(self.model.records, key=fdb.tuple.pack)
        pk = ordered[which % len(ordered)]
        if pk in self.model.hidden:
            self.restore(pk)
        else:
            self.hide(pk, reason)

    @rule(pk=pks)
    def restore(self, pk: tuple) -> None:
        try:
            expected = self.model.restore(pk)
        except ModelNoRecord:
            with pytest.raises(NotFound):
                self.index.restore_record(pk)
            return
        assert self.index.restore_record(pk) == expected
        assert self.index.hidden_record(pk) is None
        self.check_soon = True

    @rule(group_index=st.integers(0, 1), max_records=st.integers(1, 3))
    def delete_group(self, group_index: int, max_records: int) -> None:
        group = self.groups[group_index % len(self.groups)]
        done = self.index.delete_records(group, max_records=max_records)
        changed, deleted, entries = self.model.delete_group(group)
        assert done.done
        assert (done.records_changed, done.records_deleted, done.entries_deleted) == (changed, deleted, entries)
        self.check_soon = True

    @precondition(lambda self: self.steps % 7 == 3)
    @rule(max_records=st.integers(1, 4))
    def delete_all(self, max_records: int) -> None:
        done = self.index.delete_records(None, max_records=max_records)
        records, entries = self.model.delete_all()
        assert done.done and done.records_deleted == done.records_changed == records
        assert done.entries_deleted == entries
        self.check_soon = True

    @rule(pk=pks)
    def delete_record(self, pk: tuple) -> None:
        assert self.index.delete_record(pk) == self.model.delete(pk)

    @rule(
        batch=st.lists(st.tuples(pks, st.lists(raw_entries, max_size=3)), min_size=1, max_size=3),
        replace=st.booleans(),
    )
    def write_batch(self, batch: list, replace: bool) -> None:
        records = [(pk, self.entries(raws)) for pk, raws in batch]

        def call() -> None:
            self.index.write_batch([(pk, self.to_entries(entries)) for pk, entries in records], replace=replace)

        before = self.model.snapshot()
        for pk, entries in records:  # one after the other: a record may come twice
            try:
                self.model.check_write(pk, entries, replace, self.clock)
            except ModelRefused as refused:
                self.model.rollback(before)
                self.refused(refused.rule, call)
                return
            if replace:
                self.model.save(pk, entries)
            else:
                self.model.add(pk, entries)
        call()

    @rule(
        ops=st.lists(
            st.one_of(
                st.tuples(st.just("add"), pks, raw_entries),
                st.tuples(st.just("save"), pks, st.lists(raw_entries, max_size=3)),
                st.tuples(st.sampled_from(["delete", "hide", "restore", "junk"]), pks),
            ),
            min_size=2,
            max_size=12,
        )
    )
    def writes_together(self, ops: list[tuple]) -> None:
        """Writes the store runs together (``Database.run_together``: on FoundationDB one shared
        transaction, the calls one after another): many records of one window, one record twice,
        entries in several windows, hides, restores and deletes, and a write that raises after
        writing (``junk``: nothing of it may be kept).  Each call's outcome must be the model's
        when applied in the order the store kept them."""
        ran: list[int] = []
        junk_key = self.prefix + b"\xfejunk"

        def junk(tr: Any) -> None:
            tr.set(junk_key, b"x")
            raise _Junk()

        def call(position: int, op: tuple) -> Callable[[], object]:
            kind, pk = op[0], op[1]

            def run() -> object:
                try:
                    if kind == "add":
                        group, score, ts, context = self.entry(op[2])
                        return self.index.add_score(pk, score, ts, context=context, group=group)
                    if kind == "save":
                        return self.index.save_record(pk, self.to_entries(self.entries(op[2])))
                    if kind == "delete":
                        return self.index.delete_record(pk)
                    if kind == "hide":
                        return self.index.hide_record(pk, "", actor=f"ops{self.steps}")
                    if kind == "restore":
                        return self.index.restore_record(pk)
                    return self.index.run(lambda ops: junk(ops.tr))
                finally:
                    ran.append(position)

            return run

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NoWindowsWarning)
            outcomes = self.db.run_together([call(position, op) for position, op in enumerate(ops)])
        # The order the store kept them in: a call run again (its transaction ran again, or it
        # ran alone after it) counts where it last ran.
        order = list(dict.fromkeys(reversed(ran)))[::-1]
        assert sorted(order) == list(range(len(ops)))
        for position in order:
            op, (result, error) = ops[position], outcomes[position]
            kind, pk = op[0], op[1]
            if kind in ("add", "save"):
                entries = [self.entry(op[2])] if kind == "add" else self.entries(op[2])
                try:
                    self.model.check_write(pk, entries, kind == "save", self.clock)
                except ModelRefused as refused:
                    assert isinstance(error, RuleRefusal) and error.rule == refused.rule, (op, error, refused.rule)
                    continue
                assert error is None, (op, error)
                if kind == "add":
                    self.model.add(pk, entries)
                else:
                    self.model.save(pk, entries)
            elif kind == "delete":
                assert (result, error) == (self.model.delete(pk), None), op
            elif kind in ("hide", "restore"):
                try:
                    expected = self.model.hide(pk) if kind == "hide" else self.model.restore(pk)
                except ModelNoRecord:
                    assert isinstance(error, NotFound), (op, error)
                    continue
                assert (result, error) == (expected, None), (op, error)
                if kind == "hide" and expected:
                    self.hidden_by[pk] = (f"ops{self.steps}", int(self.clock), "")
                self.check_soon = True
            else:
                assert isinstance(error, _Junk), (op, error)
        assert self.db.read(lambda tr: tr.get(junk_key)) is None

    # -- windows ----------------------------------------------------------------------------

    @rule(
        spec_list=st.lists(specs, max_size=2),
        explicit=st.lists(explicit_windows, max_size=2),
        all_time=st.sampled_from([True, True, True, False]),
        delete_before=st.sampled_from([None, None, None, 0, 10, 20, 30]),
        rebuild=rebuilds,
        flip=st.sampled_from([False, False, False, False, True]),
        nlevels=st.integers(2, 4),
    )
    def update_windows(
        self,
        spec_list: list,
        explicit: list,
        all_time: bool,
        delete_before: int | None,
        rebuild: str,
        flip: bool,
        nlevels: int,
    ) -> None:
        self.apply_update(spec_list, explicit, all_time, delete_before, rebuild, flip, nlevels)

    @rule(
        spec_list=st.lists(specs, max_size=1),
        explicit=st.lists(explicit_windows, min_size=1, max_size=2),
        rebuild=st.sampled_from(
            ["IF_OVERLAPPING_CHANGED", "IF_OVERLAPPING_CHANGED", "IF_OVERLAPPING_CHANGED", "ALWAYS"]
        ),
    )
    def add_windows(self, spec_list: list, explicit: list, rebuild: str) -> None:
        """Windows added (mostly overlapping stored scores, so they are filled)."""
        self.apply_update(spec_list, explicit, True, None, rebuild, False, 3)

    @rule(flip=st.sampled_from([False, False, True]))
    def rebuild(self, flip: bool) -> None:
        """Refill every window (after a trim too: its kept entries must suffice)."""
        self.apply_update([], [], self.model.windows is None or ALL_TIME in self.model.windows, None, "ALWAYS", flip, 3)

    def apply_update(
        self,
        spec_list: list,
        explicit: list,
        all_time: bool,
        delete_before: int | None,
        rebuild: str,
        flip: bool,
        nlevels: int,
    ) -> None:
        hsf = self.model.hsf() != (flip and not self.columns)  # a column index's direction is fixed
        windows = [window for spec in spec_list for window in expand(spec)] + list(explicit)
        update = WindowUpdate(
            high_score_first=hsf,
            delete_before=delete_before,
            all_time=all_time,
            specs=[WindowSpec(*spec) for spec in spec_list],
            windows=list(explicit),
            nlevels=nlevels,
            rebuild=Rebuild(rebuild),
        )
        groups = [expand(spec) for spec in spec_list] + [list(explicit)]
        try:
            added, deleted, filling = self.model.update_windows(hsf, windows, all_time, delete_before, rebuild, groups)
        except ModelPrecondition:
            with pytest.raises(FailedPrecondition):
                self.index.update_windows(update)
            return
        except ModelInvalid:
            with pytest.raises(InvalidArgument, match="ends by delete_before"):
                self.index.update_windows(update)
            return
        result = self.index.update_windows(update)
        assert [(w.type, w.start, w.end) for w in result.added] == added
        assert sorted((w.type, w.start, w.end) for w in result.deleted) == sorted(deleted)
        assert sorted((w.type, w.start, w.end) for w in result.filling) == sorted(filling)
        self.built -= set(self.model.refilled)  # a window refilled is cleared: no longer the build's

    @rule(before=st.sampled_from([0, 10, 20, 30, 40, 50]))
    def expire(self, before: int) -> None:
        gone = self.index.expire(before)
        assert sorted((w.type, w.start, w.end) for w in gone) == sorted(self.model.expire(before))

    @rule(max_records=st.integers(1, 2), fresh=st.booleans(), max_entries=st.sampled_from([1, 2, 3, 20_000]))
    def fill_step(self, max_records: int, fresh: bool, max_entries: int = 20_000) -> None:
        """One bounded fill batch, from this index object or a newly opened one.

        Small ``max_entries`` stop both phases early: record by record into the primary
        B-trees, then a few entries at a time into the ranked sets, with writes in between.
        """
        index = LeaderboardIndex.open(self.db, self.prefix) if fresh else self.index
        index.clock = self.index.clock
        progress = index.fill_step(max_records=max_records, max_entries=max_entries)
        assert progress.records_processed <= max_records
        assert progress.entries_ranked <= max_entries
        built = self.built if self.build is not None else set()
        expected = [w for w in self.model.filling() if w not in built]  # a build's windows are its own
        assert sorted((w.type, w.start, w.end) for w, _ in progress.windows) == sorted(expected)
        if progress.done:
            self.model.finish_fill(set(expected) if built else None)
        else:
            self.model.finish_fill({(w.type, w.start, w.end) for w in index.directory().windows if not w.filling})
        self.cursors = [fdb.tuple.unpack(last)[0] for _, last in progress.windows if last is not None]

    @rule(max_records=st.integers(1, 2))
    def another_fill_step(self, max_records: int) -> None:
        self.fill_step(max_records, False)

    @precondition(lambda self: self.cursors and self.model.filling())
    @rule(
        which=st.integers(0, 3),
        offset=st.sampled_from([0, 0, 1, -1]),
        kind=st.sampled_from(["add", "save", "delete"]),
        raws=st.lists(raw_entries, min_size=1, max_size=2),
    )
    def write_near_fill_cursor(self, which: int, offset: int, kind: str, raws: list) -> None:
        """Write the record a fill stopped at, or a neighbour: the edge of what writes maintain."""
        cursor = self.cursors[which % len(self.cursors)]
        ordered = sorted(PKS, key=lambda pk: fdb.tuple.pack((pk,)))
        position = ordered.index(cursor) if cursor in ordered else 0
        pk = ordered[min(max(position + offset, 0), len(ordered) - 1)]
        if kind == "delete":
            assert self.index.delete_record(pk) == self.model.delete(pk)
            return
        entries = self.entries(raws)
        if kind == "add":
            self.write(pk, entries, False, lambda: self.index.add_entries(pk, self.to_entries(entries)))
        else:
            self.write(pk, entries, True, lambda: self.index.save_record(pk, self.to_entries(entries)))

    # -- builds from sorted data (build.py), with every other write in between ------------------

    @precondition(lambda self: self.build is None)
    @rule()
    def start_load_build(self) -> None:
        """What ``bulk_load`` does first: the windows holding no value are built from sorted data."""
        build = WindowsBuild.start(self.index, lambda ops: ops.filler.empty_windows(), False, memory_items=2)
        marked = sorted((w.type, w.start, w.end) for w in build.windows.values()) if build else []
        assert marked == sorted(self.model.defer_empty_windows())
        self.build, self.build_reads = build, False
        self.built = {(w.type, w.start, w.end) for w in build.windows.values()} if build is not None else set()

    @precondition(lambda self: self.build is not None and not self.build_reads)
    @rule(batch=st.lists(st.tuples(pks, st.lists(raw_entries, max_size=2)), min_size=1, max_size=3))
    def load_through_build(self, batch: list) -> None:
        """A bulk load's transaction: its records' values in the build's windows go to the build."""
        records = [(pk, self.entries(raws)) for pk, raws in batch]
        before = self.model.snapshot()
        for pk, entries in records:
            try:
                self.model.check_write(pk, entries, True, self.clock, limited=False)
            except ModelRefused as refused:
                self.model.rollback(before)
                self.refused(refused.rule, lambda: self.load(records))
                return
            self.model.save(pk, entries)
        self.load(records)

    def load(self, records: list) -> None:
        loader = BulkLoad(self.index, 3, None, False, None, None)
        loader.build = self.build
        loader.save([(pk, self.to_entries(entries)) for pk, entries in records], 0)

    @precondition(lambda self: self.build is None)
    @rule()
    def start_fill_build(self) -> None:
        """A fill built from sorted data: the filling windows no one holds, read record by record."""
        build = WindowsBuild.start(
            self.index, lambda ops: ops.filler.unheld_windows(int(self.clock)), True, memory_items=2
        )
        if build is not None:
            assert {(w.type, w.start, w.end) for w in build.windows.values()} <= set(self.model.filling())
        self.build, self.build_reads = build, True
        self.built = {(w.type, w.start, w.end) for w in build.windows.values()} if build is not None else set()

    @precondition(lambda self: self.build is not None and self.build_reads)
    @rule(max_records=st.integers(1, 3))
    def build_reads_records(self, max_records: int) -> None:
        try:
            self.build.read_records(max_records, 4)
        except BuildLost:  # an expiry or a window update took windows of it: fills take the rest
            self.build.abandon()
            self.build = None
            return
        reached = self.index.read(lambda ops: ops.txn.cursor(next(iter(self.build.windows.values()))))
        self.cursors = [fdb.tuple.unpack(reached.records_through)[0]] if reached.records_through else []

    @precondition(lambda self: self.build is not None)
    @rule()
    def finish_build(self) -> None:
        build, self.build = self.build, None
        try:
            while self.build_reads and not build.read_records(2, 4):
                pass
        except BuildLost:  # an expiry or a window update took windows of it: fills take the rest
            build.abandon()
            return
        try:
            build.finish()
        except BuildLost:
            return
        self.model.finish_fill({(w.type, w.start, w.end) for w in build.windows.values()})

    @precondition(lambda self: self.build is not None)
    @rule()
    def lose_build(self) -> None:
        """The build's process stops: once its hold runs out a fill starts its windows over, and
        the build, were it to go on, writes nothing more."""
        build, self.build = self.build, None
        build.close()
        self.clock += HOLD_SECONDS + 1
        self.fill()
        with pytest.raises(BuildLost):
            build.finish()

    @rule(build=st.sampled_from([False, False, True]))
    def fill(self, build: bool = False) -> None:
        self.index.fill(max_records=2, build=build)
        self.model.finish_fill(
            {(w.type, w.start, w.end) for w in self.index.directory().windows if not w.filling}
            if self.build is not None
            else None
        )

    @rule(
        before=st.sampled_from([5, 10, 15, 20, 25]),
        fill_first=st.sampled_from([True, True, False]),
        then_rebuild=st.booleans(),
    )
    def trim(self, before: int, fill_first: bool, then_rebuild: bool) -> None:
        """Trim (refused while windows fill); maybe refill every window at once afterwards:
        what trim kept must give the same results."""
        if fill_first:
            self.fill()
        try:
            self.model.trim(before)
        except ModelPrecondition:
            with pytest.raises(FailedPrecondition):
                self.index.trim(before, max_records=2)
            return
        self.index.trim(before, max_records=2)
        if then_rebuild and self.model.windows is not None:
            self.rebuild(False)
            self.fill()

    @precondition(lambda self: self.grouped and not self.columns)
    @rule(group_index=st.integers(0, 1), hsf=st.booleans())
    def save_sub_directory(self, group_index: int, hsf: bool) -> None:
        group = self.groups[group_index]
        if self.model.windows is None or self.model.group_hsf(group) == hsf:
            outcome = "ok"
        elif self.model.has_values(group):
            outcome = "refused"
        else:
            # No scores in any ready window: the index may still hold the group's (empty)
            # ranked sets, or scores in a window being filled, and then refuses.
            outcome = "either"
        try:
            self.index.save_sub_directory(group, hsf)
        except FailedPrecondition:
            assert outcome != "ok"
            return
        assert outcome != "refused"
        self.model.save_sub_directory(group, hsf)

    # -- comparing everything -----------------------------------------------------------------

    check_soon = False

    @invariant()
    def everything_matches(self) -> None:
        self.steps += 1
        self.check_everything()
        if self.check_soon or self.steps % 4 == 0:
            self.check_soon = False
            assert self.index.check() == [], self.index.check()

    def check_everything(self) -> None:
        directory = self.index.directory()
        if self.model.windows is None:
            assert directory is None
        else:
            assert directory is not None
            assert {(w.type, w.start, w.end): w.filling for w in directory.windows} == self.model.windows
            assert directory.high_score_first == self.model.directory_hsf
        assert self.index.sub_directories() == self.model.sub_hsf
        boards: dict[tuple, tuple[int, int | None]] = {}
        probes: list[tuple[int, int | None]] = [(0, None)]
        timestamps = {-1, 0, 15, 30}
        for window in self.model.windows or {}:
            if window != ALL_TIME:
                timestamps.update((window[1] - 1, window[1], window[2] - 1, window[2]))
        probes += [(window_type, ts) for window_type in (1, 2) for ts in sorted(timestamps)]
        for window_type, ts in probes:
            try:
                window = self.model.resolve(window_type, ts)
            except ModelNotFound:
                self.check_refused(WindowNotFound, window_type, ts)
            except ModelNotReady:
                self.check_refused(WindowNotReady, window_type, ts)
            else:
                boards.setdefault(window, (window_type, ts))
        for (window_type, ts), group in itertools.product(boards.values(), self.groups):
            self.check_board(window_type, ts, group)

    def check_refused(self, error: type[Exception], window_type: int, ts: int | None) -> None:
        group = self.groups[-1]
        where = {"window_type": window_type, "timestamp": ts, "group": group}
        reads = [
            lambda: self.index.count(**where),
            lambda: self.index.top(3, **where),
            lambda: self.index.rank(PKS[0], **where),
            lambda: self.index.rank_and_entry(PKS[0], **where),
            lambda: self.index.around(PKS[0], 1, 1, **where),
            lambda: self.index.score_for_rank(0, **where),
            lambda: self.index.rank_for_score(self.score(3), **where),
        ]
        if window_type == 0:
            reads.append(lambda: self.index.scan(ScanType.BY_VALUE, group=group))
            reads.append(lambda: self.index.scan(ScanType.BY_RANK, group=group))
        else:
            reads.append(
                lambda: self.index.scan(ScanType.BY_TIME_WINDOW, window_type=window_type, timestamp=ts, group=group)
            )
        for read in reads:
            with pytest.raises(error):
                read()

    def check_board(self, window_type: int, ts: int | None, group: tuple) -> None:
        index, model = self.index, self.model
        where = {"window_type": window_type, "timestamp": ts, "group": group}
        size = model.count(window_type, ts, group)
        assert index.count(**where) == size
        for name, mode in MODES.items():
            assert [listed(e) for e in index.top(size + 1, mode=mode, **where)] == model.top(
                size + 1, window_type, ts, group, name
            )
        assert [listed(e) for e in index.top(2, **where)] == model.top(2, window_type, ts, group, "ORDINAL")
        assert index.top(0, **where) == []

        for i, pk in enumerate([*PKS, ABSENT_PK]):
            for name, mode in MODES.items():
                assert index.rank(pk, mode=mode, **where) == model.rank(pk, window_type, ts, group, name), (pk, name)
            name = list(MODES)[i % 3]
            assert listed(index.rank_and_entry(pk, mode=MODES[name], **where)) == model.rank_and_entry(
                pk, window_type, ts, group, name
            )
            for j in (0, 1):
                above, below = AROUND[(i + j + self.steps) % len(AROUND)]
                name = list(MODES)[(i + j + self.steps) % 3]
                got = index.around(pk, above, below, mode=MODES[name], **where)
                assert [listed(e) for e in got] == model.around(pk, above, below, window_type, ts, group, name), (
                    pk,
                    above,
                    below,
                    name,
                )
        for if_absent in ("EMPTY", "TOP", "BOTTOM"):
            got = index.around(ABSENT_PK, 1, 1, if_absent=IfAbsent[if_absent], **where)
            assert [listed(e) for e in got] == model.around(
                ABSENT_PK, 1, 1, window_type, ts, group, "ORDINAL", if_absent
            )
        for rank in range(size + 2):
            assert index.score_for_rank(rank, **where) == model.score_for_rank(rank, window_type, ts, group)
        middles = (0, 1) if self.columns else (1,)
        for score in [self.score(score, middle) for score in range(-1, 7) for middle in middles]:
            assert index.rank_for_score(score, **where) == model.rank_for_score(score, window_type, ts, group)

        if window_type == 0:
            self.check_value_scans(group)
            self.check_rank_scans(ScanType.BY_RANK, 0, None, group, size)
        else:
            self.check_rank_scans(ScanType.BY_TIME_WINDOW, window_type, ts, group, size)

    def collect(self, scan_type: ScanType, limit: int, **kwargs: Any) -> list[Listed | None]:
        """Every page of a scan with ``limit``, following continuations until exhausted."""
        out: list[Listed | None] = []
        continuation = None
        for _ in range(20):
            page = self.index.scan(scan_type, limit=limit, continuation=continuation, **kwargs)
            if limit:
                assert len(page.entries) <= limit
            else:
                assert page.continuation is None
            out.extend(listed(e) for e in page.entries)
            continuation = page.continuation
            if continuation is None:
                return out
        raise AssertionError(f"{scan_type} with limit {limit} did not end: {kwargs}")

    def check_value_scans(self, group: tuple) -> None:
        for i, (low, high, low_inclusive, high_inclusive) in enumerate(VALUE_BOUNDS):
            low = None if low is None else self.score(low)
            high = None if high is None else self.score(high)
            bounds = {"low": low, "high": high, "low_inclusive": low_inclusive, "high_inclusive": high_inclusive}
            for reverse in (False, True):
                expected = self.model.scan_by_value(group, reverse=reverse, **bounds)
                assert self.collect(ScanType.BY_VALUE, 0, group=group, reverse=reverse, **bounds) == expected, (
                    bounds,
                    reverse,
                )
                if (i + self.steps + reverse) % 2:
                    limit = 1 + (i + self.steps) % 3
                    got = self.collect(ScanType.BY_VALUE, limit, group=group, reverse=reverse, **bounds)
                    assert got == expected, (bounds, reverse, limit)

    def check_rank_scans(self, scan_type: ScanType, window_type: int, ts: int | None, group: tuple, size: int) -> None:
        where: dict[str, Any] = {"group": group}
        if scan_type is ScanType.BY_TIME_WINDOW:
            where.update(window_type=window_type, timestamp=ts)
        for i, (low, high, low_inclusive, high_inclusive) in enumerate(RANK_BOUNDS):
            low = max(size - 1, 0) if low == "last" else low
            high = max(size - 1, 0) if high == "last" else high
            bounds = {"low": low, "high": high, "low_inclusive": low_inclusive, "high_inclusive": high_inclusive}
            for name, mode in MODES.items():
                expected = self.model.scan_by_rank(window_type, ts, group, mode=name, **bounds)
                assert self.collect(scan_type, 0, mode=mode, **where, **bounds) == expected, (bounds, name)
                reverse = (i + self.steps) % 2 == 1  # the bottom of the board first, paging up
                got = self.collect(scan_type, 0, mode=mode, reverse=reverse, **where, **bounds)
                assert got == (expected[::-1] if reverse else expected), (bounds, name, reverse)
                if (i + self.steps + list(MODES).index(name)) % 2:
                    limit = 1 + (i + self.steps) % 3
                    got = self.collect(scan_type, limit, mode=mode, reverse=reverse, **where, **bounds)
                    assert got == (expected[::-1] if reverse else expected), (bounds, name, limit, reverse)


CONFIGS = [
    (aggregation, high_score_first, grouped)
    for aggregation in ("BEST", "SUM", "LATEST")
    for high_score_first in (False, True)
    for grouped in (False, True)
]
COLUMNS = ("HIGH", "LOW", "HIGH")
COLUMN_CONFIGS = [("BEST", False), ("BEST", True), ("LATEST", False)]


def run_index_machine(
    db: Database,
    aggregation: str,
    high_score_first: bool,
    grouped: bool,
    examples: int = 12,
    steps: int = 25,
    columns: tuple[str, ...] = (),
) -> None:
    """The state machine on ``db`` for one configuration (derandomized: the same examples each run)."""
    machine = type(
        "IndexMachine_" + aggregation,
        (IndexMachine,),
        {
            "db": db,
            "aggregation": aggregation,
            "high_score_first": high_score_first,
            "grouped": grouped,
            "columns": columns,
        },
    )
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=examples,
            stateful_step_count=steps,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )


@pytest.mark.parametrize(("aggregation", "high_score_first", "grouped"), CONFIGS)
def test_index_matches_model(tmp_path, aggregation: str, high_score_first: bool, grouped: bool) -> None:
    db = open_database(f"lmdb:{tmp_path / 'store'}?durable=false")
    try:
        run_index_machine(db, aggregation, high_score_first, grouped)
    finally:
        db.close()


@pytest.mark.parametrize(("aggregation", "grouped"), COLUMN_CONFIGS)
def test_column_index_matches_model(tmp_path, aggregation: str, grouped: bool) -> None:
    """Scores of three columns, each in its direction: every read against the model."""
    db = open_database(f"lmdb:{tmp_path / 'store'}?durable=false")
    try:
        run_index_machine(db, aggregation, True, grouped, columns=COLUMNS)
    finally:
        db.close()


@pytest.mark.parametrize(("aggregation", "high_score_first", "grouped"), [("SUM", False, True), ("BEST", True, False)])
def test_writes_together_match_the_model_on_each_store(
    store_url: str, aggregation: str, high_score_first: bool, grouped: bool
) -> None:
    """Batches of writes run together (on FoundationDB in shared transactions) among the other
    rules, every step checked against the model and the ranked sets' structure by the checker
    (the Record Layer once corrupted a ranked set updated twice in one transaction)."""
    db = open_database(store_url)
    try:
        machine = type(
            "TogetherMachine",
            (IndexMachine,),
            {"db": db, "aggregation": aggregation, "high_score_first": high_score_first, "grouped": grouped},
        )
        rng = random.Random(f"{aggregation}{grouped}")
        for _ in range(2):
            state = machine()
            state.start("before", [], False)
            for step in range(12):
                ops = []
                for _ in range(rng.randint(4, 12)):
                    kind = rng.choice(["add", "add", "add", "save", "delete", "hide", "restore", "junk"])
                    pk = rng.choice(PKS)
                    raw = (rng.randint(0, 1), rng.randint(0, 5), rng.randint(0, 30), rng.randint(0, 1))
                    ops.append(
                        (kind, pk, raw) if kind == "add" else (kind, pk, [raw]) if kind == "save" else (kind, pk)
                    )
                state.writes_together(ops)
                if step % 4 == 1:
                    state.set_rules(None, None, rng.choice([0, 3]), rng.choice([0, 4]))
                state.tick(rng.choice([1, 61]))
                state.everything_matches()
                assert state.index.check() == []
            state.teardown()
    finally:
        db.close()


def test_column_index_matches_model_on_each_store(store_url: str) -> None:
    """The same on every store (FoundationDB's network reads take other paths), fewer examples."""
    db = open_database(store_url)
    try:
        run_index_machine(db, "BEST", True, True, examples=3, steps=15, columns=COLUMNS)
    finally:
        db.close()


@pytest.mark.parametrize(
    ("aggregation", "count_duplicates", "seed"),
    [
        ("BEST", True, 1),
        ("SUM", True, 3),
        *(("BEST", False, seed) for seed in range(10, 16)),
        ("LATEST", False, 4),
        ("SUM", False, 6),
    ],
)
def test_fill_phases_with_writes_in_between(tmp_path, aggregation: str, count_duplicates: bool, seed: int) -> None:
    """Writes land between fill steps of both phases (records into the primary B-tree, then the
    ranked sets built from it a few entries at a time); afterwards every rank matches the model
    and the checker finds the skip lists exact.  Scores come from a small range: many ties."""
    import random

    rng = random.Random(seed)
    db = open_database(f"lmdb:{tmp_path / 'store'}?durable=false")
    try:
        settings_ = IndexSettings(
            aggregation=aggregation, count_duplicates=count_duplicates, dense_ranks=True, high_score_first=False
        )
        index = LeaderboardIndex.create(db, b"fill", settings_)
        model = Model(aggregation)
        pks = [(i,) for i in range(12)]
        index.update_windows(WindowUpdate(windows=[(1, 100, 200)]))
        model.update_windows(False, [(1, 100, 200)])

        def write(max_ts: int = 300) -> None:
            pk = rng.choice(pks)
            raws = [((), rng.randrange(5), rng.randrange(0, max_ts, 25), ()) for _ in range(rng.randrange(1, 3))]
            action = rng.choice(["add", "add", "save", "delete"])
            if action == "delete":
                assert index.delete_record(pk) == model.delete(pk)
            elif action == "add":
                index.add_entries(pk, [Entry(score, ts) for _, score, ts, _ in raws])
                model.add(pk, raws)
            else:
                index.save_record(pk, [Entry(score, ts) for _, score, ts, _ in raws])
                model.save(pk, raws)

        for _ in range(40):
            write(max_ts=200)  # window 3 stays empty until its ranks are deferred
        # A new window over stored entries fills in two phases; an empty one defers its ranks.
        update = WindowUpdate(windows=[(1, 100, 200), (2, 0, 100), (3, 200, 300)])
        index.update_windows(update)
        model.update_windows(False, [(1, 100, 200), (2, 0, 100), (3, 200, 300)])
        build = WindowsBuild.start(index, lambda ops: ops.filler.empty_windows(), from_records=False)
        marked = list(build.windows.values())
        assert sorted((w.type, w.start, w.end) for w in marked) == sorted(model.defer_empty_windows())
        assert {(w.type, w.start) for w in marked} == {(3, 200)}
        phases_seen = set()
        for _ in range(400):
            if rng.random() < 0.5:
                write()
                continue
            step = index.fill_step(max_records=rng.randrange(1, 4), max_entries=rng.randrange(1, 5))
            phases_seen.add("ranks" if step.entries_ranked else "records" if step.records_processed else "idle")
            if step.done:
                break
        assert {"records", "ranks"} <= phases_seen
        build.finish()  # the writes meanwhile are redone
        index.fill(max_records=3, max_entries=4)
        model.finish_fill()
        assert index.check() == []
        for window_type, ts in [(0, None), (1, 150), (2, 50), (3, 250)]:
            rows = model.board(model.resolve(window_type, ts), ())
            for pk in pks:
                expected = model.rank(pk, window_type, ts, (), "ORDINAL")
                if expected is not None and not count_duplicates:  # equal elements count once
                    mine = next(row.element for row in rows if row.pk == pk)
                    expected = len({row.element for row in rows if row.element < mine})
                assert index.rank(pk, window_type, ts) == expected, (window_type, pk)
                dense = model.rank(pk, window_type, ts, (), "DENSE")
                assert index.rank(pk, window_type, ts, mode=RankMode.DENSE) == dense, (window_type, pk)
    finally:
        db.close()


def test_shared_element_across_the_rank_cursor(tmp_path) -> None:
    """Without duplicate counting, records a and b share one element.  Once the ranked set is
    built through a only, a leaving that element must remove it (b is not ranked yet), and b
    leaving it later touches nothing ranked: the finished set holds no stale element."""

    db = open_database(f"lmdb:{tmp_path / 'store'}?durable=false")
    try:
        index = LeaderboardIndex.create(db, b"shared", IndexSettings(count_duplicates=False, high_score_first=False))
        index.update_windows(WindowUpdate())
        for pk in ("a", "b"):
            index.add_score((pk,), 5, 10)
        index.update_windows(WindowUpdate(windows=[(1, 0, 100)]))  # overlaps both: filling
        step = index.fill_step(max_records=5, max_entries=2)
        assert (step.records_processed, step.entries_ranked, step.done) == (2, 0, False)
        step = index.fill_step(max_records=5, max_entries=1)
        assert (step.entries_ranked, step.done) == (1, False)  # through ("a",) only
        index.save_record(("a",), [Entry(7, 10)])
        index.delete_record(("b",))
        index.fill()
        assert index.check() == []
        assert index.count(1, 50) == 1 and index.rank(("a",), 1, 50) == 0
    finally:
        db.close()


@given(
    score=st.integers(min_value=INT64_MIN, max_value=INT64_MAX),
    ts=st.integers(min_value=INT64_MIN, max_value=INT64_MAX - 1),
    seq=st.integers(min_value=0, max_value=1000),
    context=st.tuples() | st.tuples(st.text(max_size=3)),
    high_first=st.booleans(),
)
def test_every_aggregation_folds_one_entry_to_itself(
    score: int, ts: int, seq: int, context: tuple, high_first: bool
) -> None:
    """Saves and fills take a lone entry as the window's value without folding: true only
    while every aggregation's fold of one entry is that entry."""

    def pack(score: int | float, ts: int, context: tuple) -> bytes:
        return fdb.tuple.pack((-score if high_first else score, ts, *context))

    value = Value(score, ts, seq, context, pack(score, ts, context))
    for aggregation in AGGREGATIONS.values():
        assert aggregation.fold([value], pack) == value, aggregation.name
