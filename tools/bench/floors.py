"""The floors under ``tools/bench.py``'s figures: what this machine charges before our code runs.

Behind ``tools/bench floor``: three measurements that involve none of fdb-leaderboard's own
work (the third borrows only its key layout and tuple codec), so the benchmark's figures can
be read against them:

**A gRPC call that does nothing.**  The product's ``Server``, started as ``tools/bench.py``
starts it (its own process, an empty embedded store), answers the standard
``grpc.health.v1.Health/Check``.  One client calls it ``--calls`` times, then ``--threads``
client threads (one channel each) share as many calls.  Reported: p50 / p99 latency, calls
per second, and the CPU time per call on each side: the client process's
``time.process_time`` and the server process's user + system time (``/proc/PID/stat``).
With the clients on the same machine, (client + server CPU per call) x calls/s cannot exceed
the number of cores, whatever a handler does: that caps every gRPC figure of the benchmark.

**A durable write of k pages.**  In a scratch file of ``--file-mib`` MiB under ``--dir`` (put
it on the file system that holds the store; it is dropped from the page cache once written, so
later writes cache single pages), each of ``--rounds`` rounds (proportionally fewer above 30
pages, at least 10) writes k 4-KiB pages with ``pwrite`` and then calls ``fdatasync``, the pages
either scattered (a random sample of the file's pages, in file order) or contiguous (a run at a
random place), for k in ``--pages``.  One more row appends a 200-byte record to a log file and ``fdatasync``s it, as
Redis's ``appendfsync always`` does for each write.  A durable LMDB commit with ``redo_log=false``
writes every page it changed, wherever the B-tree keeps it, then syncs: ``tools/bench.py`` notes how
many pages such submissions wrote per commit, and this table prices such a commit on this disk.

**The floor of a durable commit: one 1-KB write and one fdatasync** (:func:`sync_floor`, also
measured by ``tools/bench.py`` in the store's directory before its submissions, which it prints
its durable rows' ratios to).  A commit of the redo log (the default) writes about 1 KB into a
preallocated segment and syncs it; Redis's AOF appends to a growing file.  Both are timed, in
alternating blocks of 50: ``--rounds`` writes of 1 KB at the end of a growing file, each followed by
``fdatasync`` (a file-size change: the file system's journal commits too), and as many into a
zero-filled, synced file (data only).  Nothing durable can cost less on this disk.

**A bulk load's bare writes.**  The keys and values a load into an empty index stores for
each of ``--load-records`` records of ``tools/bench.py``'s data (one score, 4 windows), built
with the index's own layout and tuple codec and written straight through py-lmdb without a
sync, as ``tools/bench.py`` loads (durable=false): phase 1, in transactions of 500 records,
puts the record head (its 4 window states), the entry and the 4 primary B-tree keys with one
``putmulti`` each; phase 2 puts each window's level-0 ranked-set nodes in key order (sorted in
memory: no read-back, no upper levels) in transactions of 20,000.  No validation, folding,
checks of what is stored, or per-call Python of the index: a lower bound on what a load
written in Python costs here, read against the 20 us per record of 50,000 records/s.

As a command (``tools/bench floor``):

Three measurements that involve none of fdb-leaderboard's own work (the third borrows only its
key layout and tuple codec), so the benchmark's figures can be read against them: a gRPC call
that does nothing, a durable write of k pages, and a bulk load's bare writes.  What each
measures, and how, is in the docstring of ``bench/floors.py``.

    python tools/bench floor [--calls 3000] [--threads 8] [--dir DIR] [--load-records N]
                                [--json PATH] [--markdown]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import grpc
import lmdb
from grpc_health.v1 import health_pb2, health_pb2_grpc

from fdb_leaderboard.index import tuplecodec as tuples
from fdb_leaderboard.index.layout import IndexLayout
from fdb_leaderboard.proto import index_pb2
from fdb_leaderboard.rankedset.layout import _suffix

from . import options
from .data import bench_directory, make_data
from .output import environment, markdown, table, write_json
from .processes import ServerProcess
from .stores import store_url
from .timing import Sample, merge, process_cpu, time_concurrent, time_each

PAGE = 4096
LOG_RECORD = 200
COMMIT_RECORD = 1024  # about what the redo log writes for one submission
FLOOR_BLOCK = 50  # rounds of one kind before the other kind's
WARM_UP_CALLS = 200
LOAD_BATCH = 500  # records per transaction, as tools/bench.py loads
NODE_BATCH = 20_000  # ranked-set nodes per transaction, as a fill step appends them


# -- gRPC ---------------------------------------------------------------------------------------


def _health_check(channel: grpc.Channel) -> Callable[[object], object]:
    stub = health_pb2_grpc.HealthStub(channel)
    request = health_pb2.HealthCheckRequest(service="")

    def call(_: object) -> object:
        return stub.Check(request)

    return call


def _timed(server_pid: int, run: Callable[[], Sample]) -> dict[str, Any]:
    client_cpu, server_cpu = time.process_time(), process_cpu(server_pid)
    sample = run()
    client_cpu, server_cpu = time.process_time() - client_cpu, process_cpu(server_pid) - server_cpu
    return {
        "calls": sample.ops,
        "calls_per_s": round(sample.rate, 1),
        "p50_us": round(sample.percentile_us(50), 1),
        "p99_us": round(sample.percentile_us(99), 1),
        "client_cpu_us": round(client_cpu / sample.ops * 1e6, 1),
        "server_cpu_us": round(server_cpu / sample.ops * 1e6, 1),
    }


def grpc_floor(calls: int, threads: int) -> dict[str, dict[str, Any]]:
    """Do-nothing calls against the product's server: one caller, then ``threads`` callers."""
    with (
        tempfile.TemporaryDirectory(prefix="bench-floor-") as store,
        ServerProcess(store_url(f"lmdb:{store}", durable=True)) as server,
    ):
        pid = server.process.pid
        assert pid is not None
        channels = [grpc.insecure_channel(server.address) for _ in range(threads)]
        try:
            checks = [_health_check(channel) for channel in channels]
            for check in checks:
                time_each(check, range(WARM_UP_CALLS))
            items = range(calls)
            return {
                "1 caller": _timed(pid, lambda: time_each(checks[0], items)[0]),
                f"{threads} callers": _timed(pid, lambda: time_concurrent(checks, items)[0]),
            }
        finally:
            for channel in channels:
                channel.close()


# -- durable writes ---------------------------------------------------------------------------


def _write_and_sync(fd: int, pages: Iterable[int], data: bytes) -> None:
    for page in pages:
        os.pwrite(fd, data, page * PAGE)
    os.fdatasync(fd)


def _row(sample: Sample) -> dict[str, Any]:
    return {
        "rounds": sample.ops,
        "p50_ms": round(sample.percentile_us(50) / 1000, 3),
        "p90_ms": round(sample.percentile_us(90) / 1000, 3),
        "mean_ms": round(sample.us_per_op / 1000, 3),
    }


def disk_floor(directory: str, file_mib: int, rounds: int, page_counts: Sequence[int], seed: int) -> dict[str, Any]:
    """fdatasync after k scattered or contiguous page writes, and after one small append."""
    rng = random.Random(seed)
    data = rng.randbytes(PAGE)
    total = file_mib * 2**20 // PAGE
    if total < 2 * max(page_counts):
        raise SystemExit(f"--file-mib {file_mib} is too small for {max(page_counts)} scattered pages")
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-floor-", dir=directory) as scratch:
        path = os.path.join(scratch, "pages")
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            chunk = rng.randbytes(2**20)
            for i in range(file_mib):  # real blocks, as in a store file, not a sparse hole
                os.pwrite(fd, chunk, i * 2**20)
            os.fsync(fd)
            # Drop the file from the page cache: writes then cache single pages, so a sync writes
            # back only the pages written (a page in a large cached folio can drag the folio along).
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            for k in page_counts:
                n = max(10, rounds * 30 // max(30, k))  # fewer rounds for the slow, large writes
                scattered = [sorted(rng.sample(range(total), k)) for _ in range(n)]
                contiguous = [range(first, first + k) for first in (rng.randrange(total - k) for _ in range(n))]
                out[f"{k} page" + ("s" if k > 1 else "")] = {
                    "pages": k,
                    "scattered": _row(time_each(lambda pages: _write_and_sync(fd, pages, data), scattered)[0]),
                    "contiguous": _row(time_each(lambda pages: _write_and_sync(fd, pages, data), contiguous)[0]),
                }
        finally:
            os.close(fd)
        log_fd = os.open(os.path.join(scratch, "log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            record = rng.randbytes(LOG_RECORD)
            appended = time_each(lambda _: (os.write(log_fd, record), os.fdatasync(log_fd)), range(rounds))[0]
            out["append"] = _row(appended)
        finally:
            os.close(log_fd)
    return out


def sync_floor(directory: str, rounds: int, seed: int) -> dict[str, Any]:
    """``rounds`` 1-KB writes each made durable with ``fdatasync``: appended to a growing file, and
    written into a preallocated one, in alternating blocks (the disk's mood changes by the second)."""
    rng = random.Random(seed)
    record = rng.randbytes(COMMIT_RECORD)
    appended: list[Sample] = []
    preallocated: list[Sample] = []
    with tempfile.TemporaryDirectory(prefix="bench-floor-", dir=directory) as scratch:
        grow = os.open(os.path.join(scratch, "appended"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        fixed = os.open(os.path.join(scratch, "preallocated"), os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            zeros = bytes(COMMIT_RECORD * rounds)
            os.write(fixed, zeros)
            os.fsync(fixed)
            done = 0
            while done < rounds:
                block = range(done, min(rounds, done + FLOOR_BLOCK))
                appended.append(time_each(lambda _: (os.write(grow, record), os.fdatasync(grow)), block)[0])
                preallocated.append(
                    time_each(lambda i: (os.pwrite(fixed, record, i * COMMIT_RECORD), os.fdatasync(fixed)), block)[0]
                )
                done = block.stop
        finally:
            os.close(grow)
            os.close(fixed)
    return {
        "bytes": COMMIT_RECORD,
        "appended": _row(merge(appended)),
        "preallocated": _row(merge(preallocated)),
    }


def floor_us(floor: dict[str, Any]) -> float:
    """The least a durable commit costs here: the median of the cheaper of the two ways of writing 1 KB
    (the median, as one slow sync of a shared disk says nothing about the disk)."""
    return 1000 * min(floor["appended"]["p50_ms"], floor["preallocated"]["p50_ms"])


# -- bulk load ----------------------------------------------------------------------------------


def _record_writes(
    layout: IndexLayout, directory: Any, pk: int, score: int, ts: int, nodes: dict[bytes, list[bytes]]
) -> list[tuple[bytes, bytes]]:
    """A new record's keys and values (head, entry, primary keys); its level-0 node keys join ``nodes``."""
    pk_flat = tuples.pack((pk,))
    pk_nested = tuples.pack_nested((pk,), pk_flat)
    element = tuples.pack((-score, ts))  # high score first, no context
    head = index_pb2.RecordHead(next_seq=1)
    out = []
    for window in directory.containing(ts):
        head.windows.add(lb_key=window.lb_key, group=b"", element=element, seq=0)
        out.append((layout.primary + window.key_bytes + element + pk_flat, b""))
        nodes[window.key_bytes].append(element)
    out.append((layout.head_key(pk_nested), head.SerializeToString()))
    out.append((layout.entry_key(pk_nested, ts, 0), tuples.pack(((), score, ()))))
    return out


def load_floor(directory: str, records: int, seed: int) -> dict[str, Any]:
    """Per record: building its writes alone, phase 1 with the writes, phase 2 (ranked-set nodes)."""
    rows = make_data(records, 1, seed).records
    windows = bench_directory()
    layout = IndexLayout(tuples.pack(("floor",)))
    numbered = list(enumerate(rows))
    batches = [numbered[i : i + LOAD_BATCH] for i in range(0, records, LOAD_BATCH)]
    one = (1).to_bytes(8, "little")

    def phase1(env: lmdb.Environment | None) -> tuple[float, dict[bytes, list[bytes]]]:
        nodes: dict[bytes, list[bytes]] = {w.key_bytes: [] for w in windows.windows}
        started = time.perf_counter()
        for batch in batches:
            writes = [kv for pk, (score, ts) in batch for kv in _record_writes(layout, windows, pk, score, ts, nodes)]
            if env is not None:
                with env.begin(write=True) as txn:
                    txn.cursor().putmulti(writes)
        return time.perf_counter() - started, nodes

    def phase2(env: lmdb.Environment, nodes: dict[bytes, list[bytes]]) -> float:
        started = time.perf_counter()
        for key_bytes, elements in nodes.items():
            level0 = layout.secondary + key_bytes + tuples.pack((0,))
            keys = sorted(level0 + _suffix(element) for element in set(elements))
            for i in range(0, len(keys), NODE_BATCH):
                with env.begin(write=True) as txn:  # in key order, though not at the file's end: no MDB_APPEND
                    txn.cursor().putmulti([(key, one) for key in keys[i : i + NODE_BATCH]])
        return time.perf_counter() - started

    build_only, _ = phase1(None)
    with tempfile.TemporaryDirectory(prefix="bench-floor-", dir=directory) as scratch:
        env = lmdb.open(scratch, map_size=1 << 40, sync=False, metasync=False)
        try:
            written, nodes = phase1(env)
            ranked = phase2(env, nodes)
            keys = env.stat()["entries"]
        finally:
            env.close()
    per = 1e6 / records
    total = written + ranked
    return {
        "records": records,
        "store_keys": keys,
        "build_us": round(build_only * per, 2),
        "phase1_us": round(written * per, 2),
        "phase2_us": round(ranked * per, 2),
        "total_us": round(total * per, 2),
        "records_per_s": round(records / total),
    }


# -- report ---------------------------------------------------------------------------------------


def tables(fig: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    out = []
    if fig.get("grpc"):
        headers = ["Health.Check, does nothing", "calls/s", "p50 ms", "p99 ms", "client CPU us", "server CPU us"]
        rows = [
            [
                name,
                f"{r['calls_per_s']:,.0f}",
                f"{r['p50_us'] / 1000:.2f}",
                f"{r['p99_us'] / 1000:.2f}",
                f"{r['client_cpu_us']:,.0f}",
                f"{r['server_cpu_us']:,.0f}",
            ]
            for name, r in fig["grpc"].items()
        ]
        out.append(("A gRPC call that does nothing (the product's server)", headers, rows))
    if fig.get("disk"):
        disk = fig["disk"]
        headers = ["pwrite k pages, then fdatasync", "scattered p50 / p90 ms", "contiguous p50 / p90 ms"]
        rows = [
            [
                name,
                f"{r['scattered']['p50_ms']:.2f} / {r['scattered']['p90_ms']:.2f}",
                f"{r['contiguous']['p50_ms']:.2f} / {r['contiguous']['p90_ms']:.2f}",
            ]
            for name, r in disk.items()
            if name != "append"
        ]
        append = disk["append"]
        rows.append(
            [f"append {LOG_RECORD} bytes to a log (Redis AOF)", f"{append['p50_ms']:.2f} / {append['p90_ms']:.2f}", ""]
        )
        out.append((f"A durable write ({fig['config']['file_mib']:,} MiB file)", headers, rows))
    if fig.get("sync_floor"):
        out.append(("The floor of a durable commit", *sync_floor_table(fig["sync_floor"])))
    if fig.get("load"):
        load = fig["load"]
        headers = ["a load's bare writes, per record", "us", "records/s"]
        rows = [
            ["build the keys and values (no store)", f"{load['build_us']:.1f}", f"{1e6 / load['build_us']:,.0f}"],
            ["phase 1: build and put head, entry, 4 primary keys", f"{load['phase1_us']:.1f}", ""],
            ["phase 2: put level-0 ranked-set nodes in key order", f"{load['phase2_us']:.1f}", ""],
            ["both phases", f"{load['total_us']:.1f}", f"{load['records_per_s']:,}"],
        ]
        caption = f"A bulk load's bare writes ({load['records']:,} records, {load['store_keys']:,} keys)"
        out.append((caption, headers, rows))
    return out


def sync_floor_table(floor: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    headers = [f"write {floor['bytes']:,} bytes, then fdatasync", "p50 ms", "p90 ms", "mean ms", "commits/s"]
    rows = []
    for name, label in (("appended", "appended to a growing file (Redis's AOF)"),
                        ("preallocated", "into a preallocated file (the redo log's segments)")):  # fmt: skip
        row = floor[name]
        rows.append(
            [
                label,
                f"{row['p50_ms']:.3f}",
                f"{row['p90_ms']:.3f}",
                f"{row['mean_ms']:.3f}",
                f"{1 / row['mean_ms'] * 1000:,.0f}",
            ]
        )
    return headers, rows


def benchmark(args: argparse.Namespace) -> int:
    """The floors asked for by parsed ``args``: tables on stdout, the figures as JSON if asked."""
    fig: dict[str, Any] = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "environment": environment(),
        "config": {"calls": args.calls, "threads": args.threads, "file_mib": args.file_mib, "rounds": args.rounds},
    }
    if args.grpc:
        fig["grpc"] = grpc_floor(args.calls, args.threads)
    if args.disk:
        fig["disk"] = disk_floor(args.dir, args.file_mib, args.rounds, args.pages, args.seed)
        fig["sync_floor"] = sync_floor(args.dir, max(args.rounds, 1000), args.seed)
    if args.load:
        fig["load"] = load_floor(args.dir, args.load_records, args.seed)
    for caption, headers, rows in tables(fig):
        print(f"\n{caption}:\n")
        print(markdown(headers, rows) if args.markdown else table(headers, rows))
    if args.json:
        write_json(args.json, fig)
    return 0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="What a do-nothing gRPC call, a durable page write and a load's bare writes cost here."
    )
    parser.add_argument("--calls", type=int, default=3000, help="gRPC calls per run (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=8, help="concurrent gRPC callers (default: %(default)s)")
    parser.add_argument(
        "--dir", default=tempfile.gettempdir(), help="where the scratch files go (default: %(default)s)"
    )
    parser.add_argument("--file-mib", type=int, default=1024, help="scratch file size in MiB (default: %(default)s)")
    parser.add_argument(
        "--rounds",
        type=int,
        default=200,
        help="rounds per row up to 30 pages; larger k get proportionally fewer, at least 10 (default: %(default)s)",
    )
    parser.add_argument(
        "--pages",
        type=options.integers,
        default="1,8,30,114,500",
        help="comma-separated page counts k (default: %(default)s)",
    )
    parser.add_argument(
        "--load-records", type=int, default=1_000_000, help="records of the load floor (default: %(default)s)"
    )
    parser.add_argument("--no-grpc", dest="grpc", action="store_false", help="skip the gRPC floor")
    parser.add_argument("--no-disk", dest="disk", action="store_false", help="skip the durable-write floor")
    parser.add_argument("--no-load", dest="load", action="store_false", help="skip the bulk-load floor")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default: %(default)s)")
    options.add_output(parser)
    args = parser.parse_args(argv)
    options.require_positive(parser, args, ("calls", "threads", "file_mib", "rounds", "load_records", "pages"))
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return benchmark(parse_args(argv))
