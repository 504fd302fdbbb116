"""The FoundationDB floor: what the ``fdb`` binding itself costs here per read, write and commit.

Behind ``tools/bench fdb-floor``.  On ``batch`` keys laid out like a ranked set's level-0
nodes (:func:`bench.rawstore.level0_key` of random leaderboard-like elements, 8-byte values),
written once under a scratch prefix and cleared at the end, each row runs transactions of one
kind for ``seconds`` and divides by the operations done:

- ``get``: a transaction issues ``batch`` point reads together, then waits on each;
- ``get_range N``: ``batch`` range reads of N keys (``limit=N``, ``StreamingMode.exact``, as the
  store layer asks) issued together, then each read to the end; per read, and per key read;
- ``set``, ``add``: ``batch`` sets (or atomic ADDs of 1) in a transaction, then its commit; per
  mutation, the commit's share included;
- ``commit``: a transaction with one set, committed (a read version, then the commit);
- ``read transaction``: a transaction with one get (a read version, then the read), and one with
  two gets waited on one after the other (a read version, then two rounds).

One more row, ``bulk write``, is the bare binding's rate for a bulk load's writes: ``bulk_keys``
keys of ``bulk_key_bytes`` (in key order, as a build writes them) with values of
``bulk_value_bytes``, in transactions of about 10 kB of writes each with 50 of them in flight
(FoundationDB's advice for bulk loads: ``tr.set`` per key, ``tr.commit()`` futures, the oldest
waited for before another starts, a failed one retried through ``on_error``); keys per second and
the CPU per key.  ``tools/bench scale`` runs it for the keys its build wrote, to compare.

Each row is measured three ways: through the binding (``tr.get(k).wait()``, iterating
``tr.get_range(...)``'s ``KeyValue`` objects, ``tr.set`` / ``tr.add`` / ``tr.commit().wait()``),
and through the store layer the index uses (``db.run`` / ``db.read``), which adds the read-round
bookkeeping and the write transactions' idempotency marker: with its direct calls into the client
library (``_fdb_direct``, the default when built) and with ``direct=false`` (its calls through the
binding, key-values converted to pairs).  Figures per operation: the calling process's CPU (every
thread, the client library's network thread included: ``time.process_time``) and, of it, the
calling thread's (``time.thread_time``: the rest is the network thread's), the CPU of the
cluster's ``fdbserver`` processes (``/proc``) and the wall time; the median of ``rounds``
rounds (the ways take turns, the first to go changing every round).

As a command (``tools/bench fdb-floor``):
set, add and commit, in client and fdbserver CPU.  What each row measures: ``bench/fdb_floor.py``.

    eval "$(../shared/fdb/fdb-local env)"; ../shared/fdb/fdb-local start /tmp/fdb-floor ssd
    .venv/bin/python tools/bench fdb-floor --cluster-file /tmp/fdb-floor/fdb.cluster --markdown
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from fdb_leaderboard.store import open_database
from fdb_leaderboard.store.fdb_backend import FdbDatabase

from . import options
from .cpu import CpuMeter, fdbserver_pids
from .output import environment, show, write_json
from .rawstore import LEVEL0_PREFIX, ONE, make_elements
from .timing import log, turns

SCRATCH = b"\x15\x7efdb-floor"
RANGES = (1, 16, 64)


def scratch_keys(count: int, seed: int) -> list[bytes]:
    """``count`` sorted keys like a ranked set's level-0 nodes, under :data:`SCRATCH`."""
    elements = make_elements(random.Random(seed), count, set())
    return sorted(SCRATCH + LEVEL0_PREFIX[len(LEVEL0_PREFIX) - 2 :] + e for e in elements)


class Floor:
    """The rows on one cluster: binding (``raw``) and store layer (``api``) bodies per kind."""

    def __init__(self, db: FdbDatabase, keys: list[bytes], batch: int, seed: int) -> None:
        self.db = db  # the store layer, direct calls or through the binding as opened
        self.raw = db._db
        self.fdb = db._fdb
        self.keys = keys
        self.batch = batch
        self.rng = random.Random(seed)

    def sample(self, count: int) -> list[bytes]:
        return self.rng.sample(self.keys, count)

    def starts(self, width: int) -> list[tuple[bytes, bytes]]:
        """``batch`` (begin, end) pairs each holding at least ``width`` keys."""
        picks = self.rng.sample(range(len(self.keys) - width), self.batch)
        return [(self.keys[i], self.keys[-1] + b"\x00") for i in picks]

    # -- through the binding

    def raw_get(self) -> int:
        tr = self.raw.create_transaction()
        futures = [tr.get(key) for key in self.sample(self.batch)]
        for future in futures:
            future.wait()
        return self.batch

    def raw_range(self, width: int) -> Callable[[], int]:
        exact = self.fdb.StreamingMode.exact

        def body() -> int:
            tr = self.raw.create_transaction()
            ranges = [tr.get_range(b, e, limit=width, streaming_mode=exact) for b, e in self.starts(width)]
            for found in ranges:
                for kv in found:
                    kv.key, kv.value  # noqa: B018 - touched as a caller would
            return self.batch

        return body

    def raw_write(self, kind: str, count: int) -> Callable[[], int]:
        def body() -> int:
            tr = self.raw.create_transaction()
            write = tr.set if kind == "set" else tr.add
            for key in self.sample(count):
                write(key, ONE)
            tr.commit().wait()
            return count

        return body

    def raw_read_transaction(self) -> int:
        tr = self.raw.create_transaction()
        tr.get(self.sample(1)[0]).wait()
        return 1

    def raw_two_rounds(self) -> int:
        tr = self.raw.create_transaction()
        for key in self.sample(2):
            tr.get(key).wait()
        return 1

    # -- through the store layer

    def api_get(self) -> int:
        keys = self.sample(self.batch)
        self.db.read(lambda tr: tr.get_many(keys))
        return self.batch

    def api_range(self, width: int) -> Callable[[], int]:
        def body() -> int:
            requests = [(b, e, width, False) for b, e in self.starts(width)]
            self.db.read(lambda tr: tr.get_ranges(requests))
            return self.batch

        return body

    def api_write(self, kind: str, count: int) -> Callable[[], int]:
        def body() -> int:
            keys = self.sample(count)

            def write(tr: Any) -> None:
                put = tr.set if kind == "set" else tr.add
                for key in keys:
                    put(key, ONE)

            self.db.run(write)
            return count

        return body

    def api_read_transaction(self) -> int:
        key = self.sample(1)[0]
        self.db.read(lambda tr: tr.get(key))
        return 1

    def api_two_rounds(self) -> int:
        keys = self.sample(2)
        self.db.read(lambda tr: [tr.get(key) for key in keys])
        return 1

    def rows(self) -> list[tuple[str, int, Callable[[], int], Callable[[], int]]]:
        """(name, keys read per operation, binding body, store-layer body)."""
        out = [("get", 1, self.raw_get, self.api_get)]
        out += [(f"get_range {n}", n, self.raw_range(n), self.api_range(n)) for n in RANGES]
        out += [
            ("set", 0, self.raw_write("set", self.batch), self.api_write("set", self.batch)),
            ("add", 0, self.raw_write("add", self.batch), self.api_write("add", self.batch)),
            ("commit (1 set)", 0, self.raw_write("set", 1), self.api_write("set", 1)),
            ("read transaction (1 get)", 1, self.raw_read_transaction, self.api_read_transaction),
            ("read transaction (2 rounds of 1 get)", 2, self.raw_two_rounds, self.api_two_rounds),
        ]
        return out


def timed(body: Callable[[], int], seconds: float, server_pids: list[int]) -> dict[str, float]:
    """Run ``body`` (returns the operations it made) for ``seconds``; per-operation figures in us."""
    body()  # warm
    ops = 0
    meter = CpuMeter(server_pids)
    caller = time.thread_time()
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        ops += body()
    spent = meter.read()
    spent["caller_cpu_s"] = time.thread_time() - caller
    out = {"ops": ops}
    for name, value in spent.items():
        out[name.replace("_s", "_us")] = value * 1e6 / ops
    return out


WAYS = ("binding", "store layer", "store layer, direct=false")


def measure(url: str, keys: int, batch: int, seconds: float, rounds: int, seed: int) -> dict[str, Any]:
    db = open_database(url)
    through_binding = open_database(url + "?direct=false")
    if not isinstance(db, FdbDatabase) or not isinstance(through_binding, FdbDatabase):
        raise SystemExit(f"the FoundationDB floor needs fdb:CLUSTER_FILE, not {url}")
    if not db.direct:
        log("the store layer's direct calls are not built here: its two ways are the same")
    pids = fdbserver_pids(db)
    if not pids:
        log("no fdbserver process of this cluster runs on this machine: no server CPU column")
    stored = scratch_keys(keys, seed)
    end = SCRATCH + b"\xff"
    try:
        db.run(lambda tr: tr.clear_range(SCRATCH, end))
        for start in range(0, len(stored), 1000):
            part = stored[start : start + 1000]
            db.run(lambda tr, part=part: [tr.set(key, ONE) for key in part])
        floors = [Floor(db, stored, batch, seed), Floor(through_binding, stored, batch, seed + 1)]
        found: dict[str, dict[str, list[dict[str, float]]]] = {}
        for number in range(rounds):
            for (name, _, raw, api), (_, _, _, api_binding) in zip(floors[0].rows(), floors[1].rows(), strict=True):
                ways = list(zip(WAYS, (raw, api, api_binding), strict=True))
                for way, body in turns(ways, number):
                    result = timed(body, seconds, pids)
                    found.setdefault(name, {}).setdefault(way, []).append(result)
                    log(
                        f"round {number + 1} {name:26} {way:26} client {result['client_cpu_us']:8.2f} us"
                        + (f"  server {result['server_cpu_us']:8.2f} us" if "server_cpu_us" in result else "")
                    )
    finally:
        db.run(lambda tr: tr.clear_range(SCRATCH, end))
        db.close()
        through_binding.close()
    keys_per_op = {name: width for name, width, _, _ in floors[0].rows()}
    figures: dict[str, Any] = {"url": url, "keys": keys, "batch": batch, "seconds": seconds, "rows": {}}
    for name, ways_found in found.items():
        figures["rows"][name] = {"keys_read": keys_per_op[name]}
        for way, results in ways_found.items():
            figures["rows"][name][way] = {
                field: statistics.median(r[field] for r in results) for field in results[0] if field != "ops"
            }
    figures["environment"] = environment()
    return figures


def report_rows(figures: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Per operation, each way's client CPU (the calling thread's in parentheses) and fdbserver CPU, in us."""
    headers = ["per operation (us)"]
    for way in WAYS:
        headers += [f"{way}: client CPU (calling thread)", f"{way}: fdbserver CPU"]
    rows = []
    for name, row in figures["rows"].items():
        cells = [name]
        for way in WAYS:
            r = row[way]
            cells += [
                f"{r['client_cpu_us']:.1f} ({r['caller_cpu_us']:.1f})",
                f"{r.get('server_cpu_us', float('nan')):.1f}",
            ]
        rows.append(cells)
    return headers, rows


BULK_CHUNK_BYTES = 10_000
BULK_IN_FLIGHT = 50


def bulk_write(
    url: str, count: int, key_bytes: int, value_bytes: int, seed: int = 1, in_flight: int = BULK_IN_FLIGHT
) -> dict[str, float]:
    """The bare binding writing ``count`` keys as a bulk load would (see the module docstring),
    under the scratch prefix, cleared afterwards: keys/s and CPU per key, in us."""
    db = open_database(url)
    if not isinstance(db, FdbDatabase):
        raise SystemExit(f"the bulk write row needs fdb:CLUSTER_FILE, not {url}")
    fdb, raw = db._fdb, db._db
    pids = fdbserver_pids(db)
    rng = random.Random(seed)
    tail = max(0, key_bytes - len(SCRATCH) - 6)
    value = bytes(value_bytes)
    end = SCRATCH + b"\xff"

    def keys() -> Any:
        for i in range(count):
            yield SCRATCH + b"\x00" + i.to_bytes(5, "big") + rng.randbytes(tail)

    pending: list[tuple[Any, list[bytes], Any]] = []

    def settle(tr: Any, chunk: list[bytes], commit: Any) -> None:
        while True:
            try:
                commit.wait()
                return
            except fdb.FDBError as error:
                tr.on_error(error).wait()
                for key in chunk:
                    tr.set(key, value)
                commit = tr.commit()

    try:
        raw.clear_range(SCRATCH, end)
        meter = CpuMeter(pids)
        chunk: list[bytes] = []
        size = 0
        for key in keys():
            chunk.append(key)
            size += len(key) + value_bytes
            if size >= BULK_CHUNK_BYTES:
                tr = raw.create_transaction()
                for each in chunk:
                    tr.set(each, value)
                pending.append((tr, chunk, tr.commit()))
                chunk, size = [], 0
                if len(pending) >= in_flight:
                    settle(*pending.pop(0))
        if chunk:
            tr = raw.create_transaction()
            for each in chunk:
                tr.set(each, value)
            pending.append((tr, chunk, tr.commit()))
        while pending:
            settle(*pending.pop(0))
        spent = meter.read()
    finally:
        raw.clear_range(SCRATCH, end)
        db.close()
    out = {
        "keys": count,
        "key_bytes": key_bytes,
        "value_bytes": value_bytes,
        "seconds": spent["wall_s"],
        "keys_per_s": count / spent["wall_s"],
        "client_cpu_us": spent["client_cpu_s"] * 1e6 / count,
    }
    if "server_cpu_s" in spent:
        out["server_cpu_us"] = spent["server_cpu_s"] * 1e6 / count
    log(f"bulk write, bare binding: {count:,} keys in {spent['wall_s']:.1f} s, {out['keys_per_s']:,.0f} keys/s")
    return out


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = options.parser("What the fdb binding and the store layer cost per operation.")
    parser.add_argument("--cluster-file", required=True, help="the cluster (its scratch keys are cleared afterwards)")
    parser.add_argument("--keys", type=int, default=20_000, help="scratch keys written (default: %(default)s)")
    parser.add_argument("--batch", type=int, default=100, help="operations per transaction (default: %(default)s)")
    parser.add_argument("--seconds", type=float, default=2.0, help="seconds per measurement (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, the ways taking turns (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default: %(default)s)")
    parser.add_argument(
        "--bulk-keys", type=int, default=300_000, help="keys of the bulk write row (0: none; default: %(default)s)"
    )
    parser.add_argument("--bulk-key-bytes", type=int, default=40, help="their size (default: %(default)s)")
    parser.add_argument("--bulk-value-bytes", type=int, default=8, help="their values' size (default: %(default)s)")
    options.add_output(parser)
    args = parser.parse_args(argv)
    if args.keys < 2 * args.batch + max(RANGES) or args.rounds < 1 or args.seconds <= 0:
        parser.error("--keys must exceed twice --batch plus 64; --rounds and --seconds must be positive")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    figures = measure(f"fdb:{args.cluster_file}", args.keys, args.batch, args.seconds, args.rounds, args.seed)
    headers, rows = report_rows(figures)
    show(headers, rows, args.markdown)
    if args.bulk_keys:
        url = f"fdb:{args.cluster_file}"
        bulk = figures["bulk_write"] = bulk_write(
            url, args.bulk_keys, args.bulk_key_bytes, args.bulk_value_bytes, args.seed
        )
        heads = ["bulk write, bare binding", "keys", "keys/s", "client CPU us/key", "fdbserver CPU us/key"]
        row = [
            f"{bulk['key_bytes']}-byte keys, {bulk['value_bytes']}-byte values, 10 kB transactions, 50 in flight",
            f"{bulk['keys']:,}",
            f"{bulk['keys_per_s']:,.0f}",
            f"{bulk['client_cpu_us']:.2f}",
            f"{bulk.get('server_cpu_us', float('nan')):.2f}",
        ]
        show(heads, [row], args.markdown)
    if args.json:
        write_json(args.json, figures)
    return 0
