#!/usr/bin/env python3
"""What grpcio itself costs a server per call: the thread-pool server against grpc.aio.

    .venv/bin/python tools/bench grpc-floor [--calls 6000] [--rounds 5] [--markdown] [--json PATH]

Each kind of server runs in a process of its own with one method that answers its request's
bytes (no protobuf, no handler work): grpcio's thread-pool server (what the service used before
its hardening), grpc.aio with a unary method, and grpc.aio with a stream-unary method that reads
one message (how the service receives a request under its receive timeout). One caller in this
process makes ``--calls`` sequential calls to each server in turn, round after round (the first
to go changing every round); the table
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
from concurrent import futures
from pathlib import Path

import grpc

from .options import add_output, parser
from .output import fmt_spread, show
from .timing import Sample, process_cpu, time_each, turns

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


def _measure(port: int, pid: int, calls: int) -> Sample:
    """``calls`` sequential calls timed; the sample's CPU is the server process's (every thread)."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = channel.unary_unary(METHOD)
        for _ in range(200):  # connection and warm-up, not counted
            call(b"x" * 32)
        before = process_cpu(pid)
        sample = time_each(lambda _: call(b"x" * 32), range(calls))[0]
        sample.cpu_seconds = process_cpu(pid) - before
    return sample


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--calls", type=int, default=6000, help="calls per server per round")
    options.add_argument("--rounds", type=int, default=5)
    options.add_argument("--serve", choices=KINDS, help=argparse.SUPPRESS)  # a server process
    add_output(options)
    args = options.parse_args()
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
    results: dict[str, list[Sample]] = {kind: [] for kind in KINDS}
    try:
        for round_number in range(args.rounds):
            for kind in turns(KINDS, round_number):
                process, port = servers[kind]
                results[kind].append(_measure(port, process.pid, args.calls))
    finally:
        for process, _ in servers.values():
            process.stdin.close()  # type: ignore[union-attr]
            process.wait(10)
    print(f"{args.rounds} rounds of {args.calls} calls, load average {os.getloadavg()[0]:.1f}")
    rows = []
    for kind, rounds in results.items():
        rows.append(
            [
                kind,
                fmt_spread([r.cpu_us_per_op / 1000 for r in rounds], 3),
                f"{statistics.median(r.percentile_us(50) / 1000 for r in rounds):.2f}",
                f"{statistics.median(r.percentile_us(99) / 1000 for r in rounds):.2f}",
            ]
        )
    figures = {
        kind: [r.to_json() | {"server_cpu_us_per_call": r.cpu_us_per_op} for r in rounds]
        for kind, rounds in results.items()
    }
    show(
        ["server", "server CPU ms/call (min-max)", "p50 ms", "p99 ms"],
        rows,
        args.markdown,
        args.json,
        {"config": vars(args), "rounds": figures},
    )


if __name__ == "__main__":
    main()
