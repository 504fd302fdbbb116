#!/usr/bin/env python3
"""The floors under ``tools/bench.py``'s figures: what this machine charges before our code runs.

Two measurements that involve none of fdb-leaderboard's own work, so the benchmark's figures
can be read against them:

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
Redis's ``appendfsync always`` does for each write.  A durable LMDB commit writes every page
it changed, wherever the B-tree keeps it, then syncs: ``tools/bench.py`` notes how many pages
its durable submissions wrote per commit, and this table prices such a commit on this disk.

    python tools/bench_floor.py [--calls 3000] [--threads 8] [--dir DIR] [--json PATH] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import grpc
from bench import ServerProcess, environment, markdown, time_concurrent
from bench_rankedset import Sample, table, time_each
from grpc_health.v1 import health_pb2, health_pb2_grpc

PAGE = 4096
LOG_RECORD = 200
WARM_UP_CALLS = 200


# -- gRPC ---------------------------------------------------------------------------------------


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (Linux ``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # After the command name: state is field 3, utime field 14 and stime field 15 (1-based).
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _health_check(channel: grpc.Channel) -> Callable[[object], object]:
    stub = health_pb2_grpc.HealthStub(channel)
    request = health_pb2.HealthCheckRequest(service="")

    def call(_: object) -> object:
        return stub.Check(request)

    return call


def _timed(server_pid: int, run: Callable[[], Sample]) -> dict[str, Any]:
    client_cpu, server_cpu = time.process_time(), process_cpu_seconds(server_pid)
    sample = run()
    client_cpu, server_cpu = time.process_time() - client_cpu, process_cpu_seconds(server_pid) - server_cpu
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
        ServerProcess(f"lmdb:{store}?durable=true") as server,
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
    return out


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="What a do-nothing gRPC call and a durable page write cost here.")
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
        "--pages", default="1,8,30,114,500", help="comma-separated page counts k (default: %(default)s)"
    )
    parser.add_argument("--no-grpc", dest="grpc", action="store_false", help="skip the gRPC floor")
    parser.add_argument("--no-disk", dest="disk", action="store_false", help="skip the durable-write floor")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default: %(default)s)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON to PATH")
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables")
    args = parser.parse_args(argv)
    try:
        args.pages = [int(k) for k in args.pages.split(",")]
    except ValueError:
        parser.error(f"--pages must be comma-separated integers, not {args.pages!r}")
    for name in ("calls", "threads", "file_mib", "rounds"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if any(k < 1 for k in args.pages):
        parser.error("--pages counts must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    fig: dict[str, Any] = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "environment": environment(),
        "config": {"calls": args.calls, "threads": args.threads, "file_mib": args.file_mib, "rounds": args.rounds},
    }
    if args.grpc:
        fig["grpc"] = grpc_floor(args.calls, args.threads)
    if args.disk:
        fig["disk"] = disk_floor(args.dir, args.file_mib, args.rounds, args.pages, args.seed)
    for caption, headers, rows in tables(fig):
        print(f"\n{caption}:\n")
        print(markdown(headers, rows) if args.markdown else table(headers, rows))
    if args.json:
        Path(args.json).write_text(json.dumps(fig, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
