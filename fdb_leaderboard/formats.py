"""Stored-data formats: which forms of the store and of each index a release writes and reads.

Stored data is a contract between releases: during a rolling upgrade several releases serve one
store, and a store outlives the release that wrote it.  Two version lines say what a store holds:

- the **store's format**, kept at ``ROOT + ("format",)`` (a ``StoreFormat`` message): what lives
  under the catalog's root beside the indexes (the catalog itself, the audit trail, webhooks,
  the processes' reports) and what the store's backends keep on disk;
- each **index's format**, ``IndexOptions.format``, kept at the index's ``S + (0,)`` and in its
  catalog entry (which every transaction of a served index reads already): what the index's own
  keys hold.

Each :class:`Format` of the tables below says what it adds, the release that first writes it and
the oldest release that reads it and keeps it when writing (``read_from``): only releases from
that one on may serve a store or index at that format.  The rules:

1. **Written at creation.**  A new store or index is at the newest format every process that may
   be running reads (:func:`creation_format`; a program without a catalog: :data:`NEWEST_INDEX`).
2. **Checked at every open.**  A format newer than this release knows is refused with
   :class:`~fdb_leaderboard.errors.FormatTooNew`, naming both versions and what to do
   (:func:`check_readable`); older ones are served, their older forms read as they are.
3. **Raised, never lowered**: by ``store upgrade`` / ``index upgrade`` (an operator), or by the
   server's maintenance once every process that may be running reads the newer format
   (:func:`raisable`).  Processes report their release in the catalog (``service/releases.py``);
   from store format :data:`REPORTING` on every process does, before it a process that does not
   report is taken to run :data:`UNREPORTED_RELEASE`, the last release that did not.
4. **A new form only where the format allows it**: code about to write form N asks
   :func:`allows` (``space.format`` for an index, an int comparison) and writes the older form
   until then, so the releases still running read it.
5. **Data rewritten before the raise where a format needs it**: the job runs in bounded,
   resumable batches (``index/upgrade.py``) while the index serves, every read exact meanwhile;
   the batch that finishes raises the format.

A store or index written before formats were recorded reads as :data:`UNRECORDED_STORE` /
:data:`UNRECORDED_INDEX`: release 0.2.0 wrote format 2 without saying so, and format 2's reading
covers what 0.1.0 wrote (format 1).

To add a format: append a :class:`Format` to its table (``read_from`` the release that first reads
it: ``RELEASE`` when only this one does), name a constant for code to test with :func:`allows`,
read the older forms correctly, add an upgrade job where data must change (``index/upgrade.py``),
make a fixture with the release before (``tools/dev/compat_fixture.py``) and say it in CHANGELOG.md.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

from .errors import FormatTooNew

RELEASE = "0.3.0"  # this release (pyproject.toml's version; tests/formats/test_format_versions.py checks they agree)


@dataclasses.dataclass(frozen=True)
class Format:
    """One version of a stored form."""

    version: int
    release: str  # the release that first writes it
    read_from: str  # the oldest release that reads it and keeps it when writing
    adds: str  # what it adds, for people (``store status``, CHANGELOG.md)
    upgrade: str = ""  # the job rewriting older data before the raise (empty: none, the raise alone)


STORE_FORMATS = (
    Format(
        1, "0.1.0", "0.1.0", "the catalog of named indexes with their options and maintenance policies; drops' notes"
    ),
    Format(
        2,
        "0.2.0",
        "0.2.0",
        "the audit trail; dumps' change captures and paused writes; restores' reserved prefixes; window-end "
        "webhooks, their outbox and event log",
    ),
    Format(
        3,
        "0.3.0",
        "0.3.0",
        "formats recorded (the store's and each index's); every process reports its release and last sign of "
        "life, so the server raises formats by itself once every live process reads them; every change to a "
        "catalog entry or an index's directories changes FoundationDB's metadata version, so processes keep "
        "them across transactions",
    ),
    Format(
        4,
        "0.3.0",
        "0.3.0",
        "the embedded store's redo log as its default durable mode, shared by every process with the store "
        "open: while it is open, and after a crash until the next open recovers it, its directory holds "
        "redo.checkpoint (log format 2), redo.head and preallocated redo.<n>.log segments with commits its "
        "data file may lack; a clean close of its last process leaves a plain LMDB data file holding every "
        "commit (FoundationDB stores: nothing changes)",
    ),
)
INDEX_FORMATS = (
    Format(
        1,
        "0.1.0",
        "0.1.0",
        "records, their entries and heads; windows' primary B-trees and ranked sets (the Record Layer's layout); "
        "distinct-score sets; display metadata; fill cursors",
    ),
    Format(
        2,
        "0.2.0",
        "0.2.0",
        "hidden records; score rules; submission counters in record heads (those of heads written before them "
        "count only later submissions); idempotency keys; multi-column scores; leagues",
    ),
    Format(
        3,
        "0.3.0",
        "0.2.0",
        "every head's submission counters exact: heads counted short are recounted from the record's entries",
        upgrade="recount submissions",
    ),
    Format(
        4,
        "0.3.0",
        "0.3.0",
        "the latest timestamp found again when the record holding it is deleted: while it is recomputed, "
        "its value before at S + (18,) and P holding only the times written since; windows built from "
        "sorted data: a build's token and the records written meanwhile (S + (16, ...)), fill cursors' "
        "sorted_build; on a store that clears key by key, deleted windows noted (S + (17, ...)) and their "
        "data cleared in bounded steps",
        upgrade="recompute the latest timestamp",
    ),
)

NEWEST_STORE = STORE_FORMATS[-1].version
NEWEST_INDEX = INDEX_FORMATS[-1].version
UNRECORDED_STORE = 2  # a store written before formats were recorded (releases 0.1.0 and 0.2.0)
UNRECORDED_INDEX = 2
UNREPORTED_RELEASE = "0.2.0"  # what a process that does not report its release may run
REPORTING = 3  # the store format from which every process on the store reports its release

# Forms code asks about with allows(): the store format that first holds each ...
CACHED_METADATA = 3  # every process changes the metadata version with a catalog entry or directory
REDO_LOG = 4  # the embedded store's directory may hold its redo log's session (redo.checkpoint format 2)
# ... and the index format that first holds each.
EXACT_SUBMISSIONS = 3  # every head's submission counters count its entries in each window (at least)
LATEST_RECOMPUTED = 4  # a deletion may clear P, its value before kept at S + (18,) while it is recomputed
# Builds from sorted data (index/build.py): their tokens and notes, FillCursor.sorted_build.  Every
# writer must note what it writes for a build, which 0.2.0 does not: below, loads, fills and
# restores take the paths 0.2.0 takes (a load's windows built by a fill's second phase).
SORTED_BUILDS = 4
RETIRED_WINDOWS = 4  # a deleted window's data left for bounded steps to clear, noted at S + (17, lb_key)


def release_key(release: str) -> tuple[int, ...]:
    """A release as comparable numbers: ``"0.10.1"`` -> (0, 10, 1); anything after them (a
    ``.dev1`` or ``rc1``) is ignored, so a pre-release counts as its release."""
    match = re.match(r"\d+(\.\d+)*", release)
    if match is None:
        raise ValueError(f"not a release: {release!r}")
    return tuple(int(part) for part in match.group(0).split("."))


def table_of(kind: str) -> tuple[Format, ...]:
    """The table of ``kind``: ``store`` or ``index``."""
    return {"store": STORE_FORMATS, "index": INDEX_FORMATS}[kind]


def newest(table: tuple[Format, ...]) -> int:
    return table[-1].version


def describe(table: tuple[Format, ...], version: int) -> Format | None:
    """The table's entry for ``version`` (None: a format this release does not know)."""
    return next((entry for entry in table if entry.version == version), None)


def allows(current: int, form: int) -> bool:
    """Whether data at format ``current`` may hold form ``form`` (the format that first holds it)."""
    return current >= form


def check_readable(kind: str, version: int, what: str, raised_by: str = "") -> None:
    """Refuse ``what`` (``index 'game'``, ``the store``) at format ``version`` of ``kind`` (store or
    index) if this release cannot read it, saying both versions and what to do."""
    table = table_of(kind)
    if version <= newest(table):
        return
    by = f" by release {raised_by}" if raised_by else " by a newer release"
    raise FormatTooNew(
        f"{what} is in {kind} format {version} (written{by}); this release ({RELEASE}) reads {kind} formats "
        f"1 to {newest(table)}: serve it with release {raised_by or 'the one that wrote it'} or later "
        "(`fdb-leaderboard --version` says which a command is)"
    )


def read_from(table: tuple[Format, ...], low: int, high: int) -> str:
    """The oldest release that reads every format above ``low`` up to ``high``."""
    releases = [entry.read_from for entry in table if low < entry.version <= high]
    return max(releases, key=release_key, default=table[0].read_from)


def raisable(table: tuple[Format, ...], current: int, releases: Iterable[str], reporting: bool) -> int:
    """The newest format (at least ``current``) that every process that may be running reads:
    the live processes' ``releases`` and this one, and without ``reporting`` (a store below format
    :data:`REPORTING`) processes that do not report, taken to run :data:`UNREPORTED_RELEASE`."""
    running = [RELEASE, *releases]
    if not reporting:
        running.append(UNREPORTED_RELEASE)
    oldest = min(running, key=release_key)
    target = current
    for entry in table:
        if entry.version > target and release_key(entry.read_from) <= release_key(oldest):
            target = entry.version
        elif entry.version > target:
            break
    return target


def creation_format(table: tuple[Format, ...], releases: Iterable[str], reporting: bool) -> int:
    """The format a new store or index is created at: the newest the processes that may run read."""
    return raisable(table, 0, releases, reporting)


def blockers(table: tuple[Format, ...], current: int, target: int, releases: Iterable[str]) -> list[str]:
    """The reported releases too old for ``target`` (from ``current``), oldest first."""
    needed = release_key(read_from(table, current, target))
    return sorted({r for r in releases if release_key(r) < needed}, key=release_key)


def version_text() -> str:
    """What ``fdb-leaderboard --version`` prints."""
    return (
        f"fdb-leaderboard {RELEASE} (writes store format {NEWEST_STORE} and index format {NEWEST_INDEX}; "
        f"reads store formats 1-{NEWEST_STORE} and index formats 1-{NEWEST_INDEX})"
    )
