"""The audit trail: every admin action, with who, when and what, kept for a retention.

Events live outside any index, under a root of their own (the catalog's: an index's drop is
recorded after its data is gone), at ``root + ("audit", at_us, nonce)``: ordered by time, so
reading a period or expiring the oldest is a range, and appended with blind writes at random
nonces, so recording conflicts with nothing.  An action records its event in its own
transaction: an event is there exactly when the action took effect (a job of many batches
records it with the batch that completes it).  The retention (``root + ("audit_policy",)``, an
``AuditPolicy``) is the operator's; expiry clears the oldest events in bounded batches.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import InvalidArgument
from ..proto import index_pb2
from ..store.api import strinc
from . import tuplecodec as tuples
from .values import check_at_least

DEFAULT_RETENTION = 90 * 86_400  # seconds
MAX_EVENTS = 1000  # per page
MAX_DETAIL_CHARS = 500
SYSTEM_ACTOR = "maintenance"  # what the server does by itself (keep ahead, expiry by its policy)
ANONYMOUS = "anonymous"  # a caller of a server without tokens


@dataclasses.dataclass(frozen=True)
class AuditEvent:
    """One admin action."""

    at_us: int  # Unix microseconds
    actor: str
    action: str
    index: str
    details: dict[str, str]


def _detail(value: object) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= MAX_DETAIL_CHARS else f"{text[:MAX_DETAIL_CHARS]}..."


class AuditTrail:
    """The audit trail under key prefix ``root``.  Holds no data; each method works in ``tr``."""

    def __init__(self, root: bytes, clock: Callable[[], float] = time.time) -> None:
        self.root = root
        self.clock = clock
        self.events_prefix = root + tuples.pack(("audit",))
        self.policy_key = root + tuples.pack(("audit_policy",))

    def record(
        self, tr: Any, actor: str | None, action: str, index: str = "", details: Mapping[str, object] | None = None
    ) -> None:
        """Record ``action`` by ``actor`` in transaction ``tr`` (so it is recorded iff it commits)."""
        at_us = int(self.clock() * 1_000_000)
        event = index_pb2.AuditEvent(
            at_us=at_us,
            actor=actor or ANONYMOUS,
            action=action,
            index=index,
            details={name: _detail(value) for name, value in (details or {}).items()},
        )
        key = self.events_prefix + tuples.pack((at_us, os.urandom(6)))
        tr.set(key, event.SerializeToString())

    def events(
        self,
        tr: Any,
        since_us: int | None = None,
        until_us: int | None = None,
        limit: int = 100,
        after: bytes | None = None,
        index: str | None = None,
        newest_first: bool = False,
    ) -> tuple[list[AuditEvent], bytes | None]:
        """Events with ``since_us <= at_us < until_us``, oldest first (or newest), up to ``limit``
        after the continuation ``after``; of ``index`` only, if given.  Returns the events and
        the continuation of the next page (None: no more)."""
        check_at_least(limit, 1, "limit")
        limit = min(limit, MAX_EVENTS)
        prefix = self.events_prefix
        begin = prefix if since_us is None else prefix + tuples.pack((since_us,))
        end = strinc(prefix) if until_us is None else prefix + tuples.pack((until_us,))
        if after:
            if not after.startswith(prefix):
                raise InvalidArgument("continuation is not one an audit listing handed out")
            if newest_first:
                end = min(end, after)
            else:
                begin = max(begin, after + b"\x00")
        found: list[AuditEvent] = []
        last: bytes | None = None
        # An index filter may skip many events: read pages until the page is full or the range ends.
        while len(found) < limit and begin < end:
            rows = tr.get_range(begin, end, limit, newest_first)
            for key, raw in rows:
                last = key
                event = index_pb2.AuditEvent.FromString(raw)
                if index is None or event.index == index:
                    found.append(AuditEvent(event.at_us, event.actor, event.action, event.index, dict(event.details)))
                    if len(found) == limit:
                        break
            if len(rows) < limit:
                return found, None
            if newest_first:
                end = last  # type: ignore[assignment]
            else:
                begin = last + b"\x00"  # type: ignore[operator]
        return found, last if len(found) == limit else None

    def retention(self, tr: Any) -> int:
        """Seconds events are kept."""
        raw = tr.get(self.policy_key)
        stored = index_pb2.AuditPolicy.FromString(raw).retention if raw is not None else 0
        return stored or DEFAULT_RETENTION

    def set_retention(self, tr: Any, seconds: int) -> None:
        if isinstance(seconds, bool) or not isinstance(seconds, int) or not 0 <= seconds < 1 << 40:
            raise InvalidArgument(f"audit retention must be a number of seconds (0: the default), not {seconds!r}")
        tr.set(self.policy_key, index_pb2.AuditPolicy(retention=seconds).SerializeToString())

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


@dataclasses.dataclass(frozen=True)
class IndexAudit:
    """What an index opened by name records its admin actions in: the trail and its name."""

    trail: AuditTrail
    index: str

    def record(self, tr: Any, actor: str | None, action: str, details: Mapping[str, object] | None = None) -> None:
        self.trail.record(tr, actor, action, self.index, details)
