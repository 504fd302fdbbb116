"""Seed 003's day replayed against a server (``tools/bench season``).

A real-time gaming leaderboard: players play about 10 games a day each, every game submits a score
(points, summed: aggregation SUM) to one index holding today's board, this month's and the
all-time one, and players open views of the boards: the top 10, their own rank, and the 4 players
above and below them.  Activity is not uniform: each player's share of the games is drawn from a
Pareto distribution (``--pareto``, shape 1.16: about 80% of the games come from 20% of the
players), so a few players submit often and their records are hot.

The server is ``fdb-leaderboard serve`` of this checkout on ``--store`` (``lmdb:DIR``, or
``fdb:CLUSTER_FILE`` for a cluster of any size: every ``fdbserver`` process started with that
cluster file is counted), started here (``--serve-args`` adds options, e.g. ``--processes 2``);
or, with ``--server ADDRESS --server-pid PID``, one already running.

1. **Load**: ``--players`` records, each with one score of the day, in ``WriteBatch`` calls of 250.
2. **The day**: ``--callers`` concurrent callers (threads, a channel each) for ``--seconds``:
   each call is a submission with probability 1 / (1 + ``--views``), else a view (top 10 of one of
   the three boards, a player's rank in one, or the 4 above and below them: one third each).  A
   submission's time moves through the day as the run goes (the run's seconds spread over the
   day's), its player drawn by activity; a view's player likewise (who plays looks).  Reads ask
   for ``--max-staleness`` ms (0: exact).

Reported: the calls per second reached, per kind p50 and p99 latency, and the CPU per call of
the serve process tree and of the ``fdbserver`` processes (``/proc``, over the whole mix); then
the cores that seed 003's peak needs at these costs: 2,500 submissions/s and ``--views`` views
per submission, ``(serve + fdbserver CPU per call) x 2,500 x (1 + views)``, and the same with the
service processes kept at 75% busy.

As a command (``tools/bench season``):
daily, monthly and all-time board and opening views of them (top 10, their rank, the 4 above and
below them); the rate reached, p50/p99 per kind, CPU per call of the serve process tree and of
``fdbserver``, and the cores seed 003's peak (2,500 submissions/s and the views) needs.  What each
figure is: the docstring of ``bench/season.py``.  For example:

    .venv/bin/python tools/bench season --store fdb:CLUSTER_FILE [--players 20000] [--callers 32]
        [--seconds 30] [--views 3] [--max-staleness 0] [--serve-args '--processes 2']
        [--source DIR] [--markdown] [--json PATH]

``--source DIR`` serves another checkout (one with its own ``.venv``, as ``tools/bench served`` makes them).
"""

from __future__ import annotations

import argparse
import random
import shlex
import sys
import threading
import time
from bisect import bisect
from collections.abc import Callable, Sequence
from itertools import accumulate
from pathlib import Path
from typing import Any

import grpc

from fdb_leaderboard.proto import service_pb2 as pb

from . import options
from .output import ROOT, emit, environment, markdown, table
from .served import SERVICE, Served, fdbserver_pids, spent
from .timing import Sample, log, process_cpu

INDEX = "season"
DAY = 86_400
TODAY = 1_900_000_000 // DAY * DAY
MONTH_START = TODAY - 20 * DAY  # the month the day falls in (30 days from here)
KINDS = ("submit", "top10", "rank", "around")
PEAK_SUBMISSIONS = 2_500
BUSY = 0.75  # service processes kept at most this busy
LOAD_BATCH = 250


class Activity:
    """Players drawn by how much they play: each one's weight Pareto-distributed."""

    def __init__(self, players: int, shape: float, seed: int) -> None:
        rng = random.Random(seed)
        self.cumulative = list(accumulate(rng.paretovariate(shape) for _ in range(players)))

    def draw(self, rng: random.Random) -> int:
        return bisect(self.cumulative, rng.random() * self.cumulative[-1])


def pk(player: int) -> list[pb.Item]:
    return [pb.Item(string=f"player-{player:08d}")]


def board(rng: random.Random) -> pb.WindowSelector:
    """Today's board, this month's or the all-time one."""
    kind = rng.randrange(3)
    return pb.WindowSelector(type=kind, timestamp=TODAY) if kind else pb.WindowSelector()


def setup(method: Callable[[str], Callable[..., bytes]], players: int, index: str) -> None:
    """The index (SUM; the all-time, today's and this month's windows) and one score per player."""
    method(f"{SERVICE}/CreateIndex")(
        pb.CreateIndexRequest(name=index, options=pb.IndexOptions(aggregation="SUM")).SerializeToString()
    )
    windows = [
        pb.ExplicitWindow(type=1, start=TODAY, end=TODAY + DAY),
        pb.ExplicitWindow(type=2, start=MONTH_START, end=MONTH_START + 30 * DAY),
    ]
    method(f"{SERVICE}/UpdateWindows")(
        pb.UpdateWindowsRequest(index=index, all_time=True, windows=windows).SerializeToString()
    )
    rng = random.Random(0)
    batch = method(f"{SERVICE}/WriteBatch")
    for start in range(0, players, LOAD_BATCH):
        records = [
            pb.RecordEntries(
                pk=pk(player),
                entries=[pb.Entry(score=pb.Score(int=rng.randrange(100)), timestamp=TODAY + rng.randrange(60))],
            )
            for player in range(start, min(players, start + LOAD_BATCH))
        ]
        batch(pb.WriteBatchRequest(index=index, records=records).SerializeToString(), timeout=600)


class Day:
    """The callers of the day and what they measured."""

    def __init__(self, args: argparse.Namespace, address: str, index: str) -> None:
        self.args = args
        self.address = address
        self.index = index
        self.activity = Activity(args.players, args.pareto, args.seed)
        self.latencies: dict[str, list[int]] = {kind: [] for kind in KINDS}
        self.failures: dict[str, int] = dict.fromkeys(KINDS, 0)
        self._lock = threading.Lock()
        self.started = 0.0

    def caller(self, number: int, stop: float) -> None:
        args = self.args
        rng = random.Random(f"{args.seed}/{number}")
        channel = grpc.insecure_channel(self.address)
        methods = {
            "submit": channel.unary_unary(f"{SERVICE}/AddScore"),
            "top10": channel.unary_unary(f"{SERVICE}/Top"),
            "rank": channel.unary_unary(f"{SERVICE}/GetRank"),
            "around": channel.unary_unary(f"{SERVICE}/AroundMe"),
        }
        metadata = (("max-staleness-ms", str(args.max_staleness)),) if args.max_staleness else None
        mine: dict[str, list[int]] = {kind: [] for kind in KINDS}
        failed = dict.fromkeys(KINDS, 0)
        clock = time.perf_counter_ns
        try:
            while time.monotonic() < stop:
                player = self.activity.draw(rng)
                if rng.random() * (1 + args.views) < 1:
                    kind = "submit"
                    through_day = min(DAY - 1, int((time.monotonic() - self.started) / args.seconds * DAY))
                    entry = pb.Entry(score=pb.Score(int=rng.randrange(1, 100)), timestamp=TODAY + through_day)
                    request = pb.AddScoreRequest(index=self.index, pk=pk(player), entry=entry)
                    sent = {"metadata": None}
                else:
                    kind = KINDS[1 + rng.randrange(3)]
                    if kind == "top10":
                        request = pb.TopRequest(index=self.index, n=10, window=board(rng))
                    elif kind == "rank":
                        request = pb.RankRequest(index=self.index, pk=pk(player), window=board(rng))
                    else:
                        request = pb.AroundMeRequest(
                            index=self.index, pk=pk(player), window=board(rng), above=4, below=4
                        )
                    sent = {"metadata": metadata}
                began = clock()
                try:
                    methods[kind](request.SerializeToString(), timeout=60, **sent)
                except grpc.RpcError:
                    failed[kind] += 1
                    continue
                mine[kind].append(clock() - began)
        finally:
            channel.close()
            with self._lock:
                for kind in KINDS:
                    self.latencies[kind] += mine[kind]
                    self.failures[kind] += failed[kind]

    def run(self) -> float:
        self.started = time.monotonic()
        stop = self.started + self.args.seconds
        threads = [threading.Thread(target=self.caller, args=(n, stop)) for n in range(self.args.callers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return time.monotonic() - self.started


def run(args: argparse.Namespace) -> dict[str, Any]:
    served = None
    if args.server is None:  # serve on --store (None: a fresh durable embedded store, removed after)
        served = Served("season", args.source or ROOT, shlex.split(args.serve_args), args.store)
        address, pid, index = served.address, served.process.pid, served.index
    else:
        address, pid, index = args.server, args.server_pid, INDEX
    cluster = fdbserver_pids(args.store) if args.store and args.store.startswith("fdb:") else []
    try:
        channel = grpc.insecure_channel(address)
        log(f"loading {args.players:,} players into {address}")
        setup(channel.unary_unary, args.players, index)
        channel.close()
        day = Day(args, address, index)
        log(f"the day: {args.callers} callers for {args.seconds:g} s")
        before = spent(pid) if pid else None
        cluster_before = sum(process_cpu(p) for p in cluster)
        seconds = day.run()
        used = (spent(pid) - before).cpu if before is not None else float("nan")
        cluster_used = sum(process_cpu(p) for p in cluster) - cluster_before
    finally:
        if served is not None:
            served.close()
    calls = sum(len(latencies) for latencies in day.latencies.values())
    serve_ms = used / calls * 1000
    fdbserver_ms = cluster_used / calls * 1000 if cluster else 0.0
    peak_calls = PEAK_SUBMISSIONS * (1 + args.views)
    kinds = {}
    for kind, latencies in day.latencies.items():
        sample = Sample(len(latencies), seconds, latencies)
        kinds[kind] = {
            "calls": len(latencies),
            "failed": day.failures[kind],
            "per_s": sample.rate,
            "p50_ms": sample.percentile_us(50) / 1000,
            "p99_ms": sample.percentile_us(99) / 1000,
        }
    return {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "environment": environment(),
        "config": {
            key: getattr(args, key)
            for key in ("store", "players", "callers", "seconds", "views", "pareto", "max_staleness", "serve_args")
        },
        "fdbserver_processes": len(cluster),
        "seconds": seconds,
        "calls_per_s": calls / seconds,
        "submissions_per_s": kinds["submit"]["per_s"],
        "kinds": kinds,
        "serve_cpu_ms_per_call": serve_ms,
        "fdbserver_cpu_ms_per_call": fdbserver_ms,
        "peak": {
            "submissions_per_s": PEAK_SUBMISSIONS,
            "calls_per_s": peak_calls,
            "service_cores": serve_ms * peak_calls / 1000,
            "service_processes_at_75pct": serve_ms * peak_calls / 1000 / BUSY,
            "fdbserver_cores": fdbserver_ms * peak_calls / 1000,
            "cores": (serve_ms + fdbserver_ms) * peak_calls / 1000,
        },
    }


def report(fig: dict[str, Any], as_markdown: bool) -> str:
    rows = [
        [kind, f"{k['calls']:,}", f"{k['failed']:,}", f"{k['per_s']:,.0f}", f"{k['p50_ms']:.2f}", f"{k['p99_ms']:.2f}"]
        for kind, k in fig["kinds"].items()
    ]
    peak = fig["peak"]
    config = fig["config"]
    lines = [
        f"store {config['store'] or '(a running server)'}, {fig['fdbserver_processes']} fdbserver process(es); "
        f"{config['players']:,} players, {config['callers']} callers for {fig['seconds']:.1f} s, "
        f"{config['views']:g} views per submission, max_staleness {config['max_staleness']} ms",
        "",
        (markdown if as_markdown else table)(["kind", "calls", "failed", "calls/s", "p50 ms", "p99 ms"], rows),
        "",
        f"calls/s {fig['calls_per_s']:,.0f} (submissions {fig['submissions_per_s']:,.0f}/s); CPU per call: "
        f"serve {fig['serve_cpu_ms_per_call']:.3f} ms, fdbserver {fig['fdbserver_cpu_ms_per_call']:.3f} ms",
        f"seed 003's peak ({peak['submissions_per_s']:,} submissions/s, {peak['calls_per_s']:,.0f} calls/s): "
        f"{peak['service_cores']:.1f} service cores ({peak['service_processes_at_75pct']:.1f} processes at 75% busy) "
        f"+ {peak['fdbserver_cores']:.1f} fdbserver cores = {peak['cores']:.1f} cores",
    ]
    return "\n".join(lines)


def benchmark(args: argparse.Namespace) -> int:
    fig = run(args)
    emit(report(fig, args.markdown), args.json, fig)
    return 0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = options.parser("Seed 003's day against a server.")
    parser.add_argument("--store", help="lmdb:DIR or fdb:CLUSTER_FILE (default: a fresh embedded store)")
    parser.add_argument("--server", help="the address of a running server (then --server-pid)")
    parser.add_argument("--server-pid", type=int, help="its process, for its CPU")
    parser.add_argument("--source", type=Path, help="the checkout served (default: this one)")
    parser.add_argument("--players", type=int, default=20_000, help="players (default: %(default)s)")
    parser.add_argument("--callers", type=int, default=32, help="concurrent callers (default: %(default)s)")
    parser.add_argument("--seconds", type=float, default=30.0, help="length of the day (default: %(default)s)")
    parser.add_argument("--views", type=float, default=3.0, help="views per submission (default: %(default)s)")
    parser.add_argument("--pareto", type=float, default=1.16, help="activity's Pareto shape (default: %(default)s)")
    parser.add_argument("--max-staleness", type=int, default=0, help="ms the views may lag (default: 0, exact)")
    parser.add_argument("--serve-args", default="", help="more options for serve")
    parser.add_argument("--seed", type=int, default=3, help="random seed (default: %(default)s)")
    options.add_output(parser)
    args = parser.parse_args(argv)
    if (args.server is None) != (args.server_pid is None):
        parser.error("--server and --server-pid go together")
    if min(args.players, args.callers) < 1 or args.seconds <= 0 or args.views < 0:
        parser.error("--players and --callers must be positive, --seconds too, --views 0 or more")
    if not 0 <= args.max_staleness <= 5000:
        parser.error("--max-staleness must be from 0 to 5000")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return benchmark(parse_args(argv))
