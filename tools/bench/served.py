"""The served path, A/B: one revision's server against another's, side by side (``tools/bench served``).

Each server is ``fdb-leaderboard serve`` from a checkout of its own: ``--old REV`` (any git
revision, exported with ``git archive`` into ``--checkouts`` and given its own ``.venv`` by the
revision's ``tools/_venv.sh``, once; or a directory holding such a checkout) and ``--new`` (this
working tree, unless a revision is named).  Each serves a fresh durable embedded store of
``--records`` records in the all-time window (``--daily N``: and N daily windows, the last of
them today's, which every AddScore then also changes), with its default settings otherwise (its
HTTP front end, where it has one, on a free port; ``--serve-args`` and ``--old-serve-args`` add
options).  With ``--store fdb:CLUSTER_FILE`` both serve one FoundationDB cluster instead, each its
own index (``bench-old``, ``bench-new``), and the CPU of the cluster's ``fdbserver`` processes
(found by their ``-C CLUSTER_FILE``) is counted per call too, with the sum of the two.
``--callers N`` callers (this process's threads, raw request bytes over a channel each; one by
default) make, per round and server, ``--calls`` calls of each kind between them:

- ``health``: ``grpc.health.v1.Health/Check``, the call that does nothing;
- ``rank``: ``GetRank`` of a random record, all-time;
- ``top10``: ``Top`` 10, all-time;
- ``add``: ``AddScore`` of a random record (a random score, a durable commit);
- ``writers``: ``AddScore`` from ``--writers`` concurrent callers (threads, a channel each),
  ``--calls`` calls between them, whatever ``--callers`` says.

Per call it reports p50 and p99 latency (every round's calls pooled), the server's CPU (user +
system time of the serve process, every thread, and of its child processes, ``/proc/PID/stat``), its
context switches (voluntary and not, summed over ``/proc/PID/task/*/status`` of the process and its
children), on FoundationDB the ``fdbserver`` CPU and the sum of both, what the call costs beyond the
empty call (its CPU minus ``health``'s on the same server) and calls per second; CPU, switches and
rates are the median of the rounds, with their range. Both servers make the same calls (requests
drawn from generators seeded by the round), and take turns kind by kind, the first to go alternating
between rounds, so a neighbour's burst of load on this shared machine falls on both. Ratios are new
/ old.

As a command (``tools/bench served``):
side in alternating rounds: p50/p99, server CPU and context switches per call (``/proc``), for
Health.Check, GetRank, Top 10, AddScore and concurrent AddScore writers.  What each figure is and
how it is measured: the docstring of ``bench/served.py``.  For example, against 325c424:

    .venv/bin/python tools/bench served --old 325c424 [--records 20000] [--calls 1500] [--rounds 3]
        [--kinds health,rank,top10,add,writers] [--writers 6] [--callers 1] [--daily 0]
        [--store fdb:CLUSTER_FILE] [--serve-args '--read-processes 0'] [--markdown] [--json PATH]

Run it before landing a change to a served path: ``--old main`` against the working tree.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2

from fdb_leaderboard.proto import service_pb2 as pb

from . import options
from .output import ROOT, emit, markdown, table
from .processes import free_port
from .timing import Sample, log, merge, process_cpu, spread, time_callers, turns

SERVICE = "/" + pb.DESCRIPTOR.services_by_name["Leaderboard"].full_name
INDEX = "bench"
DAY = 86_400
TODAY = 1_900_000_000 // DAY * DAY  # the day AddScore's timestamps fall in with --daily
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
            total = Spent(total.cpu + process_cpu(member), total.switches + context_switches(member))
        except (OSError, ValueError):
            continue  # it ended meanwhile
    return total


class Served:
    """``fdb-leaderboard serve`` of the checkout ``source`` on ``store`` (None: a fresh durable
    embedded store of its own), serving index ``index``."""

    def __init__(self, name: str, source: Path, extra: list[str], store: str | None = None) -> None:
        self.name = name
        self.index = INDEX if store is None else f"{INDEX}-{name}"
        self.store = None if store is not None else tempfile.mkdtemp(prefix=f"bench-served-{name}-")
        self.address = f"127.0.0.1:{free_port()}"
        cli = str(source / ".venv" / "bin" / "fdb-leaderboard")
        options = subprocess.run([cli, "serve", "--help"], capture_output=True, text=True, check=True).stdout
        url = store if store is not None else f"lmdb:{self.store}"
        command = [cli, "serve", "--store", url, "--address", self.address]
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
        try:
            if self.store is None:  # a shared cluster: the index goes, the cluster stays
                with contextlib.suppress(grpc.RpcError):
                    drop = pb.DropIndexRequest(index=self.index).SerializeToString()
                    self.method(f"{SERVICE}/DropIndex")(drop, timeout=600)
            self.channel.close()
        finally:
            self.process.terminate()
            self.process.wait(timeout=60)
            if self.store is not None:
                subprocess.run(["rm", "-rf", self.store], check=False)


def fdbserver_pids(store: str | None) -> list[int]:
    """The ``fdbserver`` processes of the cluster ``store`` names (an ``fdb:CLUSTER_FILE`` URL),
    found by the cluster file their command line gives; none for the embedded store."""
    if store is None:
        return []
    cluster = str(Path(store.split(":", 1)[1].split("?", 1)[0]).resolve())
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
            except OSError:
                continue
            if argv and argv[0].endswith("fdbserver") and cluster in argv:
                pids.append(int(entry.name))
    if not pids:
        raise SystemExit(f"no fdbserver process of {cluster} runs on this machine")
    return pids


# -- the calls --------------------------------------------------------------------------------


def entry(score: int, timestamp: int) -> pb.Entry:
    return pb.Entry(score=pb.Score(int=score), timestamp=timestamp)


def load(server: Served, records: int, daily: int = 0) -> None:
    """The index and its records, the same on every server."""
    index = server.index
    server.method(f"{SERVICE}/CreateIndex")(
        pb.CreateIndexRequest(name=index, options=pb.IndexOptions(high_score_first=True)).SerializeToString()
    )
    days = [pb.ExplicitWindow(type=1, start=TODAY - n * DAY, end=TODAY - (n - 1) * DAY) for n in range(daily)]
    server.method(f"{SERVICE}/UpdateWindows")(
        pb.UpdateWindowsRequest(index=index, all_time=True, high_score_first=True, windows=days).SerializeToString()
    )
    batch = server.method(f"{SERVICE}/WriteBatch")
    rng = random.Random(0)
    for start in range(0, records, LOAD_BATCH):
        chunk = [
            pb.RecordEntries(pk=[pb.Item(string=f"p{i}")], entries=[entry(rng.randrange(10**6), i)])
            for i in range(start, min(records, start + LOAD_BATCH))
        ]
        request = pb.WriteBatchRequest(index=index, records=chunk).SerializeToString()
        for attempt in range(LOAD_ATTEMPTS):
            try:
                batch(request, timeout=600)
                break
            except grpc.RpcError as exc:
                # On a busy machine a batch may outrun the store's 5 s transaction limit; it
                # left nothing behind, and writing the same entries again changes nothing.
                if exc.code() is not grpc.StatusCode.ABORTED or attempt == LOAD_ATTEMPTS - 1:
                    raise


def requests(kind: str, index: str, records: int, seed: int, daily: int = 0) -> Iterator[bytes]:
    """Request bytes of ``kind``: the same sequence for every server (but the index's name)."""
    if kind == "health":
        while True:
            yield health_pb2.HealthCheckRequest().SerializeToString()
    if kind == "top10":
        while True:
            yield pb.TopRequest(index=index, n=10).SerializeToString()
    rng = random.Random(seed)
    while True:
        pk = [pb.Item(string=f"p{rng.randrange(records)}")]
        if kind == "rank":
            yield pb.RankRequest(index=index, pk=pk).SerializeToString()
        else:  # add, writers
            when = TODAY + rng.randrange(DAY) if daily else rng.randrange(10**9)
            score = entry(rng.randrange(10**6), when)
            yield pb.AddScoreRequest(index=index, pk=pk, entry=score).SerializeToString()


@dataclass
class Tally:
    """One kind of call on one server, over the rounds."""

    rounds: list[Sample] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)  # server CPU seconds per call, per round
    fdbserver: list[float] = field(default_factory=list)  # fdbserver CPU seconds per call, per round
    switches: list[float] = field(default_factory=list)  # per call, per round


def measure(server: Served, kind: str, args: argparse.Namespace, seed: int, tally: Tally) -> None:
    """One round of ``kind`` on ``server``."""
    callers = args.writers if kind == "writers" else args.callers
    channels = [server.channel] + [grpc.insecure_channel(server.address) for _ in range(callers - 1)]
    methods = [channel.unary_unary(PATHS[kind]) for channel in channels]
    warm = requests(kind, server.index, args.records, seed + 1_000_000, args.daily)
    for method in methods:
        for _ in range(WARM_UP_CALLS):
            method(next(warm), timeout=60)
    sequence = requests(kind, server.index, args.records, seed, args.daily)
    taken = [next(sequence) for _ in range(args.calls // callers * callers)]
    calls = [lambda request, method=method: method(request, timeout=60) for method in methods]
    cluster = args.fdbserver_pids
    before = spent(server.process.pid)
    cluster_before = sum(process_cpu(pid) for pid in cluster)
    sample = time_callers(calls, taken)
    used = spent(server.process.pid) - before
    cluster_used = sum(process_cpu(pid) for pid in cluster) - cluster_before
    for channel in channels[1:]:
        channel.close()
    sample.cpu_seconds = used.cpu  # the server's, not this process's
    tally.rounds.append(sample)
    tally.cpu.append(used.cpu / sample.ops)
    tally.fdbserver.append(cluster_used / sample.ops)
    tally.switches.append(used.switches / sample.ops)


# -- the run ----------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Both servers, every kind, the rounds: the figures by kind and server."""
    under = Path(args.checkouts)
    sources = {"old": checkout(args.old, under), "new": checkout(args.new, under) if args.new else ROOT}
    extra = {"old": shlex.split(args.old_serve_args), "new": shlex.split(args.serve_args)}
    servers: dict[str, Served] = {}
    args.fdbserver_pids = fdbserver_pids(args.store)
    try:
        for name, source in sources.items():
            servers[name] = Served(name, source, extra[name], args.store)
            load(servers[name], args.records, args.daily)
            log(f"{name}: {source}, pid {servers[name].process.pid}, started in {servers[name].start_seconds:.2f} s")
        tallies = {(name, kind): Tally() for name in servers for kind in args.kinds}
        for number in range(args.rounds):
            order = turns(["old", "new"], number)
            for kind in args.kinds:
                for name in order:
                    measure(servers[name], kind, args, number, tallies[name, kind])
            log(f"round {number + 1} of {args.rounds} done ({' then '.join(order)})")
        return {
            "old": args.old,
            "new": args.new or "working tree",
            "config": {
                key: getattr(args, key)
                for key in ("records", "calls", "rounds", "writers", "callers", "daily", "store", "kinds")
            },
            "start_seconds": {name: round(server.start_seconds, 2) for name, server in servers.items()},
            "kinds": {kind: {name: figures(tallies[name, kind]) for name in servers} for kind in args.kinds},
        }
    finally:
        for server in servers.values():
            server.close()


def figures(tally: Tally) -> dict[str, Any]:
    """The pooled rounds' p50/p99, and each per-round figure's median and range."""
    pooled = merge(tally.rounds)
    per_round = {
        "fdbserver_ms": [cpu * 1000 for cpu in tally.fdbserver],
        "total_ms": [(cpu + fdbserver) * 1000 for cpu, fdbserver in zip(tally.cpu, tally.fdbserver, strict=True)],
        "cpu_ms": [cpu * 1000 for cpu in tally.cpu],
        "switches": tally.switches,
        "calls_per_s": [sample.rate for sample in tally.rounds],
    }
    out: dict[str, Any] = {"p50_ms": pooled.percentile_us(50) / 1000, "p99_ms": pooled.percentile_us(99) / 1000}
    for name, values in per_round.items():
        out[name], low, high = spread(values)
        out[f"{name}_range"] = [low, high]
    return out


def report(fig: dict[str, Any], as_markdown: bool) -> str:
    kinds = fig["kinds"]
    on_fdb = bool(fig["config"].get("store"))
    for by_server in kinds.values():
        for name, figure in by_server.items():
            empty = kinds.get("health", {}).get(name)
            figure["beyond_empty_ms"] = figure["cpu_ms"] - empty["cpu_ms"] if empty else float("nan")
    headers = ["per call", "server", "p50 ms", "p99 ms", "server CPU ms"]
    if on_fdb:
        headers += ["fdbserver CPU ms", "total CPU ms"]
    headers += ["beyond the empty call ms", "switches", "calls/s"]

    def spread(figure: dict[str, Any], key: str, digits: int) -> str:
        low, high = figure[f"{key}_range"]
        return f"{figure[key]:,.{digits}f} ({low:,.{digits}f}-{high:,.{digits}f})"

    rows = []
    for kind, by_server in kinds.items():
        for name, figure in by_server.items():
            row = [kind, name, f"{figure['p50_ms']:.2f}", f"{figure['p99_ms']:.2f}", spread(figure, "cpu_ms", 3)]
            if on_fdb:
                row += [spread(figure, "fdbserver_ms", 3), spread(figure, "total_ms", 3)]
            row += [
                f"{figure['beyond_empty_ms']:.3f}",
                spread(figure, "switches", 1),
                spread(figure, "calls_per_s", 0),
            ]
            rows.append(row)
    config = fig["config"]
    store = f"store {config['store']}" if on_fdb else "a durable embedded store each"
    daily = f", {config['daily']} daily windows" if config.get("daily") else ""
    lines = [
        f"old: {fig['old']}; new: {fig['new']}; {store}; {config['records']:,} records{daily}; "
        f"{config['calls']:,} calls of each kind per round and server, {config['rounds']} rounds taking turns; "
        f"{config.get('callers', 1)} caller(s) ({config['writers']} for writers); CPU, switches and calls/s: "
        "the median round (the range)",
        "",
        (markdown if as_markdown else table)(headers, rows),
        "",
        "new / old:",
    ]
    keys = ("p50_ms", "p99_ms", "cpu_ms", "fdbserver_ms", "total_ms", "beyond_empty_ms", "switches", "calls_per_s")
    for kind, by_server in kinds.items():
        old, new = by_server["old"], by_server["new"]
        ratios = [f"{key} {new[key] / old[key]:.2f}x" for key in keys if old.get(key, 0) > 0.005]
        lines.append(f"  {kind}: {', '.join(ratios)}")
    if "health" in kinds:
        for name in ("old", "new"):
            health = kinds["health"][name]["p50_ms"]
            within = [f"{kind} {by_server[name]['p50_ms'] / health:.2f}x" for kind, by_server in kinds.items()]
            lines.append(f"  p50 over Health.Check's on the {name} server: {', '.join(within[1:])}")
    start = fig["start_seconds"]
    lines.append(f"  start-up (to 'serving on'): old {start['old']:.2f} s, new {start['new']:.2f} s")
    return "\n".join(lines)


def benchmark(args: argparse.Namespace) -> int:
    fig = run(args)
    fig["command"] = " ".join([Path(sys.executable).name, *sys.argv])
    emit(report(fig, args.markdown), args.json, fig)
    return 0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = options.parser("The served path: one revision's server against another's.")
    parser.add_argument("--old", default="main", help="git revision (or checkout directory) compared against")
    parser.add_argument("--new", help="git revision (or checkout directory) measured (default: this working tree)")
    parser.add_argument(
        "--checkouts",
        default=str(Path(tempfile.gettempdir()) / "fdb-leaderboard-revisions"),
        help="where revisions are exported, each with its own .venv (default: %(default)s)",
    )
    parser.add_argument("--records", type=int, default=20_000, help="records loaded (default: %(default)s)")
    parser.add_argument(
        "--calls", type=int, default=1500, help="calls per kind, round and server (default: %(default)s)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds (default: %(default)s)")
    parser.add_argument("--kinds", default=",".join(KINDS), help="comma-separated kinds (default: all)")
    parser.add_argument("--writers", type=int, default=6, help="callers of the writers kind (default: %(default)s)")
    parser.add_argument("--callers", type=int, default=1, help="concurrent callers of the other kinds (default: 1)")
    parser.add_argument("--daily", type=int, default=0, help="daily windows besides the all-time one (default: 0)")
    parser.add_argument(
        "--store", help="fdb:CLUSTER_FILE: both servers on this FoundationDB cluster (default: LMDB each)"
    )
    parser.add_argument("--serve-args", default="", help="more options for the new server's serve")
    parser.add_argument("--old-serve-args", default="", help="more options for the old server's serve")
    options.add_output(parser)
    args = parser.parse_args(argv)
    args.kinds = args.kinds.split(",")
    unknown = set(args.kinds) - set(KINDS)
    if unknown:
        parser.error(f"unknown kinds {sorted(unknown)}; known: {', '.join(KINDS)}")
    if min(args.records, args.calls, args.rounds, args.writers, args.callers) < 1 or args.calls < max(
        args.writers, args.callers
    ):
        parser.error("--records, --calls, --rounds, --writers and --callers must be positive, --calls at least both")
    if args.store is not None and not args.store.startswith("fdb:"):
        parser.error("--store must be fdb:CLUSTER_FILE (without it, each server has an embedded store of its own)")
    if args.daily < 0:
        parser.error("--daily must be 0 or more")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return benchmark(parse_args(argv))
