"""The time-windowed leaderboard index over a transactional ordered key-value store.

One module per concern; each works inside one store transaction through the narrow
context of ``transaction.py`` and none imports another's class unless it builds on it:

| module | concern |
|---|---|
| ``leaderboard.py`` | :class:`LeaderboardIndex`, the facade: one method per operation, each one transaction |
| ``records.py`` | records and the write path: entries, heads, a record's value in every window |
| ``windows.py`` | the window directory: updates, expiry, keep-ahead, sub-directories |
| ``fill.py`` | filling new windows from stored records (both phases) and bulk-load hand-off |
| ``trim.py`` | dropping entries no window depends on |
| ``reads.py`` | ranks, top N, around me, counts and scans |
| ``checker.py`` | the consistency check behind ``verify`` |
| ``transaction.py`` | :class:`IndexTransaction`: the index's state as one transaction sees it |
| ``space.py``, ``settings.py``, ``layout.py`` | the index's settings and where it keeps what |
| ``directory.py``, ``calendar.py`` | windows, the directory's stored form, window-update specs, calendar periods |
| ``aggregation.py``, ``values.py``, ``tuplecodec.py`` | BEST/SUM/LATEST, accepted values, the tuple codec |

Dependencies point down: this package uses :mod:`fdb_leaderboard.rankedset` and
:mod:`fdb_leaderboard.store`, never the service, client or CLI.
"""

from .checker import CheckReport
from .directory import ALL_TIME, Rebuild, Window, WindowSpec, WindowUpdate
from .fill import FillProgress
from .leaderboard import LeaderboardIndex, Operations
from .reads import IfAbsent, RankedEntry, RankMode, ScanPage, ScanType, WindowRef
from .records import Entry
from .settings import IndexSettings
from .windows import WindowUpdateResult, check_plan_size, plan_ahead

__all__ = [
    "ALL_TIME",
    "CheckReport",
    "Entry",
    "FillProgress",
    "IfAbsent",
    "IndexSettings",
    "LeaderboardIndex",
    "Operations",
    "RankMode",
    "RankedEntry",
    "Rebuild",
    "ScanPage",
    "ScanType",
    "Window",
    "WindowRef",
    "WindowSpec",
    "WindowUpdate",
    "WindowUpdateResult",
    "check_plan_size",
    "plan_ahead",
]
