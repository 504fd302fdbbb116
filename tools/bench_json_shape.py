#!/usr/bin/env python3
"""The HTTP door's JSON, one tree against another: the same calls to two servers, one running
each source tree, in alternating rounds (which tree goes first alternates too).

Each server (gRPC and HTTP in one process, over an embedded store with ``durable=false``) runs
in a child process with ``PYTHONPATH`` set to its tree, and holds ``--records`` records in the
all-time window.  Per round and tree, one caller (httpx, keep-alive) makes ``--calls`` calls of
each kind:

- ``rpc Top``: ``POST /v1/Top`` with ``n=10`` (an answer of ten entries);
- ``rpc GetRankAndEntry``: ``POST /v1/GetRankAndEntry`` (one entry and its window);
- ``rpc AddScore``: ``POST /v1/AddScore`` in protobuf's typed JSON, which both trees read;
- ``rest top``: ``GET /v1/indexes/b/windows/0/top?n=10``.

Reported per kind and tree: p50 and p99 latency over every round, and the server's CPU per call
(its user + system time over the round, from ``/proc``); then the ratio of the second tree to
the first, round by round (median, min, max).

    .venv/bin/python tools/bench_json_shape.py /work/main . --records 5000 --calls 300 --rounds 10
"""

from __future__ import annotations

import argparse
import os
import pathlib
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import httpx

SERVE = """
import sys
from fdb_leaderboard.http import HttpServer
from fdb_leaderboard.service import Server
server = Server(sys.argv[1], "127.0.0.1:0").start()
http = HttpServer(server, "127.0.0.1:0").start()
print(http.url, flush=True)
sys.stdin.read()
server.stop(grace=2)
"""
T0 = 1_795_420_000
TICKS = os.sysconf("SC_CLK_TCK")


class Served:
    """A server of one tree in a child process."""

    def __init__(self, tree: pathlib.Path, store: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
        self.process = subprocess.Popen(
            [sys.executable, "-c", SERVE, store], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True
        )
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()
        self.web = httpx.Client(base_url=self.url, timeout=30, headers={"content-type": "application/json"})

    def cpu_seconds(self) -> float:
        fields = pathlib.Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime

    def close(self) -> None:
        self.web.close()
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


def post(web: httpx.Client, method: str, body: dict[str, Any]) -> Any:
    response = web.post(f"/v1/{method}", json=body)
    if response.status_code != 200:
        raise SystemExit(f"{method}: {response.status_code} {response.text}")
    return response.json()


def seed(web: httpx.Client, records: int) -> None:
    post(web, "CreateIndex", {"name": "b", "options": {"high_score_first": True}})
    post(web, "UpdateWindows", {"index": "b", "high_score_first": True, "all_time": True})
    batch = []
    for i in range(records):
        entry = {"score": {"int": (i * 7919) % 100_000}, "timestamp": T0 + i}
        batch.append({"pk": [{"string": f"p{i:06d}"}], "entries": [entry]})
        if len(batch) == 500:
            post(web, "WriteBatch", {"index": "b", "replace": True, "records": batch})
            batch = []
    if batch:
        post(web, "WriteBatch", {"index": "b", "replace": True, "records": batch})


def kinds(records: int) -> dict[str, Callable[[httpx.Client, int], Any]]:
    def pk(i: int) -> list[dict[str, str]]:
        return [{"string": f"p{(i * 31) % records:06d}"}]

    return {
        "rpc Top": lambda web, i: post(web, "Top", {"index": "b", "window": {"type": 0}, "n": 10}),
        "rpc GetRankAndEntry": lambda web, i: post(
            web, "GetRankAndEntry", {"index": "b", "pk": pk(i), "window": {"type": 0}}
        ),
        "rpc AddScore": lambda web, i: post(
            web, "AddScore", {"index": "b", "pk": pk(i), "entry": {"score": {"int": i}, "timestamp": T0 + i}}
        ),
        "rest top": lambda web, i: web.get("/v1/indexes/b/windows/0/top", params={"n": 10}).json(),
    }


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trees", nargs=2, type=pathlib.Path, help="the first tree (the base) and the second")
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument("--calls", type=int, default=300, help="calls of each kind per round and tree")
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        served = [Served(tree, f"lmdb:{scratch}/{n}?durable=false") for n, tree in enumerate(args.trees)]
        try:
            for server in served:
                seed(server.web, args.records)
            work = kinds(args.records)
            latencies = {(k, t): [] for k in work for t in range(2)}  # type: dict[tuple[str, int], list[float]]
            cpu = {(k, t): [] for k in work for t in range(2)}  # type: dict[tuple[str, int], list[float]]
            for round_number in range(args.rounds):
                order = (0, 1) if round_number % 2 == 0 else (1, 0)
                for kind, call in work.items():
                    for tree in order:
                        server = served[tree]
                        for i in range(20):  # warm the connection and the code path
                            call(server.web, i)
                        before = server.cpu_seconds()
                        for _ in range(args.calls):
                            started = time.perf_counter()
                            call(server.web, random.randrange(1_000_000))
                            latencies[kind, tree].append(time.perf_counter() - started)
                        cpu[kind, tree].append((server.cpu_seconds() - before) / args.calls)
                print(f"round {round_number + 1}/{args.rounds} done", file=sys.stderr, flush=True)
        finally:
            for server in served:
                server.close()
    names = [str(tree) for tree in args.trees]
    print(f"{args.records} records, {args.calls} calls of each kind per round and tree, {args.rounds} rounds")
    print(f"{'kind':<20} {'tree':<14} {'p50 ms':>8} {'p99 ms':>8} {'CPU us/call':>12}")
    for kind in work:
        for tree in range(2):
            lat = latencies[kind, tree]
            print(
                f"{kind:<20} {names[tree][-14:]:<14} {percentile(lat, 0.5) * 1e3:8.3f} "
                f"{percentile(lat, 0.99) * 1e3:8.3f} {statistics.median(cpu[kind, tree]) * 1e6:12.0f}"
            )
        per_round = [
            statistics.median(latencies[kind, 1][r * args.calls : (r + 1) * args.calls])
            / statistics.median(latencies[kind, 0][r * args.calls : (r + 1) * args.calls])
            for r in range(args.rounds)
        ]
        cpu_ratio = [b / a for a, b in zip(cpu[kind, 0], cpu[kind, 1], strict=True) if a > 0]
        print(
            f"{'':<20} second/first p50 per round: median {statistics.median(per_round):.2f} "
            f"({min(per_round):.2f}-{max(per_round):.2f}); CPU per call: median "
            f"{statistics.median(cpu_ratio) if cpu_ratio else float('nan'):.2f}"
        )


if __name__ == "__main__":
    main()
