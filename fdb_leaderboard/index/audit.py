"""The audit trail: every admin action, with who, when and what, kept for a retention.

Events live outside any index, under a root of their own (the catalog's), so an index's events
outlive its drop: ``root + ("audit", at_us, nonce)`` holds an ``AuditEvent``.  Keys are ordered
by time, so reading a period or expiring the oldest is a range read, and each is a blind write:
recording reads nothing and conflicts with nothing (on FoundationDB no read, no conflict range
of its own; on the embedded store simply one more key in the action's transaction).

An action records its event in its own transaction, so the two commit together.  The event's
key (its time and a random nonce) is chosen once per call, before the transaction's first
attempt: a transaction run again (a conflict, or a commit whose result was unknown) writes the
same key again, never a second event.  A versionstamped key would differ per commit and double
the event of a commit that succeeded unseen.  Actions whose outcome depends on the state (hide,
restore, an update that may change nothing) record only what they changed: the attempt that
finds its earlier attempt's change already made writes nothing over that attempt's event.

The retention (``root + ("audit_policy",)``, an ``AuditPolicy``) is the operator's; expiry
clears the events older than it, oldest first, in bounded batches.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from typing import Any

from ..errors import InvalidArgument
from ..proto import index_pb2
from ..store.api import strinc
from . import tuplecodec as tuples
from .values import check_at_least

DEFAULT_RETENTION = 90 * 86_400  # seconds
MAX_RETENTION = 100 * 365 * 86_400
MAX_EVENTS = 1000  # per page, and per expiry batch
MAX_DETAIL_CHARS = 500
SYSTEM_ACTOR = "maintenance"  # the server acting by itself (its background maintenance)
LOCAL_ACTOR = "local"  # who acts through the Python API when the caller names nobody


@dataclasses.dataclass(frozen=True)
class AuditEvent:
    """One admin action: when (Unix microseconds), who, what, on which index (empty: none)."""

    at_us: int
    actor: str
    action: str
    index: str
    details: dict[str, str]

    @classmethod
    def from_proto(cls, message: index_pb2.AuditEvent) -> AuditEvent:
        return cls(message.at_us, message.actor, message.action, message.index, dict(message.details))


def _detail(value: object) -> str:
    if isinstance(value, str):
        text = value
    elif isinstance(value, bool | int | float) or value is None:
        text = str(value).lower() if isinstance(value, bool) else str(value)
    else:
        text = repr(value)
    return text if len(text) <= MAX_DETAIL_CHARS else f"{text[:MAX_DETAIL_CHARS]}..."


@dataclasses.dataclass(frozen=True)
class PendingEvent:
    """An action's event, its key chosen when the call began: :meth:`write` it in the action's
    transaction (once or again: the same key)."""

    trail: AuditTrail
    key: bytes
    at_us: int
    actor: str
    action: str
    index: str

    def write(self, tr: Any, **details: object) -> None:
        event = index_pb2.AuditEvent(
            at_us=self.at_us,
            actor=self.actor,
            action=self.action,
            index=self.index,
            details={name: _detail(value) for name, value in details.items()},
        )
        tr.set(self.key, event.SerializeToString())

    def next(self) -> PendingEvent:
        """Another event of the same call (a long job's progress or end), at the time now."""
        return self.trail.event(self.actor, self.action, self.index)


class AuditTrail:
    """The audit trail under key prefix ``root``.  Holds no data; each method works in ``tr``."""

    def __init__(self, root: bytes, clock: Callable[[], float] = time.time) -> None:
        self.root = root
        self.clock = clock
        self.events_prefix = root + tuples.pack(("audit",))
        self.policy_key = root + tuples.pack(("audit_policy",))

    def event(self, actor: str, action: str, index: str = "") -> PendingEvent:
        """The event of one call of ``action`` by ``actor``: call once per call, outside its
        transaction's retries."""
        at_us = int(self.clock() * 1_000_000)
        key = self.events_prefix + tuples.pack((at_us, os.urandom(8)))
        return PendingEvent(self, key, at_us, actor, action, index)

    def record(self, tr: Any, actor: str, action: str, index: str = "", **details: object) -> None:
        """Record an action in ``tr`` at once (for a transaction that is not retried blindly)."""
        self.event(actor, action, index).write(tr, **details)

    def events(
        self,
        tr: Any,
        since_us: int | None = None,
        until_us: int | None = None,
        limit: int = 100,
        after: bytes | None = None,
        index: str | None = None,
        action: str | None = None,
        newest_first: bool = False,
    ) -> tuple[list[AuditEvent], bytes | None]:
        """Events with ``since_us <= at_us < until_us``, oldest first (or newest), at most
        ``limit`` after the continuation ``after``; of ``index`` and ``action`` only, if given.
        Returns the events and the continuation of the next page (None: no more)."""
        check_at_least(limit, 1, "limit")
        limit = min(limit, MAX_EVENTS)
        prefix = self.events_prefix
        begin = prefix if since_us is None else prefix + tuples.pack((since_us,))
        end = strinc(prefix) if until_us is None else prefix + tuples.pack((until_us,))
        if after:
            if not after.startswith(prefix) or after == prefix:
                raise InvalidArgument("the continuation is not one an audit listing handed out")
            if newest_first:
                end = min(end, after)
            else:
                begin = max(begin, after + b"\x00")
        found: list[AuditEvent] = []
        # Filters may skip many events: read batches until the page is full or the range ends,
        # at most MAX_EVENTS * 10 rows per call (then the continuation says where to go on).
        scanned = 0
        while begin < end:
            rows = tr.get_range(begin, end, MAX_EVENTS, newest_first)
            for key, raw in rows:
                scanned += 1
                event = AuditEvent.from_proto(index_pb2.AuditEvent.FromString(raw))
                if (index is None or event.index == index) and (action is None or event.action == action):
                    found.append(event)
                if len(found) == limit or scanned >= MAX_EVENTS * 10:
                    return found, key
            if len(rows) < MAX_EVENTS:
                return found, None
            if newest_first:
                end = rows[-1][0]
            else:
                begin = rows[-1][0] + b"\x00"
        return found, None

    def retention(self, tr: Any) -> int:
        """Seconds events are kept."""
        raw = tr.get(self.policy_key)
        stored = index_pb2.AuditPolicy.FromString(raw).retention if raw is not None else 0
        return stored or DEFAULT_RETENTION

    def set_retention(self, tr: Any, seconds: int) -> int:
        """Keep events ``seconds`` (0: the default, 90 days); returns the retention now."""
        if isinstance(seconds, bool) or not isinstance(seconds, int) or not 0 <= seconds <= MAX_RETENTION:
            raise InvalidArgument(
                f"the audit retention is a number of seconds from 0 (the default, 90 days) to {MAX_RETENTION}, "
                f"not {seconds!r}"
            )
        tr.set(self.policy_key, index_pb2.AuditPolicy(retention=seconds).SerializeToString())
        return seconds or DEFAULT_RETENTION

    def expire_step(self, tr: Any, before_us: int, max_events: int) -> tuple[int, bool]:
        """Clear up to ``max_events`` events older than ``before_us``; returns (cleared, done)."""
        check_at_least(max_events, 1, "max_events")
        begin = self.events_prefix
        end = begin + tuples.pack((before_us,))
        rows = tr.get_range(begin, end, max_events + 1)  # one more: whether any are left
        done = len(rows) <= max_events
        rows = rows[:max_events]
        if rows:
            tr.clear_range(begin, rows[-1][0] + b"\x00")
        return len(rows), done


PROGRESS_EVERY = 60.0  # seconds between a long job's progress events


class JobEvents:
    """The events of a job of many transactions (``trail`` None: none): ``started`` with its
    first batch, ``progress`` at most once a minute, ``finished`` with the batch that completes
    it (a job of one batch: that event only), each in its batch's transaction; a job that stops
    before it is done records ``stopped`` in a transaction of its own.  Details: the job's
    ``arguments`` and its totals so far."""

    def __init__(self, trail: AuditTrail | None, actor: str, action: str, index: str, **arguments: object) -> None:
        self.trail = trail
        self.actor = actor
        self.action = action
        self.index = index
        self.arguments = arguments
        self.batches = 0
        self._last_event = 0.0

    def next_event(self) -> PendingEvent | None:
        """The event a batch may write: take it before the batch's transaction (not inside)."""
        return None if self.trail is None else self.trail.event(self.actor, self.action, self.index)

    def in_batch(self, tr: Any, event: PendingEvent | None, done: bool, **totals: object) -> None:
        """In the batch's transaction: write ``event`` if this batch starts, reports on or ends the job."""
        if event is None:
            return
        if done:
            phase = "finished"
        elif not self.batches:
            phase = "started"
        elif event.at_us / 1e6 - self._last_event >= PROGRESS_EVERY:
            phase = "progress"
        else:
            return
        event.write(tr, phase=phase, **self.arguments, **totals)

    def committed(self, event: PendingEvent | None) -> None:
        """After a batch committed."""
        if event is not None and (not self.batches or event.at_us / 1e6 - self._last_event >= PROGRESS_EVERY):
            self._last_event = event.at_us / 1e6
        self.batches += 1

    def stopped(self, run: Callable[[Callable[[Any], None]], None], **totals: object) -> None:
        """The job stops before it is done: say so (``run`` runs a transaction)."""
        event = self.next_event()
        if event is not None and self.batches:
            run(lambda tr: event.write(tr, phase="stopped", **self.arguments, **totals))


def expire_in_batches(
    job: JobEvents,
    run: Callable[[Callable[[Any], Any]], Any],
    step: Callable[[Any], tuple[int, bool]],
    keep_going: Callable[[], bool] | None,
    counted: str,
) -> tuple[int, bool]:
    """Run ``step(tr)`` (clears a batch, answers (cleared, done)) in transactions of ``run``
    until done or ``keep_going()`` says stop, the job's events naming the total ``counted``; a
    run that clears nothing leaves no event.  Returns (cleared, done)."""
    cleared, done = 0, False
    while not done:
        event = job.next_event()

        def batch(tr: Any, event: PendingEvent | None = event, before: int = cleared) -> tuple[int, bool]:
            count, finished = step(tr)
            if before + count:
                job.in_batch(tr, event, finished, **{counted: before + count})
            return count, finished

        count, done = run(batch)
        cleared += count
        job.committed(event)
        if not done and keep_going is not None and not keep_going():
            job.stopped(run, **{counted: cleared})
            break
    return cleared, done
