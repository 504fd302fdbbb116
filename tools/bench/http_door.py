#!/usr/bin/env python3
"""The HTTP front end against gRPC on the same server, and what the metrics cost per call.

A server (gRPC and HTTP in one process, as ``fdb-leaderboard serve`` runs them) is started in
its own process over an embedded store (``durable=false``) holding ``--records`` records in
the all-time window.  Each of three reads and one write is called ``--calls`` times by one
caller, then by ``--threads`` callers (one channel or HTTP connection pool each), over:

- ``grpc``: the Python client;
- ``http rpc``: ``POST /v1/<Method>`` with the request message as JSON (httpx, keep-alive);
- ``http rest``: the resource-style routes (``GET .../top?n=10``, ``.../records/{pk}/rank``,
  ``.../around``, ``POST .../scores``).

Reported: p50 / p99 latency of the single caller and calls per second of the threads.  Then,
in this process, the cost the metrics add to each call: one call's counter and histogram
updates, and a store read through :class:`MeasuredDatabase` against the bare store's.

    .venv/bin/python tools/bench http --records 10000 --calls 2000 --threads 8
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import sys
import tempfile
import timeit
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any

import grpc
import httpx

from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.service.metrics import MeasuredDatabase, Metrics
from fdb_leaderboard.store import open_database

from .output import fmt_rate, fmt_us, table
from .timing import time_concurrent, time_each

T0 = 1_795_420_000


def _serve(store_url: str, conn: Connection) -> None:
    """Child process: the Server and its HTTP front end until told to stop."""
    from fdb_leaderboard.http import HttpServer
    from fdb_leaderboard.service import Server

    server = Server(store_url, "127.0.0.1:0").start()
    http = HttpServer(server, "127.0.0.1:0").start()
    conn.send((server.address, http.url))
    conn.recv()
    server.stop(grace=5)


def _calls(lb: LeaderboardClient, web: httpx.Client, records: int) -> dict[str, dict[str, Callable[[int], Any]]]:
    """For each operation and transport, a call taking a record number."""

    def post(method: str, body: dict[str, Any]) -> Any:
        response = web.post(f"/v1/{method}", json=body)
        response.raise_for_status()
        return response.json()

    def get(path: str, **params: Any) -> Any:
        response = web.get(path, params=params)
        response.raise_for_status()
        return response.json()

    def pk(i: int) -> list[dict[str, str]]:
        return [{"string": f"p{i % records}"}]

    window = {"type": 0}
    return {
        "top 10": {
            "grpc": lambda i: lb.top("b", 10),
            "http rpc": lambda i: post("Top", {"index": "b", "window": window, "n": 10}),
            "http rest": lambda i: get("/v1/indexes/b/windows/0/top", n=10),
        },
        "rank": {
            "grpc": lambda i: lb.rank("b", (f"p{i % records}",)),
            "http rpc": lambda i: post("GetRank", {"index": "b", "pk": pk(i), "window": window}),
            "http rest": lambda i: get(f"/v1/indexes/b/windows/0/records/p{i % records}/rank"),
        },
        "around (4+4)": {
            "grpc": lambda i: lb.around("b", (f"p{i % records}",), 4, 4),
            "http rpc": lambda i: post(
                "AroundMe", {"index": "b", "pk": pk(i), "window": window, "above": 4, "below": 4}
            ),
            "http rest": lambda i: get(f"/v1/indexes/b/windows/0/records/p{i % records}/around"),
        },
        "add score": {
            "grpc": lambda i: lb.add_score("b", (f"p{i % records}",), i, T0 + i),
            "http rpc": lambda i: post(
                "AddScore", {"index": "b", "pk": pk(i), "entry": {"score": {"int": i}, "timestamp": T0 + i}}
            ),
            "http rest": lambda i: web.post(
                "/v1/indexes/b/scores", json={"pk": f"p{i % records}", "score": i, "timestamp": T0 + i}
            ).raise_for_status(),
        },
    }


def metrics_cost(rounds: int) -> list[list[str]]:
    """µs the metrics add per call, measured in this process."""
    metrics = Metrics()
    observe = timeit.timeit(lambda: metrics.observe_call("grpc", "Top", grpc.StatusCode.OK, 0.001), number=rounds)
    with tempfile.TemporaryDirectory() as path:
        bare = open_database(f"lmdb:{path}?durable=false")
        bare.run(lambda tr: tr.set(b"k", b"v"))
        measured = MeasuredDatabase(bare, metrics)
        plain_read = min(timeit.repeat(lambda: bare.read(lambda tr: tr.get(b"k")), number=rounds, repeat=3))
        measured_read = min(timeit.repeat(lambda: measured.read(lambda tr: tr.get(b"k")), number=rounds, repeat=3))
        bare.close()
    us = 1e6 / rounds
    return [
        ["a call counted and timed (counter + histogram)", f"{observe * us:.2f}"],
        ["a store read, bare", f"{plain_read * us:.2f}"],
        ["a store read through MeasuredDatabase", f"{measured_read * us:.2f}"],
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=10_000, help="records in the index (default: %(default)s)")
    parser.add_argument("--calls", type=int, default=2_000, help="calls per row (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=8, help="concurrent callers (default: %(default)s)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-http-") as path:
        context = multiprocessing.get_context("spawn")
        conn, child = context.Pipe()
        process = context.Process(target=_serve, args=(f"lmdb:{path}?durable=false", child), daemon=True)
        process.start()
        address, url = conn.recv()
        try:
            with LeaderboardClient(address, timeout=60) as lb:
                lb.create_index("b", high_score_first=True)
                lb.update_windows("b", high_score_first=True)
                rng = random.Random(1)
                for start in range(0, args.records, 1000):
                    batch = [
                        ((f"p{i}",), [(rng.randrange(1_000_000), T0 - i)])
                        for i in range(start, min(start + 1000, args.records))
                    ]
                    lb.write_batch("b", batch)
                rows = []
                items = list(range(args.calls))
                clients = [
                    (LeaderboardClient(address, timeout=60), httpx.Client(base_url=url, timeout=60))
                    for _ in range(args.threads)
                ]
                with httpx.Client(base_url=url, timeout=60) as web:
                    single = _calls(lb, web, args.records)
                    per_thread = [_calls(c_lb, c_web, args.records) for c_lb, c_web in clients]
                    for operation, transports in single.items():
                        for transport, call in transports.items():
                            for i in range(50):  # warm up connections and caches
                                call(i)
                            alone, _ = time_each(call, items)
                            together, _ = time_concurrent([calls[operation][transport] for calls in per_thread], items)
                            rows.append(
                                [
                                    f"{operation}, {transport}",
                                    fmt_us(alone.percentile_us(50)),
                                    fmt_us(alone.percentile_us(99)),
                                    fmt_rate(together.rate),
                                ]
                            )
                for c_lb, c_web in clients:
                    c_lb.close()
                    c_web.close()
        finally:
            conn.send("stop")
            process.join(30)
    print(f"{args.records} records, {args.calls} calls per row, {args.threads} threads for calls/s")
    print(table(["operation, transport", "p50 µs (1 caller)", "p99 µs", f"calls/s ({args.threads} callers)"], rows))
    print()
    print(table(["metrics cost", "µs per call"], metrics_cost(200_000)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
