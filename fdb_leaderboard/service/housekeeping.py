"""The server's own maintenance, in the background: nobody has to know that fills exist.

Each pass goes over every index of the catalog and, per the index's maintenance policy:

- adds the windows the policy keeps ahead (today's and tomorrow's calendar days, say);
- fills windows added over stored scores (they are not served until complete), in the fill's
  bounded, resumable transactions (built from sorted data when the index holds many records),
  leaving alone the windows a running bulk load or build holds;
- expires windows that ended longer ago than the policy retains them;
- forgets writes' idempotency keys older than the policy's ``idempotency_retention``;
- notices windows that ended (``window_events.py``): their events go to the store's log and
  outbox, and this process's webhook delivery is woken.  Whatever the interval, a pass also
  runs as soon as the next window of any index ends, so an end is noticed within moments;

and, once per pass, clears the audit events older than the audit trail's retention, forgets
the reports of processes long gone (``releases.py``) and raises the store's and the indexes'
stored formats as far as every process that may be running reads (``upgrades.py``; an index's
data rewritten first in bounded batches where its format needs it), unless told not to.  What
it changes is recorded in the audit trail as done by ``maintenance``.

A pass runs when the server starts, every ``every`` seconds, and at once when a window update or
an index creation leaves windows filling (:meth:`Housekeeping.wake`).  Every step is idempotent
and conflicts only with the same step elsewhere, so several server processes or hosts, and
``fdb-leaderboard maintain`` jobs, may run passes at the same time.
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
import time

from ..errors import NotFound, Unavailable
from ..index import FillProgress
from ..index.audit import SYSTEM_ACTOR
from ..proto import index_pb2
from . import convert, releases
from .background import BackgroundLoop
from .catalog import Catalog, writes_paused
from .metrics import Metrics
from .upgrades import Upgrades
from .webhooks import WebhookDelivery
from .window_events import WindowEvents

log = logging.getLogger("fdb_leaderboard.service")

DEFAULT_EVERY = 60.0
END_MARGIN = 0.05  # seconds after a window's end that the pass noticing it runs
UPGRADE_SECONDS = 10.0  # of an index's upgrade per pass; an unfinished one brings the next pass soon
UPGRADE_AGAIN = 1.0


class _Stopping(Exception):
    """The server stops: a fill in progress leaves off (its work is stored)."""


class Housekeeping(BackgroundLoop):
    """Maintenance passes over ``catalog`` on a thread of their own until ``stopping`` is set."""

    thread_name = "housekeeping"
    failure = "maintenance pass failed; the next one retries"

    def __init__(
        self,
        catalog: Catalog,
        every: float = DEFAULT_EVERY,
        stopping: threading.Event | None = None,
        metrics: Metrics | None = None,
        window_events: WindowEvents | None = None,
        delivery: WebhookDelivery | None = None,
        raise_formats: bool = True,
    ) -> None:
        super().__init__(stopping, every)
        self.catalog = catalog
        self.upgrades = Upgrades(catalog) if raise_formats else None
        self.window_events = window_events
        self.delivery = delivery
        self._next_end: float | None = None  # the soonest window end still to come (Unix seconds)
        self._upgrading = False  # the last pass left an index's upgrade unfinished
        self.every = every
        self.metrics = metrics
        self.passes = 0  # passes finished (tests wait for them)
        self._rng = random.Random()

    def round(self) -> float:
        try:
            self.run_pass(time.time())
        finally:
            self.passes += 1
        if self._upgrading:
            return UPGRADE_AGAIN
        if self._next_end is not None:  # wake when the next window ends (a moment after)
            return min(self.every, max(0.0, self._next_end - time.time()) + END_MARGIN)
        return self.every

    def run_pass(self, clock: float) -> list[str]:
        """One pass over every index at time ``clock`` (Unix seconds); returns what it did."""
        done: list[str] = []
        self._next_end = None
        for name, entry in self.catalog.list():
            if self.stopping.is_set():
                break
            if writes_paused(entry, clock):  # moved elsewhere, or a dump finishing: left alone
                continue
            try:
                done.extend(f"{name}: {line}" for line in self._maintain(name, entry.maintenance, clock))
            except (NotFound, Unavailable):  # dropped since the listing, or paused since
                continue
            except Exception:
                log.exception("maintenance of index %r failed; the next pass retries", name)
        if not self.stopping.is_set():
            cleared, _ = self.catalog.expire_audit_events(
                keep_going=lambda: not self.stopping.is_set(), actor=SYSTEM_ACTOR
            )
            if cleared:
                done.append(f"audit trail: cleared {cleared} event(s) past its retention")
            forgotten = releases.forget_stale(self.catalog.db, self.catalog.root, clock)
            if forgotten:
                done.append(f"forgot {forgotten} report(s) of processes not seen for a day")
        self._upgrading = False
        if self.upgrades is not None and not self.stopping.is_set():
            # An upgrade of a large index takes many passes' share: the next pass comes soon.
            until = time.monotonic() + UPGRADE_SECONDS
            try:
                lines, self._upgrading = self.upgrades.raise_formats(
                    lambda: not self.stopping.is_set() and time.monotonic() < until
                )
                done.extend(lines)
            except Exception:
                log.exception("raising the stored formats failed; the next pass retries")
        for line in done:
            log.info("maintenance: %s", line)
        if self.metrics is not None:
            self.metrics.maintenance_passed(clock)
        return done

    def _maintain(self, name: str, policy: index_pb2.MaintenancePolicy, clock: float) -> list[str]:
        index = self.catalog.get(name)
        now = int(clock * index.timebase)
        done = []
        if policy.windows or policy.calendar:
            added = index.keep_ahead(
                now,
                convert.regular_windows(policy),
                policy.horizon,
                policy.certain_within,
                self._rng,
                calendar=convert.calendar_periods(policy),
                actor=SYSTEM_ACTOR,
            )
            if added:
                done.append(f"added {len(added)} window(s)")
                if self.metrics is not None:
                    self.metrics.windows_added.labels(name).inc(len(added))
        records = ranked = 0

        def filled(step: FillProgress) -> None:
            nonlocal records, ranked
            records += step.records_processed
            ranked += step.entries_ranked
            if self.stopping.is_set():  # the next pass (or another process) goes on
                raise _Stopping

        if not self.stopping.is_set():
            with contextlib.suppress(_Stopping):
                index.fill(progress=filled, actor=SYSTEM_ACTOR, respect_holds=True)
        if records or ranked:
            done.append(f"filled windows from {records} record(s), {ranked} entries ranked")
            if self.metrics is not None:
                self.metrics.fill_records.labels(name).inc(records)
                self.metrics.fill_entries_ranked.labels(name).inc(ranked)

        def keep_going() -> bool:
            return not self.stopping.is_set()

        if policy.retain:
            gone = index.expire(now - policy.retain, SYSTEM_ACTOR, keep_going)
            if gone:
                done.append(f"expired {len(gone)} window(s)")
                if self.metrics is not None:
                    self.metrics.windows_expired.labels(name).inc(len(gone))
        else:  # what an expiry or a window update left of the windows it deleted (any index)
            index.clear_retired(keep_going=keep_going)
        before = int(clock) - convert.idempotency_retention(policy)
        forgotten, _ = index.expire_idempotency_keys(before, keep_going=keep_going, actor=SYSTEM_ACTOR)
        if forgotten:
            done.append(f"forgot {forgotten} idempotency key(s)")
            if self.metrics is not None:
                self.metrics.idempotency_keys_expired.labels(name).inc(forgotten)
        if self.window_events is not None and not self.stopping.is_set():
            noticed, events, following = self.window_events.notice(name, clock=clock)
            if noticed:
                done.append(f"noticed {len(noticed)} ended window(s), {events} webhook event(s)")
            if events and self.delivery is not None:
                self.delivery.wake()
            if following is not None:
                soon = following / index.timebase
                self._next_end = soon if self._next_end is None else min(self._next_end, soon)
        return done
