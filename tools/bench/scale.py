"""A board of N records, built, served, verified and moved (``tools/bench scale``).

On the store ``--store`` (``lmdb:PATH`` or ``fdb:CLUSTER_FILE``), one index of N records with
the benchmark's windows (``bench.data``: all-time, UTC daily, ISO-weekly and monthly, so 4
windows per score; scores and timestamps drawn as ``tools/bench.py`` draws them, but one record
at a time from the seed, so N is not held in memory), measured in this order:

1. **build**: ``index.bulk_load`` through the Python API in this process (the fastest path a
   user has: no gRPC, the windows built from sorted data), ``--batch`` records per transaction,
   on the store as given (the embedded store durable unless the URL says otherwise);
   ``build_seconds``, ``build_records_per_s`` and, from the store's counters, the keys and bytes
   written per second;
2. **bytes per record**: the embedded store's data file over N; on FoundationDB, its estimate
   of the index's key range over N (logical bytes, before replication and the engine's pages);
   and on FoundationDB the bare binding's rate for as many keys (``--bare-keys`` at most) of the
   build's mean size, written as a bulk load should (``bench.fdb_floor.bulk_write``):
   ``build_vs_bare``, the build's keys per second over it;
3. **a server** (``fdb-leaderboard serve``, ``--processes`` processes, on the same store URL)
   answers through gRPC, one caller, ``--ops`` calls each: ``GetRank`` of a random record in
   the all-time window, ``Top`` 10 of the current weekly window, ``AroundMe`` (5 above, 5 below,
   all-time) of a random record, ``AddScore`` of a fresh score for a random record now: p50 and
   p99 in ms;
4. **fill**: a new 31-day window (type 9) over every record added through ``UpdateWindows``;
   the server fills it by itself (built from sorted data): ``fill_seconds`` until it is complete;
5. **verify** in ``--parts`` pieces at once through the client (``verify_report(parts=...)``):
   ``verify_seconds``, clean or not;
6. **dump** to a file under ``--dir`` and **restore** it as a second index through the server
   (``dump_seconds``, ``restore_seconds``, the file's size);
7. **expire**: ``Expire`` before the new window's end, which removes it (N entries) and every
   calendar window before it (another 3N): ``expire_seconds``;
8. **memory**: the peak RSS of each server process (``VmHWM``; ``server_anon_mb``: its anonymous
   memory at the end, without the map's file pages) and, on FoundationDB, of the
   ``fdbserver`` processes on this machine, in MB;
9. **drop** of the index (and its copy) in this process once the server is stopped:
   ``drop_seconds``.

Loads, reads and the rest share the machine: the script says the load average as it goes.

As a command (``tools/bench scale``):

What it measures, in which order: ``bench/scale.py``.  For example::

    .venv/bin/python tools/bench scale --records 1000000 --store lmdb:/tmp/scale1m --json /tmp/scale1m.json
    eval "$(../shared/fdb/fdb-local env)"; ../shared/fdb/fdb-local start /tmp/fdb-scale ssd
    .venv/bin/python tools/bench scale --records 1000000 --store fdb:/tmp/fdb-scale/fdb.cluster --parts 16

JSON keys: records, build_seconds, build_records_per_s, bytes_per_record, server_rss_mb,
rank_p50_ms, rank_p99_ms, top10_p99_ms, around_p99_ms, add_p99_ms, fill_seconds, expire_seconds,
verify_seconds, dump_seconds, restore_seconds (and more: the build's keys per second, the
fdbserver processes' peak RSS, the load average...).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.index import Entry, IndexSettings
from fdb_leaderboard.index.directory import WindowUpdate
from fdb_leaderboard.index.dumpfile import read_dump, write_dump
from fdb_leaderboard.service.catalog import Catalog
from fdb_leaderboard.store import open_database, parse_url

from . import fdb_floor
from .cpu import fdbserver_pids
from .data import DATA_START, DAY, FILL_END, FILL_START, NOW, SPAN_DAYS, WEEKLY, bench_windows, draw_score
from .output import environment, write_json
from .processes import free_port
from .stores import fdb_range_bytes
from .timing import BatchClock, Span, log, time_each

INDEX = "scale"
COPY = "scale-copy"
FILL_TYPE = 9


def records(count: int, seed: int) -> Iterator[tuple[tuple[int], list[Entry]]]:
    """The N records, drawn one at a time (as ``bench.data.make_data`` draws its rows)."""
    rng = random.Random(seed)
    for pk in range(count):
        yield (pk,), [Entry(draw_score(rng), DATA_START + rng.randrange(SPAN_DAYS * DAY))]


def load_average() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def peak_rss_mb(pid: int, field: str = "VmHWM") -> float:
    """A process's peak resident set (``VmHWM``), or another size of its ``/proc/PID/status``
    (``RssAnon``: its own memory now, without the store's mapped file pages), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        out += [int(child) for child in (task / "children").read_text().split()]
    return out


class Serve:
    """``fdb-leaderboard serve`` on the store, in processes of its own."""

    def __init__(self, url: str, processes: int) -> None:
        self.url, self.processes = url, processes

    def __enter__(self) -> Serve:
        self.address = f"127.0.0.1:{free_port()}"
        command = [
            str(Path(sys.executable).parent / "fdb-leaderboard"),
            "serve",
            "--store",
            self.url,
            "--address",
            self.address,
            "--http-address",
            "off",
            "--processes",
            str(self.processes),
        ]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while True:
            try:
                with LeaderboardClient(self.address, timeout=5, retry=None) as lb:
                    lb.list_indexes()
                break
            except Exception:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(
                        f"the server did not start: {self.process.stderr.read().decode()[-2000:]}"
                    ) from None
                time.sleep(0.5)
        return self

    def pids(self) -> list[int]:
        return [self.process.pid, *children(self.process.pid)] if self.processes > 1 else [self.process.pid]

    def rss_mb(self) -> dict[str, float]:
        peaks = [peak_rss_mb(pid) for pid in self.pids()]
        served = peaks[1:] if len(peaks) > 1 else peaks
        # On the embedded store the peak counts the map's file pages the process touched (page
        # cache, shared and reclaimable); its anonymous memory is what it holds of its own.
        anon = [peak_rss_mb(pid, "RssAnon") for pid in self.pids()]
        anon = anon[1:] if len(anon) > 1 else anon
        return {"server_rss_mb": max(served), "server_rss_mb_total": sum(served), "server_anon_mb": max(anon)}

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def build(url: str, count: int, batch: int, seed: int) -> dict[str, Any]:
    db = open_database(url)
    try:
        catalog = Catalog(db)
        index, _ = catalog.create(INDEX, IndexSettings(aggregation="BEST", high_score_first=True))
        index.update_windows(WindowUpdate(high_score_first=True, windows=bench_windows()))
        log(f"build: {count:,} records, bulk_load in batches of {batch} (load average {load_average()})")
        clock = BatchClock("build", count)
        with Span(db.stats.snapshot) as took:
            written = index.bulk_load(records(count, seed), batch, clock.tick)
        seconds, cpu = took.seconds, took.cpu_seconds
        keys = took.counters["writes"]
        out: dict[str, Any] = {
            "records": written,
            "index_format": index.format,  # from 4 on, the windows are built from sorted data
            "build_seconds": round(seconds, 1),
            "build_records_per_s": round(written / seconds),
            "build_client_cpu_us_per_record": round(cpu * 1e6 / written, 1),
            "build_keys_written": keys,
            "build_keys_per_s": round(keys / seconds),
            "build_bytes_per_s": round(took.counters["bytes_written"] / seconds),
            "build_transactions": took.counters["transactions"],
        }
        scheme, _, _ = parse_url(url)
        if scheme == "lmdb":
            out["bytes_per_record"] = round(db.disk_usage() / written, 1)  # type: ignore[attr-defined]
            out["store_bytes"] = db.disk_usage()  # type: ignore[attr-defined]
        else:
            size = fdb_range_bytes(db, index.prefix, index.prefix + b"\xff")
            out["bytes_per_record"] = round(size / written, 1)
            out["store_bytes"] = size
        log(
            f"  built in {seconds:,.0f} s: {out['build_records_per_s']:,} records/s, {out['build_keys_per_s']:,} keys/s"
        )
        return out
    finally:
        db.close()


def bare(url: str, figures: dict[str, Any], most: int, seed: int) -> dict[str, Any]:
    """The bare binding writing as many keys as the build wrote (at most ``most``), of the same
    mean size, as a bulk load should (``bench.fdb_floor.bulk_write``): the build's keys per
    second against it."""
    keys = figures["build_keys_written"]
    size = figures["build_bytes_per_s"] / figures["build_keys_per_s"]
    log(f"the bare binding writing {min(keys, most):,} keys of {size:.0f} bytes (load average {load_average()})")
    found = fdb_floor.bulk_write(url, min(keys, most), max(1, round(size) - 8), 8, seed)
    return {
        "bare_keys": found["keys"],
        "bare_keys_per_s": round(found["keys_per_s"]),
        "build_vs_bare": round(figures["build_keys_per_s"] / found["keys_per_s"], 3),
    }


def reads(lb: LeaderboardClient, count: int, ops: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed + 1)
    out: dict[str, Any] = {}

    def timed(name: str, call: Any, items: list[Any]) -> None:
        sample, _ = time_each(call, items)
        out[f"{name}_p50_ms"] = round(sample.percentile_us(50) / 1000, 3)
        out[f"{name}_p99_ms"] = round(sample.percentile_us(99) / 1000, 3)
        log(f"  {name}: p50 {out[f'{name}_p50_ms']} ms, p99 {out[f'{name}_p99_ms']} ms")

    log(f"reads through gRPC, {ops} calls each (load average {load_average()})")
    pks = [rng.randrange(count) for _ in range(ops)]
    timed("rank", lambda pk: lb.rank(INDEX, pk), pks)
    timed("top10", lambda _: lb.top(INDEX, 10, WEEKLY, NOW), pks)
    timed("around", lambda pk: lb.around(INDEX, pk, 5, 5), pks)
    writes = [(rng.randrange(count), draw_score(rng), NOW + i) for i in range(ops)]
    timed("add", lambda w: lb.add_score(INDEX, w[0], w[1], w[2]), writes)
    return out


def fill(lb: LeaderboardClient) -> dict[str, Any]:
    log(f"fill: a new window over every record (load average {load_average()})")
    with Span() as took:
        lb.update_windows(INDEX, high_score_first=True, windows=[(FILL_TYPE, FILL_START, FILL_END)])
        while any(w.filling for w in lb.list_windows(INDEX).windows):
            time.sleep(1)
    seconds = took.seconds
    log(f"  filled in {seconds:,.0f} s; it holds {lb.count(INDEX, FILL_TYPE, NOW):,} records")
    return {"fill_seconds": round(seconds, 1), "fill_records": lb.count(INDEX, FILL_TYPE, NOW)}


def verify(lb: LeaderboardClient, parts: int) -> dict[str, Any]:
    log(f"verify in {parts} parts at once (load average {load_average()})")
    with Span() as took:
        report = lb.verify_report(INDEX, timeout=3600, parts=parts)
    seconds = took.seconds
    log(f"  {seconds:,.0f} s: {report.records:,} records, {report.entries:,} entries, {len(report.problems)} problems")
    return {
        "verify_seconds": round(seconds, 1),
        "verify_parts": parts,
        "verify_problems": len(report.problems),
        "verify_entries": report.entries,
    }


def dump_and_restore(lb: LeaderboardClient, directory: str) -> dict[str, Any]:
    path = os.path.join(directory, "scale.dump")
    log(f"dump to {path} (load average {load_average()})")
    with Span() as took:
        write_dump(lb.dump(INDEX, timeout=24 * 3600), path)
    dumped = took.seconds
    size = os.path.getsize(path)
    log(f"  {dumped:,.0f} s, {size:,} bytes; restore as {COPY!r}")
    with Span() as took:
        for _ in lb.restore(read_dump(path), COPY, timeout=24 * 3600):
            pass
    restored = took.seconds
    same = lb.count(COPY) == lb.count(INDEX)
    log(f"  restored in {restored:,.0f} s (same count: {same}); the copy is dropped at the end")
    os.remove(path)
    return {
        "dump_seconds": round(dumped, 1),
        "dump_bytes": size,
        "restore_seconds": round(restored, 1),
        "restored_same_count": same,
    }


def expire(lb: LeaderboardClient) -> dict[str, Any]:
    log(f"expire the new window and the calendar windows before its end (load average {load_average()})")
    with Span() as took:
        gone = lb.expire(INDEX, FILL_END)
    seconds = took.seconds
    log(f"  {len(gone)} windows expired in {seconds:,.1f} s")
    return {"expire_seconds": round(seconds, 1), "expired_windows": len(gone)}


def drop(url: str, names: list[str]) -> dict[str, Any]:
    """Drop the indexes ``names`` that exist, in this process: on the embedded store a drop clears
    key by key in bounded transactions, which for millions of records outlasts a served call's
    deadline (DropIndex frees the name at once and clears the rest in the same call)."""
    db = open_database(url)
    try:
        catalog = Catalog(db)
        present = [name for name in names if name in dict(catalog.list())]
        with Span() as took:
            for name in present:
                catalog.drop(name)
        seconds = took.seconds
        if present:
            log(f"dropped {', '.join(present)} in {seconds:,.1f} s")
        return {"drop_seconds": round(seconds, 1)} if present else {}
    finally:
        db.close()


def run(args: Any) -> dict[str, Any]:
    url = args.store
    scheme, _, _ = parse_url(url)
    figures: dict[str, Any] = {"store": url, "environment": environment(), "load_average_start": load_average()}
    db = open_database(url)
    try:
        if INDEX in dict(Catalog(db).list()) or COPY in dict(Catalog(db).list()):
            raise SystemExit(f"the store already holds an index {INDEX!r} or {COPY!r}: drop it or use another store")
        fdb_pids = fdbserver_pids(db) if scheme == "fdb" else []
    finally:
        db.close()
    figures.update(build(url, args.records, args.batch, args.seed))
    if scheme == "fdb" and args.bare_keys:
        figures.update(bare(url, figures, args.bare_keys, args.seed))
    directory = args.dir or tempfile.mkdtemp(prefix="bench-scale-")
    try:
        with Serve(url, args.processes) as server, LeaderboardClient(server.address, timeout=600) as lb:
            figures.update(reads(lb, args.records, args.ops, args.seed))
            figures.update(fill(lb))
            figures.update(verify(lb, args.parts))
            if not args.no_dump:
                figures.update(dump_and_restore(lb, directory))
            figures.update(expire(lb))
            figures.update(server.rss_mb())
            if fdb_pids:
                figures["fdbserver_rss_mb"] = round(sum(peak_rss_mb(pid) for pid in fdb_pids), 1)
    finally:
        if not args.dir:
            shutil.rmtree(directory, ignore_errors=True)
    figures.update(drop(url, [] if args.keep else [INDEX, COPY]))
    figures["load_average_end"] = load_average()
    return figures


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Build, serve, verify and move a board of N records.")
    parser.add_argument("--records", type=int, default=1_000_000, help="records (default: %(default)s)")
    parser.add_argument("--store", required=True, help="the store URL (its index 'scale' is dropped afterwards)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON to PATH")
    parser.add_argument(
        "--batch",
        type=int,
        help="records per load transaction (default: 5000 on the embedded store, 500 on FoundationDB)",
    )
    parser.add_argument("--ops", type=int, default=2000, help="calls per read and write kind (default: %(default)s)")
    parser.add_argument("--processes", type=int, default=2, help="server processes (default: %(default)s)")
    parser.add_argument("--parts", type=int, default=8, help="verify's pieces run at once (default: %(default)s)")
    parser.add_argument("--dir", help="where the dump file goes (default: a temporary directory)")
    parser.add_argument("--no-dump", action="store_true", help="skip the dump and restore")
    parser.add_argument(
        "--bare-keys",
        type=int,
        default=20_000_000,
        help="FoundationDB: the bare binding writes as many keys as the build, at most this many (0: not; "
        "default: %(default)s)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the index afterwards")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.batch is None:
        args.batch = 500 if args.store.startswith("fdb:") else 5000
    if args.records < 1000 or args.batch < 1 or args.ops < 1 or args.processes < 1 or args.parts < 1:
        parser.error("--records must be at least 1000; --batch, --ops, --processes and --parts positive")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    figures = run(args)
    print(json.dumps({k: v for k, v in figures.items() if k != "environment"}, indent=1))
    if args.json:
        write_json(args.json, figures)
    return 0
