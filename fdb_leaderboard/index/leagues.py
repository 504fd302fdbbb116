"""Leagues: each window of one type split into cohorts of at most N records per tier.

An index created with ``IndexSettings.leagues`` keeps, for every window of the league's type:

- joining: a record joins a cohort the first time it has a value in the window (its first
  score there, in the score's transaction).  It joins the tier's newest cohort while that has
  fewer than ``cohort_size`` members, else opens the next one.  The tier's newest cohort and its
  member count are one key, read (not snapshot) by every join: on FoundationDB two concurrent
  joins of one tier conflict and one retries, so a cohort never overfills.  The record keeps its
  cohort for the window: later scores, a hiding, a deletion and a new score leave it there.
- ranking: a cohort's records are a small B-tree (``stored score, ts, context, pk``: the
  window's own order and tie rule), read whole to rank within it (at most ``cohort_size`` keys).
  Hidden records are in no cohort's ranking, as in no window's.
- tiers, computed when the record joins (no job runs at a window's end): new records start in
  tier 0, the lowest.  Otherwise the record's latest earlier window of the type it joined
  decides: its ORDINAL rank in that cohort then (final once that window has ended) puts it up a
  tier if among the top ``promote``, else down if among the bottom ``demote`` (within
  ``[0, tiers - 1]``); a record not ranked there (hidden) keeps that tier.  A record that skipped
  windows keeps the tier its last league window gave it; once that window is deleted (expired),
  the tier it played there.  A deleted record starts over in tier 0.

Costs (FoundationDB, ``tools/bench leagues``): a score in a league window reads the record's
membership (one more read, in the round of the window's ranked-set reads); a value entering the
window also reads the record's latest league window in that round.  A first join then reads that
window's cohort when there is one (one round), and its tier's newest cohort (one round).  An
index without leagues does none of this: its writer keeps the plain write steps.

A window refilled from stored records (a rebuild, or a window added after its scores) assigns
its cohorts again, in the fill's order (by primary key).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from ..errors import FailedPrecondition, InvalidArgument
from ..rankedset import Steps
from ..store.api import strinc
from . import tuplecodec as tuples
from .directory import Window
from .reads import RankedEntry, RankMode, Reader, WindowRef
from .settings import Leagues
from .transaction import IndexTransaction


def lockstep(operations: Sequence[Steps[object]]) -> Steps[None]:
    """Several operations as one: each round advances all (as ``run_together``, but as steps)."""
    active = list(operations)
    while active:
        waiting = []
        for operation in active:
            try:
                next(operation)
            except StopIteration:
                continue
            waiting.append(operation)
        active = waiting
        if active:
            yield


def moved_tier(leagues: Leagues, tier: int, rank: int | None, better_than: int | None) -> int:
    """The tier after a window where the record had ORDINAL ``rank`` in its cohort and
    ``better_than`` records ranked after it (None: not ranked there)."""
    if rank is None or better_than is None:
        return tier
    if rank < leagues.promote:
        return min(tier + 1, leagues.tiers - 1)
    if better_than < leagues.demote:
        return max(tier - 1, 0)
    return tier


class LeagueKeeper:
    """Cohort membership and rankings kept by the write path of one transaction."""

    def __init__(self, txn: IndexTransaction, leagues: Leagues) -> None:
        self.txn = txn
        self.tr = txn.tr
        self.layout = txn.layout
        self.leagues = leagues
        self._pk_at = 2 + txn.settings.context_size  # a cohort row: stored score, ts, context..., pk...

    def _row_key(self, window: Window, member: tuple[int, int], element: bytes, pk_flat: bytes) -> bytes:
        return self.layout.cohort_prefix(window.key_bytes, *member) + element + pk_flat

    def add_steps(self, window: Window, element: bytes, pk_flat: bytes, hidden: bool) -> Steps[None]:
        """The record's value ``element`` enters ``window``: it joins a cohort unless it has one,
        and is ranked there unless ``hidden``.  A value entering a window is nearly always a first
        score there, so the record's latest league window is read at once, with its membership."""
        found = self.tr.get_async(self.layout.member_key(window.key_bytes, pk_flat))
        record_key = self.layout.league_record_key(tuples.pack((tuples.unpack(pk_flat),)))
        latest = self.tr.get_async(record_key)
        yield
        member = tuples.unpack(found.value) if found.value is not None else None
        if member is None:
            member = yield from self._join_steps(window, pk_flat, record_key, latest.value)
        if not hidden:
            self.tr.set(self._row_key(window, member, element, pk_flat), b"")

    def remove_steps(self, window: Window, element: bytes, pk_flat: bytes) -> Steps[None]:
        """The record's (ranked) value leaves ``window``: it stays a member, unranked."""
        found = self.tr.get_async(self.layout.member_key(window.key_bytes, pk_flat))
        yield
        if found.value is not None:
            self.tr.clear(self._row_key(window, tuples.unpack(found.value), element, pk_flat))

    def move_steps(self, window: Window, old: bytes, new: bytes, pk_flat: bytes) -> Steps[None]:
        found = self.tr.get_async(self.layout.member_key(window.key_bytes, pk_flat))
        yield
        if found.value is None:  # a member's value cannot move without its membership: join now
            yield from self.add_steps(window, new, pk_flat, hidden=False)
            return
        member = tuples.unpack(found.value)
        self.tr.clear(self._row_key(window, member, old, pk_flat))
        self.tr.set(self._row_key(window, member, new, pk_flat), b"")

    def _join_steps(
        self, window: Window, pk_flat: bytes, record_key: bytes, latest: bytes | None
    ) -> Steps[tuple[int, int]]:
        """Join ``window``'s newest cohort of the record's tier (``latest``: its latest league window)."""
        directory = self.txn.directory()
        tier = 0
        newer = True  # whether this window starts after the record's latest league window
        if latest is not None:
            lb_key, last_tier, last_cohort = tuples.unpack(latest)
            before = directory.by_key(lb_key) if directory is not None else None
            if before is None:
                tier = last_tier  # that window is gone: the tier the record played there
            elif before.start < window.start:
                prefix = self.layout.cohort_prefix(before.key_bytes, last_tier, last_cohort)
                # A snapshot read: a late score in that window must not abort today's joins.
                rows = self.tr.snapshot.get_range_async(*_range(prefix))
                yield
                rank, after = self._position(rows.value, pk_flat, len(prefix))
                tier = moved_tier(self.leagues, last_tier, rank, after)
            else:
                newer = False
                tier = last_tier
        open_key = self.layout.open_cohort_key(window.key_bytes, tier)
        opened = self.tr.get_async(open_key)  # a read that conflicts with every other join of the tier
        yield
        cohort, members = tuples.unpack(opened.value) if opened.value is not None else (0, 0)
        if members >= self.leagues.cohort_size:
            cohort, members = cohort + 1, 0
        self.tr.set(open_key, tuples.pack((cohort, members + 1)))
        self.tr.set(self.layout.member_key(window.key_bytes, pk_flat), tuples.pack((tier, cohort)))
        if newer:
            self.tr.set(record_key, tuples.pack((window.lb_key, tier, cohort)))
        return tier, cohort

    def _position(
        self, rows: Sequence[tuple[bytes, bytes]], pk_flat: bytes, base: int
    ) -> tuple[int | None, int | None]:
        """The record's ORDINAL rank among cohort ``rows`` and how many rank strictly after it."""
        pk_at = self._pk_at
        decoded = []
        mine = None
        for key, _ in rows:
            offsets = tuples.unpack_with_offsets(key[base:])[1]
            element = key[base : base + offsets[pk_at]]
            decoded.append(element)
            if key[base + offsets[pk_at] :] == pk_flat:
                mine = element
        if mine is None:
            return None, None
        return sum(1 for e in decoded if e < mine), sum(1 for e in decoded if e > mine)

    def forget(self, pk_nested: bytes) -> None:
        """A deleted record starts over: its league history goes (its cohorts keep its places)."""
        self.tr.clear(self.layout.league_record_key(pk_nested))


def _range(prefix: bytes) -> tuple[bytes, bytes]:
    return prefix, strinc(prefix)


# -- reads ------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Cohort:
    """One cohort of a league window: its ranked records (ranks within the cohort) and, when a
    record was named, that record's entry (None while it is not ranked, e.g. hidden)."""

    window: Window
    tier: int
    cohort: int
    total: int  # records ranked in the cohort
    entries: list[RankedEntry]
    entry: RankedEntry | None = None


def check_count(value: object, name: str, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or (high is not None and value > high):
        bound = f" and {high}" if high is not None else ""
        raise InvalidArgument(f"{name} must be an integer between 0{bound}, not {value!r}")
    return value


def read_cohort(
    reader: Reader,
    pk: object | None,
    tier: int | None,
    cohort: int | None,
    timestamp: int | None,
    mode: RankMode,
    page: int,
    size: int,
    around: tuple[int, int] | None,
) -> Cohort | None:
    """The cohort read (see ``LeaderboardIndex.cohort``); None if the record joined none."""
    leagues = reader.space.settings.leagues
    if leagues is None:
        raise FailedPrecondition("the index has no leagues: create it with leagues (window type, cohort size, tiers)")
    if (pk is None) == (tier is None or cohort is None):
        raise InvalidArgument("name a record (pk) or a cohort (tier and cohort), not both")
    if around is not None and pk is None:
        raise InvalidArgument("around-me (above, below) needs the record (pk)")
    page = check_count(page, "page")
    size = check_count(size, "size", leagues.cohort_size)
    key = reader.txn.pk(pk) if pk is not None else None
    window = reader.window(WindowRef(leagues.window_type, timestamp))
    layout = reader.layout
    if key is not None:
        found = reader.tr.get(layout.member_key(window.key_bytes, key.flat))
        if found is None:
            return None
        tier, cohort = tuples.unpack(found)
    else:
        tier = check_count(tier, "tier", leagues.tiers - 1)
        cohort = check_count(cohort, "cohort")
    prefix = layout.cohort_prefix(window.key_bytes, tier, cohort)
    rows = reader.tr.get_range(*_range(prefix))
    entries = _ranked_entries(reader, window, prefix, [row[0] for row in rows], mode)
    mine = next((i for i, entry in enumerate(entries) if key is not None and entry.pk == key.pk), None)
    if around is not None:
        above, below = around
        chosen = [] if mine is None else entries[max(0, mine - above) : mine + below + 1]
    else:
        first = (max(page, 1) - 1) * size if size else 0
        chosen = entries[first : first + size] if size else entries
    return Cohort(window, tier, cohort, len(entries), chosen, entries[mine] if mine is not None else None)


def _ranked_entries(
    reader: Reader, window: Window, prefix: bytes, keys: Sequence[bytes], mode: RankMode
) -> list[RankedEntry]:
    """The cohort's rows as entries, best first, ranked within the cohort in ``mode``."""
    as_primary = reader.layout.primary + window.key_bytes  # a cohort row continues as a primary key does
    decode: Callable = reader.row_decoder(window, b"")
    rows = [decode(as_primary + key[len(prefix) :]) for key in keys]
    entries = []
    better = 0  # rows before this one with a smaller element (ORDINAL), score (COMPETITION), distinct scores (DENSE)
    for i, row in enumerate(rows):
        if i:
            previous = rows[i - 1]
            if mode is RankMode.DENSE:
                better += row.stored != previous.stored
            elif (row.element if mode is RankMode.ORDINAL else row.stored) != (
                previous.element if mode is RankMode.ORDINAL else previous.stored
            ):
                better = i
        entries.append(row.entry(better))
    return entries
