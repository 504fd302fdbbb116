"""A normal client's latency while hostile callers press the server (issue 23), and the memory
unparseable requests cost.

Starts ``fdb-leaderboard serve`` on a fresh store, loads ``--records`` records, then measures a
normal client (its own process: sequential GetRank calls) for ``--seconds``:

1. alone (the baseline);
2. while ``--stalled`` calls whose request never arrives are held open (re-opened as the server
   times them out) and ``--heavy`` clients loop maximal reads (Top of the server's max page);

and reports p50/p99 of each and their ratio.  Then it sends ``--bad`` requests that do not parse
and reports the server's resident memory before and after.

    .venv/bin/python tools/bench_hostile.py [--records 20000] [--seconds 20] [--stalled 2000] [--heavy 4]
        [--read-processes 1] [--read-priority idle] [--attacker-priority 0|NICE|idle] [--control]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
from grpc import aio

from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.proto import service_pb2 as pb
from fdb_leaderboard.service import SERVICE_NAME

ROOT = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).parent / "fdb-leaderboard")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def normal_client(address: str, records: int, seconds: float, out: multiprocessing.Queue) -> None:
    latencies, failures = [], Counter()
    with LeaderboardClient(address) as lb:
        lb.rank("bench", ("p0",))  # connect
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            pk = (f"p{random.randrange(records)}",)
            started = time.perf_counter()
            try:
                lb.rank("bench", pk)
            except grpc.RpcError as exc:
                failures[exc.code().name] += 1
            latencies.append(time.perf_counter() - started)
            time.sleep(0.002)  # a steady caller, not a flood
    out.put((latencies, failures))


def staller(
    address: str,
    count: int,
    stop: multiprocessing.Event,
    ready: multiprocessing.Event,
    out: multiprocessing.Queue,
    priority: str = "0",
) -> None:
    """Keep ``count`` calls open whose request message never arrives (over 8 connections), re-opening
    each as the server times it out.  An asyncio client: the attacker costs little CPU of its own."""

    lower_priority(priority)

    async def run() -> int:
        forever = asyncio.Event()
        channels = [aio.insecure_channel(address, options=[("grpc.use_local_subchannel_pool", 1)]) for _ in range(8)]

        async def never() -> AsyncIterator[bytes]:
            await forever.wait()
            yield b""

        opened = 0

        async def hold(i: int) -> None:
            nonlocal opened
            method = channels[i % 8].stream_unary(f"/{SERVICE_NAME}/Top")
            while not stop.is_set():
                opened += 1
                with contextlib.suppress(grpc.RpcError):
                    await method(never(), timeout=3600)

        tasks = [asyncio.create_task(hold(i)) for i in range(count)]
        while opened < count:
            await asyncio.sleep(0.1)
        ready.set()
        while not stop.is_set():
            await asyncio.sleep(0.2)
        for task in tasks:
            task.cancel()
        for channel in channels:
            await channel.close()
        return opened

    out.put(("stalled", asyncio.run(run()), Counter()))


def heavy_reader(
    address: str, n: int, stop: multiprocessing.Event, out: multiprocessing.Queue, priority: str = "0"
) -> None:
    """Loop maximal Top reads.  As a hostile caller would, it takes the answers as bytes without
    decoding them (the first is decoded, to check it holds ``n`` rows): the server does all the
    work, the attacker's own CPU little."""
    lower_priority(priority)
    done, failures = 0, Counter()
    request = pb.TopRequest(index="bench", n=n).SerializeToString()
    with grpc.insecure_channel(address) as channel:
        top = channel.unary_unary(f"/{SERVICE_NAME}/Top")
        while not stop.is_set():
            try:
                answer = top(request, timeout=120)
                if not done:
                    assert len(pb.EntriesResponse.FromString(answer).entries) == n
                done += 1
            except grpc.RpcError as exc:
                failures[exc.code().name] += 1
    out.put(("heavy", done, failures))


def lower_priority(priority: str) -> None:
    """Run this process at ``priority``: a nice level, or ``idle`` (Linux's idle policy)."""
    if priority == "idle":
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    else:
        os.nice(int(priority))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(address: str, args: argparse.Namespace) -> tuple[list[float], Counter]:
    """The normal client's latencies (failed calls included) and its failures by status code."""
    queue: multiprocessing.Queue = multiprocessing.Queue()
    process = multiprocessing.Process(target=normal_client, args=(address, args.records, args.seconds, queue))
    process.start()
    measured = queue.get()
    process.join()
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--stalled", type=int, default=2000)
    parser.add_argument("--heavy", type=int, default=4)
    parser.add_argument("--bad", type=int, default=10_000)
    parser.add_argument("--max-page", type=int, default=2000)
    parser.add_argument("--read-processes", type=int, default=1, help="The server's --read-processes.")
    parser.add_argument("--read-priority", default="idle", help="The server's --read-priority.")
    parser.add_argument(
        "--attacker-priority",
        default="0",
        help="Run the attacking processes at this nice level, or 'idle' (Linux's idle policy): on a small "
        "machine their own CPU (decoding 2000-row answers) otherwise competes with the server and the "
        "normal client, as it would not from other machines.",
    )
    parser.add_argument(
        "--control",
        action="store_true",
        help="Run the attacks against a second server on this machine instead: what sharing the machine "
        "with the attackers costs the normal client, the server's own share left out.",
    )
    args = parser.parse_args()

    servers = [start_server(args)]
    if args.control:
        servers.append(start_server(args))
    try:
        for process, address, _ in servers:
            with LeaderboardClient(address, timeout=600) as lb:
                lb.create_index("bench", high_score_first=True)
                lb.update_windows("bench", high_score_first=True)
                lb.bulk_load("bench", (((f"p{i}",), [(random.randrange(10**6), i)]) for i in range(args.records)))
            print(f"server pid {process.pid}, {args.records} records, RSS {_rss_mb(process.pid):.0f} MB")
        server, address, _ = servers[0]
        # The attacks press the other server in a control run: the same load on this machine, none
        # on the measured server, so the ratio shows what sharing the machine alone costs.
        target = servers[-1][1]

        baseline, baseline_failures = measure(address, args)
        stop, ready = multiprocessing.Event(), multiprocessing.Event()
        queue: multiprocessing.Queue = multiprocessing.Queue()
        attackers = [
            multiprocessing.Process(
                target=staller, args=(target, args.stalled, stop, ready, queue, args.attacker_priority)
            )
        ]
        attackers += [
            multiprocessing.Process(
                target=heavy_reader, args=(target, args.max_page, stop, queue, args.attacker_priority)
            )
            for _ in range(args.heavy)
        ]
        for attacker in attackers:
            attacker.start()
        ready.wait()  # every stalled call is open, the heavy reads running
        time.sleep(1)
        rss_under_attack = _rss_mb(servers[-1][0].pid)
        pressed, pressed_failures = measure(address, args)
        stop.set()
        results: dict[str, int] = {}
        attacker_failures: Counter = Counter()
        for kind, count, failures in (queue.get() for _ in attackers):
            results[kind] = results.get(kind, 0) + count
            attacker_failures.update(failures)
        for attacker in attackers:
            attacker.join()

        for name, latencies, failures in (
            ("baseline", baseline, baseline_failures),
            ("under attack", pressed, pressed_failures),
        ):
            print(
                f"{name:>13}: {len(latencies)} calls, p50 {percentile(latencies, 0.5) * 1000:.2f} ms, "
                f"p99 {percentile(latencies, 0.99) * 1000:.2f} ms, failed {dict(failures) or 'none'}"
            )
        print(f"attackers' failed calls: {dict(attacker_failures) or 'none'}")
        print(
            f"p99 ratio {percentile(pressed, 0.99) / percentile(baseline, 0.99):.2f}x "
            f"({args.stalled} stalled calls held, {results.get('stalled', 0)} opened in all; "
            f"{results.get('heavy', 0)} maximal reads "
            f"of {args.max_page} rows by {args.heavy} clients; attacked server's RSS {rss_under_attack:.0f} MB)"
            + (" [control: the attacks pressed another server on this machine]" if args.control else "")
        )

        before = _rss_mb(server.pid)
        with grpc.insecure_channel(address) as channel:
            bad = channel.unary_unary(f"/{SERVICE_NAME}/AddScore")
            codes = set()
            for _ in range(args.bad):
                try:
                    bad(b"\xff\xff\xff\xff not a request", timeout=10)
                except grpc.RpcError as exc:
                    codes.add(exc.code().name)
        after = _rss_mb(server.pid)
        print(f"{args.bad} unparseable requests: answered {sorted(codes)}, RSS {before:.1f} -> {after:.1f} MB")
    finally:
        for process, _, store in servers:
            process.terminate()
            process.wait(timeout=30)
            subprocess.run(["rm", "-rf", store], check=False)


def start_server(args: argparse.Namespace) -> tuple[subprocess.Popen, str, str]:
    """``fdb-leaderboard serve`` on a fresh store: (process, address, store directory)."""
    store = tempfile.mkdtemp(prefix="bench-hostile-")
    address = f"127.0.0.1:{_free_port()}"
    process = subprocess.Popen(
        [CLI, "serve", "--store", f"lmdb:{store}?durable=false", "--address", address, "--max-page",
         str(args.max_page), "--http-address", "off", "--read-processes", str(args.read_processes),
         "--read-priority", args.read_priority],
        stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    assert process.stdout is not None and "serving on" in process.stdout.readline()
    return process, address, store


if __name__ == "__main__":
    main()
