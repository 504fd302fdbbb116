"""The ranked set on the embedded LMDB store, and the store beneath it (``tools/bench rankedset``).

Everything is measured in one run, on one ranked set of N elements in one LMDB
environment (a temporary directory unless ``--dir`` is given):

1. **Load.**  N random elements (tuple-packed ``(score, timestamp_ns, player_id)``,
   15-19 bytes, mostly 17-18, log-normal scores) are added in random order in
   transactions of ``--load-batch`` elements; reported as elements/s.  durable=false.

2. **Ranked-set operations** (add, remove, rank, get_nth, contains), each measured twice:

   - *1 op/txn*: every operation in its own ``db.run`` (add, remove) or ``db.read``
     (rank, get_nth, contains) call: ops/s and the p50/p99 latency of those calls;
   - *many ops/txn*: ``--batch`` operations per transaction, so the per-transaction cost
     (begin, commit, the store's group-commit bookkeeping) is amortized; ops/s and us/op.

   The difference of the two per-op costs (means, so sensitive to stalls on a busy
   machine) is the per-transaction overhead.  rank, remove and contains use random
   elements present in the set (remove never picks the same one twice), add uses new
   elements, get_nth uses random ranks in ``[0, size)``.

3. **Raw store operations** on the same data (:mod:`bench.rawstore`): random level-0 node keys
   of the set, ``--raw-batch`` operations per transaction, through the store layer and
   directly through py-lmdb.  Raw figures are the median of three rounds taken before,
   between and after the ranked-set phases, to even out drift on a shared machine.

4. **Store operations per ranked-set operation**, counted by running the same operations
   through :class:`bench.counting.CountingDatabase` (write operations run in transactions
   that are then rolled back, so the set is unchanged): get, get_many (per key), get_range,
   get_ranges (per range), set, clear, atomic add, plus the rows those range reads returned.

5. **Cost model.**  For each ranked-set operation: its many-ops/txn cost divided by the sum,
   over the store operations it performs, of count x the raw per-op cost of that kind of
   operation (forward ranges are costed by the rows they return, interpolating between the
   1-key and 16-key measurements: :func:`bench.counting.modelled_us`).  A ratio near 1 means
   the operation costs what its store accesses cost; the excess is Python work in the ranked
   set itself.  Given once against the store-layer costs and once against py-lmdb (where
   atomic add is costed as get + put).  The raw write costs come from random level-0 keys,
   each usually on a page the transaction has not yet copied; a ranked-set add or remove
   writes mostly to the few upper-level pages, shared by the whole batch, so its ratio can
   fall below 1.

6. **Durable commits** (``--durable-ops``, 0 to skip): the database is reopened with
   durable=true and single-op add, remove and one-put transactions are timed, each
   commit paying an fsync.

Every other measurement uses durable=false (no fsync), so it measures CPU cost, not the
disk.

As a command (``tools/bench rankedset``):

One run, on one ranked set of N elements in one LMDB environment (a temporary directory
unless ``--dir`` is given): the load, the ranked-set operations one per transaction and many
per transaction, the raw store operations beneath them, the store operations each ranked-set
operation makes, the cost model that joins the two, and durable single-op commits.  What each
part measures, and how, is in the docstring of ``bench/rankedset.py`` (the raw store rounds:
``bench/rawstore.py``; the counting proxy: ``bench/counting.py``).  Every measurement but the
durable commits uses durable=false (no fsync), so it measures CPU cost, not the disk.  Run for
example::

    /tmp/venv/bin/python tools/bench rankedset --elements 1000000 --json /tmp/bench.json
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import lmdb

from fdb_leaderboard.rankedset import HashFunction, RankedSet
from fdb_leaderboard.store import ReadView, Transaction
from fdb_leaderboard.store.lmdb_backend import LmdbDatabase

from .counting import CountingDatabase, modelled_us, op_totals, per_op_counts
from .output import fmt_rate, fmt_us, table, write_json
from .rawstore import SET_PREFIX, RawStoreRounds, level0_key, make_elements, put_one
from .stores import StoreUnderTest, as_lmdb, require_empty, store_directory
from .timing import BatchClock, Sample, chunks, expect, log, time_chunks, time_each

RS_OPS = ("add", "remove", "rank", "get_nth", "contains")
RAW_KINDS_SHOWN = {
    "get": "get",
    "put": "put (overwrite)",
    "clear": "clear / delete",
    "add": "atomic add",
    "range1": "range read, 1 key",
    "range16": "range read, 16 keys",
    "rev_range1": "reverse range, 1 key",
}


# -- transaction bodies: one loop per operation, so the batched timings hold nothing else --


def _add_all(tr: Transaction, rs: RankedSet, elements: Sequence[bytes]) -> int:
    done = 0
    for element in elements:
        done += rs.add(tr, element)
    return done


def _remove_all(tr: Transaction, rs: RankedSet, elements: Sequence[bytes]) -> int:
    done = 0
    for element in elements:
        done += rs.remove(tr, element)
    return done


def _rank_all(tr: ReadView, rs: RankedSet, elements: Sequence[bytes]) -> int:
    done = 0
    for element in elements:
        done += rs.rank(tr, element) is not None
    return done


def _nth_all(tr: ReadView, rs: RankedSet, ranks: Sequence[int]) -> int:
    done = 0
    for n in ranks:
        done += rs.get_nth(tr, n) is not None
    return done


def _contains_all(tr: ReadView, rs: RankedSet, elements: Sequence[bytes]) -> int:
    done = 0
    for element in elements:
        done += rs.contains(tr, element)
    return done


def _apply_all(tr: ReadView, op: Callable[[Any, Any], object], items: Sequence[Any]) -> None:
    """Counted, not timed: ``op`` on each item."""
    for item in items:
        op(tr, item)


# -- the benchmark ----------------------------------------------------------------------------


class Bench:
    """The ranked-set benchmark's phases, in :meth:`run`'s order, and its figures."""

    def __init__(self, args: argparse.Namespace, path: str) -> None:
        self.args = args
        self.path = path
        self.rng = random.Random(args.seed)
        self.rs = RankedSet(SET_PREFIX, args.levels, HashFunction[args.hash])
        self.store = StoreUnderTest.embedded("rankedset", path)
        self.db: LmdbDatabase | None = None
        self.size = 0
        self.raw: RawStoreRounds | None = None
        self.results: dict[str, Any] = {}
        self.rs_single: dict[str, Sample] = {}
        self.rs_batched: dict[str, Sample] = {}
        self.rs_durable: dict[str, Sample] = {}
        self.counts: dict[str, dict[str, float]] = {}

    # -- plumbing

    def open(self, durable: bool) -> LmdbDatabase:
        self.db = as_lmdb(self.store.open(durable=durable))
        return self.db

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None

    def env(self) -> lmdb.Environment:
        assert self.db is not None
        return self.db._env  # the store keeps one environment per path per process: reuse it

    # -- phases

    def prepare(self) -> None:
        args, rng = self.args, self.rng
        t0 = time.perf_counter()
        seen: set[bytes] = set()
        self.loaded = make_elements(rng, args.elements, seen)
        self.new_single = make_elements(rng, args.ops, seen)
        self.new_batched = make_elements(rng, args.ops, seen)
        self.new_durable = make_elements(rng, args.durable_ops, seen)
        del seen
        removals = rng.sample(self.loaded, 2 * args.ops + args.durable_ops)
        self.remove_single = removals[: args.ops]
        self.remove_batched = removals[args.ops : 2 * args.ops]
        self.remove_durable = removals[2 * args.ops :]
        removed = set(removals)
        stable = [e for e in self.loaded if e not in removed]  # present for the whole run
        self.read_single = rng.choices(stable, k=args.ops)
        self.read_batched = rng.choices(stable, k=args.ops)
        self.raw_keys = [level0_key(e) for e in rng.choices(stable, k=args.raw_ops)]
        self.raw_single_keys = [level0_key(e) for e in rng.choices(stable, k=args.ops)]
        lengths = [len(e) for e in self.loaded]
        self.results["elements"] = {
            "count": len(self.loaded),
            "bytes_min": min(lengths),
            "bytes_mean": round(statistics.fmean(lengths), 2),
            "bytes_max": max(lengths),
            "generate_seconds": round(time.perf_counter() - t0, 2),
        }

    def load(self) -> None:
        args = self.args
        db = self.open(durable=False)
        db.run(self.rs.init)
        parts = chunks(self.loaded, args.load_batch)
        clock = BatchClock("load", len(self.loaded), "elements")
        done = 0
        for part in parts:
            done += db.run(_add_all, self.rs, part)
            clock.tick(done)
        seconds = clock.seconds()
        expect("load", done, len(self.loaded))
        self.size = done
        stat = self.env().stat()
        self.results["load"] = {
            **Sample(done, seconds).to_json(durable=False),
            "elements_per_txn": args.load_batch,
            "transactions": len(parts),
            "store_keys": stat["entries"],
            "btree_depth": stat["depth"],
            "disk_bytes": db.disk_usage(),
        }

    def warm_up(self) -> None:
        """Read every page once so no measurement pays the first touch of the memory map."""
        txn = self.env().begin(write=False)
        try:
            rows = sum(1 for _ in txn.cursor().iternext())
        finally:
            txn.abort()
        self.results["load"]["warm_up_rows"] = rows

    def raw_round(self) -> None:
        """One round of raw store measurements on the set's own level-0 keys."""
        if self.raw is None:
            assert self.db is not None
            self.raw = RawStoreRounds(self.db, self.raw_keys, self.raw_single_keys, self.args.raw_batch)
        self.raw.round()

    def count_ops(self) -> None:
        """Store operations per ranked-set operation, through the counting proxy."""
        db, rs, size = self.db, self.rs, self.args.batch
        assert db is not None
        ranks = self.nth_ranks
        plans: list[tuple[str, Callable[[Any, Any], object], Sequence[Any], bool]] = [
            ("add", rs.add, self.new_batched, True),
            ("remove", rs.remove, self.remove_batched, True),
            ("rank", rs.rank, self.read_batched, False),
            ("get_nth", rs.get_nth, ranks, False),
            ("contains", rs.contains, self.read_batched, False),
        ]
        for name, op, items, writes in plans:
            counting = CountingDatabase(db, rollback=writes)  # writes are counted, then rolled back
            for part in chunks(items, size):
                if writes:
                    counting.run(_apply_all, op, part)
                else:
                    counting.read(_apply_all, op, part)
            per_op = per_op_counts(counting.counts, len(items))
            totals = op_totals(per_op)
            self.counts[name] = {
                **per_op,
                "gets": totals.gets,
                "ranges": totals.ranges,
                "rows_per_range": totals.rows / totals.ranges if totals.ranges else 0.0,
                "total": totals.total,
            }

    def rankedset_reads(self) -> None:
        db, rs, size, n = self.db, self.rs, self.args.batch, self.args.ops
        assert db is not None
        plans: list[
            tuple[str, Callable[[Any], object], Sequence[Any], Callable[[Sequence[Any]], int], Sequence[Any]]
        ] = [
            (
                "rank",
                lambda e: db.read(rs.rank, e),
                self.read_single,
                lambda part: db.read(_rank_all, rs, part),
                self.read_batched,
            ),
            (
                "get_nth",
                lambda k: db.read(rs.get_nth, k),
                self.nth_single,
                lambda part: db.read(_nth_all, rs, part),
                self.nth_ranks,
            ),
            (
                "contains",
                lambda e: db.read(rs.contains, e),
                self.read_single,
                lambda part: db.read(_contains_all, rs, part),
                self.read_batched,
            ),
        ]
        for name, single, single_items, batched, batched_items in plans:
            sample, results = time_each(single, single_items)
            expect(f"{name} (1 op/txn)", sum(r is not None and r is not False for r in results), n)
            self.rs_single[name] = sample
            sample, done = time_chunks(batched, batched_items, size)
            expect(f"{name} ({size} ops/txn)", done, n)
            self.rs_batched[name] = sample

    def rankedset_writes(self) -> None:
        db, rs, size, n = self.db, self.rs, self.args.batch, self.args.ops
        assert db is not None
        sample, results = time_each(lambda e: db.run(rs.add, e), self.new_single)
        expect("add (1 op/txn)", sum(bool(r) for r in results), n)
        self.rs_single["add"] = sample
        sample, done = time_chunks(lambda part: db.run(_add_all, rs, part), self.new_batched, size)
        expect(f"add ({size} ops/txn)", done, n)
        self.rs_batched["add"] = sample
        sample, results = time_each(lambda e: db.run(rs.remove, e), self.remove_single)
        expect("remove (1 op/txn)", sum(bool(r) for r in results), n)
        self.rs_single["remove"] = sample
        sample, done = time_chunks(lambda part: db.run(_remove_all, rs, part), self.remove_batched, size)
        expect(f"remove ({size} ops/txn)", done, n)
        self.rs_batched["remove"] = sample
        self.check_size("after the non-durable phases")

    def durable_phase(self) -> None:
        """Reopen with durable=true: single-op transactions, each commit fsyncs."""
        n = self.args.durable_ops
        self.close()
        db = self.open(durable=True)
        self.env().sync(True)  # flush what the non-durable phases left, outside any timing
        rs = self.rs
        keys = self.raw_single_keys[:n]
        sample, _ = time_each(lambda key: db.run(put_one, key), keys)
        self.rs_durable["db.run: 1 set"] = sample
        sample, results = time_each(lambda e: db.run(rs.add, e), self.new_durable)
        expect("add (durable)", sum(bool(r) for r in results), n)
        self.rs_durable["ranked set add"] = sample
        sample, results = time_each(lambda e: db.run(rs.remove, e), self.remove_durable)
        expect("remove (durable)", sum(bool(r) for r in results), n)
        self.rs_durable["ranked set remove"] = sample
        self.check_size("after the durable phase")

    def check_size(self, when: str) -> None:
        """Every phase adds as many elements as it removes: the set must still hold N."""
        assert self.db is not None
        expect(f"set size {when}", self.db.read(self.rs.size), self.args.elements)

    def consistency(self) -> None:
        assert self.db is not None
        t0 = time.perf_counter()
        problems = self.db.read(self.rs.check_consistency)
        self.results["consistency"] = {"problems": problems, "seconds": round(time.perf_counter() - t0, 1)}
        if problems:
            raise SystemExit("ranked set inconsistent after the benchmark:\n" + "\n".join(problems))

    def run(self) -> None:
        args = self.args
        log(f"generating {args.elements:,} elements (seed {args.seed})")
        self.prepare()
        log(f"loading into {self.path} (durable=false, {args.load_batch} elements per transaction)")
        self.load()
        self.warm_up()
        self.nth_single = [self.rng.randrange(self.size) for _ in range(args.ops)]
        self.nth_ranks = [self.rng.randrange(self.size) for _ in range(args.ops)]
        log("raw store round 1/3")
        self.raw_round()
        log("counting store operations per ranked-set operation")
        self.count_ops()
        log("ranked-set reads: rank, get_nth, contains")
        self.rankedset_reads()
        log("raw store round 2/3")
        self.raw_round()
        log("ranked-set writes: add, remove")
        self.rankedset_writes()
        log("raw store round 3/3")
        self.raw_round()
        if args.durable_ops:
            log(f"durable=true: {args.durable_ops} single-op transactions of each kind")
            self.durable_phase()
        if args.check:
            log("checking the consistency of the whole set")
            self.consistency()
        self.close()

    # -- figures

    def figures(self) -> dict[str, Any]:
        args = self.args
        assert self.raw is not None
        api, direct, _ = self.raw.costs()
        api_cost = {kind: s.us_per_op for kind, s in api.items()}
        direct_cost = {kind: s.us_per_op for kind, s in direct.items()}
        direct_cost["add"] = direct_cost["get"] + direct_cost["put"]
        model: dict[str, Any] = {}
        for op in RS_OPS:
            measured = self.rs_batched[op].us_per_op
            via_api = modelled_us(self.counts[op], api_cost)
            via_lmdb = modelled_us(self.counts[op], direct_cost)
            model[op] = {
                "us_per_op": round(measured, 3),
                "store_ops_per_op": round(self.counts[op]["total"], 3),
                "modelled_store_api_us": round(via_api, 3),
                "ratio_vs_store_api": round(measured / via_api, 3),
                "modelled_py_lmdb_us": round(via_lmdb, 3),
                "ratio_vs_py_lmdb": round(measured / via_lmdb, 3),
            }
        return {
            "config": {
                "elements": args.elements,
                "levels": args.levels,
                "hash": args.hash,
                "ops": args.ops,
                "batch": args.batch,
                "load_batch": args.load_batch,
                "raw_ops": args.raw_ops,
                "raw_batch": args.raw_batch,
                "durable_ops": args.durable_ops,
                "seed": args.seed,
                "dir": self.path,
            },
            "environment": {
                "python": platform.python_version(),
                "py_lmdb": lmdb.__version__,
                "lmdb": ".".join(map(str, lmdb.version())),
                "platform": platform.platform(),
                "cpus": os.cpu_count(),
                "loadavg_at_end": list(os.getloadavg()),
            },
            **self.results,
            "rankedset": {
                op: {
                    "one_op_per_txn": self.rs_single[op].to_json(durable=False),
                    "many_ops_per_txn": self.rs_batched[op].to_json(durable=False),
                    "txn_overhead_us": round(self.rs_single[op].us_per_op - self.rs_batched[op].us_per_op, 3),
                }
                for op in RS_OPS
            },
            "durable_one_op_per_txn": {name: s.to_json(durable=True) for name, s in self.rs_durable.items()},
            **self.raw.to_json(),
            "raw_rounds_us_per_op": {
                "store_api": {k: [round(s.us_per_op, 3) for s in v] for k, v in self.raw.api.items()},
                "py_lmdb": {k: [round(s.us_per_op, 3) for s in v] for k, v in self.raw.direct.items()},
            },
            "store_ops_per_op": {op: {k: round(v, 3) for k, v in c.items()} for op, c in self.counts.items()},
            "cost_model": model,
        }


# -- printing ---------------------------------------------------------------------------------


def report(fig: dict[str, Any]) -> Iterator[str]:
    cfg, env, el, load = fig["config"], fig["environment"], fig["elements"], fig["load"]
    yield "fdb-leaderboard ranked-set benchmark (embedded LMDB store)"
    yield (
        f"  N={cfg['elements']:,}  levels={cfg['levels']}  hash={cfg['hash']}  ops/phase={cfg['ops']:,}  "
        f"batch={cfg['batch']} ops/txn  raw ops={cfg['raw_ops']:,} in txns of {cfg['raw_batch']}  seed={cfg['seed']}"
    )
    yield (
        f"  element bytes min/mean/max {el['bytes_min']}/{el['bytes_mean']}/{el['bytes_max']}  "
        f"python {env['python']}  py-lmdb {env['py_lmdb']} (LMDB {env['lmdb']})  cpus {env['cpus']}  "
        f"load average at end {env['loadavg_at_end'][0]:.2f}"
    )
    yield f"  store directory {cfg['dir']}"
    yield ""
    yield (
        f"Load (durable=false): {load['ops']:,} elements in {load['transactions']:,} txns of "
        f"{load['elements_per_txn']:,}: {load['seconds']:.1f} s = {load['ops_per_s']:,.0f} elements/s "
        f"({load['us_per_op']:.1f} us/element); "
        f"{load['store_keys']:,} store keys, B-tree depth {load['btree_depth']}, "
        f"{load['disk_bytes'] / 2**20:,.1f} MiB on disk"
    )
    yield ""
    batch = cfg["batch"]
    yield "Ranked-set operations (durable=false)"
    rows = []
    for op in RS_OPS:
        one, many = fig["rankedset"][op]["one_op_per_txn"], fig["rankedset"][op]["many_ops_per_txn"]
        rows.append(
            [
                op,
                fmt_rate(one["ops_per_s"]),
                fmt_us(one["us_per_op"]),
                fmt_us(one["p50_us"]),
                fmt_us(one["p99_us"]),
                fmt_rate(many["ops_per_s"]),
                fmt_us(many["us_per_op"]),
                fmt_us(fig["rankedset"][op]["txn_overhead_us"]),
            ]
        )
    yield table(
        [
            "op",
            "1/txn ops/s",
            "us/op",
            "p50 us",
            "p99 us",
            f"{batch}/txn ops/s",
            "us/op",
            "txn overhead us",
        ],
        rows,
    )
    if fig["durable_one_op_per_txn"]:
        yield ""
        yield "Single-op transactions with durable=true (every commit fsyncs)"
        rows = [
            [name, fmt_rate(s["ops_per_s"]), fmt_us(s["us_per_op"]), fmt_us(s["p50_us"]), fmt_us(s["p99_us"])]
            for name, s in fig["durable_one_op_per_txn"].items()
        ]
        yield table(["transaction", "ops/s", "us/op", "p50 us", "p99 us"], rows)
    yield ""
    yield (
        f"Raw store operations on the set's level-0 keys (durable=false, {cfg['raw_batch']} per txn, "
        "median of 3 rounds)"
    )
    rows = []
    for kind, label in RAW_KINDS_SHOWN.items():
        api = fig["raw_store_api"][kind]
        direct = fig["raw_py_lmdb"].get(kind)
        rows.append(
            [
                label,
                fmt_rate(api["ops_per_s"]),
                fmt_us(api["us_per_op"]),
                fmt_rate(direct["ops_per_s"]) if direct else "-",
                fmt_us(direct["us_per_op"]) if direct else "-",
                f"{api['us_per_op'] / direct['us_per_op']:.2f}x" if direct else "-",
            ]
        )
    yield table(["op", "store API ops/s", "us/op", "py-lmdb ops/s", "us/op", "API/lmdb"], rows)
    yield ""
    yield "Raw single-op transactions (durable=false)"
    names = {
        "api_read_1_get": "db.read: 1 get",
        "api_run_1_put": "db.run: 1 set",
        "lmdb_read_1_get": "py-lmdb begin/get/abort",
        "lmdb_write_1_put": "py-lmdb begin(write)/put/commit",
    }
    rows = [
        [names[name], fmt_rate(s["ops_per_s"]), fmt_us(s["us_per_op"]), fmt_us(s["p50_us"]), fmt_us(s["p99_us"])]
        for name, s in fig["raw_one_op_per_txn"].items()
    ]
    yield table(["transaction", "txns/s", "us/txn", "p50 us", "p99 us"], rows)
    yield ""
    yield "Store operations per ranked-set operation (average, counted through a proxy transaction)"
    rows = []
    for op in RS_OPS:
        c = fig["store_ops_per_op"][op]
        rows.append(
            [
                op,
                *(
                    f"{c.get(k, 0):.2f}"
                    for k in ("get", "get_many_keys", "get_range", "get_ranges_ranges", "set", "clear", "add")
                ),
                f"{c['rows_per_range']:.1f}",
                f"{c['total']:.2f}",
            ]
        )
    yield table(
        ["op", "get", "get_many keys", "get_range", "get_ranges ranges", "set", "clear", "add", "rows/range", "total"],
        rows,
    )
    yield ""
    yield (
        f"Cost model: ranked-set us/op ({batch}/txn) / sum of (store op count x raw per-op cost of that kind; "
        "ranges costed by rows)"
    )
    rows = []
    for op in RS_OPS:
        m = fig["cost_model"][op]
        rows.append(
            [
                op,
                fmt_us(m["us_per_op"]),
                f"{m['store_ops_per_op']:.2f}",
                fmt_us(m["modelled_store_api_us"]),
                f"{m['ratio_vs_store_api']:.2f}",
                fmt_us(m["modelled_py_lmdb_us"]),
                f"{m['ratio_vs_py_lmdb']:.2f}",
            ]
        )
    yield table(
        ["op", "us/op", "store ops", "store API us", "ratio", "py-lmdb us", "ratio"],
        rows,
    )


# -- entry point ------------------------------------------------------------------------------


def benchmark(args: argparse.Namespace) -> int:
    """The whole benchmark for parsed ``args``: the report on stdout, the figures as JSON if asked."""
    with store_directory(args.dir, args.keep, "bench_rankedset-") as path:
        require_empty(path, "directory")
        bench = Bench(args, path)
        try:
            bench.run()
        finally:
            bench.close()
    fig = bench.figures()
    print("\n".join(report(fig)), flush=True)
    if args.json:
        write_json(args.json, fig)
    return 0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Benchmark the ranked set and the raw store on the embedded LMDB backend.",
    )
    parser.add_argument(
        "--elements", type=int, default=1_000_000, help="elements loaded into the set (default: %(default)s)"
    )
    parser.add_argument("--dir", help="store directory (must be empty or absent; default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument(
        "--hash", choices=[h.name for h in HashFunction], default="MURMUR3", help="level hash (default: %(default)s)"
    )
    parser.add_argument("--levels", type=int, default=6, help="skip-list levels (default: %(default)s)")
    parser.add_argument("--ops", type=int, default=5000, help="operations per ranked-set phase (default: %(default)s)")
    parser.add_argument(
        "--batch",
        type=int,
        default=100,
        help="ranked-set operations per transaction in the batched mode (default: %(default)s)",
    )
    parser.add_argument(
        "--load-batch", type=int, default=2000, help="elements per load transaction (default: %(default)s)"
    )
    parser.add_argument(
        "--raw-ops", type=int, default=50_000, help="raw store operations per kind and round (default: %(default)s)"
    )
    parser.add_argument(
        "--raw-batch", type=int, default=1000, help="raw store operations per transaction (default: %(default)s)"
    )
    parser.add_argument(
        "--durable-ops",
        type=int,
        default=1000,
        help="durable single-op txns of each kind (0: skip) (default: %(default)s)",
    )
    parser.add_argument("--check", action="store_true", help="check the whole set's consistency at the end")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default: %(default)s)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON to PATH")
    args = parser.parse_args(argv)
    for name in ("elements", "ops", "batch", "load_batch", "raw_ops", "raw_batch"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.durable_ops < 0:
        parser.error("--durable-ops must not be negative")
    if 2 * args.ops + args.durable_ops > args.elements:
        parser.error("--elements must be at least 2 x --ops + --durable-ops (elements to remove)")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return benchmark(parse_args(argv))
