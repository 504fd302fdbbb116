"""The servers a benchmark starts and stops: the product's gRPC server and ``redis-server``.

:class:`ServerProcess` runs the product's ``Server`` over a store URL in a spawned process on a
free local port (so the client side is timed in this process, the server in its own, as a
deployment would run them), without its background maintenance (the benchmark's calls do what
it would).  :class:`RedisServer` runs Debian's ``redis-server`` on a free local
port in a temporary directory with the persistence options given.
"""

from __future__ import annotations

import multiprocessing
import os
import shlex
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any

try:
    import redis
except ModuleNotFoundError:
    redis = None  # type: ignore[assignment]


def _serve(store_url: str, conn: Connection) -> None:
    """Child process: run the product's Server until told to stop.

    Its background maintenance is off: it would fill the windows the benchmark adds (and fills
    through Fill RPCs, to time them) at the same time, and take CPU from the calls timed."""
    from fdb_leaderboard.service import Server, ServerSettings

    server = Server(store_url, "127.0.0.1:0", settings=ServerSettings(maintain_every=0)).start()
    conn.send(server.address)
    conn.recv()
    server.stop(grace=5)
    conn.send("stopped")


class ServerProcess:
    """``Server`` over ``store_url`` in a spawned process; ``address`` once started."""

    def __init__(self, store_url: str) -> None:
        self.store_url = store_url
        self.address = ""

    def __enter__(self) -> ServerProcess:
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(self.store_url, child), name="bench-server", daemon=True)
        self.process.start()
        if not self.conn.poll(60):
            self.process.terminate()
            raise SystemExit("the gRPC server did not start within 60 s")
        self.address = self.conn.recv()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.conn.send("stop")
            self.conn.poll(30)
        finally:
            self.process.join(30)
            if self.process.is_alive():
                self.process.terminate()
                self.process.join(10)


def redis_missing(binary: str) -> str | None:
    """Why Redis cannot run here, or None."""
    if redis is None:
        return "the redis package is not installed (pip install 'fdb-leaderboard[bench]')"
    if shutil.which(binary) is None:
        return f"{binary} not found (on Debian: apt-get install redis-server)"
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer:
    """A ``redis-server`` of ours on a free local port with a temporary directory."""

    def __init__(self, binary: str, persistence: Sequence[str]) -> None:
        self.binary = binary
        self.persistence = list(persistence)

    def __enter__(self) -> RedisServer:
        self.dir = tempfile.mkdtemp(prefix="bench-redis-")
        self.port = free_port()
        command = [
            self.binary,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", self.dir,
            "--daemonize", "no",
            "--logfile", os.path.join(self.dir, "redis.log"),
            *self.persistence,
        ]  # fmt: skip
        shown = [{str(self.port): "PORT", self.dir: "TMPDIR"}.get(part, part) for part in command]
        self.command = shlex.join(shown).replace(self.dir, "TMPDIR")  # for the report: no per-run values
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while True:
            try:
                self.client().ping()
                break
            except redis.ConnectionError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.__exit__()
                    raise SystemExit(f"redis-server did not start: {shlex.join(command)}") from None
                time.sleep(0.05)
        return self

    def client(self) -> Any:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=60)

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
