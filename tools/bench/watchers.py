#!/usr/bin/env python3
"""What watched ranks cost the server: ``--watchers`` gRPC WatchRank streams of one record, held
for ``--seconds``: store read transactions a second and the server process's CPU a second.

Runs the server of whichever tree is imported (``PYTHONPATH`` a ``git archive`` of another
revision to compare), in process, on a temporary embedded store.

    .venv/bin/python tools/bench watchers --watchers 200 --seconds 10
"""

from __future__ import annotations

import threading
import time

from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.service import Server, ServerSettings

from .options import add_output, parser
from .output import show
from .stores import scratch_url
from .timing import Span


def main() -> None:
    options = parser(__doc__, whole=True)
    options.add_argument("--watchers", type=int, default=200)
    options.add_argument("--seconds", type=float, default=10.0)
    add_output(options)
    args = options.parse_args()
    settings = ServerSettings(maintain_every=0, max_rank_watchers=args.watchers + 1)
    with scratch_url(None, "watchers", durable=False) as url:
        server = Server(url, "127.0.0.1:0", settings=settings).start()
        try:
            with LeaderboardClient(server.address, timeout=60) as lb:
                lb.create_index("watched")
                lb.add_score("watched", "bob", 10, 1)
                started = threading.Barrier(args.watchers + 1)
                watches = []

                def follow() -> None:
                    watch = lb.watch_rank("watched", "bob")
                    watches.append(watch)
                    for _ in watch:
                        started.wait()
                        break
                    for _ in watch:  # nothing changes: held open until closed
                        pass

                threads = [threading.Thread(target=follow, daemon=True) for _ in range(args.watchers)]
                for thread in threads:
                    thread.start()
                started.wait()
                with Span(server.db.stats.snapshot) as held:
                    time.sleep(args.seconds)
                for watch in watches:
                    watch.close()
        finally:
            server.stop(grace=1)
    per_second = {
        "store_transactions_per_s": held.counters["transactions"] / held.seconds,
        "process_cpu_ms_per_s": held.cpu_seconds / held.seconds * 1000,  # client threads included
    }
    show(
        ["watchers of one record", "store transactions/s", "process CPU ms/s (client threads included)"],
        [
            [
                str(args.watchers),
                f"{per_second['store_transactions_per_s']:.1f}",
                f"{per_second['process_cpu_ms_per_s']:.0f}",
            ]
        ],
        args.markdown,
        args.json,
        {"config": vars(args), **per_second},
    )


if __name__ == "__main__":
    main()
