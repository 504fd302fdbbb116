#!/usr/bin/env python3
"""What window-end events cost: noticing ended windows, delivering their webhooks, and an idle server.

A server (this tree, in process) on a fresh store; an index with ``--windows`` consecutive
windows of one type, ``--records`` scores in each, and ``--webhooks`` webhooks pointing at a
receiver in this process (``http.server``, answering 200).  Then:

- notice: one NoticeWindowEnds over all the windows (they have all ended by the clock given);
  the store's transactions, commits, reads and bytes written per window noticed, and the time;
- delivery: from that call's return until the receiver acknowledged every event: events a
  second, and each event's latency (noticed -> acknowledged) p50/p99;
- idle: the server left alone for ``--idle`` seconds afterwards (the outbox empty): store
  transactions and commits a minute (its maintenance and delivery rounds looking for work).

    .venv/bin/python tools/bench window-events --store lmdb --windows 200 --webhooks 3
"""

from __future__ import annotations

import argparse
import http.server
import statistics
import tempfile
import threading
import time

from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.service import Server, ServerSettings

from .timing import percentile


def receiver(acked: list[float], lock: threading.Lock) -> http.server.ThreadingHTTPServer:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            with lock:
                acked.append(time.perf_counter())
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {name: after[name] - before[name] for name in after}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", default="lmdb", help="lmdb (a temporary directory) or fdb:CLUSTER_FILE")
    parser.add_argument("--windows", type=int, default=200)
    parser.add_argument("--records", type=int, default=50)
    parser.add_argument("--webhooks", type=int, default=3)
    parser.add_argument("--idle", type=float, default=20.0)
    args = parser.parse_args()
    url = f"lmdb:{tempfile.mkdtemp()}" if args.store == "lmdb" else args.store
    acked: list[float] = []
    lock = threading.Lock()
    hooks = receiver(acked, lock)
    server = Server(url, "127.0.0.1:0", settings=ServerSettings(maintain_every=60)).start()
    name = f"bench-ends-{int(time.time())}"
    try:
        with LeaderboardClient(server.address, timeout=600) as lb:
            lb.create_index(name)
            now = int(time.time())
            base = now + 5  # every window ends after the webhooks exist (so they are told of it)
            windows = [(1, base + 10 * i, base + 10 * (i + 1)) for i in range(args.windows)]
            lb.update_windows(name, windows=windows, high_score_first=True)
            for _, start, _end in windows:
                lb.write_batch(name, [((f"p{r}",), [(r * 7 % 1000, start)]) for r in range(args.records)])
            for i in range(args.webhooks):
                lb.add_webhook(name, f"http://127.0.0.1:{hooks.server_port}/hook{i}", "x" * 32, [1], 10)
            before = server.db.stats.snapshot()
            started = time.perf_counter()
            noticed = lb.notice_window_ends(name, windows[-1][2])
            noticed_at = time.perf_counter()
            cost = delta(server.db.stats.snapshot(), before)
            events = noticed.events
            assert len(noticed.windows) == args.windows and events == args.windows * args.webhooks
            while True:
                with lock:
                    if len(acked) >= events:
                        break
                time.sleep(0.01)
            delivered_at = time.perf_counter()
            while any(w.pending for w in lb.webhooks(name)):  # the last clears committed
                time.sleep(0.05)
            delivery = delta(server.db.stats.snapshot(), before)
            per = args.windows
            print(
                f"notice: {per} windows in {noticed_at - started:.3f} s ({(noticed_at - started) / per * 1000:.2f} ms "
                f"each); per window: {cost['transactions'] / per:.2f} transactions, {cost['commits'] / per:.2f} "
                f"commits, {cost['reads'] / per:.1f} reads, {cost['writes'] / per:.1f} writes, "
                f"{cost['bytes_written'] / per:.0f} bytes written"
            )
            latencies = sorted(t - noticed_at for t in acked)
            p99 = percentile(latencies, 0.99)
            print(
                f"delivery: {events} events in {delivered_at - noticed_at:.3f} s "
                f"({events / (delivered_at - noticed_at):.0f}/s), "
                f"after notice p50 {statistics.median(latencies):.3f} s "
                f"p99 {p99:.3f} s; store per event: "
                f"{(delivery['transactions'] - cost['transactions']) / events:.2f} transactions, "
                f"{(delivery['commits'] - cost['commits']) / events:.2f} commits"
            )
            before = server.db.stats.snapshot()
            time.sleep(args.idle)
            idle = delta(server.db.stats.snapshot(), before)
            minute = 60 / args.idle
            print(
                f"idle: {idle['transactions'] * minute:.0f} transactions, {idle['commits'] * minute:.0f} commits, "
                f"{idle['reads'] * minute:.0f} reads a minute"
            )
            lb.drop_index(name)
    finally:
        server.stop(grace=1)
        hooks.shutdown()


if __name__ == "__main__":
    main()
