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

One row a phase: its seconds, and the store's counters per window noticed, per event delivered
and per minute idle.
"""

from __future__ import annotations

import argparse
import http.server
import threading
import time

from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.service import Server, ServerSettings

from .options import add_output, parser
from .output import show
from .stores import scratch_url
from .timing import Sample, Span

COUNTERS = ("transactions", "commits", "reads", "writes", "bytes_written")


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


def main() -> None:
    options = parser(__doc__, whole=True)
    options.add_argument("--store", default="lmdb", help="lmdb (a temporary directory) or fdb:CLUSTER_FILE")
    options.add_argument("--windows", type=int, default=200)
    options.add_argument("--records", type=int, default=50)
    options.add_argument("--webhooks", type=int, default=3)
    options.add_argument("--idle", type=float, default=20.0)
    add_output(options)
    args = options.parse_args()
    acked: list[float] = []
    lock = threading.Lock()
    hooks = receiver(acked, lock)
    with scratch_url(None if args.store == "lmdb" else args.store, "ends") as url:
        server = Server(url, "127.0.0.1:0", settings=ServerSettings(maintain_every=60)).start()
        try:
            phases = run(server, hooks, acked, lock, args)
        finally:
            server.stop(grace=1)
            hooks.shutdown()
    rows = []
    for phase, (sample, per) in phases.items():
        p50, p99 = (f"{sample.percentile_us(p) / 1e6:.3f}" if sample.latencies_ns else "" for p in (50, 99))
        counts = [f"{sample.counters[name] * per:,.2f}" for name in COUNTERS]
        rows.append([phase, f"{sample.seconds:.3f}", f"{sample.rate:,.0f}", *counts, p50, p99])
    headers = ["phase", "seconds", "per s", *COUNTERS, "p50 s", "p99 s"]
    show(
        headers,
        rows,
        args.markdown,
        args.json,
        {"config": vars(args), **{k: s.to_json() for k, (s, _) in phases.items()}},
    )


def run(
    server: Server,
    hooks: http.server.ThreadingHTTPServer,
    acked: list[float],
    lock: threading.Lock,
    args: argparse.Namespace,
) -> dict[str, tuple[Sample, float]]:
    """The three phases: each one's sample and the factor its counters are shown at (per
    window noticed, per event delivered, per minute idle)."""
    name = f"bench-ends-{int(time.time())}"
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
        with Span(server.db.stats.snapshot) as notice:
            noticed = lb.notice_window_ends(name, windows[-1][2])
        noticed_at = time.perf_counter()
        events = noticed.events
        assert len(noticed.windows) == args.windows and events == args.windows * args.webhooks
        with Span(server.db.stats.snapshot) as delivery:
            while True:
                with lock:
                    if len(acked) >= events:
                        break
                time.sleep(0.01)
            delivered = time.perf_counter() - noticed_at
            while any(w.pending for w in lb.webhooks(name)):  # the last clears committed
                time.sleep(0.05)
        delivery.seconds = delivered  # until the last acknowledgement, not the clears after it
        with Span(server.db.stats.snapshot) as idle:
            time.sleep(args.idle)
        lb.drop_index(name)
    latencies = [round((t - noticed_at) * 1e9) for t in acked]
    return {
        "notice (per window)": (notice.sample(args.windows), 1 / args.windows),
        "delivery (per event)": (delivery.sample(events, latencies), 1 / events),
        "idle (a minute)": (idle.sample(0), 60 / idle.seconds),
    }


if __name__ == "__main__":
    main()
