"""``fdb-leaderboard demo``: a server on a temporary store, simulated games, live boards."""

from __future__ import annotations

import random
import tempfile
import threading
import time

import click

from ..client import LeaderboardClient
from ..proto import service_pb2 as pb
from .maintenance import maintenance_pass

# The HTTP front end's default address (``serve`` and ``demo``).
DEFAULT_HTTP_ADDRESS = "127.0.0.1:8080"


@click.command()
@click.option("--store", default=None, help="Store URL (default: a fresh temporary directory).")
@click.option("--players", default=2000, show_default=True)
@click.option("--refresh", default=1.0, show_default=True, help="Seconds between screens.")
@click.option("--duration", default=0.0, help="Stop after this many seconds (0: until Ctrl-C).")
@click.option(
    "--http-address",
    default=DEFAULT_HTTP_ADDRESS,
    show_default=True,
    help="Where to serve the live page (a free port if this one is taken).",
)
@click.option("--open/--no-open", "open_page", default=True, show_default=True, help="Open the page in a browser.")
def demo(store: str | None, players: int, refresh: float, duration: float, http_address: str, open_page: bool) -> None:
    """Start the service, feed simulated games and show daily / weekly / all-time boards, in the
    terminal and on the live page."""
    from ..http import HttpServer
    from ..service import Server, StartupError

    url = store or f"lmdb:{tempfile.mkdtemp(prefix='fdb-leaderboard-demo-')}?durable=false"
    server = Server(url, "127.0.0.1:0").start()
    try:
        http = HttpServer(server, http_address).start()
    except StartupError:  # the port is taken (a server running already): any free one
        http = HttpServer(server, f"{http_address.rsplit(':', 1)[0]}:0").start()
    page = f"{http.url}/#index=demo"
    client = LeaderboardClient(server.address)
    day, week = 86_400, 7 * 86_400
    start = int(time.time()) // day * day
    policy = pb.MaintenancePolicy(
        windows=[
            pb.RegularWindows(type=1, base=0, increment=day, duration=day),
            pb.RegularWindows(type=2, base=4 * day, increment=week, duration=week),  # Monday-based weeks
        ],
        horizon=2 * day,
        certain_within=day,
        retain=14 * day,
    )
    client.create_index("demo", high_score_first=True, maintenance=policy)
    client.update_windows("demo", high_score_first=True)  # the all-time window
    client.keep_ahead("demo", start)
    if open_page:
        click.launch(page)
    stop = threading.Event()
    rng = random.Random(7)
    clock = [start]

    def play() -> None:
        while not stop.is_set():
            clock[0] += rng.randrange(1, 40)  # simulated time runs faster than real time
            player = f"player-{int(rng.paretovariate(1.2)) % players:05d}"
            client.add_score("demo", (player,), int(rng.gauss(1000, 250)), clock[0])

    feeders = [threading.Thread(target=play, daemon=True) for _ in range(4)]
    for feeder in feeders:
        feeder.start()
    began = time.time()
    try:
        while not duration or time.time() - began < duration:
            time.sleep(refresh)
            now = clock[0]
            maintenance_pass(client, now)  # keep today's and this week's windows ahead, expire old ones
            screen = [f"\x1b[2J\x1b[Hfdb-leaderboard demo: simulated time {now} ({url})", f"live page: {page}", ""]
            for title, window_type in (("today", 1), ("this week", 2), ("all time", 0)):
                at = now if window_type else None
                rows = client.top("demo", 10, window_type, at)
                screen.append(f"{title:<10} ({client.count('demo', window_type, at)} players)")
                screen.extend(f"  {e.rank + 1:>3}. {e.pk[0]:<14} {e.score:>6}" for e in rows)
                screen.append("")
            me = ("player-00001",)
            screen.append(f"around {me[0]} (today)")
            screen.extend(
                f"  {e.rank + 1:>5}. {e.pk[0]:<14} {e.score:>6}"
                for e in client.around("demo", me, 2, 2, 1, now, if_absent="TOP")
            )
            click.echo("\n".join(screen))
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        for feeder in feeders:
            feeder.join(timeout=5)
        client.close()
        server.stop(grace=2)
