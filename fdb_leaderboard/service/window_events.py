"""Window-end events in the store: webhooks, the noticing of ended windows, the outbox, the log.

Keys, under the catalog's root (so every server process of the store shares them):

- ``("webhooks", index, id)``: a webhook subscribed to the index's window ends (JSON: its URL,
  shared secret, window types, top N, creation time).  The secret is kept to sign with; no
  listing sends it back.
- ``("ends_noticed", prefix, type)``: the latest end of the index's windows of that type that
  has been noticed.  A window is noticed once its end has passed (``end <= now``, in the index's
  timebase) and it is not filling: in one transaction, its record count and top are read, an
  event is appended to the log, one is written to the outbox per webhook, and this mark moves
  past it.  A second process (or a commit retried after ``commit_unknown_result``) reads the
  moved mark and writes nothing again.  A window added later with an end before the mark is
  never noticed.
- ``("event_log", index, cursor)``: the index's events in the order noticed (the latest
  ``LOG_KEEP``), which streams read and resume from; ``("event_log_next", index)`` counts them.
- ``("outbox", id)`` (delivery state, JSON) and ``("outbox_body", id)`` (the POST's body): an
  event waiting for one webhook.  A process takes a lease on it in a transaction before sending
  it (``claim``, which reads the outbox on, page after page, from where its last claim stopped),
  so two processes never send it at once, and a lease of a process that died runs out; the event
  is cleared when the webhook acknowledges it (``delivered``), or moved to a later try
  (``failed``) until ``MAX_EVENT_AGE``.  The event id is derived from the window and
  the webhook, so a delivery sent again carries the same id.  Leases are times by each
  process's clock: the hosts' clocks must agree to well within a lease (seconds; NTP does).

A webhook is told of windows ending at or after its creation (none from before it existed), of
its window types (all without any).  Grouped indexes have a top per group: they have no
window-end events (subscribing is refused).
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import secrets
import time
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import fdb.tuple

from .. import wire
from ..errors import FailedPrecondition, InvalidArgument
from ..index import LeaderboardIndex, Window
from ..index.directory import ALL_TIME
from ..index.leaderboard import LOCAL_ACTOR
from ..proto import service_pb2 as pb
from ..store.api import MAX_VALUE_SIZE, Transaction, strinc
from .catalog import Catalog, check_name

DEFAULT_TOP = 10
MAX_TOP = 100
MAX_WEBHOOKS = 20  # per index
LOG_KEEP = 1000  # events kept in an index's log for streams to resume from
MAX_EVENT_AGE = 3 * 86400.0  # seconds an undelivered event is retried for, then dropped
MAX_BACKOFF = 600.0  # the longest wait between two tries of one event
OUTBOX_PAGE = 1000  # outbox rows one read transaction looks at
CLAIM_PAGES = 4  # pages one claim reads at most (the next goes on from there)
# An event's stored body stays under the store's value limit: entries are left out from the end
# until it fits (large metadata on 100 entries could pass it); ``count`` still says how many there are.
BODY_LIMIT = MAX_VALUE_SIZE - 4096
MIN_SECRET, MAX_SECRET = 16, 256


@dataclasses.dataclass(frozen=True)
class Pending:
    """An event claimed for delivery: where it goes, signed with what, and its body."""

    id: str
    webhook: str
    url: str
    secret: str
    body: bytes


def _check_url(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InvalidArgument(f"a webhook URL must be http:// or https:// with a host, not {url[:200]!r}")
    if len(url) > 2000:
        raise InvalidArgument("a webhook URL is at most 2000 characters")
    return url


def _check_secret(secret: str) -> str:
    if not MIN_SECRET <= len(secret) <= MAX_SECRET:
        raise InvalidArgument(f"a webhook secret is {MIN_SECRET} to {MAX_SECRET} characters (empty: one is made up)")
    return secret


def _claimable(state: dict[str, Any], now: float) -> bool:
    """Whether an outbox event is due at ``now`` and nobody's lease holds it."""
    return state["due"] <= now and not (state["owner"] and state["lease_until"] > now)


def backoff(attempts: int, first: float) -> float:
    """Seconds before try ``attempts + 1`` of an event: ``first``, doubling, at most MAX_BACKOFF."""
    return min(MAX_BACKOFF, first * 2 ** max(0, attempts - 1))


def event_body(event: pb.WindowEndEvent) -> bytes:
    """A webhook's POST body: the event as JSON in the REST listings' shape."""
    return json.dumps(wire.plain_message(event), ensure_ascii=False, separators=(",", ":")).encode()


def _fitted(event: pb.WindowEndEvent) -> pb.WindowEndEvent:
    """``event`` with entries left out from the end until it fits in a stored value."""
    while len(event_body(event)) > BODY_LIMIT and event.entries:
        del event.entries[len(event.entries) // 2 :]
    return event


class WindowEvents:
    """Window-end events of the indexes of ``catalog`` (see the module docstring)."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.db = catalog.db
        self.root = catalog.root
        self.metrics: Any = None  # the server's: counts the windows noticed
        self._scan_from = b""  # where the next claim reads on in the outbox (b"": its start)

    def _key(self, *items: Any) -> bytes:
        return self.root + fdb.tuple.pack(items)

    def _range(self, *items: Any) -> tuple[bytes, bytes]:
        begin = self._key(*items)
        return begin, strinc(begin)

    # -- webhooks ----------------------------------------------------------------------------

    def _events_index(self, name: str) -> LeaderboardIndex:
        index = self.catalog.get(check_name(name))
        if index.settings.group_size:
            raise FailedPrecondition(f"index {name!r} is grouped: it has a top per group, and no window-end events")
        return index

    def check_streamable(self, index: str) -> None:
        """NotFound for no such index, FailedPrecondition for a grouped one (no events)."""
        self._events_index(index)

    def add_webhook(
        self,
        index: str,
        url: str,
        secret: str = "",
        window_types: Sequence[int] = (),
        top: int = DEFAULT_TOP,
        actor: str | None = None,
    ) -> pb.Webhook:
        """Subscribe ``url`` to the window ends of ``index``; the answer carries the secret only
        when none was given (made up here: the only time it is shown).  Recorded in the audit
        trail as done by ``actor`` (never the secret)."""
        self._events_index(index)
        _check_url(url)
        made_up = not secret
        secret = secrets.token_hex(32) if made_up else _check_secret(secret)
        if not 0 < top <= MAX_TOP:
            raise InvalidArgument(f"top is 1 to {MAX_TOP} entries, not {top}")
        types = sorted(set(window_types))
        if any(t == ALL_TIME or t < 0 for t in types):
            raise InvalidArgument("window types are 1 or more: the all-time window never ends")
        webhook_id = "wh_" + secrets.token_hex(8)
        stored = {"url": url, "secret": secret, "types": types, "top": top, "created": int(time.time())}
        event = self.catalog.audit.event(actor or LOCAL_ACTOR, "AddWebhook", index)

        def add(tr: Transaction) -> None:
            begin, end = self._range("webhooks", index)
            if len(tr.get_range(begin, end, MAX_WEBHOOKS)) >= MAX_WEBHOOKS:
                raise FailedPrecondition(f"index {index!r} has {MAX_WEBHOOKS} webhooks, the most it may have")
            tr.set(self._key("webhooks", index, webhook_id), json.dumps(stored).encode())
            event.write(tr, id=webhook_id, url=url, window_types=types, top=top)

        self.db.run(add)
        webhook = self._webhook(index, webhook_id, stored)
        if made_up:
            webhook.secret = secret
        return webhook

    @staticmethod
    def _webhook(index: str, webhook_id: str, stored: dict[str, Any]) -> pb.Webhook:
        return pb.Webhook(
            id=webhook_id,
            index=index,
            url=stored["url"],
            window_types=stored["types"],
            top=stored["top"],
            created=stored["created"],
        )

    def _stored_webhooks(self, tr: Any, index: str) -> dict[str, dict[str, Any]]:
        begin, end = self._range("webhooks", index)
        return {fdb.tuple.unpack(k[len(self.root) :])[2]: json.loads(v) for k, v in tr.get_range(begin, end)}

    def webhooks(self, index: str) -> list[pb.Webhook]:
        """The index's webhooks (never their secrets), each with its events waiting and why the
        latest failed try failed (the outbox read in pages: a count of a moment or so)."""
        self.catalog.get(check_name(index))
        stored = self.db.read(self._stored_webhooks, index)
        found = {webhook_id: self._webhook(index, webhook_id, webhook) for webhook_id, webhook in stored.items()}
        for _, state in self._outbox():
            webhook = found.get(state["webhook"]) if state["index"] == index else None
            if webhook is not None:
                webhook.pending += 1
                webhook.last_error = state["error"] or webhook.last_error
        return list(found.values())

    def delete_webhook(self, index: str, webhook_id: str, actor: str | None = None) -> tuple[bool, int]:
        """Unsubscribe the webhook, dropping its undelivered events; (deleted, events dropped).
        Recorded in the audit trail when it deleted one.  The webhook goes in the first
        transaction, its events in batches of OUTBOX_PAGE (those left behind, by a process that
        died or noticed since, are cleared as they come due: nobody is told of them)."""
        self.catalog.get(check_name(index))
        event = self.catalog.audit.event(actor or LOCAL_ACTOR, "DeleteWebhook", index)
        rows = [row for row, state in self._outbox() if state["webhook"] == webhook_id and state["index"] == index]
        batches = [rows[i : i + OUTBOX_PAGE] for i in range(0, len(rows), OUTBOX_PAGE)] or [[]]

        def delete(tr: Transaction) -> bool:
            key = self._key("webhooks", index, webhook_id)
            if tr.get(key) is None:
                return False
            tr.clear(key)
            event.write(tr, id=webhook_id, events_dropped=len(rows))
            self._clear_rows(tr, batches[0])
            return True

        if not self.db.run(delete):
            return False, 0
        for batch in batches[1:]:
            self.db.run(self._clear_rows, batch)
        return True, len(rows)

    def _outbox(self) -> Iterator[tuple[bytes, dict[str, Any]]]:
        """The outbox's rows and their delivery states, read in pages of OUTBOX_PAGE (a read
        transaction each)."""
        begin, end = self._range("outbox")
        while True:
            rows = self.db.read(lambda tr, after=begin: tr.get_range(after, end, OUTBOX_PAGE))
            for row, value in rows:
                yield row, json.loads(value)
            if len(rows) < OUTBOX_PAGE:
                return
            begin = rows[-1][0] + b"\x00"

    def _clear_rows(self, tr: Transaction, rows: list[bytes]) -> None:
        for row in rows:
            self._clear_event(tr, fdb.tuple.unpack(row[len(self.root) :])[1])

    def forget_index(self, index: str) -> None:  # (the index is gone: no check)
        """A dropped index's webhooks go with it, and so do their undelivered events (as when a
        webhook is deleted: the next claim finds nobody to tell)."""
        self.db.run(lambda tr: tr.clear_range(*self._range("webhooks", index)))

    # -- noticing ------------------------------------------------------------------------------

    def notice(
        self, name: str, now: int | None = None, clock: float | None = None
    ) -> tuple[list[Window], int, int | None]:
        """Notice the ended windows of index ``name`` (``now`` in its timebase; default its clock),
        one transaction per end; returns (windows noticed, outbox events written, the next end
        still to come, None if none).  A grouped index has none."""
        index = self.catalog.get(check_name(name))
        if index.settings.group_size:
            return [], 0, None
        noticed: list[Window] = []
        events = 0
        while True:
            # Read first (most passes find nothing: no write transaction for them), then notice.
            due, following = index.db.read(self._due, index, now, clock)
            if not due:
                return noticed, events, following
            windows, written = index.db.run(self._notice_step, index, name, now, clock)
            if self.metrics is not None:
                self.metrics.window_ends_noticed.labels(name).inc(len(windows))
            noticed.extend(windows)
            events += written

    def _due(
        self, tr: Any, index: LeaderboardIndex, now: int | None, clock: float | None
    ) -> tuple[list[Window], int | None]:
        """The windows of the earliest end not noticed yet, if it has passed, and the earliest end
        still to come (None: none)."""
        clock = time.time() if clock is None else clock
        if now is None:
            now = int(clock * index.timebase)
        windows = [w for w in index.windows_in(tr) if w.type != ALL_TIME]
        types = sorted({w.type for w in windows})
        marks = dict(zip(types, tr.get_many([self._key("ends_noticed", index.prefix, t) for t in types]), strict=True))
        marked = {t: fdb.tuple.unpack(v)[0] if v is not None else None for t, v in marks.items()}
        waiting = [w for w in windows if marked[w.type] is None or w.end > marked[w.type]]
        following = min((w.end for w in waiting if w.end > now), default=None)
        ended = sorted((w for w in waiting if w.end <= now), key=lambda w: (w.end, w.type, w.start))
        # A type's earliest ended window still filling holds back the type's later ones (their
        # order is the mark's); other types go on.
        held = {w.type for w in ended if w.filling}
        ended = [w for w in ended if w.type not in held]
        if not ended:
            return [], following
        first = ended[0]
        return [w for w in ended if w.type == first.type and w.end == first.end], following

    def _notice_step(
        self, tr: Transaction, index: LeaderboardIndex, name: str, now: int | None, clock: float | None
    ) -> tuple[list[Window], int]:
        """Notice the windows :meth:`_due` finds, in this transaction (see the module docstring):
        (windows, outbox events written); none if another process noticed them first."""
        clock = time.time() if clock is None else clock
        batch, _ = self._due(tr, index, now, clock)
        if not batch:
            return [], 0
        tr.set(self._key("ends_noticed", index.prefix, batch[0].type), fdb.tuple.pack((batch[0].end,)))
        webhooks = self._stored_webhooks(tr, name)
        events = 0
        for window in batch:
            events += self._write_events(tr, index, name, window, webhooks, clock)
        return batch, events

    def _write_events(
        self,
        tr: Transaction,
        index: LeaderboardIndex,
        name: str,
        window: Window,
        webhooks: dict[str, dict[str, Any]],
        clock: float,
    ) -> int:
        told = {
            webhook_id: stored
            for webhook_id, stored in webhooks.items()
            if (not stored["types"] or window.type in stored["types"])
            and stored["created"] * index.timebase <= window.end
        }
        most = max([DEFAULT_TOP, *(stored["top"] for stored in told.values())])
        count, entries = index.standings_in(tr, window, most)
        counter = self._key("event_log_next", name)
        cursor = fdb.tuple.unpack(tr.get(counter) or fdb.tuple.pack((0,)))[0] + 1
        tr.set(counter, fdb.tuple.pack((cursor,)))
        event = pb.WindowEndEvent(
            id=self._event_id(index, window, ""),
            index=name,
            window=wire.window_to_proto(window),
            count=count,
            noticed_at=int(clock),
            cursor=cursor,
        )
        wire.add_ranked_entries(event.entries, entries)
        tr.set(self._key("event_log", name, cursor), _fitted(event).SerializeToString())
        if cursor > LOG_KEEP:
            tr.clear_range(self._key("event_log", name, 0), self._key("event_log", name, cursor - LOG_KEEP + 1))
        for webhook_id, stored in told.items():
            told_event = pb.WindowEndEvent()
            told_event.CopyFrom(event)
            del told_event.entries[stored["top"] :]
            told_event.id = self._event_id(index, window, webhook_id)
            state = {
                "webhook": webhook_id,
                "index": name,
                "created": clock,
                "due": clock,
                "attempts": 0,
                "owner": "",
                "lease_until": 0.0,
                "error": "",
            }
            tr.set(self._key("outbox", told_event.id), json.dumps(state).encode())
            tr.set(self._key("outbox_body", told_event.id), event_body(_fitted(told_event)))
        return len(told)

    @staticmethod
    def _event_id(index: LeaderboardIndex, window: Window, webhook_id: str) -> str:
        """Stable: the same window (of the same index, not one made again under its name) and webhook."""
        digest = hashlib.sha256(repr((index.prefix, window.type, window.start, window.end, webhook_id)).encode())
        return "evt_" + digest.hexdigest()[:24]

    # -- the log -------------------------------------------------------------------------------

    def log_end(self, name: str) -> int:
        """The cursor of the index's latest event (0: none yet)."""
        stored = self.db.read(lambda tr: tr.get(self._key("event_log_next", check_name(name))))
        return fdb.tuple.unpack(stored)[0] if stored is not None else 0

    def events_after(self, name: str, after: int, limit: int = 100, top: int = DEFAULT_TOP) -> list[pb.WindowEndEvent]:
        """The index's events after cursor ``after`` (those trimmed from the log are gone), with
        at most ``top`` entries each."""
        begin = self._key("event_log", name, after + 1)
        end = strinc(self._key("event_log", name))
        rows = self.db.read(lambda tr: tr.get_range(begin, end, limit))
        events = []
        for _, value in rows:
            event = pb.WindowEndEvent.FromString(value)
            del event.entries[top:]
            events.append(event)
        return events

    # -- the outbox ----------------------------------------------------------------------------

    def claim(
        self,
        owner: str,
        lease: float,
        batch: int,
        clock: float | None = None,
        busy: Mapping[str, int] | None = None,
        per_webhook: int | None = None,
    ) -> tuple[list[Pending], bool]:
        """Take a lease of ``lease`` seconds on at most ``batch`` events due now that nobody holds
        (one transaction): this process sends them.  At most ``per_webhook`` events of a webhook
        are taken, counting the ``busy`` ones (this process's POSTs under way, by webhook).
        Events of a deleted webhook are cleared.

        The outbox is read in pages (a read transaction each, at most CLAIM_PAGES of them),
        going on from where the previous claim stopped and round from its start, so every due
        event is found however large the outbox and wherever its events lie.  Returns the
        events leased and whether the pages read covered the whole outbox since the claim
        that stopped last at its start (False: call again soon, more may be due further on)."""
        now = time.time() if clock is None else clock
        begin, end = self._range("outbox")
        chosen, covered = self._claimable_rows(now, batch, busy or {}, per_webhook, begin, end)
        if not chosen:  # an idle outbox (the usual) costs no write transaction
            return [], covered

        def take(tr: Transaction) -> list[Pending]:
            taken: list[tuple[str, dict[str, Any]]] = []
            for row, stored in zip(chosen, tr.get_many(chosen), strict=True):
                state = json.loads(stored) if stored is not None else None
                if state is None or not _claimable(state, now):  # cleared, or taken, since it was read
                    continue
                state["owner"], state["lease_until"] = owner, now + lease
                tr.set(row, json.dumps(state).encode())
                taken.append((fdb.tuple.unpack(row[len(self.root) :])[1], state))
            keys = [self._key("webhooks", s["index"], s["webhook"]) for _, s in taken]
            keys += [self._key("outbox_body", event_id) for event_id, _ in taken]
            found = tr.get_many(keys)
            pending = []
            for (event_id, state), webhook, body in zip(taken, found[: len(taken)], found[len(taken) :], strict=True):
                if webhook is None or body is None:  # unsubscribed since: nobody to tell
                    self._clear_event(tr, event_id)
                    continue
                stored = json.loads(webhook)
                pending.append(Pending(event_id, state["webhook"], stored["url"], stored["secret"], body))
            return pending

        return self.db.run(take), covered

    def _claimable_rows(
        self,
        now: float,
        batch: int,
        busy: Mapping[str, int],
        per_webhook: int | None,
        begin: bytes,
        end: bytes,
    ) -> tuple[list[bytes], bool]:
        """The outbox rows of up to ``batch`` claimable events (see :meth:`claim`), read on from
        the scan's cursor; and whether the scan went round the whole outbox."""
        room = collections.Counter() if per_webhook is None else collections.Counter(busy)
        chosen: list[bytes] = []
        start = self._scan_from if begin <= self._scan_from < end else begin
        after, stop, wrapped = start, end, start == begin
        for _ in range(CLAIM_PAGES):
            rows = self.db.read(lambda tr, a=after, z=stop: tr.get_range(a, z, OUTBOX_PAGE))
            for number, (row, value) in enumerate(rows):
                state = json.loads(value)
                webhook = state["webhook"]
                if not _claimable(state, now) or (per_webhook is not None and room[webhook] >= per_webhook):
                    continue
                room[webhook] += 1
                chosen.append(row)
                if len(chosen) == batch:  # the next claim reads on after this row
                    following = rows[number + 1][0] if number + 1 < len(rows) else row + b"\x00"
                    self._scan_from = following
                    return chosen, False
            if len(rows) == OUTBOX_PAGE:
                after = rows[-1][0] + b"\x00"
                continue
            if wrapped:  # round the whole outbox: the next claim starts at its start
                self._scan_from = begin
                return chosen, True
            after, stop, wrapped = begin, start, True  # on from the outbox's start to where this began
        self._scan_from = after
        return chosen, False

    def _clear_event(self, tr: Transaction, event_id: str) -> None:
        tr.clear(self._key("outbox", event_id))
        tr.clear(self._key("outbox_body", event_id))

    def delivered(self, event_id: str) -> None:
        """The webhook acknowledged the event: it leaves the outbox (whoever holds it now)."""
        self.db.run(self._clear_event, event_id)

    def failed(self, event_id: str, error: str, first_retry: float, clock: float | None = None) -> str:
        """A try failed: the event is due again after a growing wait, lease let go ("failed");
        past MAX_EVENT_AGE it is dropped instead ("dropped"); "delivered" if another process
        cleared it meanwhile."""

        def fail(tr: Transaction) -> str:
            now = time.time() if clock is None else clock
            key = self._key("outbox", event_id)
            stored = tr.get(key)
            if stored is None:
                return "delivered"
            state = json.loads(stored)
            if now - state["created"] > MAX_EVENT_AGE:
                self._clear_event(tr, event_id)
                return "dropped"
            state["attempts"] += 1
            state["due"] = now + backoff(state["attempts"], first_retry)
            state["owner"], state["lease_until"], state["error"] = "", 0.0, error[:300]
            tr.set(key, json.dumps(state).encode())
            return "failed"

        return self.db.run(fail)

    def pending(self) -> int:
        """Events in the outbox."""
        return sum(1 for _ in self._outbox())
