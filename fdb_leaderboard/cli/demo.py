"""``fdb-leaderboard demo``: a server on a temporary store, simulated games, live boards.

The screen fits an 80x24 terminal: the three boards side by side, then the record followed.
The temporary store is deleted on exit; ``--store`` keeps one of your own.

Ctrl-C (SIGINT) and SIGTERM only ask the demo to stop: the handler sets an event that every loop
of it waits on, and no exception is raised wherever the signal lands (amid a gRPC call, the
server's start, a feeder's write), so it always stops in order: the feeders, the client, the
HTTP and gRPC servers, then the store and its temporary directory, and it says so.  A second
signal while it stops ends the process at once, its temporary store deleted first.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator

import click
import grpc

from ..client import LeaderboardClient
from ..proto import service_pb2 as pb
from .maintenance import maintenance_pass
from .output import show_rank

# The HTTP front end's default address (``serve`` and ``demo``).
DEFAULT_HTTP_ADDRESS = "127.0.0.1:8080"
_BOARDS = (("today", 1), ("this week", 2), ("all time", 0))
_COLUMN = 26  # three boards across 80 columns


def open_in_browser(url: str) -> bool:
    """Open ``url`` in the desktop's browser, without a word on the terminal; False if there is none.

    Unlike ``webbrowser``, never a text browser in this terminal, and nothing from ``xdg-open``
    on stderr when no browser can open.
    """
    if sys.platform == "darwin":
        opener = ["open", url]
    elif sys.platform.startswith("win"):
        with contextlib.suppress(OSError):
            os.startfile(url)  # type: ignore[attr-defined]
            return True
        return False
    elif os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        opener = ["xdg-open", url]
    else:
        return False
    if shutil.which(opener[0]) is None:
        return False
    try:
        subprocess.Popen(opener, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:
        return False
    return True


def screen(client: LeaderboardClient, now: int, header: list[str], me: str) -> list[str]:
    """The demo's screen at simulated time ``now``: at most 24 lines of at most 80 columns."""
    columns = []
    for title, window_type in _BOARDS:
        at = now if window_type else None
        rows = client.top("demo", 10, window_type, at)
        lines = [f"{title} ({client.count('demo', window_type, at)} players)"]
        lines += [f"{show_rank(e.rank):>4} {e.pk[0]:<13} {e.score:>6}" for e in rows]
        columns.append(lines)
    height = max(len(column) for column in columns)
    boards = [
        "".join(column[i].ljust(_COLUMN) if i < len(column) else " " * _COLUMN for column in columns).rstrip()
        for i in range(height)
    ]
    followed = [f"around {me} (today)"]
    followed += [
        f"{show_rank(e.rank):>6} {e.pk[0]:<13} {e.score:>6}"
        for e in client.around("demo", (me,), 2, 2, 1, now, if_absent="TOP")
    ]
    return [*header, "", *boards, "", *followed]


@click.command()
@click.option("--store", default=None, help="Store URL (default: a temporary directory, deleted on exit).")
@click.option("--players", default=2000, show_default=True, type=click.IntRange(1), help="Simulated players.")
@click.option("--refresh", default=1.0, show_default=True, type=click.FloatRange(0.05), help="Seconds between screens.")
@click.option(
    "--duration", default=0.0, type=click.FloatRange(0), help="Stop after this many seconds (0: until Ctrl-C)."
)
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

    kept = store
    stop = threading.Event()
    temporary: list[str] = []  # the temporary store's directory, if any
    with _stopped_by_signals(stop, temporary) as stopped_by, contextlib.ExitStack() as cleanup:
        if store is None:
            directory = cleanup.enter_context(tempfile.TemporaryDirectory(prefix="fdb-leaderboard-demo-"))
            temporary.append(directory)
            store = f"lmdb:{directory}?durable=false"
        server = Server(store, "127.0.0.1:0").start()
        cleanup.callback(server.stop, grace=2)  # before the directory goes (the HTTP server with it)
        if not stop.is_set():
            try:
                http = HttpServer(server, http_address).start()
            except StartupError:  # the port is taken (a server running already): any free one
                http = HttpServer(server, f"{http_address.rsplit(':', 1)[0]}:0").start()
            _run(stop, server.address, f"{http.url}/#index=demo", players, refresh, duration, open_page)
    why = f" ({stopped_by[0]})" if stopped_by else ""
    click.echo(f"demo stopped{why}; {f'its store is {kept}' if kept else 'its temporary store is deleted'}")


@contextlib.contextmanager
def _stopped_by_signals(stop: threading.Event, temporary: list[str]) -> Iterator[list[str]]:
    """SIGINT and SIGTERM set ``stop`` (the signal's name goes in the list yielded); a second
    one ends the process at once, deleting the ``temporary`` directories first."""
    stopped_by: list[str] = []

    def handler(signum: int, frame: object) -> None:
        if stop.is_set():
            for directory in temporary:
                shutil.rmtree(directory, ignore_errors=True)
            os._exit(128 + signum)
        stopped_by.append(signal.Signals(signum).name)
        stop.set()

    previous = {number: signal.signal(number, handler) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stopped_by
    finally:
        for number, former in previous.items():
            signal.signal(number, former)


def _run(
    stop: threading.Event, address: str, page: str, players: int, refresh: float, duration: float, open_page: bool
) -> None:
    client = LeaderboardClient(address)
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
    client.keep_ahead("demo", start)
    if open_page:
        open_in_browser(page)
    playing = threading.Event()  # set when the feeders are to stop
    rng = random.Random(7)
    clock = [start]

    def play() -> None:
        while not playing.is_set():
            clock[0] += rng.randrange(1, 40)  # simulated time runs faster than real time
            player = f"player-{int(rng.paretovariate(1.2)) % players:05d}"
            try:
                client.add_score("demo", (player,), int(rng.gauss(1000, 250)), clock[0])
            except grpc.RpcError:
                if not playing.is_set():
                    raise

    feeders = [threading.Thread(target=play, daemon=True) for _ in range(4)]
    for feeder in feeders:
        feeder.start()
    began = time.time()
    try:
        while not stop.wait(refresh) and (not duration or time.time() - began < duration):
            now = clock[0]
            maintenance_pass(client, now)  # keep today's and this week's windows ahead, expire old ones
            header = [
                f"fdb-leaderboard demo, simulated time {now}; Ctrl-C stops it",
                f"gRPC {address}, live page {page}",
            ]
            lines = screen(client, now, header, "player-00001")
            if not stop.is_set():
                click.echo("\x1b[2J\x1b[H" + "\n".join(lines))
    finally:
        playing.set()
        for feeder in feeders:
            feeder.join(timeout=30)
        client.close()
