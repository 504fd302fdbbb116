"""Helpers of the index's tests: an index as the Record Layer starts one."""

from __future__ import annotations

from fdb_leaderboard.index import IndexSettings, LeaderboardIndex
from fdb_leaderboard.store import Database


def make(db: Database, prefix: bytes, **options) -> LeaderboardIndex:
    """An index as the Record Layer starts one: no window until the first window update (these
    examples follow the reference; tests/service/test_new_boards.py covers the all-time window a new
    index has by default)."""
    options.setdefault("high_score_first", False)  # these examples rank low scores first unless they say
    return LeaderboardIndex.create(db, prefix, IndexSettings(**options), all_time=False)
