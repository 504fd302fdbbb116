"""The window directory's maintenance: window updates, expiry, keep-ahead, sub-directories.

Every change here is one transaction that rewrites the directory (one value) and clears the
key ranges of deleted or rebuilt windows; windows that need data from stored records are
marked filling and completed by ``fill.py``.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence

from .. import formats
from ..errors import FailedPrecondition, InvalidArgument
from ..store.api import strinc
from . import tuplecodec as tuples
from .calendar import CalendarPeriods
from .directory import (
    ALL_TIME,
    INT64_MAX,
    INT64_MIN,
    MAX_WINDOWS,
    Directory,
    Rebuild,
    Window,
    WindowUpdate,
    check_window_type,
    sub_directory_bytes,
    sub_directory_from_bytes,
)
from .layout import extensions_end
from .transaction import IndexTransaction
from .values import check_items, check_timestamp

_COLUMNS_DIRECTED = (
    "a multi-column index ranks each column in the direction it was created with: high_score_first does not apply"
)


@dataclasses.dataclass(frozen=True)
class WindowUpdateResult:
    changed: bool
    added: tuple[Window, ...]
    deleted: tuple[Window, ...]
    filling: tuple[Window, ...]


class WindowEditor:
    """Changes to the window directory inside one transaction (``txn``)."""

    def __init__(self, txn: IndexTransaction) -> None:
        self.txn = txn
        self.tr = txn.tr
        self.layout = txn.layout
        self.space = txn.space
        self.settings = txn.settings

    # -- sub-directories -------------------------------------------------------------------

    def save_sub_directory(self, group: object, high_score_first: bool) -> None:
        if self.settings.columns:
            raise FailedPrecondition(_COLUMNS_DIRECTED)
        group = check_items(group, "group")
        if len(group) != self.settings.group_size or not group:
            raise InvalidArgument(
                f"a sub-directory needs a group of {self.settings.group_size} element(s), not {group!r}"
            )
        group_bytes = tuples.pack(group)
        directory = self.txn.directory()
        filling = directory.filling() if directory is not None else []
        if filling and self.txn.high_score_first(group_bytes) != high_score_first:
            # A window being filled does not show yet whether the group has scores, and fills
            # what it finds in the new direction: after a trim, that may no longer be exact.
            raise FailedPrecondition(
                f"{filling[0].describe()} is being filled: change a group's high_score_first once the fill is done"
            )
        if directory is not None:
            for window in directory.windows:
                # Primary entries, not ranked-set nodes: an emptied group keeps its sentinels.  A
                # hidden record's values count too: restored, they must keep their direction.
                prefixes = [
                    tree + window.key_bytes + group_bytes for tree in (self.layout.primary, self.layout.hidden_values)
                ]
                if any(self.tr.get_ranges([(prefix, extensions_end(prefix), 1, False) for prefix in prefixes])):
                    current = self.txn.high_score_first(group_bytes)
                    if current == high_score_first:
                        break
                    raise FailedPrecondition(
                        f"group {group!r} already has scores in {window.describe()}: "
                        "its high_score_first can only be set before it has scores"
                    )
        self.tr.set(self.layout.sub_directory_key(group_bytes), sub_directory_bytes(high_score_first))
        self.txn.changed_metadata()
        self.txn.set_high_score_first(group_bytes, high_score_first)

    def sub_directories(self) -> dict[tuple, bool]:
        begin, end = self.layout.sub_directories_range()
        out = {}
        for key, value in self.tr.get_range(begin, end):
            out[tuples.unpack(key[len(self.layout.secondary) :])[1:]] = sub_directory_from_bytes(value)
        return out

    # -- windows -----------------------------------------------------------------------------

    def update_windows(self, update: WindowUpdate) -> WindowUpdateResult:
        """Apply a window-update specification (see :class:`WindowUpdate`)."""
        requested = update.requested_windows()
        if not isinstance(update.rebuild, Rebuild):
            raise InvalidArgument(f"rebuild must be a Rebuild policy, not {update.rebuild!r}")
        if update.high_score_first is None:  # keep the index's direction
            update = dataclasses.replace(update, high_score_first=self.txn.default_high_score_first())
        elif not isinstance(update.high_score_first, bool):
            raise InvalidArgument(f"high_score_first must be True, False or None, not {update.high_score_first!r}")
        elif self.settings.columns and not update.high_score_first:
            raise FailedPrecondition(_COLUMNS_DIRECTED)
        old = self.txn.directory()
        rebuild_all = update.rebuild is Rebuild.ALWAYS
        changed = old is None
        if old is None:
            old = Directory(update.update_timestamp, update.high_score_first, 0, ())
        elif old.high_score_first != update.high_score_first:
            if update.rebuild is Rebuild.NEVER:
                raise FailedPrecondition("changing high_score_first needs a rebuild of every window (rebuild=NEVER)")
            rebuild_all = changed = True
        windows: list[Window] = []
        deleted: list[Window] = []
        for window in old.windows:
            if update.delete_before is not None and window.type != ALL_TIME and window.end <= update.delete_before:
                deleted.append(window)
            else:
                windows.append(window)
        next_key = old.next_key
        added: list[Window] = []
        present = {(w.type, w.start, w.end) for w in windows}

        def add(window_type: int, start: int, end: int) -> None:
            nonlocal next_key
            if (window_type, start, end) in present:
                return
            present.add((window_type, start, end))
            window = Window(window_type, start, end, next_key, update.nlevels)
            next_key += 1
            windows.append(window)
            added.append(window)

        if update.all_time and not any(window.type == ALL_TIME for window in windows):
            add(ALL_TIME, INT64_MIN, INT64_MAX)
        for window_type, start, end in requested:
            add(window_type, start, end)
        trimmed_before = self.txn.trimmed_before()
        latest = self.txn.latest_timestamp()
        refill = list(added)
        if rebuild_all:
            refill.extend(window for window in windows if window not in added)
        filling: list[Window] = []
        # After a trim, every existing window's value entries are still stored, so refills
        # are exact, except a BEST index flipping high_score_first (other entries win then).
        flips_best = rebuild_all and old.high_score_first != update.high_score_first
        flips_best = flips_best and self.space.aggregation.name == "BEST"
        for window in refill:
            inexact = window in added or flips_best
            if inexact and trimmed_before is not None and window.start < trimmed_before:
                raise FailedPrecondition(
                    f"{window.describe()} starts before {trimmed_before}, where entries were trimmed: "
                    "it cannot be filled exactly"
                )
            if latest is None or window.start > latest:
                continue  # no stored entry can fall in it: complete as it is
            if update.rebuild is Rebuild.NEVER:
                raise FailedPrecondition(
                    f"{window.describe()} overlaps stored scores and must be filled, but rebuild=NEVER"
                )
            filling.append(window)
        for window in deleted:
            self.retire(window)
        refilled = {window.lb_key for window in filling}
        final = []
        for window in windows:
            if window.lb_key in refilled:
                if window not in added:
                    self.clear_window(window)
                window = dataclasses.replace(window, filling=True)
            final.append(window)
        changed = changed or bool(added or deleted or filling)
        directory = Directory(update.update_timestamp, update.high_score_first, next_key, final, old.rules)
        if changed:
            self.txn.save_directory(directory)
        return WindowUpdateResult(changed, tuple(added), tuple(deleted), tuple(w for w in final if w.filling))

    def clear_window(self, window: Window) -> None:
        for begin, end in self.layout.window_ranges(window.key_bytes):
            self.tr.clear_range(begin, end)
        self.txn.clear_cursor(window)

    def retire(self, window: Window) -> None:
        """Clear the data of a window leaving the directory: at once where the store clears a
        range in one step (FoundationDB), else noted, for :meth:`clear_retired` to clear in bounded
        steps (a window's key is never given again, so nothing new lands there meanwhile); at once
        too below index format 4, which release 0.2.0 reads (``formats.RETIRED_WINDOWS``)."""
        if self.tr.clears_ranges_at_once or not formats.allows(self.space.format, formats.RETIRED_WINDOWS):
            self.clear_window(window)
        else:
            self.txn.clear_cursor(window)
            self.tr.set(self.layout.retired_key(window.key_bytes), b"")

    def clear_retired(self, max_keys: int) -> bool:
        """Clear up to about ``max_keys`` keys of the windows :meth:`retire` noted; True once none is left."""
        layout, tr = self.layout, self.tr
        noted = tr.get_range(layout.retired, strinc(layout.retired), 1)
        if not noted:
            return True
        key_bytes = noted[0][0][len(layout.retired) :]
        for begin, end in layout.window_ranges(key_bytes):
            rows = tr.get_range(begin, end, max_keys)
            if rows:
                tr.clear_range(begin, rows[-1][0] + b"\x00" if len(rows) == max_keys else end)
                if len(rows) == max_keys:
                    return False
                max_keys -= len(rows)
                if max_keys <= 0:
                    return False
        tr.clear(noted[0][0])
        return not tr.get_range(layout.retired, strinc(layout.retired), 1)

    def save_filling(self, directory: Directory, lb_keys: set[int], filling: bool) -> None:
        """Save ``directory`` with the windows of ``lb_keys`` marked filling (or complete)."""
        windows = [dataclasses.replace(w, filling=filling) if w.lb_key in lb_keys else w for w in directory.windows]
        self.txn.save_directory(directory.replace(windows=windows))

    def expire(self, before: int) -> tuple[Window, ...]:
        """Delete every window (but all-time) that ends at or before ``before``, with its data."""
        before = check_timestamp(before, self.txn.space.checked_timebase)
        directory = self.txn.directory()
        if directory is None:
            return ()
        gone = [w for w in directory.windows if w.type != ALL_TIME and w.end <= before]
        if not gone:
            return ()
        for window in gone:
            self.retire(window)
        keep = [w for w in directory.windows if w not in gone]
        self.txn.save_directory(directory.replace(windows=keep))
        return tuple(gone)

    def add_missing(self, wanted: Sequence[tuple[int, int, int]], now: int, nlevels: int) -> tuple[Window, ...]:
        """Add those of the ``wanted`` (type, start, end) windows the directory lacks."""
        directory = self.txn.directory()
        missing = [w for w in wanted if directory is None or directory.find(*w) is None]
        if not missing:
            return ()
        update = WindowUpdate(
            update_timestamp=now,
            all_time=False,
            windows=missing,
            nlevels=nlevels,
        )
        return self.update_windows(update).added


def check_plan_size(
    horizon: int, types: Sequence[tuple[int, int, int, int]], calendar: Sequence[CalendarPeriods] = ()
) -> None:
    """Refuse a keep-ahead plan that could need more windows than one update may add."""
    if horizon < 0:
        raise InvalidArgument(f"horizon must not be negative, not {horizon}")
    planned = 0
    for window_type, _base, increment, duration in types:
        check_window_type(window_type)
        if increment <= 0 or duration <= 0:
            raise InvalidArgument(f"window type {window_type}: increment and duration must be positive")
        planned += (horizon + duration) // increment + 1
    for periods in calendar:
        planned += horizon // periods.shortest() + 2
    if planned > MAX_WINDOWS:
        raise InvalidArgument(
            f"keeping windows ahead would need up to {planned} windows, more than the {MAX_WINDOWS} one window "
            "update may add: use a shorter horizon or fewer, longer-spaced windows"
        )


def plan_ahead(
    now: int,
    types: Sequence[tuple[int, int, int, int]],
    horizon: int,
    certain_within: int,
    rng: random.Random,
    calendar: Sequence[CalendarPeriods] = (),
) -> list[tuple[int, int, int]]:
    """The windows :meth:`LeaderboardIndex.keep_ahead` chooses to add now: regular ones, then calendar periods."""
    check_plan_size(horizon, types, calendar)
    candidates = []
    for window_type, base, increment, duration in types:
        first = (now - duration - base) // increment + 1  # the first window still open at `now`
        i = max(first, 0) if base <= now else 0
        while (start := base + i * increment) <= now + horizon:
            candidates.append((window_type, start, start + duration))
            i += 1
    for periods in calendar:
        candidates.extend(periods.between(now, now + horizon))
    wanted = []
    for window in candidates:
        _, start, end = window
        if end <= now or start > now + horizon:
            continue
        lead = start - now
        # Certain when imminent; later, a chance falling to 0 at the horizon, so that many
        # maintenance jobs running at once rarely all write the directory.
        if lead <= certain_within or rng.random() < 1 - (lead - certain_within) / max(horizon - certain_within, 1):
            wanted.append(window)
    return wanted
