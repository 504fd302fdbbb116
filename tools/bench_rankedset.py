#!/usr/bin/env python3
"""Benchmark the ranked set on the embedded LMDB store, and the store beneath it.

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

3. **Raw store operations** on the same data: random level-0 node keys of the set (about
   38 bytes, 8-byte values), through the store layer (``LmdbTransaction.get`` / ``set`` /
   ``clear`` / ``add`` / ``get_range``) and directly through py-lmdb (``Transaction.get`` /
   ``put`` / ``delete``, a cursor for ranges), ``--raw-batch`` operations per transaction,
   begin and commit included.  ``put`` rewrites a key with the value it already holds,
   ``add`` adds 0 (so the set is unchanged), ``clear`` deletes keys that the next, untimed
   transaction puts back.  Ranges: forward reads of 1 and of 16 keys, and the reverse read of
   1 key that ``add``/``remove`` use to find predecessors.  Also the cost of a whole
   transaction holding one get (read) or one put (write).  Raw figures are the median of
   three rounds taken before, between and after the ranked-set phases, to even out drift
   on a shared machine.

4. **Store operations per ranked-set operation**, counted by running the same operations
   through :class:`CountingTransaction`, a proxy around the store's transaction (write
   operations run in transactions that are then rolled back, so the set is unchanged):
   get, get_many (per key), get_range, get_ranges (per range), set, clear, atomic add, plus
   the rows those range reads returned.

5. **Cost model.**  For each ranked-set operation: its many-ops/txn cost divided by the sum,
   over the store operations it performs, of count x the raw per-op cost of that kind of
   operation (forward ranges are costed by the rows they return, interpolating between the
   1-key and 16-key measurements).  A ratio near 1 means the operation costs what its store
   accesses cost; the excess is Python work in the ranked set itself.  Given once against
   the store-layer costs and once against py-lmdb (where atomic add is costed as get + put).
   The raw write costs come from random level-0 keys, each usually on a page the
   transaction has not yet copied; a ranked-set add or remove writes mostly to the few
   upper-level pages, shared by the whole batch, so its ratio can fall below 1.

6. **Durable commits** (``--durable-ops``, 0 to skip): the database is reopened with
   durable=true and single-op add, remove and one-put transactions are timed, each
   commit paying an fsync.

Every other measurement uses durable=false (no fsync), so it measures CPU cost, not the
disk.  Run for example::

    /tmp/venv/bin/python tools/bench_rankedset.py --elements 1000000 --json /tmp/bench.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import fdb.tuple
import lmdb

try:
    from fdb_leaderboard.rankedset import HashFunction, RankedSet
    from fdb_leaderboard.store.api import KeyValue, RangeRequest, ReadView, Transaction, strinc
    from fdb_leaderboard.store.lmdb_backend import LmdbDatabase
except ModuleNotFoundError:  # run from a checkout without installing the project
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from fdb_leaderboard.rankedset import HashFunction, RankedSet
    from fdb_leaderboard.store.api import KeyValue, RangeRequest, ReadView, Transaction, strinc
    from fdb_leaderboard.store.lmdb_backend import LmdbDatabase

T = TypeVar("T")

SET_PREFIX = fdb.tuple.pack(("bench_rankedset",))
LEVEL0_PREFIX = SET_PREFIX + fdb.tuple.pack((0,))
LEVEL0_END = strinc(LEVEL0_PREFIX)
ONE = (1).to_bytes(8, "little")  # the value of every level-0 node
BASE_TS_NS = 1_763_000_000 * 10**9  # fixed, so a seed always yields the same elements
TS_SPAN_NS = 30 * 86_400 * 10**9
RS_OPS = ("add", "remove", "rank", "get_nth", "contains")
RAW_KINDS = ("get", "put", "clear", "add", "range1", "range16", "rev_range1")


# -- measurement records ---------------------------------------------------------------------


@dataclass
class Sample:
    """``ops`` operations took ``seconds``; ``latencies_ns`` holds one entry per timed call, if kept."""

    ops: int
    seconds: float
    latencies_ns: list[int] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.ops / self.seconds if self.seconds else float("inf")

    @property
    def us_per_op(self) -> float:
        return self.seconds * 1e6 / self.ops if self.ops else float("nan")

    def percentile_us(self, pct: float) -> float:
        """Nearest-rank percentile of the per-call latencies, in microseconds."""
        if not self.latencies_ns:
            return float("nan")
        ordered = sorted(self.latencies_ns)
        index = min(len(ordered) - 1, max(0, round(pct / 100 * len(ordered) + 0.5) - 1))
        return ordered[index] / 1000

    def to_json(self, durable: bool) -> dict[str, Any]:
        out: dict[str, Any] = {
            "ops": self.ops,
            "seconds": round(self.seconds, 6),
            "ops_per_s": round(self.rate, 1),
            "us_per_op": round(self.us_per_op, 3),
            "durable": durable,
        }
        if self.latencies_ns:
            out["p50_us"] = round(self.percentile_us(50), 2)
            out["p99_us"] = round(self.percentile_us(99), 2)
        return out


def merge(samples: Sequence[Sample]) -> Sample:
    """One sample for several rounds of the same measurement (latencies pooled)."""
    return Sample(
        sum(s.ops for s in samples),
        sum(s.seconds for s in samples),
        [lat for s in samples for lat in s.latencies_ns],
    )


def median_sample(samples: Sequence[Sample]) -> Sample:
    """The round with the median per-op cost."""
    return sorted(samples, key=lambda s: s.us_per_op)[len(samples) // 2]


def time_each(call: Callable[[T], object], items: Sequence[T]) -> tuple[Sample, list[object]]:
    """Call ``call(item)`` for each item, timing every call; returns the sample and the results."""
    latencies: list[int] = []
    results: list[object] = []
    clock = time.perf_counter_ns
    start = clock()
    for item in items:
        t0 = clock()
        results.append(call(item))
        latencies.append(clock() - t0)
    return Sample(len(items), (clock() - start) / 1e9, latencies), results


def chunks(items: Sequence[T], size: int) -> list[Sequence[T]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def time_chunks(call: Callable[[Sequence[T]], int], items: Sequence[T], size: int) -> tuple[Sample, int]:
    """Call ``call(chunk)`` on ``size``-item chunks; ``call`` returns how many items succeeded."""
    parts = chunks(items, size)
    done = 0
    start = time.perf_counter()
    for part in parts:
        done += call(part)
    return Sample(len(items), time.perf_counter() - start), done


# -- the counting proxy ----------------------------------------------------------------------


class CountingTransaction(Transaction):
    """Delegates to a store transaction, counting each kind of call in ``counts``.

    Keys: get, get_many (calls) and get_many_keys, get_range (calls), get_ranges (calls) and
    get_ranges_ranges, set, clear, clear_range, add, max, min, conflict_range; and for every
    range read, forward_ranges / reverse_ranges, forward_rows / reverse_rows and
    forward_extra_rows / reverse_extra_rows (rows beyond the first).
    """

    def __init__(self, inner: ReadView, counts: Counter[str]) -> None:
        self._inner = inner
        self.counts = counts

    @property
    def snapshot(self) -> CountingTransaction:
        inner = self._inner
        return CountingTransaction(inner.snapshot if isinstance(inner, Transaction) else inner, self.counts)

    def _ranged(self, rows: list[KeyValue], reverse: bool) -> None:
        way = "reverse" if reverse else "forward"
        self.counts[f"{way}_ranges"] += 1
        self.counts[f"{way}_rows"] += len(rows)
        self.counts[f"{way}_extra_rows"] += max(0, len(rows) - 1)

    def get(self, key: bytes) -> bytes | None:
        self.counts["get"] += 1
        return self._inner.get(key)

    def get_many(self, keys: Sequence[bytes]) -> list[bytes | None]:
        self.counts["get_many"] += 1
        self.counts["get_many_keys"] += len(keys)
        return self._inner.get_many(keys)

    def get_range(self, begin: bytes, end: bytes, limit: int = 0, reverse: bool = False) -> list[KeyValue]:
        self.counts["get_range"] += 1
        rows = self._inner.get_range(begin, end, limit, reverse)
        self._ranged(rows, reverse)
        return rows

    def get_ranges(self, requests: Sequence[RangeRequest]) -> list[list[KeyValue]]:
        self.counts["get_ranges"] += 1
        self.counts["get_ranges_ranges"] += len(requests)
        results = self._inner.get_ranges(requests)
        for request, rows in zip(requests, results, strict=True):
            self._ranged(rows, request[3])
        return results

    def _writer(self) -> Transaction:
        assert isinstance(self._inner, Transaction)
        return self._inner

    def set(self, key: bytes, value: bytes) -> None:
        self.counts["set"] += 1
        self._writer().set(key, value)

    def clear(self, key: bytes) -> None:
        self.counts["clear"] += 1
        self._writer().clear(key)

    def clear_range(self, begin: bytes, end: bytes) -> None:
        self.counts["clear_range"] += 1
        self._writer().clear_range(begin, end)

    def add(self, key: bytes, param: bytes) -> None:
        self.counts["add"] += 1
        self._writer().add(key, param)

    def max(self, key: bytes, param: bytes) -> None:
        self.counts["max"] += 1
        self._writer().max(key, param)

    def min(self, key: bytes, param: bytes) -> None:
        self.counts["min"] += 1
        self._writer().min(key, param)

    def add_read_conflict_range(self, begin: bytes, end: bytes) -> None:
        self.counts["conflict_range"] += 1  # a no-op on LMDB; not a store access
        self._writer().add_read_conflict_range(begin, end)


class _Rollback(Exception):
    """Raised at the end of a counting transaction so nothing it wrote is kept."""


# -- element generation -----------------------------------------------------------------------


def make_elements(rng: random.Random, count: int, seen: set[bytes]) -> list[bytes]:
    """``count`` distinct new elements resembling leaderboard keys; adds them to ``seen``."""
    pack = fdb.tuple.pack
    out: list[bytes] = []
    while len(out) < count:
        score = int(rng.lognormvariate(12.0, 2.0))  # skewed: most small, a long tail of high scores
        element = pack((score, BASE_TS_NS - rng.randrange(TS_SPAN_NS), rng.randrange(1 << 32)))
        if element not in seen:
            seen.add(element)
            out.append(element)
    return out


def level0_key(element: bytes) -> bytes:
    """The level-0 node key of ``element`` in the benchmark's set."""
    return SET_PREFIX + fdb.tuple.pack((0, element))


# -- transaction bodies -------------------------------------------------------------------------


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


def _count_writes(tr: Transaction, op: Callable[[Transaction, Any], object], items: Sequence[Any]) -> None:
    proxy = CountingTransaction(tr, Counter())
    for item in items:
        op(proxy, item)
    raise _Rollback(proxy.counts)


def _count_reads(tr: ReadView, op: Callable[[ReadView, Any], object], items: Sequence[Any]) -> Counter[str]:
    proxy = CountingTransaction(tr, Counter())
    for item in items:
        op(proxy, item)
    return proxy.counts


# Raw store-layer bodies: the loops are the same shape as the ranked set's own.


def _api_get(tr: ReadView, keys: Sequence[bytes]) -> int:
    get = tr.get
    for key in keys:
        get(key)
    return len(keys)


def _api_put(tr: Transaction, keys: Sequence[bytes]) -> int:
    put = tr.set
    for key in keys:
        put(key, ONE)
    return len(keys)


def _api_clear(tr: Transaction, keys: Sequence[bytes]) -> int:
    clear = tr.clear
    for key in keys:
        clear(key)
    return len(keys)


def _api_add(tr: Transaction, keys: Sequence[bytes]) -> int:
    """Adds one to each count, as a ranked-set update does (an add of zero changes nothing, and
    the embedded store then writes nothing); the round's clear and put-back restore the ones."""
    add = tr.add
    for key in keys:
        add(key, ONE)
    return len(keys)


def _api_range(limit: int) -> Callable[[ReadView, Sequence[bytes]], int]:
    def body(tr: ReadView, keys: Sequence[bytes]) -> int:
        get_range = tr.get_range
        for key in keys:
            get_range(key, LEVEL0_END, limit)
        return len(keys)

    return body


def _api_rev_range1(tr: ReadView, keys: Sequence[bytes]) -> int:
    get_range = tr.get_range
    for key in keys:
        get_range(LEVEL0_PREFIX, key, 1, True)
    return len(keys)


def _api_get_one(tr: ReadView, key: bytes) -> bytes | None:
    return tr.get(key)


def _api_put_one(tr: Transaction, key: bytes) -> None:
    tr.set(key, ONE)


class DirectLmdb:
    """The same raw operations straight through py-lmdb, on the store's own environment."""

    def __init__(self, env: lmdb.Environment) -> None:
        self.env = env

    def _read(self, body: Callable[[lmdb.Transaction, Sequence[bytes]], None], keys: Sequence[bytes]) -> int:
        txn = self.env.begin(write=False)
        try:
            body(txn, keys)
        finally:
            txn.abort()
        return len(keys)

    def _write(self, body: Callable[[lmdb.Transaction, Sequence[bytes]], None], keys: Sequence[bytes]) -> int:
        txn = self.env.begin(write=True)
        try:
            body(txn, keys)
        except BaseException:
            txn.abort()
            raise
        txn.commit()
        return len(keys)

    @staticmethod
    def _gets(txn: lmdb.Transaction, keys: Sequence[bytes]) -> None:
        get = txn.get
        for key in keys:
            get(key)

    @staticmethod
    def _puts(txn: lmdb.Transaction, keys: Sequence[bytes]) -> None:
        put = txn.put
        for key in keys:
            put(key, ONE)

    @staticmethod
    def _deletes(txn: lmdb.Transaction, keys: Sequence[bytes]) -> None:
        delete = txn.delete
        for key in keys:
            delete(key)

    @staticmethod
    def _ranges(limit: int) -> Callable[[lmdb.Transaction, Sequence[bytes]], None]:
        def body(txn: lmdb.Transaction, keys: Sequence[bytes]) -> None:
            cursor = txn.cursor()
            for key in keys:
                out = []
                if cursor.set_range(key):
                    for item in cursor.iternext():
                        if item[0] >= LEVEL0_END:
                            break
                        out.append(item)
                        if len(out) == limit:
                            break

        return body

    @staticmethod
    def _rev_ranges1(txn: lmdb.Transaction, keys: Sequence[bytes]) -> None:
        cursor = txn.cursor()
        for key in keys:
            if cursor.set_range(key):
                if not cursor.prev():
                    continue
            elif not cursor.last():
                continue
            for item in cursor.iterprev():
                if item[0] < LEVEL0_PREFIX:
                    break
                break  # limit 1

    def get(self, keys: Sequence[bytes]) -> int:
        return self._read(self._gets, keys)

    def put(self, keys: Sequence[bytes]) -> int:
        return self._write(self._puts, keys)

    def clear(self, keys: Sequence[bytes]) -> int:
        return self._write(self._deletes, keys)

    def range(self, limit: int) -> Callable[[Sequence[bytes]], int]:
        return lambda keys: self._read(self._ranges(limit), keys)

    def rev_range1(self, keys: Sequence[bytes]) -> int:
        return self._read(self._rev_ranges1, keys)

    def get_one(self, key: bytes) -> bytes | None:
        txn = self.env.begin(write=False)
        try:
            return txn.get(key)
        finally:
            txn.abort()

    def put_one(self, key: bytes) -> None:
        txn = self.env.begin(write=True)
        txn.put(key, ONE)
        txn.commit()


# -- the benchmark ----------------------------------------------------------------------------


@dataclass
class RawFigures:
    """Raw store measurements, one Sample per round."""

    api: dict[str, list[Sample]] = field(default_factory=lambda: {k: [] for k in RAW_KINDS})
    direct: dict[str, list[Sample]] = field(default_factory=lambda: {k: [] for k in RAW_KINDS if k != "add"})
    single: dict[str, list[Sample]] = field(default_factory=dict)


class Bench:
    def __init__(self, args: argparse.Namespace, path: str) -> None:
        self.args = args
        self.path = path
        self.rng = random.Random(args.seed)
        self.rs = RankedSet(SET_PREFIX, args.levels, HashFunction[args.hash])
        self.db: LmdbDatabase | None = None
        self.size = 0
        self.raw = RawFigures()
        self.results: dict[str, Any] = {}
        self.rs_single: dict[str, Sample] = {}
        self.rs_batched: dict[str, Sample] = {}
        self.rs_durable: dict[str, Sample] = {}
        self.counts: dict[str, dict[str, float]] = {}

    # -- plumbing

    def open(self, durable: bool) -> LmdbDatabase:
        self.db = LmdbDatabase(self.path, durable=durable)
        return self.db

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None

    def env(self) -> lmdb.Environment:
        assert self.db is not None
        return self.db._env  # the store keeps one environment per path per process: reuse it

    def expect(self, what: str, got: int, wanted: int) -> None:
        if got != wanted:
            raise SystemExit(f"benchmark bug: {what}: {got} succeeded, expected {wanted}")

    @staticmethod
    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

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
        step = max(1, len(parts) // 20)
        start = last = time.perf_counter()
        done = 0
        for i, part in enumerate(parts, start=1):
            done += db.run(_add_all, self.rs, part)
            now = time.perf_counter()
            if i % step == 0 or i == len(parts) or now - last > 15:
                last = now
                self.log(
                    f"  load: {done:>12,} / {len(self.loaded):,} elements, {now - start:7.1f} s, "
                    f"{done / (now - start):>9,.0f} elements/s"
                )
        seconds = time.perf_counter() - start
        self.expect("load", done, len(self.loaded))
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
        """One round of raw store measurements (store API, then py-lmdb)."""
        db, keys, size = self.db, self.raw_keys, self.args.raw_batch
        assert db is not None
        direct = DirectLmdb(self.env())
        raw = self.raw

        def api_read(body: Callable[[ReadView, Sequence[bytes]], int]) -> Callable[[Sequence[bytes]], int]:
            return lambda part: db.read(body, part)

        def api_write(body: Callable[[Transaction, Sequence[bytes]], int]) -> Callable[[Sequence[bytes]], int]:
            return lambda part: db.run(body, part)

        measured: list[tuple[dict[str, list[Sample]], str, Callable[[Sequence[bytes]], int]]] = [
            (raw.api, "get", api_read(_api_get)),
            (raw.direct, "get", direct.get),
            (raw.api, "range1", api_read(_api_range(1))),
            (raw.direct, "range1", direct.range(1)),
            (raw.api, "range16", api_read(_api_range(16))),
            (raw.direct, "range16", direct.range(16)),
            (raw.api, "rev_range1", api_read(_api_rev_range1)),
            (raw.direct, "rev_range1", direct.rev_range1),
            (raw.api, "put", api_write(_api_put)),
            (raw.direct, "put", direct.put),
            (raw.api, "add", api_write(_api_add)),
        ]
        for table, kind, call in measured:
            sample, done = time_chunks(call, keys, size)
            self.expect(f"raw {kind}", done, len(keys))
            table[kind].append(sample)
        # clear: each timed transaction deletes a chunk of keys, an untimed one puts them back
        for table, clear in ((raw.api, api_write(_api_clear)), (raw.direct, direct.clear)):
            total = 0.0
            for part in chunks(keys, size):
                t0 = time.perf_counter()
                clear(part)
                total += time.perf_counter() - t0
                direct.put(part)
            table["clear"].append(Sample(len(keys), total))
        # whole transactions holding one operation, a different third of the keys each round
        third = max(1, len(self.raw_single_keys) // 3)
        done_rounds = len(raw.api["get"]) - 1
        part = self.raw_single_keys[third * done_rounds : third * (done_rounds + 1)] or self.raw_single_keys[:third]
        for name, call in (
            ("api_read_1_get", lambda key: db.read(_api_get_one, key)),
            ("api_run_1_put", lambda key: db.run(_api_put_one, key)),
            ("lmdb_read_1_get", direct.get_one),
            ("lmdb_write_1_put", direct.put_one),
        ):
            sample, _ = time_each(call, part)
            raw.single.setdefault(name, []).append(sample)

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
            counts: Counter[str] = Counter()
            for part in chunks(items, size):
                if writes:
                    try:
                        db.run(_count_writes, op, part)
                    except _Rollback as rollback:
                        counts.update(rollback.args[0])
                else:
                    counts.update(db.read(_count_reads, op, part))
            per_op = {key: value / len(items) for key, value in sorted(counts.items())}
            per_op["gets"] = per_op.get("get", 0) + per_op.get("get_many_keys", 0)
            per_op["ranges"] = per_op.get("get_range", 0) + per_op.get("get_ranges_ranges", 0)
            per_op["rows_per_range"] = (
                (per_op.get("forward_rows", 0) + per_op.get("reverse_rows", 0)) / per_op["ranges"]
                if per_op["ranges"]
                else 0.0
            )
            per_op["total"] = (
                per_op["gets"]
                + per_op["ranges"]
                + sum(per_op.get(k, 0) for k in ("set", "clear", "clear_range", "add", "max", "min"))
            )
            self.counts[name] = per_op

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
            self.expect(f"{name} (1 op/txn)", sum(r is not None and r is not False for r in results), n)
            self.rs_single[name] = sample
            sample, done = time_chunks(batched, batched_items, size)
            self.expect(f"{name} ({size} ops/txn)", done, n)
            self.rs_batched[name] = sample

    def rankedset_writes(self) -> None:
        db, rs, size, n = self.db, self.rs, self.args.batch, self.args.ops
        assert db is not None
        sample, results = time_each(lambda e: db.run(rs.add, e), self.new_single)
        self.expect("add (1 op/txn)", sum(bool(r) for r in results), n)
        self.rs_single["add"] = sample
        sample, done = time_chunks(lambda part: db.run(_add_all, rs, part), self.new_batched, size)
        self.expect(f"add ({size} ops/txn)", done, n)
        self.rs_batched["add"] = sample
        sample, results = time_each(lambda e: db.run(rs.remove, e), self.remove_single)
        self.expect("remove (1 op/txn)", sum(bool(r) for r in results), n)
        self.rs_single["remove"] = sample
        sample, done = time_chunks(lambda part: db.run(_remove_all, rs, part), self.remove_batched, size)
        self.expect(f"remove ({size} ops/txn)", done, n)
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
        sample, _ = time_each(lambda key: db.run(_api_put_one, key), keys)
        self.rs_durable["db.run: 1 set"] = sample
        sample, results = time_each(lambda e: db.run(rs.add, e), self.new_durable)
        self.expect("add (durable)", sum(bool(r) for r in results), n)
        self.rs_durable["ranked set add"] = sample
        sample, results = time_each(lambda e: db.run(rs.remove, e), self.remove_durable)
        self.expect("remove (durable)", sum(bool(r) for r in results), n)
        self.rs_durable["ranked set remove"] = sample
        self.check_size("after the durable phase")

    def check_size(self, when: str) -> None:
        """Every phase adds as many elements as it removes: the set must still hold N."""
        assert self.db is not None
        self.expect(f"set size {when}", self.db.read(self.rs.size), self.args.elements)

    def consistency(self) -> None:
        assert self.db is not None
        t0 = time.perf_counter()
        problems = self.db.read(self.rs.check_consistency)
        self.results["consistency"] = {"problems": problems, "seconds": round(time.perf_counter() - t0, 1)}
        if problems:
            raise SystemExit("ranked set inconsistent after the benchmark:\n" + "\n".join(problems))

    def run(self) -> None:
        args = self.args
        self.log(f"generating {args.elements:,} elements (seed {args.seed})")
        self.prepare()
        self.log(f"loading into {self.path} (durable=false, {args.load_batch} elements per transaction)")
        self.load()
        self.warm_up()
        self.nth_single = [self.rng.randrange(self.size) for _ in range(args.ops)]
        self.nth_ranks = [self.rng.randrange(self.size) for _ in range(args.ops)]
        self.log("raw store round 1/3")
        self.raw_round()
        self.log("counting store operations per ranked-set operation")
        self.count_ops()
        self.log("ranked-set reads: rank, get_nth, contains")
        self.rankedset_reads()
        self.log("raw store round 2/3")
        self.raw_round()
        self.log("ranked-set writes: add, remove")
        self.rankedset_writes()
        self.log("raw store round 3/3")
        self.raw_round()
        if args.durable_ops:
            self.log(f"durable=true: {args.durable_ops} single-op transactions of each kind")
            self.durable_phase()
        if args.check:
            self.log("checking the consistency of the whole set")
            self.consistency()
        self.close()

    # -- figures

    def raw_costs(self) -> tuple[dict[str, Sample], dict[str, Sample], dict[str, Sample]]:
        api = {kind: median_sample(samples) for kind, samples in self.raw.api.items()}
        direct = {kind: median_sample(samples) for kind, samples in self.raw.direct.items()}
        single = {name: merge(samples) for name, samples in self.raw.single.items()}
        return api, direct, single

    @staticmethod
    def model_us(per_op: dict[str, float], cost: dict[str, float]) -> float:
        """Modelled cost of the store operations in ``per_op`` given raw per-op costs in us."""
        slope = (cost["range16"] - cost["range1"]) / 15
        return (
            per_op.get("gets", 0) * cost["get"]
            + per_op.get("forward_ranges", 0) * cost["range1"]
            + per_op.get("forward_extra_rows", 0) * slope
            + per_op.get("reverse_ranges", 0) * cost["rev_range1"]
            + per_op.get("reverse_extra_rows", 0) * slope
            + per_op.get("set", 0) * cost["put"]
            + per_op.get("clear", 0) * cost["clear"]
            + per_op.get("add", 0) * cost["add"]
        )

    def figures(self) -> dict[str, Any]:
        args = self.args
        api, direct, single = self.raw_costs()
        api_cost = {kind: s.us_per_op for kind, s in api.items()}
        direct_cost = {kind: s.us_per_op for kind, s in direct.items()}
        direct_cost["add"] = direct_cost["get"] + direct_cost["put"]
        model: dict[str, Any] = {}
        for op in RS_OPS:
            measured = self.rs_batched[op].us_per_op
            via_api = self.model_us(self.counts[op], api_cost)
            via_lmdb = self.model_us(self.counts[op], direct_cost)
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
            "raw_store_api": {kind: s.to_json(durable=False) for kind, s in api.items()},
            "raw_py_lmdb": {kind: s.to_json(durable=False) for kind, s in direct.items()},
            "raw_one_op_per_txn": {name: s.to_json(durable=False) for name, s in single.items()},
            "raw_rounds_us_per_op": {
                "store_api": {k: [round(s.us_per_op, 3) for s in v] for k, v in self.raw.api.items()},
                "py_lmdb": {k: [round(s.us_per_op, 3) for s in v] for k, v in self.raw.direct.items()},
            },
            "store_ops_per_op": {op: {k: round(v, 3) for k, v in c.items()} for op, c in self.counts.items()},
            "cost_model": model,
        }


# -- printing ---------------------------------------------------------------------------------


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain-text table: first column left-aligned, the others right-aligned."""
    widths = [max(len(str(row[i])) for row in [headers, *rows]) for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), rule, *(line(row) for row in rows)])


def fmt_rate(value: float) -> str:
    return f"{value:,.0f}"


def fmt_us(value: float) -> str:
    return f"{value:,.2f}"


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
    labels = {
        "get": "get",
        "put": "put (overwrite)",
        "clear": "clear / delete",
        "add": "atomic add",
        "range1": "range read, 1 key",
        "range16": "range read, 16 keys",
        "rev_range1": "reverse range, 1 key",
    }
    rows = []
    for kind in RAW_KINDS:
        api = fig["raw_store_api"][kind]
        direct = fig["raw_py_lmdb"].get(kind)
        rows.append(
            [
                labels[kind],
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
    args = parse_args(argv)
    if args.dir:
        path = os.path.abspath(args.dir)
        if os.path.isdir(path) and os.listdir(path):
            raise SystemExit(f"{path} is not empty: give an empty or new directory")
        cleanup = False
    else:
        path = tempfile.mkdtemp(prefix="bench_rankedset-")
        cleanup = not args.keep
    bench = Bench(args, path)
    try:
        bench.run()
    finally:
        bench.close()
        if cleanup:
            shutil.rmtree(path, ignore_errors=True)
    fig = bench.figures()
    print("\n".join(report(fig)), flush=True)
    if args.json:
        with open(args.json, "w") as out:
            json.dump(fig, out, indent=2)
            out.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
