"""The raw store: what one get, put, clear, atomic add or range read costs, with no index above it.

Measured on level-0 node keys of a ranked set under :data:`SET_PREFIX` (about 38 bytes, 8-byte
values), through the store layer (``LmdbTransaction.get`` / ``set`` / ``clear`` / ``add`` /
``get_range``) and directly through py-lmdb (``Transaction.get`` / ``put`` / ``delete``, a
cursor for ranges), ``batch`` operations per transaction, begin and commit included.  ``put``
rewrites a key with the value it already holds, ``add`` adds one to each count, as a ranked-set
update does (the round's clear and put-back restore the ones), ``clear`` deletes keys that the
next, untimed transaction puts back.  Ranges: forward reads of 1 and of 16 keys, and the
reverse read of 1 key that ranked-set adds and removes use to find predecessors.  Also the cost
of a whole transaction holding one get (read) or one put (write).  Each :meth:`RawStoreRounds.round`
measures every kind once; the figures are the median round per kind (the single-op
transactions: all rounds pooled), to even out drift on a shared machine.

Used by ``tools/bench rankedset`` (on the set's own keys) and by ``tools/bench.py``
(:func:`measure_on_scratch_keys`: on scratch keys in the product store's environment, removed
afterwards), to price each operation's store accesses (:func:`bench.counting.modelled_us`).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import Any

import fdb.tuple
import lmdb

from fdb_leaderboard.store import ReadView, Transaction, strinc
from fdb_leaderboard.store.lmdb_backend import LmdbDatabase

from .timing import Sample, chunks, expect, log, median_sample, merge, time_chunks, time_each

SET_PREFIX = fdb.tuple.pack(("bench_rankedset",))
LEVEL0_PREFIX = SET_PREFIX + fdb.tuple.pack((0,))
LEVEL0_END = strinc(LEVEL0_PREFIX)
ONE = (1).to_bytes(8, "little")  # the value of every level-0 node
BASE_TS_NS = 1_763_000_000 * 10**9  # fixed, so a seed always yields the same elements
TS_SPAN_NS = 30 * 86_400 * 10**9
RAW_KINDS = ("get", "put", "clear", "add", "range1", "range16", "rev_range1")


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


# Store-layer bodies: the loops are the same shape as the ranked set's own.


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


def put_one(tr: Transaction, key: bytes) -> None:
    """A transaction body holding one put."""
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


class RawStoreRounds:
    """Rounds of raw measurements on ``keys`` (present in ``db``), ``batch`` per transaction.

    ``api`` and ``direct`` hold one Sample per round and kind (store layer, py-lmdb); ``single``
    one per round for each whole one-operation transaction, on a different third of
    ``single_keys`` each round.
    """

    def __init__(self, db: LmdbDatabase, keys: Sequence[bytes], single_keys: Sequence[bytes], batch: int) -> None:
        self.db = db
        self.keys = keys
        self.single_keys = single_keys
        self.batch = batch
        self.api: dict[str, list[Sample]] = {k: [] for k in RAW_KINDS}
        self.direct: dict[str, list[Sample]] = {k: [] for k in RAW_KINDS if k != "add"}
        self.single: dict[str, list[Sample]] = {}

    def round(self) -> None:
        """One round of raw store measurements (store API, then py-lmdb)."""
        db, keys, size = self.db, self.keys, self.batch
        direct = DirectLmdb(db._env)  # the store keeps one environment per path per process: reuse it

        def api_read(body: Callable[[ReadView, Sequence[bytes]], int]) -> Callable[[Sequence[bytes]], int]:
            return lambda part: db.read(body, part)

        def api_write(body: Callable[[Transaction, Sequence[bytes]], int]) -> Callable[[Sequence[bytes]], int]:
            return lambda part: db.run(body, part)

        measured: list[tuple[dict[str, list[Sample]], str, Callable[[Sequence[bytes]], int]]] = [
            (self.api, "get", api_read(_api_get)),
            (self.direct, "get", direct.get),
            (self.api, "range1", api_read(_api_range(1))),
            (self.direct, "range1", direct.range(1)),
            (self.api, "range16", api_read(_api_range(16))),
            (self.direct, "range16", direct.range(16)),
            (self.api, "rev_range1", api_read(_api_rev_range1)),
            (self.direct, "rev_range1", direct.rev_range1),
            (self.api, "put", api_write(_api_put)),
            (self.direct, "put", direct.put),
            (self.api, "add", api_write(_api_add)),
        ]
        for table, kind, call in measured:
            sample, done = time_chunks(call, keys, size)
            expect(f"raw {kind}", done, len(keys))
            table[kind].append(sample)
        # clear: each timed transaction deletes a chunk of keys, an untimed one puts them back
        for table, clear in ((self.api, api_write(_api_clear)), (self.direct, direct.clear)):
            total = 0.0
            for part in chunks(keys, size):
                t0 = time.perf_counter()
                clear(part)
                total += time.perf_counter() - t0
                direct.put(part)
            table["clear"].append(Sample(len(keys), total))
        # whole transactions holding one operation, a different third of the keys each round
        third = max(1, len(self.single_keys) // 3)
        done_rounds = len(self.api["get"]) - 1
        part = self.single_keys[third * done_rounds : third * (done_rounds + 1)] or self.single_keys[:third]
        for name, one in (
            ("api_read_1_get", lambda key: db.read(_api_get_one, key)),
            ("api_run_1_put", lambda key: db.run(put_one, key)),
            ("lmdb_read_1_get", direct.get_one),
            ("lmdb_write_1_put", direct.put_one),
        ):
            sample, _ = time_each(one, part)
            self.single.setdefault(name, []).append(sample)

    def costs(self) -> tuple[dict[str, Sample], dict[str, Sample], dict[str, Sample]]:
        """The median round of each kind (store API, py-lmdb), and the single-op transactions pooled."""
        api = {kind: median_sample(samples) for kind, samples in self.api.items()}
        direct = {kind: median_sample(samples) for kind, samples in self.direct.items()}
        single = {name: merge(samples) for name, samples in self.single.items()}
        return api, direct, single

    def to_json(self) -> dict[str, Any]:
        """The medians by kind and the single-op transactions, as the reports key them."""
        api, direct, single = self.costs()
        return {
            "raw_store_api": {kind: s.to_json(durable=False) for kind, s in api.items()},
            "raw_py_lmdb": {kind: s.to_json(durable=False) for kind, s in direct.items()},
            "raw_one_op_per_txn": {name: s.to_json(durable=False) for name, s in single.items()},
        }


def measure_on_scratch_keys(db: LmdbDatabase, seed: int, keys: int, batch: int, rounds: int) -> RawStoreRounds:
    """``rounds`` raw rounds on ``keys`` scratch keys written into ``db``'s environment, then removed.

    The keys are level-0 keys of :data:`SET_PREFIX` (outside any index); 3,000 of them make the
    single-op transactions.
    """
    rng = random.Random(seed + 1)
    scratch = [level0_key(e) for e in make_elements(rng, keys, set())]
    direct = DirectLmdb(db._env)
    for part in chunks(scratch, batch):
        direct.put(part)
    raw = RawStoreRounds(db, rng.sample(scratch, len(scratch)), rng.sample(scratch, 3000), batch)
    try:
        for i in range(rounds):
            log(f"    raw store round {i + 1}/{rounds}")
            raw.round()
    finally:
        db.run(lambda tr: tr.clear_range(SET_PREFIX, strinc(SET_PREFIX)))
    return raw
