"""The time-windowed leaderboard index over a transactional ordered key-value store.

One module per concern; each works inside one store transaction through the narrow
context of ``transaction.py`` and none imports another's class unless it builds on it:

| module | concern |
|---|---|
| ``leaderboard.py`` | :class:`LeaderboardIndex`, the facade: one method per operation, each one transaction |
| ``facade_reads.py``, ``facade_upkeep.py`` | the facade's reads; its window upkeep (updates, expiry, fills, upgrades) |
| ``operations.py`` | :class:`Operations`, one transaction's concerns, and running them (once per idempotency key) |
| ``records.py`` | records and the write path: entries, heads, a record's value in every window |
| ``windows.py`` | the window directory: updates, expiry, keep-ahead, sub-directories |
| ``fill.py`` | filling new windows from stored records, in bounded steps (both phases) |
| ``build.py`` | windows built from sorted data: each entry and ranked-set node written once, in order |
| ``external_sort.py`` | sorting any number of items in bounded memory, through temporary files |
| ``loading.py`` | bulk loads: batches, several in flight on a network store, windows built as they come |
| ``trim.py`` | dropping entries no window depends on |
| ``reads.py`` | ranks (ORDINAL, COMPETITION, DENSE), top N, around me, counts and scans (both ways) |
| ``metadata.py`` | records' display metadata, attached to every listing in its transaction |
| ``idempotency.py`` | writes applied once per idempotency key: repeats answer the first answer |
| ``hiding.py`` | hiding records from every window and restoring them, the list of hidden records |
| ``rules.py`` | score rules: the accepted score range, submissions per record and window or minute |
| ``deletion.py`` | deleting a group's data or every record, in bounded resumable batches |
| ``audit.py`` | the audit trail of admin actions (kept outside any index), its retention and expiry |
| ``social.py`` | the ranks of many records in one call; friends boards |
| ``leagues.py`` | leagues: cohorts of at most N per tier in one window type's windows, tiers moved lazily |
| ``pages.py``, ``movement.py`` | pages, percentiles; movement between windows and rank history |
| ``compat.py`` | the Record Layer's rank for a score key and its score trim |
| ``checker.py``, ``checks.py`` | the consistency check behind ``verify``: run batch by batch; each batch's checks |
| ``upgrade.py`` | raising the index's stored format, its data rewritten first in bounded batches where needed |
| ``snapshot.py``, ``restore.py`` | an index as a dump (its stored rows, less what is rebuilt), and rebuilt from one |
| ``dumpfile.py`` | dump files: the parts framed, each CRC-checked, the whole checksummed |
| ``transaction.py`` | :class:`IndexTransaction`: the index's state as one transaction sees it |
| ``space.py``, ``settings.py``, ``layout.py`` | the index's settings and where it keeps what |
| ``directory.py``, ``calendar.py`` | windows, the directory's stored form, window-update specs, calendar periods |
| ``aggregation.py``, ``values.py``, ``tuplecodec.py`` | BEST/SUM/LATEST, accepted values, the tuple codec |
| ``_tuplecodec.c`` | the tuple codec's decoder in C, optional at install (``tuplecodec.py`` falls back to Python) |
| ``columns.py`` | multi-column scores: directions, checks, their stored form |

Dependencies point down: this package uses :mod:`fdb_leaderboard.rankedset` and
:mod:`fdb_leaderboard.store`, never the service, client or CLI.
"""

from .audit import AuditEvent, AuditTrail
from .calendar import CalendarPeriods
from .checker import CheckReport
from .deletion import DeletionProgress
from .directory import ALL_TIME, Rebuild, Window, WindowSpec, WindowUpdate
from .fill import FillProgress
from .hiding import HiddenRecord
from .leaderboard import LeaderboardIndex, Operations
from .leagues import Cohort
from .movement import History, Movement
from .pages import Page
from .reads import GroupsPage, IfAbsent, Listing, RankedEntry, RankMode, ScanPage, ScanType, WindowRef
from .records import Entry
from .rules import ScoreRules
from .settings import IndexSettings, Leagues
from .windows import WindowUpdateResult, check_plan_size, plan_ahead

__all__ = [
    "ALL_TIME",
    "AuditEvent",
    "AuditTrail",
    "CalendarPeriods",
    "CheckReport",
    "Cohort",
    "DeletionProgress",
    "Entry",
    "FillProgress",
    "HiddenRecord",
    "History",
    "IfAbsent",
    "IndexSettings",
    "LeaderboardIndex",
    "Leagues",
    "Listing",
    "Movement",
    "Operations",
    "Page",
    "RankMode",
    "RankedEntry",
    "Rebuild",
    "ScanPage",
    "GroupsPage",
    "ScanType",
    "ScoreRules",
    "Window",
    "WindowRef",
    "WindowSpec",
    "WindowUpdate",
    "WindowUpdateResult",
    "check_plan_size",
    "plan_ahead",
]
