#!/usr/bin/env python3
"""``serve --processes N``: throughput of 1 against N server processes, 8 clients, side by side.

For each ``--store`` URL it starts ``fdb-leaderboard serve --processes P`` for each ``--processes``
value in turn (a fresh index per store, loaded with ``--records`` records in four windows), then
runs ``--clients`` client processes, each with its own connection, for ``--seconds`` of one
workload: ``rank`` (a random record's all-time rank), ``submit`` (a score for a random record)
or ``mixed`` (9 ranks per submission).  It prints calls per second and p50/p99 latency.  The
configurations take turns ``--rounds`` times, so a noisy machine affects them alike.

    tools/bench processes --store lmdb:/tmp/bp?durable=false --store fdb:/tmp/fdb1/fdb.cluster \\
        --processes 1 --processes 2 --clients 8 --seconds 10
"""

from __future__ import annotations

import multiprocessing
import random
import select
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

from . import options
from .output import show
from .timing import merge, time_until

ROOT = Path(__file__).resolve().parents[2]

import grpc  # noqa: E402

from fdb_leaderboard.client import LeaderboardClient  # noqa: E402
from fdb_leaderboard.proto import service_pb2_grpc as pb_grpc  # noqa: E402

NOW = 1_790_000_000
DAY = 86_400


def free_address() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


def connect(address: str) -> LeaderboardClient:
    """A client with its own connection (so the kernel can hand it to any worker)."""
    client = LeaderboardClient(address)
    client.channel.close()
    client.channel = grpc.insecure_channel(address, options=[("grpc.use_local_subchannel_pool", 1)])
    client.stub = pb_grpc.LeaderboardStub(client.channel)
    return client


def start_server(store: str, processes: int) -> tuple[subprocess.Popen, str]:
    address = free_address()
    command = [sys.executable, "-c", "from fdb_leaderboard.cli import main; main()", "serve"]
    command += ["--store", store, "--address", address, "--processes", str(processes)]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT)
    readable, _, _ = select.select([child.stdout], [], [], 120)
    if not readable or "serving on" not in child.stdout.readline():  # type: ignore[union-attr]
        child.kill()
        raise SystemExit(f"the server on {store} did not start")
    return child, address


def load(address: str, name: str, records: int) -> None:
    with connect(address) as client:
        client.create_index(name, high_score_first=True)
        client.update_windows(
            name, specs=[(1, NOW - NOW % DAY, DAY, DAY, 1), (2, NOW - NOW % DAY, 7 * DAY, 7 * DAY, 1)]
        )
        rng = random.Random(1)
        client.bulk_load(name, (((f"p{i}",), [(rng.randrange(1_000_000), NOW)]) for i in range(records)))


def client_loop(address: str, name: str, records: int, workload: str, seconds: float, seed: int, out) -> None:
    rng = random.Random(seed)
    with connect(address) as client:
        client.rank(name, ("p0",))  # connected before the clock starts

        def call(_: int) -> None:
            pk = (f"p{rng.randrange(records)}",)
            if workload == "submit" or (workload == "mixed" and rng.randrange(10) == 0):
                client.add_score(name, pk, rng.randrange(1_000_000), NOW)
            else:
                client.rank(name, pk)

        deadline = time.perf_counter() + seconds
        out.put(time_until(call, lambda: time.perf_counter() >= deadline))


def run(address: str, name: str, records: int, workload: str, clients: int, seconds: float) -> dict[str, float]:
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    workers = [
        context.Process(target=client_loop, args=(address, name, records, workload, seconds, seed, out))
        for seed in range(clients)
    ]
    for worker in workers:
        worker.start()
    pooled = merge([out.get() for _ in workers])
    for worker in workers:
        worker.join()
    return {
        "per_second": pooled.ops / seconds,
        "p50_ms": pooled.percentile_us(50) / 1000,
        "p99_ms": pooled.percentile_us(99) / 1000,
    }


def main() -> None:
    parser = options.parser(__doc__, whole=True)
    parser.add_argument("--store", action="append", required=True)
    parser.add_argument("--processes", action="append", type=int)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workload", choices=["rank", "submit", "mixed"], default="rank")
    options.add_output(parser)
    args = parser.parse_args()
    counts = args.processes or [1, 2]
    name = f"bench-{uuid.uuid4().hex[:8]}"
    loaded: set[str] = set()
    results: dict[tuple[str, int], list[dict[str, float]]] = {}
    for _ in range(args.rounds):
        for store in args.store:
            for processes in counts:
                child, address = start_server(store, processes)
                try:
                    if store not in loaded:
                        load(address, name, args.records)
                        loaded.add(store)
                    result = run(address, name, args.records, args.workload, args.clients, args.seconds)
                finally:
                    child.terminate()
                    child.wait(60)
                results.setdefault((store, processes), []).append(result)
                print(
                    f"{store:<40} processes {processes}: {result['per_second']:>8,.0f} calls/s "
                    f"p50 {result['p50_ms']:.2f} ms p99 {result['p99_ms']:.2f} ms",
                    flush=True,
                )
    print(f"\n{args.workload}, {args.clients} clients, {args.seconds:g} s per run, best of {args.rounds}:")
    rows = []
    for store in args.store:
        base = max(r["per_second"] for r in results[(store, counts[0])])
        for processes in counts:
            best = max(r["per_second"] for r in results[(store, processes)])
            rows.append([store, str(processes), f"{best:,.0f}", f"{best / base:.2f}x"])
    figures = {f"{store} {processes}": rounds for (store, processes), rounds in results.items()}
    show(["store", "processes", "calls/s", "vs the first"], rows, args.markdown, args.json, figures)


if __name__ == "__main__":
    main()
