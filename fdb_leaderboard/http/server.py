"""The HTTP server: uvicorn running the application in a thread of the gRPC server's process."""

from __future__ import annotations

import logging
import socket
import threading
import time

import uvicorn

from ..access import Tokens
from ..service import Server
from ..store import StoreUnavailable
from .app import HttpApi

log = logging.getLogger("fdb_leaderboard.http")


def split_address(address: str) -> tuple[str, int]:
    """``host:port`` or ``[v6]:port`` as (host, port)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ValueError(f"HTTP address {address!r} is not HOST:PORT")
    return host.strip("[]"), int(port)


class HttpServer:
    """The HTTP API, page and metrics of a :class:`~fdb_leaderboard.service.Server`, stopped with it."""

    def __init__(self, server: Server, address: str, tokens: Tokens | None = None) -> None:
        """``tokens`` (default: the server's own, if it has any) make every call need a bearer
        token whose role may call the RPC, as on the gRPC side."""
        host, port = split_address(address)
        tokens = tokens if tokens is not None else getattr(server, "tokens", None)
        self.api = HttpApi(server.service, server.metrics, server.max_workers, tokens)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        try:
            self.socket = socket.create_server((host, port), family=family)
        except OSError as exc:
            raise StoreUnavailable(f"cannot listen on {address} for HTTP: {exc}") from exc
        # Accepted connections inherit it: without it a kept-alive connection's answer waits for
        # the client's delayed ACK (40 ms on Linux) between the headers and the body.
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        bound = self.socket.getsockname()[1]
        self.address = f"[{host}]:{bound}" if family == socket.AF_INET6 else f"{host}:{bound}"
        self.url = f"http://{self.address}"
        config = uvicorn.Config(self.api.app, log_config=None, access_log=False, lifespan="off", log_level="warning")
        self.uvicorn = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, name="http", daemon=True)
        self._server = server

    def _run(self) -> None:
        try:
            self.uvicorn.run(sockets=[self.socket])
        except BaseException:
            log.exception("the HTTP server stopped unexpectedly")

    def start(self, timeout: float = 10.0) -> HttpServer:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.uvicorn.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise StoreUnavailable(f"the HTTP server on {self.address} did not start")
            time.sleep(0.01)
        self._server.add_stop_hook(self.stop)
        return self

    def stop(self, grace: float = 10.0) -> None:
        """Refuse new connections, let requests in flight finish (up to ``grace`` seconds), and
        end event streams."""
        self.api.transcoder.stopping.set()
        self.uvicorn.config.timeout_graceful_shutdown = max(1, round(grace))
        self.uvicorn.should_exit = True
        self._thread.join(grace + 5)
        self.socket.close()
