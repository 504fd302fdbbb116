"""The served path, A/B: one revision's server against another's, side by side (``tools/bench_served.py``).

Each server is ``fdb-leaderboard serve`` from a checkout of its own: ``--old REV`` (any git
revision, exported with ``git archive`` into ``--checkouts`` and given its own ``.venv`` by the
revision's ``tools/_venv.sh``, once; or a directory holding such a checkout) and ``--new`` (this
working tree, unless a revision is named).  Each serves a fresh durable embedded store of
``--records`` records in the all-time window, with its default settings otherwise (its HTTP
front end, where it has one, on a free port; ``--serve-args`` and ``--old-serve-args`` add
options).  One caller (this process, raw request bytes over one channel per server) makes, per
round and server, ``--calls`` calls of each kind:

- ``health``: ``grpc.health.v1.Health/Check``, the call that does nothing;
- ``rank``: ``GetRank`` of a random record, all-time;
- ``top10``: ``Top`` 10, all-time;
- ``add``: ``AddScore`` of a random record (a random score, a durable commit);
- ``writers``: ``AddScore`` from ``--writers`` concurrent callers (threads, a channel each),
  ``--calls`` calls between them.

Per call it reports p50 and p99 latency (every round's calls pooled), the server's CPU (user +
system time of the serve process, every thread, and of its child processes, ``/proc/PID/stat``),
its context switches (voluntary and not, summed over ``/proc/PID/task/*/status`` of the process
and its children), what the call costs beyond the empty call (its CPU minus ``health``'s on the
same server) and calls per second; CPU, switches and rates are the median of the rounds, with
their range.  Both servers make the same calls (requests drawn from generators seeded by the
round), and take turns kind by kind, the first to go alternating between rounds, so a
neighbour's burst of load on this shared machine falls on both.  Ratios are new / old.
"""

from __future__ import annotations

import argparse
import os
import random
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2

from fdb_leaderboard.proto import service_pb2 as pb

from .floors import process_cpu_seconds
from .output import ROOT, markdown, table, write_json
from .processes import free_port
from .timing import Sample, log, merge

SERVICE = "/" + pb.DESCRIPTOR.services_by_name["Leaderboard"].full_name
INDEX = "bench"
KINDS = ("health", "rank", "top10", "add", "writers")
PATHS = {
    "health": "/grpc.health.v1.Health/Check",
    "rank": f"{SERVICE}/GetRank",
    "top10": f"{SERVICE}/Top",
    "add": f"{SERVICE}/AddScore",
    "writers": f"{SERVICE}/AddScore",
}
WARM_UP_CALLS = 50
LOAD_BATCH = 250
LOAD_ATTEMPTS = 3


# -- checkouts --------------------------------------------------------------------------------


def checkout(revision: str, under: Path) -> Path:
    """A checkout of ``revision`` with its own .venv, made once under ``under`` (a directory given
    instead of a revision is taken as a checkout, and given a .venv if it has none)."""
    if Path(revision).is_dir():
        where = Path(revision).resolve()
    else:
        sha = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--verify", f"{revision}^{{commit}}"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip
        where = under / sha[:12]
        if not (where / "tools" / "_venv.sh").exists():
            where.mkdir(parents=True, exist_ok=True)
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", sha], check=True, capture_output=True)
            subprocess.run(["tar", "-x", "-C", str(where)], input=archive.stdout, check=True)
    if not (where / ".venv" / "bin" / "fdb-leaderboard").exists():
        log(f"installing {revision} into {where}/.venv")
    subprocess.run(["bash", "-c", "source tools/_venv.sh run"], cwd=where, check=True, stdout=subprocess.DEVNULL)
    return where


# -- a server and what it spends --------------------------------------------------------------


def family(pid: int) -> list[int]:
    """``pid`` and every process descended from it (reader processes, multiprocessing's helpers)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parent = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue  # ended meanwhile
            children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, ()))
    return found


def context_switches(pid: int) -> int:
    """Voluntary and involuntary context switches of every thread of ``pid`` so far."""
    switches = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        for line in Path(f"/proc/{pid}/task/{task}/status").read_text().splitlines():
            if "ctxt_switches:" in line:
                switches += int(line.split()[1])
    return switches


@dataclass
class Spent:
    cpu: float  # seconds
    switches: int

    def __sub__(self, other: Spent) -> Spent:
        return Spent(self.cpu - other.cpu, self.switches - other.switches)


def spent(pid: int) -> Spent:
    """CPU seconds and context switches of ``pid`` and its descendants so far."""
    total = Spent(0.0, 0)
    for member in family(pid):
        try:
            total = Spent(total.cpu + process_cpu_seconds(member), total.switches + context_switches(member))
        except (OSError, ValueError):
            continue  # it ended meanwhile
    return total


class Served:
    """``fdb-leaderboard serve`` of the checkout ``source`` on a fresh durable embedded store."""

    def __init__(self, name: str, source: Path, extra: list[str]) -> None:
        self.name = name
        self.store = tempfile.mkdtemp(prefix=f"bench-served-{name}-")
        self.address = f"127.0.0.1:{free_port()}"
        cli = str(source / ".venv" / "bin" / "fdb-leaderboard")
        options = subprocess.run([cli, "serve", "--help"], capture_output=True, text=True, check=True).stdout
        command = [cli, "serve", "--store", f"lmdb:{self.store}", "--address", self.address]
        if "--http-address" in options and "--http-address" not in extra:  # not the default port
            command += ["--http-address", f"127.0.0.1:{free_port()}"]
        started = time.monotonic()
        self.process = subprocess.Popen([*command, *extra], cwd=source, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if "serving on" not in line:
            raise SystemExit(f"the {name} server did not start: {line!r}")
        self.start_seconds = time.monotonic() - started
        self.channel = grpc.insecure_channel(self.address)

    def method(self, path: str) -> Callable[..., bytes]:
        return self.channel.unary_unary(path)

    def close(self) -> None:
        self.channel.close()
        self.process.terminate()
        self.process.wait(timeout=60)
        subprocess.run(["rm", "-rf", self.store], check=False)


# -- the calls --------------------------------------------------------------------------------


def entry(score: int, timestamp: int) -> pb.Entry:
    return pb.Entry(score=pb.Score(int=score), timestamp=timestamp)


def load(server: Served, records: int) -> None:
    """The index and its records, the same on every server."""
    server.method(f"{SERVICE}/CreateIndex")(
        pb.CreateIndexRequest(name=INDEX, options=pb.IndexOptions(high_score_first=True)).SerializeToString()
    )
    server.method(f"{SERVICE}/UpdateWindows")(
        pb.UpdateWindowsRequest(index=INDEX, all_time=True, high_score_first=True).SerializeToString()
    )
    batch = server.method(f"{SERVICE}/WriteBatch")
    rng = random.Random(0)
    for start in range(0, records, LOAD_BATCH):
        chunk = [
            pb.RecordEntries(pk=[pb.Item(string=f"p{i}")], entries=[entry(rng.randrange(10**6), i)])
            for i in range(start, min(records, start + LOAD_BATCH))
        ]
        request = pb.WriteBatchRequest(index=INDEX, records=chunk).SerializeToString()
        for attempt in range(LOAD_ATTEMPTS):
            try:
                batch(request, timeout=600)
                break
            except grpc.RpcError as exc:
                # On a busy machine a batch may outrun the store's 5 s transaction limit; it
                # left nothing behind, and writing the same entries again changes nothing.
                if exc.code() is not grpc.StatusCode.ABORTED or attempt == LOAD_ATTEMPTS - 1:
                    raise


def requests(kind: str, records: int, seed: int) -> Iterator[bytes]:
    """Request bytes of ``kind``: the same sequence for every server."""
    if kind == "health":
        while True:
            yield health_pb2.HealthCheckRequest().SerializeToString()
    if kind == "top10":
        while True:
            yield pb.TopRequest(index=INDEX, n=10).SerializeToString()
    rng = random.Random(seed)
    while True:
        pk = [pb.Item(string=f"p{rng.randrange(records)}")]
        if kind == "rank":
            yield pb.RankRequest(index=INDEX, pk=pk).SerializeToString()
        else:  # add, writers
            score = entry(rng.randrange(10**6), rng.randrange(10**9))
            yield pb.AddScoreRequest(index=INDEX, pk=pk, entry=score).SerializeToString()


@dataclass
class Tally:
    """One kind of call on one server, over the rounds."""

    rounds: list[Sample] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)  # server CPU seconds per call, per round
    switches: list[float] = field(default_factory=list)  # per call, per round


def sequential(call: Callable[..., bytes], taken: list[bytes], latencies_ns: list[int]) -> None:
    clock = time.perf_counter_ns
    for request in taken:
        started = clock()
        call(request, timeout=60)
        latencies_ns.append(clock() - started)


def measure(server: Served, kind: str, args: argparse.Namespace, seed: int, tally: Tally) -> None:
    """One round of ``kind`` on ``server``."""
    callers = args.writers if kind == "writers" else 1
    channels = [server.channel] + [grpc.insecure_channel(server.address) for _ in range(callers - 1)]
    methods = [channel.unary_unary(PATHS[kind]) for channel in channels]
    warm = requests(kind, args.records, seed + 1_000_000)
    for method in methods:
        for _ in range(WARM_UP_CALLS):
            method(next(warm), timeout=60)
    sequence = requests(kind, args.records, seed)
    shares = [[next(sequence) for _ in range(args.calls // callers)] for _ in range(callers)]
    latencies: list[list[int]] = [[] for _ in range(callers)]
    threads = [
        threading.Thread(target=sequential, args=(method, share, mine))
        for method, share, mine in zip(methods, shares, latencies, strict=True)
    ]
    before, started = spent(server.process.pid), time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds, used = time.perf_counter() - started, spent(server.process.pid) - before
    for channel in channels[1:]:
        channel.close()
    calls = sum(map(len, latencies))
    if calls != sum(map(len, shares)):
        raise SystemExit(f"the {server.name} server failed {kind} calls")
    tally.rounds.append(Sample(calls, seconds, [latency for mine in latencies for latency in mine]))
    tally.cpu.append(used.cpu / calls)
    tally.switches.append(used.switches / calls)


# -- the run ----------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Both servers, every kind, the rounds: the figures by kind and server."""
    under = Path(args.checkouts)
    sources = {"old": checkout(args.old, under), "new": checkout(args.new, under) if args.new else ROOT}
    extra = {"old": shlex.split(args.old_serve_args), "new": shlex.split(args.serve_args)}
    servers: dict[str, Served] = {}
    try:
        for name, source in sources.items():
            servers[name] = Served(name, source, extra[name])
            load(servers[name], args.records)
            log(f"{name}: {source}, pid {servers[name].process.pid}, started in {servers[name].start_seconds:.2f} s")
        tallies = {(name, kind): Tally() for name in servers for kind in args.kinds}
        for number in range(args.rounds):
            order = ["old", "new"] if number % 2 == 0 else ["new", "old"]
            for kind in args.kinds:
                for name in order:
                    measure(servers[name], kind, args, number, tallies[name, kind])
            log(f"round {number + 1} of {args.rounds} done ({' then '.join(order)})")
        return {
            "old": args.old,
            "new": args.new or "working tree",
            "config": {key: getattr(args, key) for key in ("records", "calls", "rounds", "writers", "kinds")},
            "start_seconds": {name: round(server.start_seconds, 2) for name, server in servers.items()},
            "kinds": {kind: {name: figures(tallies[name, kind]) for name in servers} for kind in args.kinds},
        }
    finally:
        for server in servers.values():
            server.close()


def figures(tally: Tally) -> dict[str, Any]:
    pooled = merge(tally.rounds)
    rates = [sample.rate for sample in tally.rounds]
    return {
        "p50_ms": pooled.percentile_us(50) / 1000,
        "p99_ms": pooled.percentile_us(99) / 1000,
        "cpu_ms": statistics.median(tally.cpu) * 1000,
        "cpu_ms_range": [min(tally.cpu) * 1000, max(tally.cpu) * 1000],
        "switches": statistics.median(tally.switches),
        "switches_range": [min(tally.switches), max(tally.switches)],
        "calls_per_s": statistics.median(rates),
        "calls_per_s_range": [min(rates), max(rates)],
    }


def report(fig: dict[str, Any], as_markdown: bool) -> str:
    kinds = fig["kinds"]
    for by_server in kinds.values():
        for name, figure in by_server.items():
            empty = kinds.get("health", {}).get(name)
            figure["beyond_empty_ms"] = figure["cpu_ms"] - empty["cpu_ms"] if empty else float("nan")
    headers = ["per call", "server", "p50 ms", "p99 ms", "server CPU ms", "beyond the empty call ms", "switches"]
    headers.append("calls/s")

    def spread(figure: dict[str, Any], key: str, digits: int) -> str:
        low, high = figure[f"{key}_range"]
        return f"{figure[key]:,.{digits}f} ({low:,.{digits}f}-{high:,.{digits}f})"

    rows = [
        [
            kind,
            name,
            f"{figure['p50_ms']:.2f}",
            f"{figure['p99_ms']:.2f}",
            spread(figure, "cpu_ms", 3),
            f"{figure['beyond_empty_ms']:.3f}",
            spread(figure, "switches", 1),
            spread(figure, "calls_per_s", 0),
        ]
        for kind, by_server in kinds.items()
        for name, figure in by_server.items()
    ]
    lines = [
        f"old: {fig['old']}; new: {fig['new']}; {fig['config']['records']:,} records, {fig['config']['calls']:,} "
        f"calls of each kind per round and server, {fig['config']['rounds']} rounds taking turns; 1 caller "
        f"({fig['config']['writers']} for writers); CPU, switches and calls/s: the median round (the range)",
        "",
        (markdown if as_markdown else table)(headers, rows),
        "",
        "new / old:",
    ]
    keys = ("p50_ms", "p99_ms", "cpu_ms", "beyond_empty_ms", "switches", "calls_per_s")
    for kind, by_server in kinds.items():
        old, new = by_server["old"], by_server["new"]
        ratios = [f"{key} {new[key] / old[key]:.2f}x" for key in keys if old[key] > 0.005]
        lines.append(f"  {kind}: {', '.join(ratios)}")
    if "health" in kinds:
        for name in ("old", "new"):
            health = kinds["health"][name]["p50_ms"]
            within = [f"{kind} {by_server[name]['p50_ms'] / health:.2f}x" for kind, by_server in kinds.items()]
            lines.append(f"  p50 over Health.Check's on the {name} server: {', '.join(within[1:])}")
    start = fig["start_seconds"]
    lines.append(f"  start-up (to 'serving on'): old {start['old']:.2f} s, new {start['new']:.2f} s")
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    fig = run(args)
    fig["command"] = " ".join([Path(sys.executable).name, *sys.argv])
    print(report(fig, args.markdown))
    if args.json:
        write_json(args.json, fig)
    return 0
