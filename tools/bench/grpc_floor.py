#!/usr/bin/env python3
"""What grpcio itself costs a server per call: the thread-pool server against grpc.aio.

    .venv/bin/python tools/bench grpc-floor [--calls 6000] [--rounds 5]

Each kind of server runs in a process of its own with one method that answers its request's
bytes (no protobuf, no handler work): grpcio's thread-pool server (what the service used before
its hardening), grpc.aio with a unary method, and grpc.aio with a stream-unary method that reads
one message (how the service receives a request under its receive timeout). One caller in this
process makes ``--calls`` sequential calls to each server in turn, round after round; the table
gives per call the server process's CPU (every thread, from /proc) and the caller's p50/p99.
It is the floor under every figure of ``tools/bench served``: what no change to our own
code can take away.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from concurrent import futures
from pathlib import Path

import grpc

from .timing import percentile

KINDS = ("threads", "aio-unary", "aio-stream")
METHOD = "/floor.Echo/Echo"


def _serve(kind: str) -> None:
    """Run one server of ``kind`` on a free port; print the port; serve until stdin closes."""

    def echo(request: bytes, context: object) -> bytes:
        return request

    if kind == "threads":
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        handler = grpc.unary_unary_rpc_method_handler(echo)
        server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler("floor.Echo", {"Echo": handler})])
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        print(port, flush=True)
        sys.stdin.read()
        server.stop(0)
        return

    async def main() -> None:
        server = grpc.aio.server()
        if kind == "aio-unary":

            async def unary(request: bytes, context: object) -> bytes:
                return request

            handler = grpc.unary_unary_rpc_method_handler(unary)
        else:

            async def first_message(requests: object, context: grpc.aio.ServicerContext) -> bytes:
                return await context.read()

            handler = grpc.stream_unary_rpc_method_handler(first_message)
        server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler("floor.Echo", {"Echo": handler})])
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        print(port, flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        await server.stop(0)

    asyncio.run(main())


def _cpu_seconds(pid: int) -> float:
    """User and system CPU of process ``pid``, every thread."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _measure(port: int, pid: int, calls: int) -> tuple[float, float, float]:
    """Server CPU ms per call, p50 ms, p99 ms of ``calls`` sequential calls."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = channel.unary_unary(METHOD)
        for _ in range(200):  # connection and warm-up, not counted
            call(b"x" * 32)
        latencies = []
        before = _cpu_seconds(pid)
        for _ in range(calls):
            started = time.perf_counter()
            call(b"x" * 32)
            latencies.append(time.perf_counter() - started)
        cpu = _cpu_seconds(pid) - before
    latencies.sort()
    return cpu / calls * 1e3, percentile(latencies, 0.5) * 1e3, percentile(latencies, 0.99) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=6000, help="calls per server per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--serve", choices=KINDS, help=argparse.SUPPRESS)  # a server process
    args = parser.parse_args()
    if args.serve:
        _serve(args.serve)
        return
    servers = {}
    for kind in KINDS:
        process = subprocess.Popen(
            [sys.executable, "-m", "bench.grpc_floor", "--serve", kind],
            cwd=Path(__file__).resolve().parent.parent,  # tools/, where ``bench`` is the package
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        servers[kind] = (process, int(process.stdout.readline()))  # type: ignore[union-attr]
    results: dict[str, list[tuple[float, float, float]]] = {kind: [] for kind in KINDS}
    try:
        for _ in range(args.rounds):
            for kind, (process, port) in servers.items():
                results[kind].append(_measure(port, process.pid, args.calls))
    finally:
        for process, _ in servers.values():
            process.stdin.close()  # type: ignore[union-attr]
            process.wait(10)
    print(f"{args.rounds} rounds of {args.calls} calls, load average {os.getloadavg()[0]:.1f}")
    print(f"{'server':<12} {'server CPU ms/call (min-max)':>30} {'p50 ms':>8} {'p99 ms':>8}")
    for kind, rows in results.items():
        cpu = [row[0] for row in rows]
        print(
            f"{kind:<12} {statistics.median(cpu):>12.3f} ({min(cpu):.3f}-{max(cpu):.3f}) "
            f"{statistics.median(r[1] for r in rows):>8.2f} {statistics.median(r[2] for r in rows):>8.2f}"
        )


if __name__ == "__main__":
    main()
