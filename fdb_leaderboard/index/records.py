"""Records and the write path: a record's entries, its head, and its value in every window.

A write reads the record's head (its value per window and group), the directory and the
group's sub-directory, then changes only the windows whose value changed: for each, one
primary-entry clear/set and one ranked-set remove/add (or move).  Every change of one call
happens in the caller's transaction, so a score changes the record and every window, or
nothing.

A hidden record (``RecordHead.hidden``, see ``hiding.py``) is written the same way, but its
values go to the hidden B-tree instead of the primary B-tree and ranked sets: it is ranked
nowhere, and its head stays exact, so restoring it is one add per window.  The index's score
rules (``rules.py``) are checked with what the write reads anyway: the directory holds them and
the head counts submissions (below index format 3 a counter may count short; a limited write
then also counts the record's entries in the windows it limits: see ``rules.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from .. import formats
from ..errors import InvalidArgument
from ..proto import index_pb2
from ..rankedset import Steps, run_alone, run_together
from ..store.api import MAX_VALUE_SIZE, Future, KeyValue
from . import tuplecodec as tuples
from .aggregation import Value
from .directory import ALL_TIME, INT64_MAX, Directory, Window
from .latest import entry_timestamp
from .layout import encode_latest_timestamp, extensions_end, score_prefix
from .leagues import LeagueKeeper, lockstep
from .rules import ScoreRules
from .transaction import IndexTransaction, RecordKey
from .values import check_items, check_timestamp, normalize_score

MAX_INDEX_KEY = 500  # every index key fits both backends (LMDB's limit is 511 bytes)


@dataclasses.dataclass(frozen=True)
class Entry:
    """One timestamped score of a record."""

    score: int | float | tuple  # a tuple of ints in an index ranking by columns
    timestamp: int | None  # in the index's timebase; None in a write: now, when it is applied
    context: tuple = ()
    group: tuple = ()


class _CheckedEntry(NamedTuple):
    """An entry after validation, with what indexing it needs (a tuple: built per entry written)."""

    score: int | float | tuple  # a tuple of ints in an index ranking by columns
    timestamp: int
    context: tuple
    group: tuple
    group_bytes: bytes
    element: bytes


class RecordWriter:
    """The write path inside one transaction (``txn``)."""

    def __init__(self, txn: IndexTransaction) -> None:
        self.txn = txn
        self.tr = txn.tr
        self.layout = txn.layout
        self.space = txn.space
        self.settings = txn.settings
        self._latest_noted: int | None = None  # the largest timestamp this transaction MAXed in
        # Whether writes count against the submission limits (an admin's bulk load does not).
        self.limited = True
        leagues = self.settings.leagues
        self.leagues = LeagueKeeper(txn, leagues) if leagues is not None else None
        if leagues is not None:  # an index without leagues keeps the plain methods: no cost added
            self.league_type = leagues.window_type
            self.add_steps = self._league_add_steps  # type: ignore[method-assign]
            self.remove_steps = self._league_remove_steps  # type: ignore[method-assign]
            self.move_steps = self._league_move_steps  # type: ignore[method-assign]

    def _ranked(self, window: Window, group_bytes: bytes, element: bytes, pk_flat: bytes) -> bool:
        limit = self.txn.rank_limit(window)
        return limit is None or (limit != b"" and group_bytes + element + pk_flat <= limit)

    # -- one window's index entries ------------------------------------------------------

    def value_key(
        self, window: Window, group_bytes: bytes, element: bytes, pk_flat: bytes, hidden: bool = False
    ) -> bytes:
        """The value's key in the primary B-tree, or in the hidden B-tree for a ``hidden`` record."""
        tree = self.layout.hidden_values if hidden else self.layout.primary
        return tree + window.key_bytes + group_bytes + element + pk_flat

    def index_add(
        self, window: Window, group_bytes: bytes, element: bytes, pk_flat: bytes, hidden: bool = False
    ) -> None:
        run_alone(self.add_steps(window, group_bytes, element, pk_flat, hidden))

    def index_remove(self, window: Window, group_bytes: bytes, element: bytes, pk_flat: bytes) -> None:
        run_alone(self.remove_steps(window, group_bytes, element, pk_flat))

    def index_move(self, window: Window, group_bytes: bytes, old: bytes, new: bytes, pk_flat: bytes) -> None:
        """A record's value in a window changes from element ``old`` to ``new``."""
        run_alone(self.move_steps(window, group_bytes, old, new, pk_flat))

    # The same three as steps (see rankedset.run_together): a write changing several windows
    # runs them together, so it costs the read rounds of one window, not of all.  A ``hidden``
    # record's value only moves in the hidden B-tree: it is ranked nowhere.

    def add_steps(
        self, window: Window, group_bytes: bytes, element: bytes, pk_flat: bytes, hidden: bool = False
    ) -> Steps[None]:
        self.tr.set(self.value_key(window, group_bytes, element, pk_flat, hidden), b"")
        if not hidden and self._ranked(window, group_bytes, element, pk_flat):
            yield from self.space.ranked_set(window, group_bytes).add_steps(self.tr, element)
            if self.settings.dense_ranks:
                self._dense_add(window, group_bytes, element)

    def _issue_shared(self, window: Window, group_bytes: bytes, element: bytes) -> Future[list[KeyValue]]:
        """A read telling whether another ranked record holds ``element`` (for sets that keep
        one per element): after the caller's clear of its own key, any row in the range."""
        shared = self.layout.primary + window.key_bytes + group_bytes + element
        end = extensions_end(shared)
        limit = self.txn.rank_limit(window)
        if limit is not None:  # while the set is built, only records up to the limit are in it
            end = min(end, self.layout.primary + window.key_bytes + limit + b"\x00")
        return self.tr.get_range_async(shared, end, 1)

    def remove_steps(
        self, window: Window, group_bytes: bytes, element: bytes, pk_flat: bytes, hidden: bool = False
    ) -> Steps[None]:
        self.tr.clear(self.value_key(window, group_bytes, element, pk_flat, hidden))
        if hidden or not self._ranked(window, group_bytes, element, pk_flat):
            return
        ranked = self.space.ranked_set(window, group_bytes)
        if ranked.count_duplicates:
            yield from ranked.remove_steps(self.tr, element)
        else:
            # Records with identical score keys share one element: keep it while one remains.  The
            # removal's reads go out with the check, and the removal stops there if it must not run.
            shared = self._issue_shared(window, group_bytes, element)
            removal = ranked.remove_steps(self.tr, element)
            next(removal)  # issues its reads; an update always yields before it writes
            yield
            if shared.value:
                removal.close()
            else:
                yield from removal
        if self.settings.dense_ranks:
            self._dense_remove(window, group_bytes, element)

    def move_steps(
        self, window: Window, group_bytes: bytes, old: bytes, new: bytes, pk_flat: bytes, hidden: bool = False
    ) -> Steps[None]:
        self.tr.clear(self.value_key(window, group_bytes, old, pk_flat, hidden))
        self.tr.set(self.value_key(window, group_bytes, new, pk_flat, hidden), b"")
        if hidden:
            return
        ranked_old = self._ranked(window, group_bytes, old, pk_flat)
        ranked_new = self._ranked(window, group_bytes, new, pk_flat)
        if self.settings.dense_ranks and score_prefix(old) != score_prefix(new):
            if ranked_old:
                self._dense_remove(window, group_bytes, old)
            if ranked_new:
                self._dense_add(window, group_bytes, new)
        ranked = self.space.ranked_set(window, group_bytes)
        if ranked_old and not ranked.count_duplicates:
            # As in remove_steps: the move's reads go out with the check whether another record
            # keeps ``old``; in that rare case the move gives way to an add of ``new``.
            shared = self._issue_shared(window, group_bytes, old)
            moving = ranked.move_steps(self.tr, old, new) if ranked_new else ranked.remove_steps(self.tr, old)
            next(moving)
            yield
            if not shared.value:
                yield from moving
                return
            moving.close()
            ranked_old = False
        if ranked_old and ranked_new:
            yield from ranked.move_steps(self.tr, old, new)
        elif ranked_old:
            yield from ranked.remove_steps(self.tr, old)
        elif ranked_new:
            yield from ranked.add_steps(self.tr, new)

    # -- leagues (leagues.py): a league window's writes keep its cohorts too, in the same rounds --

    def _league_add_steps(
        self, window: Window, group_bytes: bytes, element: bytes, pk_flat: bytes, hidden: bool = False
    ) -> Steps[None]:
        steps = RecordWriter.add_steps(self, window, group_bytes, element, pk_flat, hidden)
        if window.type != self.league_type:
            return steps
        return lockstep([steps, self.leagues.add_steps(window, element, pk_flat, hidden)])  # type: ignore[union-attr]

    def _league_remove_steps(
        self, window: Window, group_bytes: bytes, element: bytes, pk_flat: bytes, hidden: bool = False
    ) -> Steps[None]:
        steps = RecordWriter.remove_steps(self, window, group_bytes, element, pk_flat, hidden)
        if window.type != self.league_type or hidden:
            return steps
        return lockstep([steps, self.leagues.remove_steps(window, element, pk_flat)])  # type: ignore[union-attr]

    def _league_move_steps(
        self, window: Window, group_bytes: bytes, old: bytes, new: bytes, pk_flat: bytes, hidden: bool = False
    ) -> Steps[None]:
        steps = RecordWriter.move_steps(self, window, group_bytes, old, new, pk_flat, hidden)
        if window.type != self.league_type or hidden:
            return steps
        return lockstep([steps, self.leagues.move_steps(window, old, new, pk_flat)])  # type: ignore[union-attr]

    # -- distinct scores (dense_ranks) ------------------------------------------------------
    # A window's dense set holds each stored score some ranked record has, once.  Adding reads
    # one level-0 key when the score is there already; removing checks the primary B-tree for
    # another ranked record with the score (one range read of at most one key) first.  These
    # run after the window's ranked-set steps, one read at a time: a dense index's writes cost
    # a few read rounds more on a network store.

    def _shared(self, window: Window, group_bytes: bytes, element: bytes) -> bool:
        """Whether another ranked record holds ``element`` (or a key starting with it)."""
        return bool(self._issue_shared(window, group_bytes, element).value)

    def _dense_add(self, window: Window, group_bytes: bytes, element: bytes) -> None:
        self.space.dense_set(window, group_bytes).add(self.tr, score_prefix(element))

    def _dense_remove(self, window: Window, group_bytes: bytes, element: bytes) -> None:
        """Call after the record's primary entry was cleared."""
        prefix = score_prefix(element)
        if not self._shared(window, group_bytes, prefix):
            self.space.dense_set(window, group_bytes).remove(self.tr, prefix)

    # -- records ---------------------------------------------------------------------------

    def _state_value(self, state: index_pb2.WindowState) -> Value:
        """A stored window state as a Value (score and context decoded only for SUM)."""
        if self.space.aggregation.name != "SUM":
            return Value(0, element_timestamp(state.element), state.seq, (), state.element)
        stored, ts, *context = tuples.unpack(state.element)
        return Value(self.txn.directed(stored, state.group), ts, state.seq, tuple(context), state.element)

    def _check_entry(self, entry: Entry) -> _CheckedEntry:
        """The validated entry with its packed group (its element comes with :meth:`_placed`)."""
        if not isinstance(entry, Entry):
            raise InvalidArgument(f"expected an Entry, not {type(entry).__name__}")
        settings = self.settings
        score = normalize_score(entry.score, settings.score_type, settings.columns)
        if entry.timestamp is None:
            ts = self.txn.now()
        else:
            ts = check_timestamp(entry.timestamp, self.space.checked_timebase)
        if ts == INT64_MAX:
            raise InvalidArgument(f"timestamp {ts} is the all-time window's exclusive end: no window can hold it")
        context = check_items(entry.context, "context")
        group = check_items(entry.group, "group")
        if len(group) != settings.group_size:
            raise InvalidArgument(f"this index groups by {settings.group_size} element(s); got group {group!r}")
        if len(context) != settings.context_size:
            raise InvalidArgument(f"this index takes {settings.context_size} context element(s); got {context!r}")
        return _CheckedEntry(score, ts, context, group, tuples.pack(group), b"")

    def _placed(self, entry: _CheckedEntry, pk_flat: bytes) -> _CheckedEntry:
        """``entry`` with its ranked-set element, which its group's score direction decides."""
        element = self.txn.packer(entry.group_bytes)(entry.score, entry.timestamp, entry.context)
        # The longest key this entry can produce: the widest window key, one more byte in case the
        # score is negated later (a direction change), every element byte escaped in a node key.
        widest = 6
        longest = max(
            len(self.layout.primary) + widest + len(entry.group_bytes) + len(element) + 1 + len(pk_flat),
            len(self.layout.secondary) + widest + len(entry.group_bytes) + 4 + 2 * (len(element) + 1),
        )
        if longest > MAX_INDEX_KEY:
            raise InvalidArgument(
                f"primary key, group and context are too large: they make a {longest}-byte index key, "
                f"more than the {MAX_INDEX_KEY} allowed"
            )
        return entry._replace(element=element)

    def _check_entries(self, entries: Iterable[Entry], pk_nested: bytes, pk_flat: bytes) -> list[_CheckedEntry]:
        """Validate ``entries`` and read, together, what writing them needs: the record's head,
        the directory and the sub-directories of their groups (one round trip)."""
        if isinstance(entries, str | bytes) or not isinstance(entries, Iterable):
            raise InvalidArgument(f"entries must be a list of Entry, not {type(entries).__name__}")
        checked = [self._check_entry(entry) for entry in entries]
        self.txn.prefetch(heads=[pk_nested], groups={entry.group_bytes for entry in checked})
        return [self._placed(entry, pk_flat) for entry in checked]

    def add_entries(self, pk: object, entries: Iterable[Entry]) -> int:
        """Add entries to a record (created if new); returns how many window values changed."""
        pk, pk_nested, pk_flat = self.txn.pk(pk)
        entries = self._check_entries(entries, pk_nested, pk_flat)
        head = self.txn.read_head(pk_nested) or index_pb2.RecordHead()
        directory = self.txn.directory()
        rules = self.txn.rules() if directory is not None and directory.rules is not None else None
        if rules:
            self._check_rules(rules, head, entries)
        aggregation = self.space.aggregation
        states = {(state.lb_key, state.group): state for state in head.windows}
        current: dict[tuple[int, bytes], Value] = {}
        added: dict[tuple[int, bytes], int] = {}  # entries submitted into each window and group
        seq = head.next_seq
        for entry in entries:
            self.tr.set(
                self.layout.entry_key(pk_nested, entry.timestamp, seq),
                tuples.pack((entry.group, entry.score, entry.context)),
            )
            if directory is not None:
                group_bytes = entry.group_bytes
                value = Value(entry.score, entry.timestamp, seq, entry.context, entry.element)
                for window in directory.containing(entry.timestamp):
                    key = (window.lb_key, group_bytes)
                    if not self.txn.maintains(window, pk_nested):
                        if key in states:  # a rebuilt window's state, to be filled: its count goes on
                            added[key] = added.get(key, 0) + 1
                        continue
                    added[key] = added.get(key, 0) + 1
                    before = current.get(key)
                    if before is None and key in states:
                        before = self._state_value(states[key])
                    after = aggregation.add(before, value, self.txn.packer(group_bytes))
                    if after is not None:
                        current[key] = after
            seq += 1
        head.next_seq = seq
        submissions = {key: n + (states[key].submissions if key in states else 0) for key, n in added.items()}
        if rules and rules.max_per_window:
            if not formats.allows(self.space.format, formats.EXACT_SUBMISSIONS):
                self._count_held(submissions, states, directory, pk_nested)  # type: ignore[arg-type]
            self._check_windows(rules, directory, submissions)  # type: ignore[arg-type]
        self._note_timestamps(entry.timestamp for entry in entries)
        return self._apply(head, states, current, (), pk_nested, pk_flat, directory, submissions)

    def save_record(self, pk: object, entries: Iterable[Entry]) -> int:
        """Replace all of a record's entries; returns how many window values changed."""
        pk, pk_nested, pk_flat = self.txn.pk(pk)
        entries = self._check_entries(entries, pk_nested, pk_flat)
        old = self.txn.read_head(pk_nested)
        if old is not None:  # a record without a head has no entries
            self.tr.clear_range(*self.layout.entries_range(pk_nested))
        values: list[tuple[bytes, Value]] = []
        for seq, entry in enumerate(entries):
            self.tr.set(
                self.layout.entry_key(pk_nested, entry.timestamp, seq),
                tuples.pack((entry.group, entry.score, entry.context)),
            )
            values.append((entry.group_bytes, Value(entry.score, entry.timestamp, seq, entry.context, entry.element)))
        directory = self.txn.directory()
        head = old or index_pb2.RecordHead()
        rules = self.txn.rules() if directory is not None and directory.rules is not None else None
        if rules:
            self._check_rules(rules, head, entries)
        head.next_seq = len(entries)
        del head.carried[:]  # the record starts over: nothing folded by a trim remains
        # The record starts over: states of windows to be filled, which a fill recomputes, go
        # (their submission counts included), and its entries count anew; but a build from
        # sorted data keeps what it took, to redo the record (see build.py).
        states = {
            (state.lb_key, state.group): state
            for state in head.windows
            if directory is None
            or (window := directory.by_key(state.lb_key)) is None
            or self.txn.maintains(window, pk_nested)
            or self.txn.sorted_build(window)
        }
        submissions: dict[tuple[int, bytes], int] = {}
        computed = self.fold(values, directory, pk_nested, {}, counts=submissions) if directory is not None else {}
        for key in states.keys() - submissions.keys():  # a build's state kept: its entries count anew
            window = directory.by_key(key[0]) if directory is not None else None
            if window is not None and self.txn.sorted_build(window) and not self.txn.maintains(window, pk_nested):
                submissions[key] = sum(1 for e in entries if e.group_bytes == key[1] and window.contains(e.timestamp))
        if rules and rules.max_per_window:
            self._check_windows(rules, directory, submissions)  # type: ignore[arg-type]
        gone = [
            key
            for key in states
            if key not in computed
            and (window := directory.by_key(key[0]) if directory is not None else None) is not None
            and self.txn.maintains(window, pk_nested)
        ]
        self._note_timestamps(entry.timestamp for entry in entries)
        return self._apply(head, states, computed, gone, pk_nested, pk_flat, directory, submissions)

    def save_new(self, key: RecordKey, entry: Entry) -> None:
        """:meth:`save_record` of a record with no head and one entry (most records of a bulk
        load), in an index without leagues, by a write the submission limits do not count: the
        same writes (the same head bytes, its states in the directory's order), without the
        general path's bookkeeping.  The caller read the record's head (absent) beforehand."""
        pk_nested, pk_flat, txn = key.nested, key.flat, self.txn
        checked = self._placed(self._check_entry(entry), pk_flat)
        directory = txn.directory()
        if directory is not None and directory.rules is not None:
            txn.rules().check_score(checked.score)
        self.tr.set(
            self.layout.entry_key(pk_nested, checked.timestamp, 0),
            tuples.pack((checked.group, checked.score, checked.context)),
        )
        head = index_pb2.RecordHead(next_seq=1)
        if directory is not None:
            group_bytes, element = checked.group_bytes, checked.element
            building = txn.building
            updates = []
            add = head.windows.add
            for window in directory.containing(checked.timestamp):
                lb_key = window.lb_key
                if lb_key in building:
                    txn.emit(window, group_bytes, element, pk_flat, False)
                elif txn.maintains(window, pk_nested):
                    updates.append(self.add_steps(window, group_bytes, element, pk_flat))
                else:
                    continue
                add(lb_key=lb_key, group=group_bytes, element=element, seq=0, submissions=1)
            run_together(updates)
        txn.note_written(pk_nested)
        self._note_timestamps((checked.timestamp,))
        self.tr.set(self.layout.head_key(pk_nested), head_bytes(head))

    def _check_rules(self, rules: ScoreRules, head: index_pb2.RecordHead, entries: Sequence[_CheckedEntry]) -> None:
        """Refuse entries out of the score range and, for a limited write, beyond the minute's
        limit (counted into ``head``)."""
        for entry in entries:
            rules.check_score(entry.score)
        if self.limited:
            rules.count_minute(head, len(entries), self.space.clock())

    def _count_held(
        self,
        submissions: dict[tuple[int, bytes], int],
        states: dict[tuple[int, bytes], index_pb2.WindowState],
        directory: Directory,
        pk_nested: bytes,
    ) -> None:
        """Raise ``submissions`` of the limited windows the record had a state in to the entries
        it holds there, this write's included (an index below format 3 may count short: see
        rules.py).  One range read per such window, issued together."""
        limited = [
            (key, window)
            for key in submissions
            if key in states
            and (window := directory.by_key(key[0])) is not None
            and window.type != ALL_TIME
            and not window.filling
        ]
        reads = [self.txn.issue_entries(pk_nested, window.start, window.end) for _, window in limited]
        for (key, _), entries in zip(limited, reads, strict=True):
            held = sum(1 for _, _, (group, _, _) in entries() if tuples.pack(tuple(group)) == key[1])
            submissions[key] = max(submissions[key], held)

    def _check_windows(
        self, rules: ScoreRules, directory: Directory, submissions: dict[tuple[int, bytes], int]
    ) -> None:
        if self.limited:
            windows = ((directory.by_key(lb_key), count) for (lb_key, _), count in submissions.items())
            counts = [(w, n) for w, n in windows if w is not None and w.type != ALL_TIME and not w.filling]
            rules.check_windows(counts, self.txn.now(), self.space.timebase)

    def delete_record(self, pk: object) -> bool:
        """Remove a record and its value from every window; False if there was none."""
        pk, pk_nested, pk_flat = self.txn.pk(pk)
        self.txn.prefetch(heads=[pk_nested])
        latest = self.txn.latest
        entries = self.layout.entries_range(pk_nested)
        # Its latest entry (keys are by time), where a deletion may start the latest's recompute.
        last = self.tr.get_range_async(*entries, 1, True) if latest.recomputes else None
        latest.prefetch()  # what the latest's check reads, in the same round
        head = self.txn.read_head(pk_nested)
        if head is None:
            return False
        if last is not None:
            found = last.value
            prefix = len(entries[0]) - 1  # the entries' subspace and the record's key
            latest.removed(entry_timestamp(found[0][0], prefix) if found else None)
        self.remove_record(head, pk_nested, pk_flat)
        return True

    def remove_values(
        self, head: index_pb2.RecordHead, pk_nested: bytes, pk_flat: bytes, group: bytes | None = None
    ) -> list[index_pb2.WindowState]:
        """Remove the record's values (those of ``group`` only, if given) from every window it is
        maintained in, together; returns the states left (of other groups)."""
        directory = self.txn.directory()
        removals = []
        left = []
        lost = []  # values a build from sorted data may hold: it is told, with the record
        for state in head.windows:
            if group is not None and state.group != group:
                left.append(state)
                continue
            window = directory.by_key(state.lb_key) if directory is not None else None
            if window is not None and self.txn.maintains(window, pk_nested):
                removals.append(self.remove_steps(window, state.group, state.element, pk_flat, head.hidden))
            elif window is not None and window.filling:
                lost.append(state)
        run_together(removals)
        self.txn.note_written(pk_nested, lost)
        return left

    def remove_record(self, head: index_pb2.RecordHead, pk_nested: bytes, pk_flat: bytes) -> None:
        """Delete a record whose head is ``head``: its values, head, entries, metadata, hidden note."""
        self.remove_values(head, pk_nested, pk_flat)
        self.tr.clear(self.layout.head_key(pk_nested))
        self.tr.clear_range(*self.layout.entries_range(pk_nested))
        self.tr.clear(self.layout.metadata_key(pk_nested))  # display data goes with the record
        if head.hidden:
            self.tr.clear(self.layout.hidden_key(pk_nested))
        if self.leagues is not None:
            self.leagues.forget(pk_nested)

    def _apply(
        self,
        head: index_pb2.RecordHead,
        states: dict[tuple[int, bytes], index_pb2.WindowState],
        changes: dict[tuple[int, bytes], Value],
        gone: Sequence[tuple[int, bytes]],
        pk_nested: bytes,
        pk_flat: bytes,
        directory: Directory | None,
        submissions: dict[tuple[int, bytes], int],
    ) -> int:
        """Move the record's changed window values in the index and write its head.

        ``changes`` maps (window key, group) to the new value, ``gone`` lists those whose value
        disappears, ``submissions`` the new submission counts.  Returns how many values were
        added, moved or removed (none is ranked while the record is hidden).
        """
        hidden = head.hidden
        updates: list[Steps[None]] = []  # each of another window's (or group's) ranked set
        indexed = changes
        if self.txn.building and (changes or gone):
            changes, indexed, gone = self._build_values(states, changes, gone, pk_nested, pk_flat, hidden, directory)  # type: ignore[arg-type]
        if indexed or gone:  # only then is there a directory
            window_of: Callable[[int], Window] = directory.by_key  # type: ignore[union-attr,assignment]
            for key in gone:
                updates.append(self.remove_steps(window_of(key[0]), key[1], states.pop(key).element, pk_flat, hidden))
            for key, value in indexed.items():
                old = states.get(key)
                window = window_of(key[0])
                if old is None:
                    updates.append(self.add_steps(window, key[1], value.element, pk_flat, hidden))
                elif old.element != value.element:
                    updates.append(self.move_steps(window, key[1], old.element, value.element, pk_flat, hidden))
        run_together(updates)
        self.txn.note_written(pk_nested)
        kept = [  # values of deleted windows go; changed ones are written anew
            state
            for key, state in states.items()
            if key not in changes and directory is not None and directory.by_key(key[0]) is not None
        ]
        self.write_head(head, kept, changes, pk_nested, submissions)
        return 0 if hidden else len(updates)

    def _build_values(
        self,
        states: dict[tuple[int, bytes], index_pb2.WindowState],
        changes: dict[tuple[int, bytes], Value],
        gone: Sequence[tuple[int, bytes]],
        pk_nested: bytes,
        pk_flat: bytes,
        hidden: bool,
        directory: Directory,
    ) -> tuple[dict[tuple[int, bytes], Value], dict[tuple[int, bytes], Value], list[tuple[int, bytes]]]:
        """``changes`` and ``gone`` as writes to windows this transaction builds leave them: the
        values for the head, those for the index, and the removals.  A first value in such a
        window goes to the build and to the head; a record that has one there already (loaded
        twice) keeps it in its head and is noted for the build to redo, like a write meanwhile."""
        building = self.txn.building
        for_head: dict[tuple[int, bytes], Value] = {}
        indexed: dict[tuple[int, bytes], Value] = {}
        redo: set[int] = set()
        for key, value in changes.items():
            if key[0] not in building:
                for_head[key] = indexed[key] = value
            elif key in states:
                redo.add(key[0])
            else:
                for_head[key] = value
                self.txn.emit(directory.by_key(key[0]), key[1], value.element, pk_flat, hidden)  # type: ignore[arg-type]
        left = []
        for key in gone:
            if key[0] in building:
                redo.add(key[0])
            else:
                left.append(key)
        for lb_key in redo:
            self.tr.set(self.layout.rewrite_key(directory.by_key(lb_key).key_bytes, pk_nested), b"")  # type: ignore[union-attr]
        return for_head, indexed, left

    def write_head(
        self,
        head: index_pb2.RecordHead,
        kept: Sequence[index_pb2.WindowState],
        values: dict[tuple[int, bytes], Value],
        pk_nested: bytes,
        submissions: dict[tuple[int, bytes], int],
    ) -> None:
        """Write ``head`` with the window states ``kept`` (taken from it) and those of ``values``;
        ``submissions`` gives the states' submission counts that changed."""
        if submissions:
            for state in kept:
                count = submissions.get((state.lb_key, state.group))
                if count is not None:
                    state.submissions = count
        del head.windows[:]
        head.windows.extend(kept)
        # New states are filled in the messages the field adds: building each WindowState apart
        # and copying it in took 1.3-1.8x as long (four states, head serialized included).
        add = head.windows.add
        for key, value in values.items():
            add(lb_key=key[0], group=key[1], element=value.element, seq=value.seq, submissions=submissions.get(key, 0))
        self.tr.set(self.layout.head_key(pk_nested), head_bytes(head))

    def _note_timestamps(self, timestamps: Iterable[int]) -> None:
        latest = max(timestamps, default=None)
        # A MAX at or below one this transaction already made changes nothing: skip it (a batch
        # of records then makes a few MAX writes, not one per record).
        if latest is not None and (self._latest_noted is None or latest > self._latest_noted):
            self.tr.max(self.layout.latest_timestamp_key, encode_latest_timestamp(latest))
            self._latest_noted = latest

    def fold(
        self,
        values: Sequence[tuple[bytes, Value]],
        directory: Directory,
        pk_nested: bytes,
        carried: dict[bytes, Value],
        only: Sequence[Window] | None = None,
        counts: dict[tuple[int, bytes], int] | None = None,
    ) -> dict[tuple[int, bytes], Value]:
        """Each (window, group) value from scratch, for maintained windows (or ``only`` those);
        ``counts``, if given, receives how many of ``values`` fell in each."""
        buckets: dict[tuple[int, bytes], list[Value]] = {}
        wanted = {window.lb_key for window in only} if only is not None else None
        for group_bytes, value in values:
            for window in directory.containing(value.ts):
                if wanted is not None:
                    if window.lb_key not in wanted:
                        continue
                elif not self.txn.maintains(window, pk_nested):
                    continue
                buckets.setdefault((window.lb_key, group_bytes), []).append(value)
        for window in directory.of_type(ALL_TIME):
            if (wanted is None and not self.txn.maintains(window, pk_nested)) or (
                wanted is not None and window.lb_key not in wanted
            ):
                continue
            for group_bytes in carried:
                buckets.setdefault((window.lb_key, group_bytes), [])
        out = {}
        aggregation = self.space.aggregation
        if counts is not None:
            counts.update((key, len(bucket)) for key, bucket in buckets.items() if bucket)
        for (lb_key, group_bytes), bucket in buckets.items():
            window = directory.by_key(lb_key)
            extra = carried.get(group_bytes) if window is not None and window.type == ALL_TIME else None
            if len(bucket) == 1 and extra is None:
                value = bucket[0]  # every aggregation folds one entry to itself (loads take this way)
            else:
                bucket.sort(key=lambda value: (value.ts, value.seq))
                value = aggregation.fold(bucket, self.txn.packer(group_bytes), extra)
            if value is not None:
                out[(lb_key, group_bytes)] = value
        return out

    def carried_totals(self, head: index_pb2.RecordHead) -> dict[bytes, Value]:
        """The totals a SUM trim folded, per group, as values to fold in (see :meth:`fold`)."""
        out = {}
        for carried in head.carried:
            context = tuples.unpack(carried.context) if carried.context else ()
            out[carried.group] = Value(carried.total, carried.ts, carried.seq, tuple(context), b"")
        return out


def element_timestamp(element: bytes) -> int:
    """The timestamp a ranked-set element holds: (stored score, timestamp, context...)."""
    return tuples.unpack_with_offsets(element, 2)[0][1]


def head_bytes(head: index_pb2.RecordHead) -> bytes:
    data = head.SerializeToString()
    if len(data) > MAX_VALUE_SIZE:
        raise InvalidArgument(
            f"the record is in too many windows and groups ({len(head.windows)}): its head would take "
            f"{len(data)} bytes; expire old windows or trim it"
        )
    return data
