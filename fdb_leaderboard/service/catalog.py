"""Named indexes in one store: the catalog a server uses to address several indexes.

``ROOT + ("catalog", name)`` holds a ``CatalogEntry``: the index's key prefix, its options
(a copy of what the index itself stores at ``S + (0,)``) and its maintenance policy.
Prefixes are ``ROOT + (n,)`` with ``n`` from a counter, so renaming or dropping never
collides with a later index.  Every key of an index starts with its prefix and neither store
compresses key prefixes, so the prefix is kept short: 4 bytes of root, 1-3 bytes of number
(with the former ``("fdb-leaderboard",) + ("index", n)`` it was 26 bytes, a quarter of the
bytes of an indexed score).

Every transaction of a kept index also checks the index's catalog entry (``entry_checks.py``):
that it still names the index's prefix, whether its writes are paused, whether changes are
captured for a dump, and its stored format.

The audit trail of every index's admin actions lives under the catalog's root too
(``index/audit.py``): an index's events outlive its drop.  The catalog's own actions (create,
drop, policies, pauses) record themselves in their transactions; every index it opens records
its admin actions in the same trail.
"""

from __future__ import annotations

import functools
import os
import re
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

import fdb.tuple
from google.protobuf import text_format

from .. import formats
from ..errors import AlreadyExists, InvalidArgument, NotFound
from ..index import IndexSettings, LeaderboardIndex, Window
from ..index.audit import MAX_EVENTS, AuditEvent, AuditTrail, JobEvents, expire_in_batches
from ..index.calendar import TIMEBASES
from ..index.leaderboard import LOCAL_ACTOR
from ..proto import index_pb2
from ..store.api import Database, Transaction, read_bounds, strinc
from . import releases
from .entry_checks import EntryChecked, changes_prefix, check_format, index_format
from .entry_checks import StaleIndex as StaleIndex  # where the dumps and the tests look for it
from .recreate import refuse_other_options

ROOT = fdb.tuple.pack(("lb",))
STAMPS_CHECK_SECONDS = 10.0  # how often a store below formats.CACHED_METADATA is read again
T = TypeVar("T")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}$")


def check_name(name: object) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidArgument(
            f"index name {name!r} is invalid: use 1-100 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit"
        )
    return name


def timebase_scale(policy: index_pb2.MaintenancePolicy | None) -> int:
    """Units of the index's times per second, as its policy says (seconds unless told)."""
    return TIMEBASES[(policy.timebase if policy is not None else "") or "seconds"]


def writes_paused(entry: index_pb2.CatalogEntry, now: float) -> str:
    """Why the index's writes are refused at ``now`` (empty: they are not)."""
    until = entry.writes_paused_until
    return (entry.pause_reason or "paused") if until < 0 or now < until else ""


class Catalog:
    """The indexes of one store, by name.  Opened indexes are kept (they hold no data)."""

    def __init__(self, db: Database, root: bytes = ROOT) -> None:
        self.db = db
        self.root = root
        self.audit = AuditTrail(root)
        self._open: dict[str, tuple[bytes, LeaderboardIndex]] = {}
        # Told when an index's deletion leaves its latest timestamp's recompute to the maintenance.
        self.latest_left: Callable[[], None] | None = None
        self._store_read = False  # the store's format was found readable (checked at the first open)
        self._stamps_kept = False
        self._stamps_checked = float("-inf")

    def _check_store(self) -> None:
        """FormatTooNew if the store is in a format this release does not read (once per catalog:
        formats only rise, and a server's report notices a raise after that)."""
        if not self._store_read:
            state = self.db.read(lambda tr: releases.read_store_format(tr, self.root))
            formats.check_readable("store", state.version, "the store", state.raised_by)
            self._store_read = True

    def stamps_kept(self) -> bool:
        """Whether every process on the store changes the metadata version with each change to a
        catalog entry or a directory (the store's format allows ``formats.CACHED_METADATA``: no
        older release may run on it), so the indexes may keep them across transactions.  Until
        it does, read again at most every STAMPS_CHECK_SECONDS (formats only rise)."""
        if not self._stamps_kept and time.monotonic() - self._stamps_checked >= STAMPS_CHECK_SECONDS:
            self._stamps_checked = time.monotonic()
            with read_bounds():
                state = self.db.read(lambda tr: releases.read_store_format(tr, self.root))
            self._stamps_kept = formats.allows(state.version, formats.CACHED_METADATA)
        return self._stamps_kept

    def _key(self, name: str) -> bytes:
        return self.root + fdb.tuple.pack(("catalog", name))

    def probe(self) -> None:
        """One read of the store (the catalog's index counter): raises if the store does not answer."""
        self.db.read(lambda tr: tr.get(self.root + fdb.tuple.pack(("next_index",))))

    def entry_key(self, name: str) -> bytes:
        """Where the catalog entry of index ``name`` is stored."""
        return self._key(name)

    def create(
        self,
        name: str,
        settings: IndexSettings,
        maintenance: index_pb2.MaintenancePolicy | None = None,
        all_time: bool = True,
        windows: Sequence[tuple[int, int, int]] = (),
        actor: str | None = None,
    ) -> tuple[LeaderboardIndex, tuple[Window, ...] | None]:
        """Create the index ``name`` with its all-time window (unless ``all_time`` is False) and
        ``windows``; returns (index, windows added), None for those when it existed with the same
        options (not an error)."""
        check_name(name)
        options = settings.to_proto()
        event = self.audit.event(actor or LOCAL_ACTOR, "CreateIndex", name)

        def create(tr: Transaction) -> tuple[bytes, tuple[Window, ...] | None, int]:
            store = releases.open_store(tr, self.root)  # too new: refused; fresh: its format recorded
            stored = tr.get(self._key(name))
            if stored is not None:
                entry = index_pb2.CatalogEntry.FromString(stored)
                stored_settings = IndexSettings.from_proto(entry.options)
                if stored_settings != settings:
                    raise refuse_other_options(name, stored_settings, settings)
                return entry.prefix, None, entry.options.format
            prefix = self._new_prefix(tr)
            version = self.creation_format(tr, store)
            entry = index_pb2.CatalogEntry(prefix=prefix, options=options, maintenance=maintenance)
            entry.options.format = version
            tr.set(self._key(name), entry.SerializeToString())
            tr.changed_metadata()
            added = LeaderboardIndex(self.db, prefix, settings, version).initialize(tr, all_time, windows)
            event.write(
                tr,
                options=text_format.MessageToString(options, as_one_line=True),
                windows=len(added or ()),
                format=version,
            )
            return prefix, added, version

        prefix, added, version = self.db.run(create)
        return self._keep(name, prefix, settings, maintenance, version), added

    def creation_format(self, tr: Transaction, store: releases.StoreFormatState) -> int:
        """The index format a new index is created at: the newest every process that may write to
        it reads (``formats.creation_format``, from the store's format and the live reports)."""
        return formats.creation_format(
            formats.INDEX_FORMATS, releases.live_releases(tr, self.root), reporting=store.reporting
        )

    def _new_prefix(self, tr: Transaction) -> bytes:
        """A prefix no index has had (from the catalog's counter)."""
        counter_key = self.root + fdb.tuple.pack(("next_index",))
        number = int.from_bytes(tr.get(counter_key) or b"\x00" * 8, "little")
        tr.set(counter_key, (number + 1).to_bytes(8, "little"))
        return self.root + fdb.tuple.pack((number,))

    def _keep(
        self,
        name: str,
        prefix: bytes,
        settings: IndexSettings,
        policy: index_pb2.MaintenancePolicy | None,
        stored_format: int = 0,
    ) -> LeaderboardIndex:
        """The index ``name`` at ``prefix`` (in ``stored_format``, as its options record it), kept
        open; its transactions check its entry (and follow its policy's timebase, what "now" is
        for its windows, and its format)."""
        version = check_format(name, index_pb2.IndexOptions(format=stored_format))
        checked = EntryChecked(self.db, name, self._key(name), prefix, self.root, stamps_kept=self.stamps_kept)
        index = LeaderboardIndex(checked, prefix, settings, version)
        index.timebase = timebase_scale(policy)
        index.audit, index.name = self.audit, name
        index.on_latest_left = self._latest_left

        def entry_changed(entry: index_pb2.CatalogEntry) -> None:
            index.timebase = timebase_scale(entry.maintenance)
            index.format = max(index.format, index_format(entry.options))

        def raise_entry(tr: Transaction, version: int) -> None:  # in the transaction raising the format
            stored = tr.get(self._key(name))
            if stored is not None:
                entry = index_pb2.CatalogEntry.FromString(stored)
                if entry.prefix == prefix:
                    entry.options.format = version
                    tr.set(self._key(name), entry.SerializeToString())
                    tr.changed_metadata()

        checked.on_entry = entry_changed
        index.on_format_raised = raise_entry
        self._open[name] = (prefix, index)
        return index

    def _latest_left(self) -> None:
        if self.latest_left is not None:
            self.latest_left()

    def forget(self, name: str) -> None:
        """Open ``name`` afresh next time (it was found stale)."""
        self._open.pop(name, None)

    def entry(self, name: str) -> index_pb2.CatalogEntry:
        with read_bounds():  # exact, whatever the call's reads may be: an index just created is found
            stored = self.db.read(lambda tr: tr.get(self._key(check_name(name))))
        if stored is None:
            raise NotFound(f"no index named {name!r}")
        return index_pb2.CatalogEntry.FromString(stored)

    def get(self, name: str) -> LeaderboardIndex:
        """The index ``name`` (NotFound if it does not exist)."""
        cached = self._open.get(name)
        if cached is not None:
            return cached[1]
        self._check_store()
        entry = self.entry(name)
        return self._keep(
            name, entry.prefix, IndexSettings.from_proto(entry.options), entry.maintenance, entry.options.format
        )

    def list(self) -> list[tuple[str, index_pb2.CatalogEntry]]:
        begin = self.root + fdb.tuple.pack(("catalog",))
        rows = self.db.read(lambda tr: tr.get_range(begin, strinc(begin)))
        return [(fdb.tuple.unpack(key[len(self.root) :])[1], index_pb2.CatalogEntry.FromString(v)) for key, v in rows]

    def drop(self, name: str, batch_keys: int = 10_000, actor: str | None = None) -> None:
        """Delete the index ``name`` and all its data (NotFound if there is none).

        The name is freed at once, in one transaction that also leaves a note of the prefix;
        the data is then cleared in transactions of at most ``batch_keys`` keys (a huge index
        would overrun one transaction on the embedded store), and the note removed.  An
        interrupted drop is finished by the next ``drop`` of any index.
        """
        check_name(name)
        event = self.audit.event(actor or LOCAL_ACTOR, "DropIndex", name)

        def unlink(tr: Transaction) -> bytes:
            stored = tr.get(self._key(name))
            if stored is None:
                raise NotFound(f"no index named {name!r}")
            prefix = index_pb2.CatalogEntry.FromString(stored).prefix
            tr.clear(self._key(name))
            tr.changed_metadata()
            tr.set(self._dropping_key(prefix), b"")
            event.write(tr)
            return prefix

        self.db.run(unlink)
        self._open.pop(name, None)
        self._clear_dropped(batch_keys)

    def _dropping_key(self, prefix: bytes) -> bytes:
        return self.root + fdb.tuple.pack(("dropping", prefix))

    def _clear_dropped(self, batch_keys: int) -> None:
        self._drop_abandoned_restores()
        begin = self.root + fdb.tuple.pack(("dropping",))
        for key, _ in self.db.read(lambda tr: tr.get_range(begin, strinc(begin))):
            prefix = fdb.tuple.unpack(key[len(self.root) :])[1]

            def clear_batch(tr: Transaction, prefix: bytes = prefix, note: bytes = key) -> bool:
                rows = [] if tr.clears_ranges_at_once else tr.get_range(prefix, strinc(prefix), batch_keys)
                if len(rows) < batch_keys:  # (all at once where a range clear costs the same whatever it holds)
                    tr.clear_range(prefix, strinc(prefix))
                    tr.clear(note)
                    return True
                tr.clear_range(prefix, rows[-1][0] + b"\x00")
                return False

            while not self.db.run(clear_batch):
                pass

    def set_maintenance(self, name: str, maintenance: index_pb2.MaintenancePolicy, actor: str | None = None) -> None:
        event = self.audit.event(actor or LOCAL_ACTOR, "SetMaintenancePolicy", name)

        def change(tr: Transaction, entry: index_pb2.CatalogEntry) -> None:
            entry.maintenance.CopyFrom(maintenance)
            event.write(tr, policy=_policy_text(maintenance))

        self._update(name, change)
        kept = self._open.get(name)
        if kept is not None:
            kept[1].timebase = timebase_scale(maintenance)

    def grow_maintenance(
        self,
        name: str,
        grown: Callable[[index_pb2.MaintenancePolicy], index_pb2.MaintenancePolicy],
        actor: str | None = None,
    ) -> index_pb2.MaintenancePolicy | None:
        """Replace the policy of index ``name`` with ``grown(policy)``, read and written in one
        transaction; the new policy, or None when ``grown`` changed nothing (nothing written)."""
        event = self.audit.event(actor or LOCAL_ACTOR, "SetMaintenancePolicy", name)
        kept: list[index_pb2.MaintenancePolicy | None] = [None]

        def change(tr: Transaction, entry: index_pb2.CatalogEntry) -> None:
            policy = grown(entry.maintenance)
            kept[0] = None if policy == entry.maintenance else policy
            if kept[0] is not None:
                entry.maintenance.CopyFrom(policy)
                event.write(tr, policy=_policy_text(policy))

        self._update(name, change)
        return kept[0]

    def _update(self, name: str, change: Callable[[Transaction, index_pb2.CatalogEntry], None]) -> None:
        """Change the entry of index ``name`` in one transaction (NotFound if there is none)."""

        def update(tr: Transaction) -> None:
            stored = tr.get(self._key(check_name(name)))
            if stored is None:
                raise NotFound(f"no index named {name!r}")
            entry = index_pb2.CatalogEntry.FromString(stored)
            change(tr, entry)
            tr.set(self._key(name), entry.SerializeToString())
            tr.changed_metadata()

        self.db.run(update)

    # -- pauses and captured changes (dumps) -----------------------------------------------------

    def set_writes_paused(self, name: str, until: int, reason: str = "", actor: str | None = None) -> None:
        """Refuse the writes of index ``name`` until ``until`` (Unix seconds; -1: until resumed;
        0: take them again), saying ``reason``.  Recorded when an ``actor`` asks (an operator's
        pause; a dump's own pauses are part of its job)."""
        event = None if actor is None else self.audit.event(actor, "SetWritesPaused", name)

        def change(tr: Transaction, entry: index_pb2.CatalogEntry) -> None:
            entry.writes_paused_until = until
            entry.pause_reason = reason if until else ""
            if event is not None:
                event.write(tr, paused=bool(until), reason=entry.pause_reason)

        self._update(name, change)

    def start_capture(self, name: str, lease_seconds: float, actor: str | None = None) -> bytes:
        """Have every write of index ``name`` note the units it changes, for ``lease_seconds``
        unless renewed; returns the capture's id.  Captures whose lease ran out (their dump
        died) are removed, with what they noted.  A dump an ``actor`` asked for is recorded."""
        capture = os.urandom(8)
        event = None if actor is None else self.audit.event(actor, "Dump", name)

        def change(tr: Transaction, entry: index_pb2.CatalogEntry) -> None:
            now = time.time()
            for old in list(entry.captures):
                if old.until <= now:
                    entry.captures.remove(old)
                    tr.clear_range_startswith(changes_prefix(self.root, old.id))
            entry.captures.add(id=capture, until=int(now + lease_seconds))
            if event is not None:
                event.write(tr, phase="started")

        self._update(name, change)
        return capture

    def renew_capture(self, name: str, capture: bytes, lease_seconds: float) -> None:
        def change(tr: Transaction, entry: index_pb2.CatalogEntry) -> None:
            for kept in entry.captures:
                if kept.id == capture:
                    kept.until = int(time.time() + lease_seconds)
                    return
            raise NotFound(f"the capture of index {name!r}'s changes ended (its lease ran out)")

        self._update(name, change)

    def end_capture(self, name: str, capture: bytes, paused_until: int | None = None, reason: str = "") -> None:
        """Stop capturing and forget what was noted; ``paused_until`` sets the writes' pause too."""

        def change(tr: Transaction, entry: index_pb2.CatalogEntry) -> None:
            for kept in list(entry.captures):
                if kept.id == capture:
                    entry.captures.remove(kept)
            tr.clear_range_startswith(changes_prefix(self.root, capture))
            if paused_until is not None:
                entry.writes_paused_until = paused_until
                entry.pause_reason = reason if paused_until else ""

        self._update(name, change)

    # -- restores ----------------------------------------------------------------------------------

    def _restoring_key(self, prefix: bytes) -> bytes:
        return self.root + fdb.tuple.pack(("restoring", prefix))

    def reserve_prefix(self, lease_seconds: float) -> bytes:
        """A new prefix for an index being restored, noted as such until the lease runs out (then a
        later drop clears whatever the restore wrote there); renew it while the restore runs."""

        def reserve(tr: Transaction) -> bytes:
            prefix = self._new_prefix(tr)
            tr.set(self._restoring_key(prefix), int(time.time() + lease_seconds).to_bytes(8, "little"))
            return prefix

        return self.db.run(reserve)

    def renew_reservation(self, prefix: bytes, lease_seconds: float) -> None:
        until = int(time.time() + lease_seconds).to_bytes(8, "little")
        self.db.run(lambda tr: tr.set(self._restoring_key(prefix), until))

    def publish(
        self,
        name: str,
        prefix: bytes,
        settings: IndexSettings,
        maintenance: index_pb2.MaintenancePolicy,
        actor: str | None = None,
        source: str = "",
    ) -> LeaderboardIndex:
        """Name the index restored at ``prefix`` (AlreadyExists if the name is taken meanwhile);
        recorded as restored by ``actor`` from ``source`` (the dump's index)."""
        check_name(name)
        event = self.audit.event(actor or LOCAL_ACTOR, "Restore", name)

        def publish(tr: Transaction) -> None:
            if tr.get(self._key(name)) is not None:
                raise AlreadyExists(f"index {name!r} exists")
            entry = index_pb2.CatalogEntry(prefix=prefix, options=settings.to_proto(), maintenance=maintenance)
            restored = tr.get(prefix + fdb.tuple.pack((0,)))  # the dump's options: its data's format
            if restored is not None:
                entry.options.format = index_pb2.IndexOptions.FromString(restored).format
            tr.set(self._key(name), entry.SerializeToString())
            tr.changed_metadata()
            tr.clear(self._restoring_key(prefix))
            event.write(tr, source=source)

        self.db.run(publish)
        self._open.pop(name, None)
        return self.get(name)

    def abandon(self, prefix: bytes, batch_keys: int = 10_000) -> None:
        """Clear what a failed restore wrote at ``prefix``."""

        def abandon(tr: Transaction) -> None:
            tr.clear(self._restoring_key(prefix))
            tr.set(self._dropping_key(prefix), b"")

        self.db.run(abandon)
        self._clear_dropped(batch_keys)

    def _drop_abandoned_restores(self) -> None:
        """Restores whose lease ran out (their process died) are dropped."""
        begin = self.root + fdb.tuple.pack(("restoring",))
        now = time.time()

        def expired(tr: Transaction) -> None:
            for key, until in tr.get_range(begin, strinc(begin)):
                if int.from_bytes(until, "little") <= now:
                    tr.clear(key)
                    tr.set(self._dropping_key(fdb.tuple.unpack(key[len(self.root) :])[1]), b"")

        self.db.run(expired)

    # -- the audit trail ---------------------------------------------------------------------------

    def audit_events(
        self,
        index: str | None = None,
        action: str | None = None,
        since_us: int | None = None,
        until_us: int | None = None,
        limit: int = 100,
        continuation: bytes | None = None,
        newest_first: bool = False,
    ) -> tuple[list[AuditEvent], bytes | None]:
        """A page of audit events (see ``AuditTrail.events``) and the next page's continuation."""
        return self.db.read(
            lambda tr: self.audit.events(tr, since_us, until_us, limit, continuation, index, action, newest_first)
        )

    def audit_retention(self) -> int:
        """Seconds audit events are kept."""
        return self.db.read(self.audit.retention)

    def set_audit_retention(self, seconds: int, actor: str | None = None) -> int:
        """Keep audit events ``seconds`` (0: the default); returns the retention now."""
        event = self.audit.event(actor or LOCAL_ACTOR, "SetAuditRetention")

        def change(tr: Transaction) -> int:
            kept = self.audit.set_retention(tr, seconds)
            event.write(tr, retention=kept)
            return kept

        return self.db.run(change)

    def expire_audit_events(
        self,
        before_us: int | None = None,
        max_events: int = MAX_EVENTS,
        keep_going: Callable[[], bool] | None = None,
        actor: str | None = None,
    ) -> tuple[int, bool]:
        """Clear audit events older than ``before_us`` (None: than the retention), ``max_events``
        per transaction, until done or ``keep_going()`` says stop; returns (cleared, done).
        Recorded as a job (``audit.JobEvents``); a run that clears nothing is not."""
        if before_us is None:
            before_us = int((time.time() - self.audit_retention()) * 1_000_000)
        max_events = min(max_events, MAX_EVENTS)
        job = JobEvents(self.audit, actor or LOCAL_ACTOR, "ExpireAuditEvents", "", before_us=before_us)
        step = functools.partial(self.audit.expire_step, before_us=before_us, max_events=max_events)
        return expire_in_batches(job, self.db.run, step, keep_going, "events_cleared")


def _policy_text(policy: index_pb2.MaintenancePolicy) -> str:
    """A policy as an event's detail: its fields as protobuf's text format, on one line."""
    return text_format.MessageToString(policy, as_one_line=True) or "(none)"
