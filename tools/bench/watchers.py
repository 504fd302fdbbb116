#!/usr/bin/env python3
"""What watched ranks cost the server: ``--watchers`` gRPC WatchRank streams of one record, held
for ``--seconds``: store read transactions a second and the server process's CPU a second.

Runs the server of whichever tree is imported (``PYTHONPATH`` a ``git archive`` of another
revision to compare), in process, on a temporary embedded store.

    .venv/bin/python tools/bench watchers --watchers 200 --seconds 10
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time

from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.service import Server, ServerSettings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--watchers", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    settings = ServerSettings(maintain_every=0, max_rank_watchers=args.watchers + 1)
    server = Server(f"lmdb:{tempfile.mkdtemp()}?durable=false", "127.0.0.1:0", settings=settings).start()
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
            before, cpu = server.db.stats.snapshot()["transactions"], time.process_time()
            time.sleep(args.seconds)
            reads = server.db.stats.snapshot()["transactions"] - before
            spent = time.process_time() - cpu
            print(
                f"{args.watchers} watchers of one record: {reads / args.seconds:.1f} store transactions/s, "
                f"process CPU {spent / args.seconds * 1000:.0f} ms/s (client threads included)"
            )
            for watch in watches:
                watch.close()
    finally:
        server.stop(grace=1)


if __name__ == "__main__":
    main()
