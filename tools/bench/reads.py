"""Workloads 2-4: rank, top 10 and around-me, the same reads on every system.

2. *Rank* of a random record in the current daily window (records with a value there) and in
   the all-time window (any record): ``index.rank`` / ``GetRank`` / ``ZREVRANK``.
3. *Top 10* of the current ISO-weekly window: ``index.top`` / ``Top`` / ``ZREVRANGE 0 9``.
4. *Around me*: 5 above and 5 below a random record in the all-time window: ``index.around``
   / ``AroundMe`` / Redis as described in :mod:`bench.redis_sets`.

:func:`read_plan` draws nothing itself: the items are the data's (``--ops`` each), and each
read has a check of its answer (a rank found, 10 rows, 11 rows) that must hold for every call.
A system supplies one call per read (:func:`index_calls` for the index in this process; the
gRPC and Redis modules theirs); :func:`time_reads` times each call (:func:`bench.timing.time_each`,
one caller), checks every answer and records the results under the system's key.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from fdb_leaderboard.index import LeaderboardIndex
from fdb_leaderboard.store import Database

from .counting import StoreCounters
from .data import AROUND, COUNT_OPS, DAILY, NOW, TOP_N, WEEKLY, Data
from .stores import StoreUnderTest
from .suite import Run
from .timing import expect, log, time_each

ReadCall = Callable[[Any], Any]


@dataclass(frozen=True)
class Read:
    """One read workload: its name, what each call is given, and the check of each answer."""

    name: str
    items: Sequence[Any]
    ok: Callable[[Any], bool]


def _present(rank: object) -> bool:
    return rank is not None


def read_plan(data: Data, ops: int) -> list[Read]:
    return [
        Read("rank_day", data.rank_day_pks, _present),
        Read("rank_all", data.rank_all_pks, _present),
        Read("top_week", range(ops), lambda r: len(r) == TOP_N),
        Read("around", data.around_pks, lambda r: len(r) == 2 * AROUND + 1),
    ]


def index_calls(index: LeaderboardIndex) -> dict[str, ReadCall]:
    """The reads on an index in this process."""
    return {
        "rank_day": lambda pk: index.rank((pk,), DAILY, NOW),
        "rank_all": lambda pk: index.rank((pk,)),
        "top_week": lambda _: index.top(TOP_N, WEEKLY, NOW),
        "around": lambda pk: index.around((pk,), AROUND, AROUND),
    }


def time_reads(
    run: Run, who: str, system: str, label: str, calls: dict[str, ReadCall], db: Database | None = None
) -> None:
    """Every read of the plan through ``calls``, one caller, every answer checked; with ``db``
    (the store the calls read in this process), its counters per call too."""
    for read in read_plan(run.data, run.args.ops):
        counters = StoreCounters(db) if db is not None else None
        sample, out = time_each(calls[read.name], read.items)
        expect(f"{who} {read.name}", sum(map(read.ok, out)), len(read.items))
        run.record(read.name, system, label, sample, counters=counters.per_call(sample.ops) if counters else None)


def _call_all(call: ReadCall, items: Sequence[Any]) -> int:
    for item in items:
        call(item)
    return len(items)


def count_reads(run: Run, index: LeaderboardIndex) -> None:
    """Store operations of each read, on its first ``COUNT_OPS`` items."""
    for read in read_plan(run.data, run.args.ops):
        run.count(
            read.name, index, lambda ix, r=read: _call_all(index_calls(ix)[r.name], r.items[:COUNT_OPS]), rollback=False
        )


def in_process(run: Run, index: LeaderboardIndex, store: StoreUnderTest | None = None) -> None:
    """The reads on ``index`` of ``store`` (default: the embedded store under test)."""
    log(f"  reads in-process ({run.args.ops:,} each)")
    time_reads(run, "in-process", run.system("", store), run.label("", store), index_calls(index), index.db)
