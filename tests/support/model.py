"""A brute-force, in-memory model of the leaderboard index: the oracle of the index tests.

Written from ``../shared/design/semantics.md`` and the test brief, never from the index's
code: it keeps every entry of every record and recomputes each window's board from scratch
by sorting lists.  Only ``fdb.tuple.pack`` is borrowed, to order primary keys as their
packed bytes.

Ranks are 0-based; lower elements rank better.  An element is ``(stored score, ts,
context...)`` where the stored score is ``-score`` for a high-score-first group.  Scores,
timestamps and context items must be ints (or ASCII strings) so that Python's tuple order is
the tuple layer's.  A multi-column score is a tuple of ints compared column by column, each
in its direction: its stored form negates the columns where higher ranks better (``HIGH``), and
its natural order (BY_VALUE) runs from the worst score to the best.
"""

from __future__ import annotations

import copy
import dataclasses

import fdb.tuple

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
ALL_TIME = (0, INT64_MIN, INT64_MAX)


class ModelNotFound(Exception):
    """No (ready or filling) window answers the read: the index raises WindowNotFound."""


class ModelNotReady(Exception):
    """The window a read resolves to is being filled: the index raises WindowNotReady."""


class ModelPrecondition(Exception):
    """The index must refuse the operation with FailedPrecondition (and change nothing)."""


class ModelInvalid(Exception):
    """The index must refuse the operation with InvalidArgument (and change nothing)."""


class ModelNoRecord(Exception):
    """The record does not exist: the index raises NotFound."""


class ModelRefused(Exception):
    """A score rule refuses the write (``rule``): the index raises ScoreOutOfRange (the score
    range) or SubmissionLimited (the limits), and changes nothing."""

    def __init__(self, rule: str) -> None:
        super().__init__(rule)
        self.rule = rule


@dataclasses.dataclass
class MRules:
    """Score rules: a score range, and submissions per record and window (complete windows but
    all-time) or minute of the clock (Unix seconds // 60).  0: no limit."""

    min_score: int | None = None
    max_score: int | None = None
    per_window: int = 0
    per_minute: int = 0


@dataclasses.dataclass(frozen=True)
class MEntry:
    group: tuple
    score: int | tuple
    ts: int
    context: tuple
    seq: int


@dataclasses.dataclass(frozen=True)
class Row:
    """One record's value on one board (window and group)."""

    element: tuple
    pk_bytes: bytes
    pk: tuple
    score: int | tuple
    ts: int
    context: tuple
    group: tuple

    @property
    def stored(self) -> int:
        return self.element[0]


@dataclasses.dataclass(frozen=True)
class Listed:
    """What a read returns for one record: compared with the index's RankedEntry fields."""

    pk: tuple
    score: int | tuple
    timestamp: int
    context: tuple
    group: tuple
    rank: int | None


class Model:
    def __init__(
        self, aggregation: str, high_score_first: bool = False, group_size: int = 0, columns: tuple = ()
    ) -> None:
        assert aggregation in ("BEST", "SUM", "LATEST")
        assert not columns or (aggregation != "SUM" and high_score_first)
        self.aggregation = aggregation
        self.columns = tuple(columns)
        self.default_hsf = high_score_first
        self.group_size = group_size
        self.records: dict[tuple, list[MEntry]] = {}
        self.next_seq: dict[tuple, int] = {}
        self.windows: dict[tuple[int, int, int], bool] | None = None  # window -> filling; None: no directory
        self.directory_hsf: bool | None = None
        self.sub_hsf: dict[tuple, bool] = {}
        # The latest timestamp of the scores held: a deletion of the entry holding it finds it
        # again among those left (index format 4; ``recomputes_latest=False``: as before, the
        # latest ever written).
        self.latest: int | None = None
        self.recomputes_latest = True
        self.trimmed_before: int | None = None
        self.refilled: list[tuple[int, int, int]] = []  # the windows the last window update refilled
        self.hidden: set[tuple] = set()  # records hidden from every board
        self.dropped: set[tuple[tuple, int]] = set()  # (pk, seq) of entries a trim dropped
        self.rules = MRules()
        self.minutes: dict[tuple, tuple[int, int]] = {}  # pk -> (minute, submissions in it)
        self._boards: dict[tuple, list[Row]] = {}  # cache, emptied by every change

    # -- writes ------------------------------------------------------------------------------

    def _note(self, ts: int) -> None:
        self.latest = ts if self.latest is None else max(self.latest, ts)

    def add(self, pk: tuple, entries: list[tuple]) -> None:
        """``entries`` are (group, score, ts, context)."""
        self._boards.clear()
        existing = self.records.setdefault(pk, [])
        seq = self.next_seq.get(pk, 0)
        for group, score, ts, context in entries:
            existing.append(MEntry(tuple(group), score, ts, tuple(context), seq))
            seq += 1
            self._note(ts)
        self.next_seq[pk] = seq

    def save(self, pk: tuple, entries: list[tuple]) -> None:
        self.records[pk] = []
        self.next_seq[pk] = 0
        self.dropped = {(p, seq) for p, seq in self.dropped if p != pk}
        self.add(pk, entries)

    def _held(self, pk: tuple) -> list[MEntry]:
        """The record's entries the index holds (those a trim did not drop)."""
        return [e for e in self.records.get(pk, []) if (pk, e.seq) not in self.dropped]

    def _removed(self, timestamps: list[int]) -> None:
        """Held entries at ``timestamps`` went: if one was at the latest, it is found again."""
        if not self.recomputes_latest or not timestamps or self.latest is None or max(timestamps) < self.latest:
            return
        self.latest = max((e.ts for pk in self.records for e in self._held(pk)), default=None)

    def delete(self, pk: tuple) -> bool:
        self._boards.clear()
        removed = [e.ts for e in self._held(pk)]
        self.next_seq.pop(pk, None)
        self.hidden.discard(pk)
        self.minutes.pop(pk, None)
        self.dropped = {(p, seq) for p, seq in self.dropped if p != pk}
        existed = self.records.pop(pk, None) is not None
        self._removed(removed)
        return existed

    # -- score rules -------------------------------------------------------------------------

    def check_write(self, pk: tuple, entries: list[tuple], replace: bool, clock: float, limited: bool = True) -> None:
        """Raise ModelRefused if a rule refuses writing ``entries`` to ``pk`` now; otherwise count
        them (call :meth:`add` or :meth:`save` next).  Checked in the order: scores, the minute,
        the windows."""
        rules = self.rules
        for _, score, _, _ in entries:
            if rules.min_score is not None and score < rules.min_score:
                raise ModelRefused("min_score")
            if rules.max_score is not None and score > rules.max_score:
                raise ModelRefused("max_score")
        if not limited:
            return
        if rules.per_minute and entries:
            minute = int(clock) // 60
            at, used = self.minutes.get(pk, (None, 0))
            used = used if at == minute else 0
            if used + len(entries) > rules.per_minute:
                raise ModelRefused("max_per_minute")
        if rules.per_window:
            kept = [] if replace else self.records.get(pk, [])
            for window, filling in (self.windows or {}).items():
                if filling or window[0] == 0:
                    continue
                _, start, end = window
                for group in {tuple(e[0]) for e in entries if start <= e[2] < end}:
                    new = sum(1 for e in entries if tuple(e[0]) == group and start <= e[2] < end)
                    old = sum(1 for e in kept if e.group == group and start <= e.ts < end)
                    if old + new > rules.per_window:
                        raise ModelRefused("max_per_window")
        if rules.per_minute and entries:
            self.minutes[pk] = (minute, used + len(entries))

    def snapshot(self) -> dict:
        """The state a refused batch goes back to."""
        return copy.deepcopy(
            {"records": self.records, "next_seq": self.next_seq, "minutes": self.minutes, "latest": self.latest}
        )

    def rollback(self, state: dict) -> None:
        self._boards.clear()
        self.records, self.next_seq, self.minutes = state["records"], state["next_seq"], state["minutes"]
        self.latest = state["latest"]

    # -- hiding and deleting many records ----------------------------------------------------

    def hide(self, pk: tuple) -> bool:
        if pk not in self.records:
            raise ModelNoRecord(pk)
        self._boards.clear()
        if pk in self.hidden:
            return False
        self.hidden.add(pk)
        return True

    def restore(self, pk: tuple) -> bool:
        if pk not in self.records:
            raise ModelNoRecord(pk)
        self._boards.clear()
        if pk not in self.hidden:
            return False
        self.hidden.discard(pk)
        return True

    def _has(self, pk: tuple, group: tuple) -> bool:
        """Whether the index still holds data of ``group`` for the record: an entry a trim did not
        drop, or (SUM) a total carried for the group."""
        mine = [e for e in self.records.get(pk, []) if e.group == group]
        if self.aggregation == "SUM" and mine:
            return True
        return any((pk, e.seq) not in self.dropped for e in mine)

    def delete_group(self, group: tuple) -> tuple[int, int, int]:
        """Drop the group's entries; a record left with no data goes whole.  Returns (records
        changed, records deleted, entries deleted), as the index counts them (what it holds)."""
        group = tuple(group)
        changed = deleted = removed = 0
        gone: list[int] = []
        recomputes, self.recomputes_latest = self.recomputes_latest, False  # once, after them all
        for pk in list(self.records):
            entries = self.records[pk]
            had = self._has(pk, group)
            left = any(self._has(pk, other) for other in {e.group for e in entries} - {group})
            doomed = [e.ts for e in self._held(pk) if e.group == group]
            removed += len(doomed)
            changed += had
            if had:
                gone += doomed
            if had and not left:
                deleted += 1
                self.delete(pk)
            elif any(e.group == group for e in entries):
                self.records[pk] = [e for e in entries if e.group != group]
                self._boards.clear()
        self.recomputes_latest = recomputes
        self._removed(gone)
        return changed, deleted, removed

    def delete_all(self) -> tuple[int, int]:
        """Delete every record: (records, entries the index holds)."""
        records = len(self.records)
        entries = sum(1 for pk, es in self.records.items() for e in es if (pk, e.seq) not in self.dropped)
        for pk in list(self.records):
            self.delete(pk)
        return records, entries

    # -- windows -----------------------------------------------------------------------------

    def hsf(self) -> bool:
        return self.directory_hsf if self.directory_hsf is not None else self.default_hsf

    def group_hsf(self, group: tuple) -> bool:
        return self.sub_hsf.get(tuple(group), self.hsf())

    def stored(self, score: int | tuple, group: tuple) -> int | tuple:
        """The score as it orders in ``group``: lower ranks better."""
        if self.columns:
            return tuple(-value if way == "HIGH" else value for value, way in zip(score, self.columns, strict=True))
        return -score if self.group_hsf(group) else score

    def natural(self, score: int | tuple) -> int | tuple:
        """The score as BY_VALUE orders it (columns: from the worst to the best)."""
        if self.columns:
            return tuple(value if way == "HIGH" else -value for value, way in zip(score, self.columns, strict=True))
        return score

    def update_windows(
        self,
        high_score_first: bool,
        windows: list[tuple[int, int, int]],
        all_time: bool = True,
        delete_before: int | None = None,
        rebuild: str = "IF_OVERLAPPING_CHANGED",
        groups: list[list[tuple[int, int, int]]] | None = None,
    ) -> tuple[list, list, list]:
        """Returns (added, deleted, filling) windows, or raises ModelPrecondition or ModelInvalid.

        ``groups`` splits ``windows`` by the spec (or explicit list) asking for them: windows
        ending by ``delete_before`` are not added, and a group made only of them is refused.
        """
        if delete_before is not None:
            for group in groups if groups is not None else [list(windows)]:
                if group and all(window[2] <= delete_before for window in group):
                    raise ModelInvalid(f"{group} only adds windows delete_before deletes")
            windows = [window for window in windows if window[2] > delete_before]
        rebuild_all = rebuild == "ALWAYS"
        old = dict(self.windows) if self.windows is not None else {}
        flipped = self.windows is not None and self.directory_hsf != high_score_first
        if flipped:
            if rebuild == "NEVER":
                raise ModelPrecondition("changing high_score_first needs a rebuild")
            rebuild_all = True
        kept = {}
        deleted = []
        for window, filling in old.items():
            if delete_before is not None and window[0] != 0 and window[2] <= delete_before:
                deleted.append(window)
            else:
                kept[window] = filling
        added = []
        wanted = ([ALL_TIME] if all_time else []) + list(windows)
        for window in wanted:
            if window not in kept and window not in added:
                added.append(window)
        refill = added + ([w for w in kept] if rebuild_all else [])
        filling = []
        for window in refill:
            exact = window not in added and not (flipped and self.aggregation == "BEST")
            if not exact and self.trimmed_before is not None and window[1] < self.trimmed_before:
                raise ModelPrecondition(f"{window} starts before the trim horizon")
            if self.latest is None or window[1] > self.latest:
                continue
            if rebuild == "NEVER":
                raise ModelPrecondition(f"{window} overlaps stored data")
            filling.append(window)
        self._boards.clear()
        for window in added:
            kept[window] = False
        for window in filling:
            kept[window] = True
        self.windows = kept
        self.refilled = filling
        self.directory_hsf = high_score_first
        return added, deleted, [w for w, f in kept.items() if f]

    def expire(self, before: int) -> list:
        if self.windows is None:
            return []
        gone = [w for w in self.windows if w[0] != 0 and w[2] <= before]
        self._boards.clear()
        for window in gone:
            del self.windows[window]
        return gone

    def filling(self) -> list:
        return [w for w, f in (self.windows or {}).items() if f]

    def defer_empty_windows(self) -> list:
        """Complete windows no visible record's entry falls in become filling (``bulk_load``'s
        deferred ranks: their ranked sets are built from the visible records' values)."""
        marked = []
        visible = [entries for pk, entries in self.records.items() if pk not in self.hidden]
        for window, filling in (self.windows or {}).items():
            _, start, end = window
            if not filling and not any(start <= e.ts < end for entries in visible for e in entries):
                marked.append(window)
        for window in marked:
            self.windows[window] = True
        return marked

    def finish_fill(self, completed: set[tuple[int, int, int]] | None = None) -> None:
        """Windows stop filling: ``completed`` ones, or all.

        A fill ranks its windows one after another, so a step may complete some of them; which
        ones is the index's choice, and a window's results are only checked once it is complete.
        """
        if self.windows is not None:
            self.windows = {
                w: filling and completed is not None and w not in completed for w, filling in self.windows.items()
            }

    def trim(self, before: int) -> None:
        """Trimming never changes a result: it only forbids windows starting before ``before``.

        It does drop entries no window needs (``dropped``), which the model keeps for its
        results: a deletion of a group's data sees what the index still has.  BEST and LATEST
        keep every entry that is some window's value; SUM keeps entries in any window but
        all-time, the rest folding into a total carried per group.
        """
        if self.filling():
            raise ModelPrecondition("trim while windows are filling")
        self.trimmed_before = before if self.trimmed_before is None else max(self.trimmed_before, before)
        windows = list(self.windows or {})
        for pk, entries in self.records.items():
            needed = set()
            if self.aggregation != "SUM":
                for window in windows:
                    for group in {e.group for e in entries}:
                        chosen = self._chosen(window, group, pk)
                        if chosen is not None:
                            needed.add(chosen.seq)
            for e in entries:
                if e.ts >= before:
                    continue
                if self.aggregation == "SUM":
                    keep = any(w[0] != 0 and w[1] <= e.ts < w[2] for w in windows)
                else:
                    keep = e.seq in needed
                if not keep:
                    self.dropped.add((pk, e.seq))

    def save_sub_directory(self, group: tuple, high_score_first: bool) -> None:
        self._boards.clear()
        self.sub_hsf[tuple(group)] = high_score_first

    def has_values(self, group: tuple) -> bool:
        """Whether ``group`` has a value in some window of the directory (ready ones only)."""
        return any(not filling and self.board(window, group) for window, filling in (self.windows or {}).items())

    # -- boards ------------------------------------------------------------------------------

    def resolve(self, window_type: int, ts: int | None) -> tuple[int, int, int]:
        """The window a read of ``window_type`` at ``ts`` uses: the oldest containing ``ts``."""
        ts = 0 if ts is None else ts
        candidates = [w for w in (self.windows or {}) if w[0] == window_type and w[1] <= ts < w[2]]
        if not candidates:
            raise ModelNotFound(f"no window of type {window_type} at {ts}")
        window = min(candidates, key=lambda w: (w[1], -w[2]))
        if self.windows[window]:
            raise ModelNotReady(f"{window} is filling")
        return window

    def _chosen(self, window: tuple, group: tuple, pk: tuple) -> MEntry | None:
        """The entry that is a BEST or LATEST record's value in ``window`` (None: no value)."""
        _, start, end = window
        inside = [e for e in self.records.get(pk, []) if e.group == tuple(group) and start <= e.ts < end]
        if not inside:
            return None
        if self.aggregation == "BEST":
            return min(inside, key=lambda e: (self.stored(e.score, group), e.ts, *e.context))
        return max(inside, key=lambda e: (e.ts, e.seq))

    def value(self, window: tuple, group: tuple, pk: tuple) -> Row | None:
        _, start, end = window
        group = tuple(group)
        inside = [e for e in self.records.get(pk, []) if e.group == group and start <= e.ts < end]
        if not inside:
            return None
        if self.aggregation != "SUM":
            chosen = self._chosen(window, group, pk)
            score, ts, context = chosen.score, chosen.ts, chosen.context  # type: ignore[union-attr]
        else:
            latest = max(inside, key=lambda e: (e.ts, e.seq))
            score, ts, context = sum(e.score for e in inside), latest.ts, latest.context
        return Row((self.stored(score, group), ts, *context), fdb.tuple.pack(pk), pk, score, ts, context, group)

    def board(self, window: tuple, group: tuple) -> list[Row]:
        """Every visible record's value in ``window`` and ``group``, best first (ties: packed pk)."""
        key = (window, tuple(group))
        if key not in self._boards:
            rows = [self.value(window, group, pk) for pk in self.records if pk not in self.hidden]
            rows = [row for row in rows if row is not None]
            self._boards[key] = sorted(rows, key=lambda row: (row.element, row.pk_bytes))
        return self._boards[key]

    def groups(self, window: tuple) -> list[tuple]:
        """Every group with a visible value in ``window``, in packed key order."""
        written = {entry.group for entries in self.records.values() for entry in entries}
        return sorted((group for group in written if self.board(window, group)), key=fdb.tuple.pack)

    @staticmethod
    def ordinal(rows: list[Row], row: Row) -> int:
        return sum(1 for other in rows if other.element < row.element)

    @staticmethod
    def competition(rows: list[Row], row: Row) -> int:
        return sum(1 for other in rows if other.stored < row.stored)

    @staticmethod
    def dense(rows: list[Row], row: Row) -> int:
        """How many distinct scores rank better: equal scores share a rank, none is skipped."""
        return len({other.stored for other in rows if other.stored < row.stored})

    def listed(self, rows: list[Row], row: Row, mode: str | None) -> Listed:
        if mode is None:
            rank = None
        elif mode == "ORDINAL":
            rank = self.ordinal(rows, row)
        elif mode == "DENSE":
            rank = self.dense(rows, row)
        else:
            rank = self.competition(rows, row)
        return Listed(row.pk, row.score, row.ts, row.context, row.group, rank)

    # -- reads -------------------------------------------------------------------------------

    def _board_at(self, window_type: int, ts: int | None, group: tuple) -> list[Row]:
        return self.board(self.resolve(window_type, ts), group)

    def rank(self, pk: tuple, window_type: int, ts: int | None, group: tuple, mode: str) -> int | None:
        entry = self.rank_and_entry(pk, window_type, ts, group, mode)
        return None if entry is None else entry.rank

    def rank_and_entry(self, pk: tuple, window_type: int, ts: int | None, group: tuple, mode: str) -> Listed | None:
        rows = self._board_at(window_type, ts, group)
        for row in rows:
            if row.pk == pk:
                return self.listed(rows, row, mode)
        return None

    def top(self, n: int, window_type: int, ts: int | None, group: tuple, mode: str) -> list[Listed]:
        rows = self._board_at(window_type, ts, group)
        return [self.listed(rows, row, mode) for row in rows[:n]]

    def count(self, window_type: int, ts: int | None, group: tuple) -> int:
        return len(self._board_at(window_type, ts, group))

    def around(
        self,
        pk: tuple,
        above: int,
        below: int,
        window_type: int,
        ts: int | None,
        group: tuple,
        mode: str,
        if_absent: str = "EMPTY",
    ) -> list[Listed]:
        rows = self._board_at(window_type, ts, group)
        span = above + below + 1
        positions = [i for i, row in enumerate(rows) if row.pk == pk]
        if not positions:
            if if_absent == "TOP":
                start = 0
            elif if_absent == "BOTTOM":
                start = max(0, len(rows) - span)
            else:
                return []
        else:
            start = max(0, min(positions[0] - above, len(rows) - span))
        return [self.listed(rows, row, mode) for row in rows[start : start + span]]

    def score_for_rank(self, rank: int, window_type: int, ts: int | None, group: tuple) -> int | None:
        rows = self._board_at(window_type, ts, group)
        return rows[rank].score if rank < len(rows) else None

    def rank_for_score(self, score: int, window_type: int, ts: int | None, group: tuple) -> int:
        rows = self._board_at(window_type, ts, group)
        stored = self.stored(score, group)
        return sum(1 for row in rows if row.stored < stored)

    def scan_by_value(
        self,
        group: tuple,
        low: int | None = None,
        high: int | None = None,
        low_inclusive: bool = True,
        high_inclusive: bool = True,
        reverse: bool = False,
    ) -> list[Listed]:
        """All-time records by natural score, ascending unless ``reverse``.

        The index reads its stored keys forward (low score first) or, for a high-score-first
        group, backward: records with equal scores come out in element-then-pk order, or in
        the reverse of it for a high-score-first group.
        """
        rows = self._board_at(0, None, group)
        if self.group_hsf(group):
            rows = rows[::-1]

        def inside(row: Row) -> bool:
            score = self.natural(row.score)
            bottom = None if low is None else self.natural(low)
            top = None if high is None else self.natural(high)
            if bottom is not None and (score < bottom or (score == bottom and not low_inclusive)):
                return False
            return top is None or not (score > top or (score == top and not high_inclusive))

        out = [self.listed(rows, row, None) for row in rows if inside(row)]
        return out[::-1] if reverse else out

    def scan_by_rank(
        self,
        window_type: int,
        ts: int | None,
        group: tuple,
        low: int | None = None,
        high: int | None = None,
        low_inclusive: bool = True,
        high_inclusive: bool = True,
        mode: str = "ORDINAL",
    ) -> list[Listed]:
        """The records at positions ``low .. high`` (bounds inclusive or not; None: open)."""
        rows = self._board_at(window_type, ts, group)
        first = 0 if low is None else low + (0 if low_inclusive else 1)
        last = len(rows) - 1 if high is None else high - (0 if high_inclusive else 1)
        return [self.listed(rows, rows[i], mode) for i in range(first, min(last, len(rows) - 1) + 1)]

    # -- reads of several records, pages, percentiles, movement, Record Layer functions ------

    def ranks_of(self, pks: list[tuple], window_type: int, ts: int | None, group: tuple, mode: str) -> list:
        return [self.rank_and_entry(pk, window_type, ts, group, mode) for pk in pks]

    def board_of(self, pks: list[tuple], window_type: int, ts: int | None, group: tuple, mode: str) -> list[Listed]:
        """The window's board with only these records, each keeping its rank in the whole window."""
        rows = self._board_at(window_type, ts, group)
        return [self.listed(rows, row, mode) for row in rows if row.pk in set(pks)]

    def page(self, number: int, size: int, window_type: int, ts: int | None, group: tuple, mode: str) -> tuple:
        """(entries, total, page count) of 1-based page ``number``."""
        rows = self._board_at(window_type, ts, group)
        chosen = rows[(number - 1) * size : number * size]
        return [self.listed(rows, row, mode) for row in chosen], len(rows), -(-len(rows) // size)

    def percentile(self, pk: tuple, window_type: int, ts: int | None, group: tuple) -> float | None:
        """100 (total - 1 - ORDINAL rank) / total: records tied on the full key share it."""
        rows = self._board_at(window_type, ts, group)
        for row in rows:
            if row.pk == pk:
                return 100.0 * (len(rows) - 1 - self.ordinal(rows, row)) / len(rows)
        return None

    def score_for_percentile(self, percent: float, window_type: int, ts: int | None, group: tuple) -> float | None:
        """agoragames' score_for_percentile: scores from the worst (0) to the best (100), interpolated."""
        rows = self._board_at(window_type, ts, group)
        if not rows:
            return None
        worst_first = [row.score for row in reversed(rows)]
        index = (len(rows) - 1) * percent / 100
        low = int(index)
        if index == low or self.columns:  # column scores: the worse of the two, not interpolated
            return worst_first[low]
        return worst_first[low] + (index - low) * (worst_first[low + 1] - worst_first[low])

    def previous_window(self, window: tuple) -> tuple | None:
        """The window a read of the same type just before ``window`` starts resolves to."""
        try:
            return self.resolve(window[0], window[1] - 1)
        except ModelNotFound:
            return None

    def history(self, pk: tuple, window_type: int, ts: int | None, count: int, group: tuple, mode: str) -> list:
        """(window, entry or None) for the latest ``count`` windows of the type starting by ``ts``
        that a read at their start resolves to (ready ones only), latest first."""
        out = []
        candidates = [w for w, filling in (self.windows or {}).items() if w[0] == window_type and not filling]
        for window in sorted(candidates, key=lambda w: (w[1], -w[2]), reverse=True):
            if ts is not None and window[1] > ts:
                continue
            try:
                if self.resolve(window_type, window[1]) != window:
                    continue
            except ModelNotReady:
                continue
            rows = self.board(window, group)
            found = [self.listed(rows, row, mode) for row in rows if row.pk == pk]
            out.append((window, found[0] if found else None))
            if len(out) == count:
                break
        return out

    def rank_for_score_key(self, key: tuple, window_type: int, ts: int | None, group: tuple) -> int:
        """Records whose (stored score, ts, context...) sorts before ``key`` (its score directed)."""
        rows = self._board_at(window_type, ts, group)
        probe = (self.stored(key[0], group), *key[1:])
        return sum(1 for row in rows if row.element < probe)

    def score_trim(self, entries: list[tuple]) -> list[tuple]:
        """``entries`` as (group, score, ts, context): those some window's value would use, best
        first (by stored score, ts, context, then group); each distinct entry once."""
        if self.windows is None:
            kept = list(dict.fromkeys(entries))
        else:
            kept = []
            for _, start, end in self.windows:
                for group in {e[0] for e in entries}:
                    inside = [(i, e) for i, e in enumerate(entries) if e[0] == group and start <= e[2] < end]
                    if not inside:
                        continue
                    if self.aggregation == "SUM":
                        kept.extend(e for _, e in inside)
                    elif self.aggregation == "LATEST":
                        kept.append(max(inside, key=lambda found: (found[1][2], found[0]))[1])
                    else:
                        best = min(
                            inside, key=lambda found: (self.stored(found[1][1], group), found[1][2], *found[1][3])
                        )
                        kept.append(best[1])
            kept = list(dict.fromkeys(kept))

        def order(e: tuple) -> tuple:
            return (self.stored(e[1], e[0]), e[2], *e[3], fdb.tuple.pack(tuple(e[0])))

        return sorted(kept, key=order)


class LeagueModel:
    """Leagues (fdb_leaderboard/index/leagues.py) over a :class:`Model`, computed independently.

    Call :meth:`joined` after every write (and hide/restore) of a record, :meth:`forget` after
    its deletion.  A record joins each window of the league's type the first time it has a value
    there (hidden or not), in the tier's newest cohort while it has room; its tier comes from its
    latest earlier league window (up after a top-``promote`` ORDINAL rank in that cohort, else
    down after a bottom-``demote`` one; kept when unranked there or when that window is gone);
    new records start in tier 0.
    """

    def __init__(self, model: Model, window_type: int, size: int, tiers: int, promote: int, demote: int) -> None:
        self.model = model
        self.window_type, self.size, self.tiers, self.promote, self.demote = window_type, size, tiers, promote, demote
        self.members: dict[tuple, tuple[int, int]] = {}  # (window, pk) -> (tier, cohort)
        self.open: dict[tuple, tuple[int, int]] = {}  # (window, tier) -> (newest cohort, members)
        self.latest: dict[tuple, tuple[tuple, int, int]] = {}  # pk -> (window, tier, cohort)

    def windows(self) -> list[tuple]:
        return sorted(w for w, filling in (self.model.windows or {}).items() if w[0] == self.window_type)

    def cohort_rows(self, window: tuple, tier: int, cohort: int) -> list[Row]:
        return [row for row in self.model.board(window, ()) if self.members.get((window, row.pk)) == (tier, cohort)]

    def _tier_after(self, pk: tuple, window: tuple) -> tuple[int, bool]:
        """The tier ``pk`` joins ``window`` with, and whether the window is its newest league window."""
        if pk not in self.latest:
            return 0, True
        before, tier, cohort = self.latest[pk]
        if before not in (self.model.windows or {}):
            return tier, True
        if before[1] >= window[1]:
            return tier, False
        rows = self.cohort_rows(before, tier, cohort)
        mine = next((row for row in rows if row.pk == pk), None)
        if mine is None:
            return tier, True
        rank = sum(1 for row in rows if row.element < mine.element)
        after = sum(1 for row in rows if row.element > mine.element)
        if rank < self.promote:
            return min(tier + 1, self.tiers - 1), True
        if after < self.demote:
            return max(tier - 1, 0), True
        return tier, True

    def joined(self, pk: tuple) -> None:
        for window in self.windows():
            if (window, pk) in self.members or self.model.windows[window]:
                continue
            if self.model.value(window, (), pk) is None:
                continue
            tier, newest = self._tier_after(pk, window)
            cohort, count = self.open.get((window, tier), (0, 0))
            if count >= self.size:
                cohort, count = cohort + 1, 0
            self.open[(window, tier)] = (cohort, count + 1)
            self.members[(window, pk)] = (tier, cohort)
            if newest:
                self.latest[pk] = (window, tier, cohort)

    def forget(self, pk: tuple) -> None:
        self.latest.pop(pk, None)

    def expired(self) -> None:
        """Drop what windows no longer in the directory held."""
        live = set(self.model.windows or {})
        self.members = {key: value for key, value in self.members.items() if key[0] in live}
        self.open = {key: value for key, value in self.open.items() if key[0] in live}

    def cohort(self, window: tuple, tier: int, cohort: int, mode: str = "ORDINAL") -> list[Listed]:
        rows = self.cohort_rows(window, tier, cohort)
        return [self.model.listed(rows, row, mode) for row in rows]
