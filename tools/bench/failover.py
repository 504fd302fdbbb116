"""What losing one FoundationDB process costs the service: writes stopped, and calls' p99.

Starts a replicated cluster (``fdb-local start DIR ssd 3 double``: 3 processes, each its own zone,
3 coordinators), one ``fdb-leaderboard serve`` on it, and the load of tests/fdb/test_replicated.py
(writers adding to 50 records of a SUM and a BEST index, readers asking ranks and top 10s, every
call with a deadline, writes keyed and sent again after UNAVAILABLE or DEADLINE_EXCEEDED).  Then,
``--rounds`` times, SIGKILLs each process in turn, waits until writes resume, brings it back and
waits until the cluster has fully recovered.  For each kill it reports the roles the process had
(``status json``), how long writes stopped (the longest time without an acknowledged write around
the kill), when the first write sent after the kill was acknowledged, and the p99 of the calls
sent within 10 s of the kill; at the end, that every acknowledged write is stored once (SUM totals
and BEST maxima) and ``verify`` is clean.

    eval "$(../shared/fdb/fdb-local env)"
    .venv/bin/python tools/bench failover --rounds 3

Needs ../shared/fdb (or FDB_LOCAL); each process takes a few hundred MB.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "support"))

from replicated import Cluster, Load, ServeProcess, boards_served, outage_figures, wait_for

from fdb_leaderboard.client import LeaderboardClient

from .output import show


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="Kills of each process.")
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--readers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=5.0, help="Every call's deadline, seconds.")
    parser.add_argument("--steady", type=float, default=3.0, help="Seconds of load before each kill.")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="fdb-failover.") as directory:
        cluster = Cluster(Path(directory) / "cluster")
        cluster.start()
        serve = ServeProcess(f"fdb:{cluster.cluster_file}", "--maintain-every", "0")
        indexes = {"bench-sum": "SUM", "bench-best": "BEST"}
        rows: list[tuple[int, str, dict[str, float]]] = []
        try:
            with LeaderboardClient(serve.address, timeout=30) as lb:
                for name, aggregation in indexes.items():
                    lb.create_index(name, aggregation=aggregation)
            with Load(lambda: serve.address, indexes, args.writers, args.readers, args.timeout) as load:
                for _ in range(args.rounds):
                    for number in (1, 2, 3):
                        roles = cluster.roles().get(number, [])
                        time.sleep(args.steady)
                        lost = time.monotonic()
                        cluster.kill(number)
                        if not wait_for(lambda lost=lost: load.first_write_after(lost) is not None, 120):
                            raise SystemExit(f"writes did not resume after process {number} was killed")
                        back = time.monotonic()
                        cluster.start()
                        cluster.wait_recovered()
                        figures = outage_figures(load, lost, back)
                        rows.append((number, ", ".join(sorted(set(roles))), figures))
                        print(
                            f"process {number} ({rows[-1][1]}): writes stopped {figures['unavailable']:.2f} s, "
                            f"first write after {figures['first_write']:.2f} s, p99 {figures['p99'] * 1000:.0f} ms "
                            f"of {figures['calls']:.0f} calls, {figures['refused']:.0f} UNAVAILABLE",
                            flush=True,
                        )
            unexpected = load.unexpected()
            with LeaderboardClient(serve.address, timeout=120) as lb:
                exact = boards_served(lb, indexes, len(load.records)) == load.expected_boards()
                problems = [problem for name in indexes for problem in lb.verify(name)]
        finally:
            serve.stop()
            cluster.stop()

    print(f"\n{len(load.acknowledged())} writes acknowledged, {len(load.attempts)} calls sent")
    print(f"every acknowledged write stored once: {exact}; verify: {problems or 'clean'}")
    print(f"calls answered otherwise than OK or UNAVAILABLE saying to retry: {len(unexpected)} {unexpected[:3]}")
    table = []
    for number in (1, 2, 3):
        mine = [figures for n, _, figures in rows if n == number]
        stopped = [f["unavailable"] for f in mine]
        first = [f["first_write"] for f in mine]
        p99 = [f["p99"] * 1000 for f in mine]
        table.append(
            [
                str(number),
                str(len(mine)),
                f"{statistics.median(stopped):.2f}, {max(stopped):.2f}",
                f"{statistics.median(first):.2f}",
                f"{statistics.median(p99):.0f}, {max(p99):.0f}",
            ]
        )
    print()
    headers = ["process", "kills", "writes stopped, s (median, max)", "first write after, s", "p99 ms (median, max)"]
    show(headers, table, as_markdown=True)
    print("\nroles at each kill:")
    for number, roles, _ in rows:
        print(f"  process {number}: {roles}")


if __name__ == "__main__":
    main()
