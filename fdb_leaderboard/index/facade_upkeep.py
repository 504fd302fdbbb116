"""The facade's window upkeep: :class:`UpkeepMethods`, window updates, expiry, fills (in steps
or built from sorted data), keep-ahead and the stored format's upgrades.
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
from collections.abc import Callable, Iterable, Sequence

from .. import formats
from ..store.api import strinc
from .audit import JobEvents
from .build import BuildLost, WindowsBuild
from .calendar import CalendarPeriods
from .directory import Directory, Window, WindowUpdate
from .fill import FillProgress
from .operations import IndexRunner, Operations
from .transaction import FillState
from .upgrade import UpgradeProgress, UpgradeState
from .values import check_at_least
from .windows import WindowUpdateResult, plan_ahead

# A fill builds its windows from sorted data (build.py) when the index holds at least this many
# records: below, its bounded steps cost less than a build's start and its sort.
BUILD_RECORDS = 2000


class UpkeepMethods(IndexRunner):
    """The index's window upkeep and format upgrades, each transaction bounded."""

    def update_windows(self, update: WindowUpdate, actor: str | None = None) -> WindowUpdateResult:
        event = self._event(actor, "UpdateWindows")

        def write(ops: Operations) -> WindowUpdateResult:
            result = ops.windows.update_windows(update)
            if event is not None and result.changed:
                event.write(
                    ops.tr,
                    added=_windows(result.added),
                    deleted=_windows(result.deleted),
                    filling=_windows(result.filling),
                )
            return result

        result = self.run(write)
        self.clear_retired()
        return result

    def directory(self) -> Directory | None:
        return self.read(lambda ops: ops.txn.directory())

    def save_sub_directory(self, group: tuple, high_score_first: bool, actor: str | None = None) -> None:
        event = self._event(actor, "SaveSubDirectory")

        def write(ops: Operations) -> None:
            ops.windows.save_sub_directory(group, high_score_first)
            if event is not None:
                event.write(ops.tr, group=group, high_score_first=high_score_first)

        self.run(write)

    def sub_directories(self) -> dict[tuple, bool]:
        return self.read(lambda ops: ops.windows.sub_directories())

    def fill_states(self) -> list[tuple[Window, FillState]]:
        """Each window being filled and how far its fill got, in one read."""

        def read(ops: Operations) -> list[tuple[Window, FillState]]:
            directory = ops.txn.directory()
            return [(window, ops.txn.fill_state(window)) for window in (directory.filling() if directory else [])]

        return self.read(read)

    def expire(
        self, before: int, actor: str | None = None, keep_going: Callable[[], bool] | None = None
    ) -> tuple[Window, ...]:
        """Delete windows ending at or before ``before``; repeated calls are harmless.  The windows
        leave the directory in one transaction; where their data is then cleared in steps
        (:meth:`clear_retired`), it stops once ``keep_going()`` says so, leaving the rest to the
        next expiry or the server's maintenance."""
        event = self._event(actor, "Expire")

        def write(ops: Operations) -> tuple[Window, ...]:
            gone = ops.windows.expire(before)
            if event is not None and gone:
                event.write(ops.tr, before=before, deleted=_windows(gone))
            return gone

        gone = self.run(write)
        self.clear_retired(keep_going=keep_going)
        return gone

    def clear_retired(self, max_keys: int = 20_000, keep_going: Callable[[], bool] | None = None) -> bool:
        """Clear, in transactions of about ``max_keys`` keys, the data of windows deleted from the
        directory that a store which clears key by key left to clear (see ``WindowEditor.retire``):
        an expiry or window update does so itself, the server's maintenance and any later one go
        on with what one left.  Stops after a transaction once ``keep_going()`` is False; returns
        True once nothing is left.  Below index format 4 (``formats.RETIRED_WINDOWS``) windows
        are cleared as they are deleted."""
        if not formats.allows(self.format, formats.RETIRED_WINDOWS) or self.db.clears_ranges_at_once:
            return True  # nothing is ever left to clear
        layout = self.layout
        if not self.read(lambda ops: ops.tr.get_range(layout.retired, strinc(layout.retired), 1)):
            return True  # (a read: no commit where nothing was left)
        while not self.run(lambda ops: ops.windows.clear_retired(max_keys)):
            if keep_going is not None and not keep_going():
                return False
        return True

    def fill_step(
        self, max_records: int = 200, max_entries: int = 20_000, respect_holds: bool = False, actor: str | None = None
    ) -> FillProgress:
        """One bounded fill transaction; ``respect_holds`` leaves alone the windows a running bulk
        load will build (what the server's background fill does).  The step that completes the
        windows being filled records that (their start is their window update's event)."""
        unheld_at = int(self.clock()) if respect_holds else None
        event = self._event(actor, "FillWindows")

        def step(ops: Operations) -> FillProgress:
            progress = ops.filler.fill_step(max_records, max_entries, unheld_at)
            if event is not None and progress.done and progress.windows:
                event.write(ops.tr, phase="finished", completed=_windows(w for w, _ in progress.windows))
            if progress.done and not ops.txn.latest.step():  # then the latest timestamp's recompute
                return dataclasses.replace(progress, done=False)
            return progress

        return self.run(step)

    def fill(
        self,
        max_records: int = 200,
        max_entries: int = 20_000,
        progress: Callable[[FillProgress], None] | None = None,
        actor: str | None = None,
        respect_holds: bool = False,
        build: bool | None = None,
    ) -> int:
        """Fill every window being filled until done; returns records processed.

        When the index holds many records (or with ``build``), the windows are built from
        sorted data (``build.py``: their entries and ranked sets written once, in key order),
        from index format 4 on (``formats.SORTED_BUILDS``); otherwise (or without ``build``),
        and for what a build leaves (a league's windows), in bounded steps of ``max_records``
        records and ``max_entries`` entries.  Either way each
        transaction is bounded, and the work survives the process: a step's position is stored,
        and a build's windows are started over by a later fill if its process dies.  The
        windows another process builds are left to it, and so, with ``respect_holds``, are those
        a running bulk load holds (``done`` then means nothing is left it may do).
        """
        if not formats.allows(self.format, formats.SORTED_BUILDS):
            build = False  # a release 0.2.0 process may write meanwhile: it notes nothing for a build
        elif build is None:
            build = self._many_records()
        total = self._build_fill(progress, actor) if build else 0
        while True:
            step = self.fill_step(max_records, max_entries, respect_holds, actor=actor)
            total += step.records_processed
            if progress:
                progress(step)
            if step.done:
                return total

    def _many_records(self) -> bool:
        """Whether the index holds at least BUILD_RECORDS records (one bounded read)."""
        records = self.layout.records
        return len(self.read(lambda ops: ops.tr.get_range(records, strinc(records), BUILD_RECORDS))) >= BUILD_RECORDS

    def _build_fill(self, progress: Callable[[FillProgress], None] | None, actor: str | None) -> int:
        """Build the filling windows no one holds from sorted data; returns the records read."""
        now = int(self.clock())
        build = WindowsBuild.start(self, lambda ops: ops.filler.unheld_windows(now), from_records=True)
        if build is None:
            return 0
        windows = tuple((window, None) for window in build.windows.values())
        event = self._event(actor, "FillWindows")
        try:
            done = False
            while not done:
                before = build.counts.records
                done = build.read_records()
                if progress:
                    progress(FillProgress(False, build.counts.records - before, windows))
            build.finish()
        except BuildLost:  # a window update or another process took windows over: fills take the rest
            build.abandon()
            return build.counts.records
        except BaseException:  # stopped (or failed): the windows go back to any fill at once
            with contextlib.suppress(Exception):
                build.abandon()
            raise
        finally:
            build.close()
        if event is not None:
            self.db.run(lambda tr: event.write(tr, phase="finished", completed=_windows(w for w, _ in windows)))
        if progress:
            progress(FillProgress(True, 0, windows, build.counts.entries))
        return build.counts.records

    # -- the stored format (upgrade.py) ------------------------------------------------------

    def upgrade_step(
        self,
        to_format: int | None = None,
        max_records: int = 200,
        actor: str | None = None,
        job: JobEvents | None = None,
    ) -> UpgradeProgress:
        """One bounded transaction of the upgrade of the index's data towards ``to_format``
        (the newest by default): a batch of records rewritten, or the format raised.  Raise only
        an index that every process writing to it reads at ``to_format`` (the server checks that:
        ``fdb_leaderboard/formats.py``).  Recorded as a job (``UpgradeIndex``: its start, progress
        and the batch that raises a format) when ``job`` is given, else the raise alone."""
        check_at_least(max_records, 1, "max_records")
        target = formats.NEWEST_INDEX if to_format is None else to_format
        job = job or self._job(actor, "UpgradeIndex", to_format=target)
        event = job.next_event()

        def step(ops: Operations) -> UpgradeProgress:
            before = ops.upgrader.current()
            progress = ops.upgrader.step(target, max_records)
            if progress.format > before or progress.records_processed:
                job.in_batch(ops.tr, event, progress.done, format=progress.format, records=progress.records_done)
            return progress

        progress = self.run(step)
        job.committed(event)
        return progress

    def upgrade(
        self,
        to_format: int | None = None,
        max_records: int = 200,
        keep_going: Callable[[], bool] | None = None,
        progress: Callable[[UpgradeProgress], None] | None = None,
        actor: str | None = None,
    ) -> UpgradeProgress:
        """Upgrade the index to ``to_format`` batch by batch, until done or ``keep_going()`` says
        stop (an interrupted upgrade resumes where it stopped, from any process); returns where it
        stands, with this call's records and heads changed."""
        to_format = formats.NEWEST_INDEX if to_format is None else to_format
        job = self._job(actor, "UpgradeIndex", to_format=to_format)
        records = changed = 0
        while True:
            step = self.upgrade_step(to_format, max_records, job=job)
            records += step.records_processed
            changed += step.heads_changed
            if progress is not None:
                progress(step)
            if step.done or (keep_going is not None and not keep_going()):
                if not step.done:
                    job.stopped(self.db.run, format=step.format, records=step.records_done)
                return dataclasses.replace(step, records_processed=records, heads_changed=changed)

    def upgrade_state(self) -> tuple[int, UpgradeState | None]:
        """The format the index's options record (0: none recorded, read as format 2) and the
        upgrade under way (None: none), in one read."""
        return self.read(lambda ops: (ops.txn.options().format, ops.upgrader.state()))

    def keep_ahead(
        self,
        now: int,
        types: Sequence[tuple[int, int, int, int]],
        horizon: int,
        certain_within: int = 0,
        rng: random.Random | None = None,
        nlevels: int | None = None,
        calendar: Sequence[CalendarPeriods] = (),
        actor: str | None = None,
    ) -> tuple[Window, ...]:
        """Add the regular and calendar windows needed from ``now`` until ``now + horizon``.

        ``types`` lists ``(type, base, increment, duration)``; ``calendar`` lists calendar
        periods (local days, ISO weeks, months in a time zone).  A window that has started (or
        starts within ``certain_within``) is always added; a later one with a probability
        falling linearly to 0 at the horizon, so many servers calling this at once rarely
        all write the directory.  Returns the windows added.
        """
        rng = rng or random.Random()
        wanted = plan_ahead(now, types, horizon, certain_within, rng, calendar)
        if not wanted:
            return ()

        event = self._event(actor, "KeepAhead")

        def write(ops: Operations) -> tuple[Window, ...]:
            added = ops.windows.add_missing(wanted, now, nlevels or 6)
            if event is not None and added:
                event.write(ops.tr, now=now, added=_windows(added))
            return added

        return self.run(write)


def _windows(windows: Iterable[Window]) -> str:
    """Windows as an event's detail."""
    return "; ".join(window.describe() for window in windows)
