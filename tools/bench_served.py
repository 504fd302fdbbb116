"""The served path, A/B: one revision's server against another's, side by side, in alternating rounds.

Each server is ``fdb-leaderboard serve`` from a checkout of its own (``--old REV``: any git revision,
exported with ``git archive`` into ``--checkouts`` and given its own ``.venv``; ``--new``: this
working tree unless a revision is named), over a fresh durable embedded store holding ``--records``
records in the all-time window, with its default settings otherwise (its HTTP front end, where it
has one, on a free port).  One caller (this process, raw request bytes over one channel per
server) makes, per round and server, ``--calls`` sequential calls of each kind:

- ``health``: ``grpc.health.v1.Health/Check``, the call that does nothing;
- ``rank``: ``GetRank`` of a random record, all-time;
- ``top10``: ``Top`` 10, all-time;
- ``add``: ``AddScore`` of a random record (a random score, a durable commit);
- ``writers``: ``AddScore`` from ``--writers`` concurrent callers (threads, a channel each), the
  same number of calls in all; its throughput (calls/s) is reported too.

For each it reports p50 and p99 latency, the server's CPU per call (user + system time of the
serve process, every thread, and of its child processes, from ``/proc``), its context switches per
call (voluntary and not, summed over every thread of the process and its children), and what a
call costs beyond the empty call (its CPU minus ``health``'s, on the same server).  The servers
take turns: round 1 old then new, round 2 new then old, and so on, so drift on this shared machine
falls on both.  Ratios are new / old.

    .venv/bin/python tools/bench_served.py --old 325c424 [--new REV] [--records 20000] [--calls 1500]
        [--rounds 3] [--serve-args '--read-processes 0'] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2

from fdb_leaderboard.proto import service_pb2 as pb

ROOT = Path(__file__).resolve().parent.parent
SERVICE = "/" + pb.DESCRIPTOR.services_by_name["Leaderboard"].full_name
INDEX = "bench"
KINDS = ("health", "rank", "top10", "add", "writers")
TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# -- checkouts --------------------------------------------------------------------------------


def resolve(revision: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--verify", f"{revision}^{{commit}}"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip


def checkout(revision: str, under: Path) -> Path:
    """A checkout of ``revision`` with its own .venv (made once, kept under ``under``); a directory
    given instead of a revision is taken as a checkout already made."""
    if Path(revision).is_dir():
        subprocess.run(["bash", "-c", "source tools/_venv.sh run"], cwd=revision, check=True)
        return Path(revision).resolve()
    sha = resolve(revision)
    where = under / sha[:12]
    if not (where / ".venv" / "bin" / "fdb-leaderboard").exists():
        where.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", sha], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(where)], input=archive, check=True)
        print(f"installing {revision} ({sha[:12]}) into {where}/.venv", file=sys.stderr)
        subprocess.run(["bash", "-c", "source tools/_venv.sh run"], cwd=where, check=True)
    return where


# -- a server and what it spends --------------------------------------------------------------


def _family(pid: int) -> list[int]:
    """``pid`` and every process descended from it."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parent = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, ()))
    return found


@dataclass
class Spent:
    cpu: float  # seconds
    switches: int

    def __sub__(self, other: Spent) -> Spent:
        return Spent(self.cpu - other.cpu, self.switches - other.switches)


def spent(pid: int) -> Spent:
    """CPU seconds and context switches of ``pid`` (every thread) and its descendants so far."""
    cpu, switches = 0.0, 0
    for member in _family(pid):
        try:
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
            cpu += (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime: every thread's
            for task in os.listdir(f"/proc/{member}/task"):
                for line in Path(f"/proc/{member}/task/{task}/status").read_text().splitlines():
                    if "ctxt_switches:" in line:  # voluntary_ and nonvoluntary_
                        switches += int(line.split()[1])
        except (OSError, ValueError):
            continue  # it ended meanwhile
    return Spent(cpu, switches)


class Served:
    """``fdb-leaderboard serve`` of one checkout on a fresh durable store."""

    def __init__(self, name: str, source: Path, extra: list[str]) -> None:
        self.name = name
        self.store = tempfile.mkdtemp(prefix=f"bench-served-{name}-")
        self.address = f"127.0.0.1:{free_port()}"
        cli = str(source / ".venv" / "bin" / "fdb-leaderboard")
        options = subprocess.run([cli, "serve", "--help"], capture_output=True, text=True, check=True).stdout
        command = [cli, "serve", "--store", f"lmdb:{self.store}", "--address", self.address]
        if "--http-address" in options and "--http-address" not in extra:
            command += ["--http-address", f"127.0.0.1:{free_port()}"]
        started = time.monotonic()
        self.process = subprocess.Popen(command + extra, cwd=source, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if "serving on" not in line:
            raise SystemExit(f"{name}: the server did not start: {line!r}")
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


def record(i: int, rng: random.Random) -> pb.RecordEntries:
    return pb.RecordEntries(pk=[pb.Item(string=f"p{i}")], entries=[entry(rng.randrange(10**6), i)])


def entry(score: int, timestamp: int) -> pb.Entry:
    return pb.Entry(score=pb.Score(int=score), timestamp=timestamp)


def load(server: Served, records: int) -> None:
    create = server.method(f"{SERVICE}/CreateIndex")
    create(pb.CreateIndexRequest(name=INDEX, options=pb.IndexOptions(high_score_first=True)).SerializeToString())
    update = server.method(f"{SERVICE}/UpdateWindows")
    update(pb.UpdateWindowsRequest(index=INDEX, all_time=True, high_score_first=True).SerializeToString())
    batch = server.method(f"{SERVICE}/WriteBatch")
    rng = random.Random(0)  # the same records on every server
    for start in range(0, records, 500):
        chunk = [record(i, rng) for i in range(start, min(records, start + 500))]
        batch(pb.WriteBatchRequest(index=INDEX, records=chunk).SerializeToString(), timeout=600)


def requests(kind: str, records: int, seed: int) -> Iterator[bytes]:
    """The request bytes of ``kind``, the same sequence for every server."""
    rng = random.Random(seed)
    if kind == "health":
        while True:
            yield health_pb2.HealthCheckRequest().SerializeToString()
    while True:
        pk = [pb.Item(string=f"p{rng.randrange(records)}")]
        if kind == "rank":
            yield pb.RankRequest(index=INDEX, pk=pk).SerializeToString()
        elif kind == "top10":
            yield pb.TopRequest(index=INDEX, n=10).SerializeToString()
        else:  # add, writers
            yield pb.AddScoreRequest(
                index=INDEX, pk=pk, entry=entry(rng.randrange(10**6), rng.randrange(10**9))
            ).SerializeToString()


PATHS = {
    "health": "/grpc.health.v1.Health/Check",
    "rank": f"{SERVICE}/GetRank",
    "top10": f"{SERVICE}/Top",
    "add": f"{SERVICE}/AddScore",
    "writers": f"{SERVICE}/AddScore",
}


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)  # per round: seconds per call
    switches: list[float] = field(default_factory=list)  # per round: per call
    rates: list[float] = field(default_factory=list)  # per round: calls/s

    def p(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def sequential(call: Callable[..., bytes], taken: list[bytes], latencies: list[float]) -> None:
    for request in taken:
        started = time.perf_counter()
        call(request, timeout=30)
        latencies.append(time.perf_counter() - started)


def measure(server: Served, kind: str, calls: int, records: int, seed: int, writers: int, tally: Tally) -> None:
    callers = writers if kind == "writers" else 1
    methods = [server.method(PATHS[kind])] if callers == 1 else [
        grpc.insecure_channel(server.address).unary_unary(PATHS[kind]) for _ in range(callers)
    ]  # fmt: skip
    warm = requests(kind, records, seed + 1_000_000)
    for method in methods:
        for _ in range(min(50, calls // callers)):
            method(next(warm), timeout=30)
    sequence = requests(kind, records, seed)
    shares = [[next(sequence) for _ in range(calls // callers)] for _ in range(callers)]
    latencies: list[list[float]] = [[] for _ in range(callers)]
    threads = [
        threading.Thread(target=sequential, args=(method, share, mine))
        for method, share, mine in zip(methods, shares, latencies, strict=True)
    ]
    before = spent(server.process.pid)
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    used = spent(server.process.pid) - before
    done = sum(len(mine) for mine in latencies)
    if done != calls // callers * callers:
        raise SystemExit(f"{server.name}: {kind} calls failed")
    tally.latencies += [latency for mine in latencies for latency in mine]
    tally.cpu.append(used.cpu / done)
    tally.switches.append(used.switches / done)
    tally.rates.append(done / elapsed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", default="main", help="Git revision of the server compared against.")
    parser.add_argument("--new", default=None, help="Git revision of the other server (default: this working tree).")
    parser.add_argument("--checkouts", default=str(Path(tempfile.gettempdir()) / "fdb-leaderboard-revisions"))
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--calls", type=int, default=1500, help="Calls of each kind per round and server.")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--kinds", default=",".join(KINDS), help=f"Some of {','.join(KINDS)}.")
    parser.add_argument("--writers", type=int, default=6, help="Concurrent callers of the writers kind.")
    parser.add_argument("--serve-args", default="", help="Extra arguments for the new server's serve.")
    parser.add_argument("--old-serve-args", default="", help="Extra arguments for the old server's serve.")
    parser.add_argument("--json", help="Also write the figures here.")
    args = parser.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    unknown = set(kinds) - set(KINDS)
    if unknown:
        parser.error(f"unknown kinds {sorted(unknown)}")

    under = Path(args.checkouts)
    sources = {
        "old": (args.old, checkout(args.old, under)),
        "new": (args.new or "working tree", checkout(args.new, under) if args.new else ROOT),
    }
    extra = {"old": shlex.split(args.old_serve_args), "new": shlex.split(args.serve_args)}
    servers: dict[str, Served] = {}
    try:
        for name, (label, source) in sources.items():
            servers[name] = Served(name, source, extra[name])
            load(servers[name], args.records)
            print(f"{name}: {label} ({source}), pid {servers[name].process.pid}, started in "
                  f"{servers[name].start_seconds:.2f} s, {args.records:,} records loaded", flush=True)  # fmt: skip
        tallies = {(name, kind): Tally() for name in servers for kind in kinds}
        for round_number in range(args.rounds):
            order = ["old", "new"] if round_number % 2 == 0 else ["new", "old"]
            for kind in kinds:
                for name in order:
                    measure(
                        servers[name], kind, args.calls, args.records, round_number, args.writers, tallies[name, kind]
                    )
            print(f"round {round_number + 1} of {args.rounds} done (order {' then '.join(order)})", flush=True)
        report(args, sources, servers, kinds, tallies)
    finally:
        for server in servers.values():
            server.close()


def report(
    args: argparse.Namespace,
    sources: dict[str, tuple[str, Path]],
    servers: dict[str, Served],
    kinds: list[str],
    tallies: dict[tuple[str, str], Tally],
) -> None:
    figures: dict[str, dict[str, dict[str, float]]] = {}
    for kind in kinds:
        for name in ("old", "new"):
            tally = tallies[name, kind]
            figures.setdefault(kind, {})[name] = {
                "p50_ms": tally.p(0.5) * 1000,
                "p99_ms": tally.p(0.99) * 1000,
                "cpu_ms": statistics.median(tally.cpu) * 1000,
                "switches": statistics.median(tally.switches),
                "calls_per_s": statistics.median(tally.rates),
            }
    for kind in kinds:
        for name in ("old", "new"):
            empty = figures.get("health", {}).get(name)
            figures[kind][name]["beyond_empty_ms"] = figures[kind][name]["cpu_ms"] - empty["cpu_ms"] if empty else 0.0

    def spread(values: list[float], scale: float = 1.0, digits: int = 2) -> str:
        return f"{min(values) * scale:.{digits}f}-{max(values) * scale:.{digits}f}"

    print(f"\nold: {sources['old'][0]}; new: {sources['new'][0]}; {args.records:,} records, "
          f"{args.calls:,} calls of each kind per round and server, {args.rounds} rounds alternating; 1 caller "
          f"({args.writers} for writers); CPU, switches and calls/s: median of the rounds (their range)")  # fmt: skip
    print("| per call | server | p50 ms | p99 ms | server CPU ms | beyond the empty call ms | switches | calls/s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for kind in kinds:
        for name in ("old", "new"):
            tally, figure = tallies[name, kind], figures[kind][name]
            print(f"| {kind} | {name} | {figure['p50_ms']:.2f} | {figure['p99_ms']:.2f} | "
                  f"{figure['cpu_ms']:.3f} ({spread(tally.cpu, 1000, 3)}) | {figure['beyond_empty_ms']:.3f} | "
                  f"{figure['switches']:.1f} ({spread(tally.switches, 1, 1)}) | "
                  f"{figure['calls_per_s']:,.0f} ({spread(tally.rates, 1, 0)}) |")  # fmt: skip
    print("\nnew / old:")
    for kind in kinds:
        old, new = figures[kind]["old"], figures[kind]["new"]
        keys = ("p50_ms", "p99_ms", "cpu_ms", "beyond_empty_ms", "switches", "calls_per_s")
        ratios = ", ".join(f"{key} {new[key] / old[key]:.2f}x" for key in keys if old[key] > 0.005)
        print(f"  {kind}: {ratios}")
    if "health" in kinds:
        for name in ("old", "new"):
            health = figures["health"][name]["p50_ms"]
            within = ", ".join(f"{kind} {figures[kind][name]['p50_ms'] / health:.2f}x" for kind in kinds[1:])
            print(f"  p50 over Health.Check's p50 on the {name} server: {within}")
    print(f"  start-up: old {servers['old'].start_seconds:.2f} s, new {servers['new'].start_seconds:.2f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "figures": figures}, indent=1))


if __name__ == "__main__":
    main()
