"""The HTTP server: uvicorn running the application in a thread of the gRPC server's process.

uvicorn's own limits are used where they fit: ``timeout_keep_alive`` closes idle kept-alive
connections, h11's ``max_incomplete_event_size`` (16 KB) bounds a request head.  What uvicorn
lacks (a time limit on a request head, a cap on open connections that frees their descriptors)
is its h11 protocol with a budget (``connections.py``).
"""

from __future__ import annotations

import asyncio
import errno
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
from .connections import ConnectionBudget, guarded_protocol
from .limits import ACCEPT_BACKLOG, HttpLimits

log = logging.getLogger("fdb_leaderboard.http")


def split_address(address: str) -> tuple[str, int]:
    """``host:port`` or ``[v6]:port`` as (host, port)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise StartupError(f"HTTP address {address!r} is not HOST:PORT")
    return host.strip("[]"), int(port)


class HttpServer:
    """The HTTP API, page and metrics of a :class:`~fdb_leaderboard.service.Server`, stopped with it."""

    def __init__(self, server: Server, address: str, limits: HttpLimits | None = None) -> None:
        """Serve ``server``'s service on ``address`` with its settings: its tokens and roles, its TLS
        certificate (and client CA), its limits (and ``limits``, HTTP's own); like gRPC, no address
        beyond this machine without tokens unless the settings allow it (StartupError)."""
        settings = server.settings
        settings.check_address(address)
        limits = limits or HttpLimits()
        host, port = split_address(address)
        self.api = HttpApi(
            server.dispatcher, server.max_workers, settings.tokens, limits, limits.allowed_hosts(address)
        )
        # A request's head has the time its body has: the server's receive timeout, as over gRPC.
        self.connections = ConnectionBudget(limits.connection_budget(), settings.receive_timeout)
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
            http=guarded_protocol(self.connections),
            backlog=ACCEPT_BACKLOG,
            timeout_keep_alive=limits.keep_alive,  # type: ignore[arg-type]  (a float works)
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
            asyncio.run(self._serve())
        except BaseException:
            log.exception("the HTTP server stopped unexpectedly")

    async def _serve(self) -> None:
        asyncio.get_running_loop().set_exception_handler(self._loop_error)
        await self.uvicorn.serve(sockets=[self.socket])

    def _loop_error(self, loop: asyncio.AbstractEventLoop, context: dict) -> None:
        """The event loop's errors, as asyncio logs them, but running out of descriptors (asyncio
        retries the accept each second, with a traceback each time) in one line per ten seconds."""
        failure = context.get("exception")
        if isinstance(failure, OSError) and failure.errno in (errno.EMFILE, errno.ENFILE):
            self.connections.refusals.warning(f"cannot accept HTTP connections: {failure.strerror}")
            return
        loop.default_exception_handler(context)

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
