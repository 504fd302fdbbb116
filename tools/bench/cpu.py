"""CPU per index operation, this checkout against another revision (``tools/bench cpu``).

What an operation costs in CPU, not in wall time: on a shared 2-core machine wall time follows
the neighbours, CPU time much less.  Per operation it reports

- *client CPU*: the calling process's user + system time (every thread: the callers and, on
  FoundationDB, the client library's network thread), ``time.process_time``;
- *server CPU*: the user + system time of the cluster's ``fdbserver`` processes
  (``/proc/PID/stat``; found by the addresses the cluster's status lists), FoundationDB only;
- wall time per operation (the run's wall time over its operations) and the store's counters
  per call (``Database.stats``: read rounds, reads);

each divided by the ``ops`` operations that ``threads`` callers make between them.

The data are ``tools/bench.py``'s (:mod:`bench.data`): ``records`` records, one group, 4
windows per score (all-time, UTC daily, ISO-weekly, monthly), BEST, high scores first, loaded
by the controlling process with ``bulk_load``, one copy per tree measured (so trees making the
same calls change their own copies alike), and dropped at the end unless ``--keep``.  The
operations: ``submit`` (``add_score`` of a fresh score for a random record, timestamped in the
current day, as ``tools/bench.py`` submits), ``rank_all`` and ``rank_day`` (``rank`` of a
random record: all-time; current daily window, among records with a value there),
``top_week`` (top 10 of the current weekly window) and ``around`` (5 above and 5 below a
random record, all-time); and, only when named (``--ops``): ``submit_limited``, ``submit``
with a ``max_per_window`` score rule set (too high to refuse anything), the path that checks
the submission counters, and ``delete``, ``delete_record`` of a random record (its head and
entries read, its values removed from every window).  Each caller draws from its own
generator, seeded by the round and the caller: the trees make the same calls.

Every measurement runs in a fresh worker process (this module run as ``python -m bench.cpu``,
always from this checkout) whose ``PYTHONPATH`` puts one tree's ``fdb_leaderboard`` first:
this checkout, or a revision given with ``--against`` (exported with ``git archive`` into a
temporary directory).  Each starts once the cluster's ``fdbserver`` processes are about idle
again (the previous measurement's writes made durable, see :func:`settle`).  The trees take
turns operation by operation, the first to go alternating between rounds, so a neighbour's
burst of load falls on both alike; each row reports the median round and the range over rounds.
Each tree's copy is loaded by that tree's library (a worker process too), so at the index format
it writes; the trees must read and write the same key layout otherwise.

As a command (``tools/bench cpu``):

What each figure is and how it is measured: the docstring of ``bench/cpu.py``.  For example,
FoundationDB against main, 1 and 8 callers, 3 alternating rounds of 1,000 calls per operation::

    eval "$(../shared/fdb/fdb-local env)"; ../shared/fdb/fdb-local start /tmp/fdb-cpu ssd
    .venv/bin/python tools/bench cpu --store fdb:/tmp/fdb-cpu/fdb.cluster --against main \\
        --records 50000 --threads 1,8 --rounds 3 --calls 1000

and the embedded store (durable) alone: ``--store lmdb:/tmp/cpu-lmdb``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from bench.timing import log, process_cpu, spread, turns
from bench.trees import export

from . import options
from .output import show

OPERATIONS = ("submit", "rank_all", "rank_day", "top_week", "around")
EXTRA_OPERATIONS = ("submit_limited", "delete")  # measured only when named
TOOLS = Path(__file__).resolve().parent.parent
INDEX_PREFIX = b"\x15\x7ecpu-bench"  # then the copy's number: one copy of the data per tree
WARM_CALLS = 20


# -- CPU clocks --------------------------------------------------------------------------------


def fdbserver_pids(db: Any) -> list[int]:
    """The ``fdbserver`` processes on this machine serving ``db``'s cluster (by their addresses)."""
    status = json.loads(bytes(db._db[b"\xff\xff/status/json"]))
    addresses = {p["address"].split("(")[0] for p in status["cluster"].get("processes", {}).values()}
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"fdbserver") and any(a.encode() in argv for a in addresses):
            pids.append(int(entry.name))
    return pids


class CpuMeter:
    """CPU time of this process and of ``server_pids`` since the meter started."""

    def __init__(self, server_pids: Sequence[int] = ()) -> None:
        self.server_pids = list(server_pids)
        self.wall = time.perf_counter()
        self.client = time.process_time()
        self.server = self._server()

    def _server(self) -> float:
        return sum(process_cpu(pid) for pid in self.server_pids)

    def read(self) -> dict[str, float]:
        """Seconds since the start: wall, client CPU and (with server pids) server CPU."""
        out = {"wall_s": time.perf_counter() - self.wall, "client_cpu_s": time.process_time() - self.client}
        if self.server_pids:
            out["server_cpu_s"] = self._server() - self.server
        return out


# -- the worker: one operation, one tree -------------------------------------------------------


def operation_calls(index: Any, data: Any, op: str, seed: int) -> Callable[[random.Random], object]:
    """The call one thread makes ``op`` with, given its random generator."""
    from bench.data import AROUND, DAILY, DAY_END, NOW, TOP_N, WEEKLY, draw_score

    records = len(data.records)
    if op == "submit" or op == "submit_limited":
        day_left = DAY_END - NOW
        shift = op == "submit_limited"  # other scores than submit's, which ran before in the round

        def submit(rng: random.Random) -> object:
            if shift:
                rng.random()
            ts = NOW + rng.randrange(day_left)
            return index.add_score((rng.randrange(records),), draw_score(rng), ts)

        return submit
    if op == "rank_all":
        return lambda rng: index.rank((rng.randrange(records),))
    if op == "rank_day":
        today = data.rank_day_pks
        return lambda rng: index.rank((rng.choice(today),), DAILY, NOW)
    if op == "top_week":
        return lambda rng: index.top(TOP_N, WEEKLY, NOW)
    if op == "around":
        return lambda rng: index.around((rng.randrange(records),), AROUND, AROUND)
    if op == "delete":
        return lambda rng: index.delete_record((rng.randrange(records),))
    raise ValueError(f"unknown operation {op!r}")


def run_operation(
    index: Any, data: Any, op: str, threads: int, ops: int, seed: int, server_pids: list[int]
) -> dict[str, Any]:
    """``threads`` callers making ``ops`` calls of ``op`` between them; CPU and counters per call.

    A count, not a duration: trees given the same seed make the same calls (the same
    submissions change their copies of the data alike)."""
    call = operation_calls(index, data, op, seed)
    warm, warm_rng = operation_calls(index, data, "rank_all", seed), random.Random(-seed)
    for _ in range(WARM_CALLS):  # imports, caches and connections before the clock starts (reads only:
        warm(warm_rng)  # the copies' data stay alike)
    errors: list[BaseException] = []
    barrier = threading.Barrier(threads + 1)

    def caller(i: int) -> None:
        rng = random.Random(seed * 1000 + i)
        count = ops // threads + (i < ops % threads)
        barrier.wait()
        try:
            for _ in range(count):
                call(rng)
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=caller, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    stats = index.db.stats.snapshot()
    meter = CpuMeter(server_pids)
    barrier.wait()
    for worker in workers:
        worker.join()
    spent = meter.read()
    if errors:
        raise errors[0]
    after = index.db.stats.snapshot()
    out: dict[str, Any] = {"ops": ops, "threads": threads}
    for name, value in spent.items():
        out[name.replace("_s", "_ms_per_op")] = value * 1e3 / ops
    for name in ("read_rounds", "reads", "retries"):
        out[f"{name}_per_op"] = (after[name] - stats[name]) / ops
    return out


def worker_main(argv: Sequence[str]) -> None:
    """``python -m bench.cpu STORE_URL COPY RECORDS SEED OP THREADS OPS``: one JSON line on stdout;
    ``python -m bench.cpu load STORE_URL COPY RECORDS``: load one copy."""
    if argv[0] == "load":
        load_copy(argv[1], int(argv[2]), int(argv[3]))
        return
    import fdb_leaderboard
    from bench.data import make_data
    from fdb_leaderboard.index import LeaderboardIndex
    from fdb_leaderboard.store import open_database

    url, copy, records, seed, op, threads, ops = argv
    data = make_data(int(records), 1000, 1)
    db = open_database(url)
    try:
        index = LeaderboardIndex.open(db, copy_prefix(int(copy)))
        pids = fdbserver_pids(db) if url.startswith("fdb:") else []
        if op == "submit_limited":  # every tree measured has score rules (0.2.0 on)
            from fdb_leaderboard.index import ScoreRules

            index.set_score_rules(ScoreRules(max_per_window=10**9))
        try:
            result = run_operation(index, data, op, int(threads), int(ops), int(seed), pids)
        finally:
            if op == "submit_limited":
                index.set_score_rules(ScoreRules())
        result["tree"] = str(Path(fdb_leaderboard.__file__).resolve().parent.parent)
        print(json.dumps(result), flush=True)
    finally:
        db.close()


# -- the controller ----------------------------------------------------------------------------


def copy_prefix(copy: int) -> bytes:
    return INDEX_PREFIX + bytes([copy])


@contextlib.contextmanager
def exported(revision: str | None) -> Iterator[Path | None]:
    """``revision`` of this repository in a temporary directory, its C extensions built, or None."""
    if revision is None:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="bench-cpu-") as tmp:
        export(revision, Path(tmp))
        yield Path(tmp)


def load(url: str, records: int, trees: Sequence[Path | None]) -> None:
    """A fresh index (:func:`copy_prefix`) with the benchmark's windows and data per tree, each
    created by that tree's library (so at the index format it writes)."""
    drop(url)
    for copy, tree in enumerate(trees):
        started = time.perf_counter()
        argv = [sys.executable, "-m", "bench.cpu", "load", url, str(copy), str(records)]
        done = subprocess.run(argv, env=tree_env(tree), capture_output=True, text=True, cwd=str(TOOLS))
        if done.returncode:
            raise SystemExit(f"loading failed ({' '.join(argv)}):\n{done.stderr}")
        log(f"copy {copy}: loaded {records:,} records into {url} in {time.perf_counter() - started:.1f} s")


def load_copy(url: str, copy: int, records: int) -> None:
    """Copy ``copy``: a fresh index with the benchmark's windows and ``records`` records."""
    from bench.data import bench_windows, make_data
    from fdb_leaderboard.index import Entry, IndexSettings, LeaderboardIndex
    from fdb_leaderboard.index.directory import WindowUpdate

    data = make_data(records, 1000, 1)
    db = open_database_for(url)
    try:
        settings = IndexSettings(aggregation="BEST", high_score_first=True)
        index = LeaderboardIndex.create(db, copy_prefix(copy), settings)
        index.update_windows(WindowUpdate(high_score_first=True, windows=bench_windows()))
        index.bulk_load((((pk,), [Entry(score, ts)]) for pk, (score, ts) in enumerate(data.records)), 500)
    finally:
        db.close()


def tree_env(tree: Path | None) -> dict[str, str]:
    """The environment of a worker process whose ``fdb_leaderboard`` is ``tree``'s (None: this checkout)."""
    env = dict(os.environ)
    paths = [str(TOOLS), str(tree if tree is not None else TOOLS.parent)]
    env["PYTHONPATH"] = os.pathsep.join(paths + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


def open_database_for(url: str) -> Any:
    from fdb_leaderboard.store import open_database

    return open_database(url)


def cluster_pids(url: str) -> list[int]:
    """The fdbserver processes behind ``url`` (none for the embedded store)."""
    if not url.startswith("fdb:"):
        return []
    db = open_database_for(url)
    try:
        return fdbserver_pids(db)
    finally:
        db.close()


def drop(url: str) -> None:
    """Remove every copy (one range clear)."""
    from fdb_leaderboard.store import strinc

    db = open_database_for(url)
    try:
        db.run(lambda tr: tr.clear_range(INDEX_PREFIX, strinc(INDEX_PREFIX)))
    finally:
        db.close()


def measure(tree: Path | None, copy: int, args: argparse.Namespace, seed: int, op: str, threads: int) -> dict[str, Any]:
    """One worker process: ``op`` on copy ``copy`` with ``tree``'s library (None: this checkout)."""
    argv = [sys.executable, "-m", "bench.cpu", args.store, str(copy), str(args.records), str(seed), op]
    argv += [str(threads), str(args.calls)]
    done = subprocess.run(argv, env=tree_env(tree), capture_output=True, text=True, cwd=str(TOOLS))
    if done.returncode:
        raise SystemExit(f"worker failed ({' '.join(argv)}):\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def settle(server_pids: Sequence[int], share: float = 0.05, most_seconds: float = 20.0) -> None:
    """Wait until the fdbserver processes are about idle (below ``share`` of a core over half a
    second; at most ``most_seconds``): a measurement must not pay for the work the previous one
    left behind (a storage server still making the last submissions durable)."""
    deadline = time.perf_counter() + most_seconds
    while server_pids and time.perf_counter() < deadline:
        before = sum(process_cpu(pid) for pid in server_pids)
        time.sleep(0.5)
        if sum(process_cpu(pid) for pid in server_pids) - before < share * 0.5:
            return


def summarize(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """The median round of each figure, and its range over the rounds."""
    out: dict[str, Any] = {"rounds": len(rounds), "ops": sum(r["ops"] for r in rounds)}
    for name in rounds[0]:
        if name.endswith("_per_op"):
            out[name], low, high = spread([r[name] for r in rounds])
            out[name + "_range"] = [low, high]
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    from bench.output import environment

    results: dict[str, dict[str, dict[str, list[dict[str, Any]]]]] = {}
    with exported(args.against) as other:
        trees: list[tuple[str, Path | None]] = [("this checkout", None)]
        if other is not None:
            trees.append((args.against, other))
        if not args.no_load:
            load(args.store, args.records, [tree for _, tree in trees])
        pids = cluster_pids(args.store)
        try:
            for round_number in range(args.rounds):
                for threads in args.threads:
                    for op in args.ops:
                        for copy, (name, tree) in turns(list(enumerate(trees)), round_number):
                            settle(pids)
                            found = measure(tree, copy, args, round_number + 1, op, threads)
                            results.setdefault(name, {}).setdefault(str(threads), {}).setdefault(op, []).append(found)
                            log(f"round {round_number + 1} {threads:>2} threads {op:9} {name:14} {_brief(found)}")
        finally:
            if not args.keep:
                drop(args.store)
    return {
        "store": args.store,
        "records": args.records,
        "calls": args.calls,
        "trees": [name for name, _ in trees],
        "results": {
            name: {
                threads: {op: summarize(rounds) for op, rounds in ops.items()} for threads, ops in by_threads.items()
            }
            for name, by_threads in results.items()
        },
        "environment": environment(),
    }


def _brief(found: dict[str, Any]) -> str:
    server = f", server {found['server_cpu_ms_per_op']:.3f} ms" if "server_cpu_ms_per_op" in found else ""
    return (
        f"client {found['client_cpu_ms_per_op']:.3f} ms{server}, wall {found['wall_ms_per_op']:.3f} ms, "
        f"{found['read_rounds_per_op']:.2f} rounds, {found['reads_per_op']:.1f} reads"
    )


def report_rows(figures: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """One row per operation, caller count and tree: CPU per operation, and its ratio to the first tree's."""
    headers = [
        "per operation",
        "client CPU ms",
        "range",
        "server CPU ms",
        "range",
        "wall ms",
        "rounds",
        "reads",
        "client vs first",
        "server vs first",
    ]
    rows: list[list[str]] = []
    names = figures["trees"]
    results = figures["results"]
    first = results[names[0]]
    for threads in first:
        for op in first[threads]:
            rows.append([f"{op}, {threads} caller{'s' if threads != '1' else ''}", *[""] * (len(headers) - 1)])
            base = first[threads][op]
            for name in names:
                r = results[name][threads][op]
                server = r.get("server_cpu_ms_per_op")
                rows.append(
                    [
                        f"  {name}",
                        f"{r['client_cpu_ms_per_op']:.3f}",
                        _range(r["client_cpu_ms_per_op_range"]),
                        f"{server:.3f}" if server is not None else "-",
                        _range(r["server_cpu_ms_per_op_range"]) if server is not None else "-",
                        f"{r['wall_ms_per_op']:.3f}",
                        f"{r['read_rounds_per_op']:.2f}",
                        f"{r['reads_per_op']:.1f}",
                        _ratio(r["client_cpu_ms_per_op"], base["client_cpu_ms_per_op"]),
                        _ratio(server, base.get("server_cpu_ms_per_op")),
                    ]
                )
    return headers, rows


def _ratio(value: float | None, base: float | None) -> str:
    return f"{value / base:.2f}x" if value is not None and base else ""


def _range(values: Sequence[float]) -> str:
    return f"{values[0]:.3f}-{values[1]:.3f}"


if __name__ == "__main__":
    worker_main(sys.argv[1:])


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = options.parser("CPU per index operation, side by side with another revision.")
    parser.add_argument("--store", required=True, help="store URL: fdb:CLUSTER_FILE or lmdb:PATH")
    parser.add_argument("--against", metavar="REVISION", help="also measure this git revision, taking turns")
    parser.add_argument("--records", type=int, default=50_000, help="records loaded (default: %(default)s)")
    parser.add_argument(
        "--threads", type=options.integers, default="1,8", help="comma-separated caller counts (default: %(default)s)"
    )
    parser.add_argument(
        "--ops",
        default=",".join(OPERATIONS),
        help="comma-separated operations (default: all but submit_limited and delete)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds per operation and tree (default: %(default)s)")
    parser.add_argument("--calls", type=int, default=1000, help="calls per measurement (default: %(default)s)")
    parser.add_argument("--no-load", action="store_true", help="use the index a --keep run left")
    parser.add_argument("--keep", action="store_true", help="keep the loaded index")
    options.add_output(parser)
    args = parser.parse_args(argv)
    args.ops = args.ops.split(",")
    known = (*OPERATIONS, *EXTRA_OPERATIONS)
    unknown = set(args.ops) - set(known)
    if unknown:
        parser.error(f"unknown operations {sorted(unknown)}; known: {', '.join(known)}")
    options.require_positive(parser, args, ("threads", "rounds", "records", "calls"))
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    figures = run(args)
    headers, rows = report_rows(figures)
    show(headers, rows, args.markdown, args.json, figures)
    return 0
