"""The HTTP server: uvicorn running the application in a thread of the gRPC server's process."""

from __future__ import annotations

import logging
import os
import socket
import ssl
import threading
import time

import uvicorn

from ..service import Server
from ..service.settings import StartupError
from .app import HttpApi

log = logging.getLogger("fdb_leaderboard.http")


def split_address(address: str) -> tuple[str, int]:
    """``host:port`` or ``[v6]:port`` as (host, port)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise StartupError(f"HTTP address {address!r} is not HOST:PORT")
    return host.strip("[]"), int(port)


class HttpServer:
    """The HTTP API, page and metrics of a :class:`~fdb_leaderboard.service.Server`, stopped with it."""

    def __init__(self, server: Server, address: str) -> None:
        """Serve ``server``'s service on ``address`` with its settings: its tokens and roles, its TLS
        certificate (and client CA), its limits; like gRPC, no address beyond this machine without
        tokens unless the settings allow it (StartupError)."""
        settings = server.settings
        settings.check_address(address)
        host, port = split_address(address)
        self.api = HttpApi(server.dispatcher, server.max_workers, settings.tokens)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        try:
            self.socket = socket.create_server((host, port), family=family)
        except OSError as exc:
            reason = os.strerror(exc.errno) if exc.errno else str(exc)
            raise StartupError(f"cannot listen on {address} for HTTP: {reason}") from None
        # Accepted connections inherit it: without it a kept-alive connection's answer waits for
        # the client's delayed ACK (40 ms on Linux) between the headers and the body.
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        bound = self.socket.getsockname()[1]
        self.address = f"[{host}]:{bound}" if family == socket.AF_INET6 else f"{host}:{bound}"
        tls = settings.tls
        self.url = f"{'https' if tls else 'http'}://{self.address}"
        config = uvicorn.Config(
            self.api.app,
            log_config=None,
            access_log=False,
            lifespan="off",
            log_level="warning",
            ssl_certfile=tls.cert if tls else None,
            ssl_keyfile=tls.key if tls else None,
            ssl_ca_certs=tls.client_ca if tls else None,
            ssl_cert_reqs=ssl.CERT_REQUIRED if tls and tls.client_ca else ssl.CERT_NONE,
        )
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
                raise StartupError(f"the HTTP server on {self.address} did not start (see the log)")
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
