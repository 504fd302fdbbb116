"""One run of the product benchmark (one aggregation): its state, results and figures.

Results are keyed by workload (:data:`WORKLOADS`), then by system: a store under test in a
mode (``ours``, ``ours_nondurable``, ``ours_grpc``, ..., and ``fdb``, ``fdb_grpc`` with
``--fdb``; see :class:`bench.stores.StoreUnderTest`) or a Redis variant (``redis``,
``redis_aof``).  Each is a :class:`Measured`: what ran (its label), its timings, for
in-process runs the store's counters per call (``Database.stats``: read rounds, reads,
writes, bytes written, commits, retries, conflicts) and an optional note.  The workload
modules add to a :class:`Run`; :meth:`Run.figures` turns it into the JSON the reports and
``tools/bench scaling`` read.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from fdb_leaderboard.index import Entry, IndexSettings, LeaderboardIndex
from fdb_leaderboard.index.directory import WindowUpdate

from .counting import CountingDatabase, modelled_us, op_totals, per_op_counts
from .data import Data, bench_directory, bench_windows
from .rawstore import RawStoreRounds
from .stores import StoreUnderTest
from .timing import Sample

WORKLOADS: list[tuple[str, str]] = [
    ("submit_1", "1. submit a score, 1 caller"),
    ("submit_n", "1. submit a score, {threads} concurrent callers"),
    ("rank_day", "2. rank in the current daily window"),
    ("rank_all", "2. rank in the all-time window"),
    ("top_week", "3. top 10 of the current weekly window"),
    ("around", "4. around me (5 above, 5 below), all-time"),
    ("load", "5. bulk load, records/s (latency per batch of {load_batch})"),
    ("fill", "6. fill a new 31-day window, records/s (latency per batch of 200)"),
]
# How a store under test ran, by mode: the label follows the store's name.
MODES = {
    "nondurable": "in-process, durable=false",
    "": "in-process, durable (redo log)",
    "synced": "in-process, durable, pages synced (redo_log=false)",
    "grpc": "via gRPC, durable (redo log)",
    "grpc_synced": "via gRPC, durable, pages synced (redo_log=false)",
}
REDIS_LABELS = {"redis": "Redis, no persistence", "redis_aof": "Redis, AOF fsync always"}


@dataclasses.dataclass
class Measured:
    """One workload on one system: ``label`` says what ran, ``sample`` the timings."""

    label: str
    sample: Sample
    note: str = ""
    counters: dict[str, float] | None = None  # the store's counters per call

    def to_json(self) -> dict[str, Any]:
        out = {"label": self.label, **self.sample.to_json(), **({"note": self.note} if self.note else {})}
        if self.counters is not None:
            out["counters_per_call"] = {name: round(value, 4) for name, value in self.counters.items()}
        return out


class Run:
    """The whole benchmark for one aggregation, on a fresh store (and fresh Redis servers)."""

    def __init__(
        self,
        args: argparse.Namespace,
        aggregation: str,
        data: Data,
        store: StoreUnderTest,
        fdb: StoreUnderTest | None = None,
    ) -> None:
        self.args = args
        self.aggregation = aggregation
        self.data = data
        self.store = store
        self.fdb = fdb  # FoundationDB, measured after the embedded store (``--fdb``)
        self.windows = bench_windows()
        self.directory = bench_directory()
        self.settings = IndexSettings(aggregation=aggregation, high_score_first=True)
        self.results: dict[str, dict[str, Measured]] = {name: {} for name, _ in WORKLOADS}
        self.storage: dict[str, dict[str, Any]] = {}
        self.counts: dict[str, dict[str, float]] = {}
        self.raw: RawStoreRounds | None = None
        self.notes: list[str] = []
        self.environment: dict[str, Any] = {}
        self.checks: dict[str, Any] = {}
        self.snapshot: dict[str, Any] = {}  # our counts and top scores after the submissions, for Redis
        self.fdb_figures: dict[str, Any] = {}  # the cluster, its storage and per-submission costs
        self.sync_floor: dict[str, Any] = {}  # bench.floors.sync_floor in the store's directory

    # -- helpers for the workloads

    def update(self, extra: Sequence[tuple[int, int, int]] = ()) -> WindowUpdate:
        return WindowUpdate(high_score_first=True, windows=[*self.windows, *extra])

    def records(self) -> Iterator[tuple[tuple[int], list[Entry]]]:
        for pk, (score, ts) in enumerate(self.data.records):
            yield (pk,), [Entry(score, ts)]

    def system(self, mode: str = "", store: StoreUnderTest | None = None) -> str:
        return (store or self.store).system(mode)

    def label(self, mode: str = "", store: StoreUnderTest | None = None) -> str:
        return f"{(store or self.store).title} {MODES[mode]}"

    def record(
        self,
        workload: str,
        system: str,
        label: str,
        sample: Sample,
        note: str = "",
        counters: dict[str, float] | None = None,
    ) -> None:
        self.results[workload][system] = Measured(label, sample, note, counters)

    def record_ours(
        self,
        workload: str,
        mode: str,
        sample: Sample,
        note: str = "",
        label: str = "",
        counters: dict[str, float] | None = None,
        store: StoreUnderTest | None = None,
    ) -> None:
        """A result of ``store`` (default: the embedded store under test) in ``mode``, labelled by
        the mode unless ``label``, with the store's ``counters`` per call if measured."""
        self.record(workload, self.system(mode, store), label or self.label(mode, store), sample, note, counters)

    def count(self, name: str, index: LeaderboardIndex, fn: Callable[[LeaderboardIndex], int], rollback: bool) -> None:
        """Run ``fn`` on ``index`` through a counting database; ``fn`` returns how many operations it made."""
        counting = CountingDatabase(index.db, rollback)
        ops = fn(LeaderboardIndex(counting, index.prefix, index.settings))
        per_op = per_op_counts(counting.counts, ops)
        totals = op_totals(per_op)
        self.counts[name] = {
            **per_op,
            "gets": totals.gets,
            "ranges": totals.ranges,
            "rows": totals.rows,
            "atomic": totals.atomic,
            "total": totals.total,
            "transactions_per_op": counting.transactions / ops,
        }

    # -- figures

    def figures(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "aggregation": self.aggregation,
            "workloads": {
                name: {system: m.to_json() for system, m in self.results[name].items()} for name, _ in WORKLOADS
            },
            "storage": self.storage,
            "store_ops_per_op": {k: {kk: round(vv, 3) for kk, vv in v.items()} for k, v in self.counts.items()},
            "checks": self.checks,
            "notes": self.notes,
            **({"fdb": self.fdb_figures} if self.fdb_figures else {}),
            **({"sync_floor": self.sync_floor} if self.sync_floor else {}),
            "environment": self.environment,
        }
        if self.raw:
            out.update(self.raw.to_json())
            out["store_cost_model"] = self.cost_model(self.raw)
        return out

    def cost_model(self, raw: RawStoreRounds) -> dict[str, dict[str, float]]:
        """Each counted operation's store-bound cost, against its measured in-process mean."""
        cost = {kind: s.us_per_op for kind, s in raw.costs()[0].items()}
        measured = {
            "submit": ("submit_1", self.system("nondurable")),
            "rank_day": ("rank_day", self.system()),
            "rank_all": ("rank_all", self.system()),
            "top_week": ("top_week", self.system()),
            "around": ("around", self.system()),
            "load (per record)": ("load", self.system()),
            "fill (per record)": ("fill", self.system()),
        }
        model = {}
        for op, per_op in self.counts.items():
            store_us = modelled_us(per_op, cost)
            workload, system = measured[op]
            m = self.results[workload].get(system)
            row = {"store_ops": per_op["total"], "modelled_store_us": store_us}
            if m is not None:
                row["measured_us"] = m.sample.us_per_op
                row["measured_over_store"] = m.sample.us_per_op / store_us
            model[op] = row
        return model
