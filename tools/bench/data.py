"""The product benchmark's data: records, windows and operations, all drawn once from the seed.

``records`` N records (players), one group, primary key ``(player_id,)``, each with one entry:
a score drawn from a log-normal distribution rounded down to a multiple of 10 (skewed, a few
hundred distinct values, so many ties) at a timestamp uniform over the 30 days before
:data:`NOW` (2026-01-15 12:00 UTC, fixed so a seed always gives the same data).  The windows
are the all-time window plus UTC calendar windows: daily (type 1), ISO-weekly (type 2) and
monthly (type 3), so exactly 4 windows hold each score.  Submissions are fresh scores for
uniformly random records, timestamped one second apart from ``NOW`` on (staying in the
current day); each submission workload has its own set, so the same set can be replayed on
Redis.  ``tools/bench floor`` builds its bare load from the same records.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import random

from fdb_leaderboard.index.calendar import calendar_windows
from fdb_leaderboard.index.directory import ALL_TIME, Directory, Window

DAY = 86_400
SPAN_DAYS = 30
NOW = int(dt.datetime(2026, 1, 15, 12, tzinfo=dt.UTC).timestamp())  # "now": the current day is Jan 15
DATA_START = NOW - SPAN_DAYS * DAY
DAY_END = NOW - NOW % DAY + DAY  # end of the current day: submissions stay before it
DAILY, WEEKLY, MONTHLY = 1, 2, 3
FILL_TYPE_INPROC, FILL_TYPE_GRPC = 4, 5
FILL_START = DATA_START - DATA_START % DAY
FILL_END = FILL_START + 31 * DAY  # covers every loaded entry and every submission
WINDOWS_PER_SCORE = 4
INDEX_NAME = "bench"
GRPC_LOAD_INDEX = "bench-load"
TOP_N = 10
AROUND = 5
FILL_BATCH = 200
COUNT_OPS = 200  # operations run through the counting proxy per kind


@dataclasses.dataclass(frozen=True)
class Submission:
    pk: int
    score: int
    ts: int


@dataclasses.dataclass
class Data:
    """Everything the workloads use, drawn once from the seed (shared by every aggregation)."""

    records: list[tuple[int, int]]  # (score, ts) of player i
    # S0 (durable=false), S1, S2 (in-process), S3, S4 (gRPC), count; with synced pages
    # (redo_log=false): L1, L2 (in-process), L3, L4 (gRPC)
    submissions: dict[str, list[Submission]]
    rank_day_pks: list[int]  # records with a value in the current daily window
    rank_all_pks: list[int]
    around_pks: list[int]
    today: int  # how many loaded records are in the current daily window


SUBMISSION_SETS = ("S0", "S1", "S2", "S3", "S4", "count")
REDO_LOG_SETS = ("L1", "L2", "L3", "L4")  # drawn after everything else, so the rest stays as before


def draw_score(rng: random.Random) -> int:
    """Skewed, with many ties: log-normal (median about 665), rounded down to a multiple of 10."""
    return int(rng.lognormvariate(6.5, 1.0)) // 10 * 10


def make_data(records: int, ops: int, seed: int) -> Data:
    rng = random.Random(seed)
    rows = [(draw_score(rng), DATA_START + rng.randrange(SPAN_DAYS * DAY)) for _ in range(records)]
    day_start = NOW - NOW % DAY
    today = [pk for pk, (_, ts) in enumerate(rows) if ts >= day_start]
    sequence = 0

    def submissions(count: int) -> list[Submission]:
        nonlocal sequence
        out = []
        for _ in range(count):
            ts = NOW + sequence % (DAY_END - NOW)
            sequence += 1
            out.append(Submission(rng.randrange(records), draw_score(rng), ts))
        return out

    data = Data(
        records=rows,
        submissions={name: submissions(COUNT_OPS if name == "count" else ops) for name in SUBMISSION_SETS},
        rank_day_pks=rng.choices(today, k=ops),
        rank_all_pks=[rng.randrange(records) for _ in range(ops)],
        around_pks=[rng.randrange(records) for _ in range(ops)],
        today=len(today),
    )
    data.submissions.update((name, submissions(ops)) for name in REDO_LOG_SETS)
    return data


def bench_windows() -> list[tuple[int, int, int]]:
    """UTC calendar windows over the data and the current day: days, ISO weeks, months."""
    first = dt.datetime.fromtimestamp(DATA_START, dt.UTC).date()
    days = (dt.datetime.fromtimestamp(NOW, dt.UTC).date() - first).days + 2  # through tomorrow
    return [
        *calendar_windows(DAILY, "daily", "UTC", first, days),
        *calendar_windows(WEEKLY, "iso-weekly", "UTC", first, days // 7 + 2),
        *calendar_windows(MONTHLY, "monthly", "UTC", first, 2),
    ]


def bench_directory() -> Directory:
    """The same windows as a directory, to find which windows (Redis sets) hold a timestamp."""
    windows = [Window(ALL_TIME, -(1 << 63), (1 << 63) - 1, 0)]
    windows += [Window(t, s, e, i) for i, (t, s, e) in enumerate(bench_windows(), start=1)]
    return Directory(0, True, len(windows), windows)
