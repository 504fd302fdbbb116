"""A running server: the gRPC server, its health and reflection services, its metrics, and the
store it owns.

The gRPC server is grpcio's asyncio server, on an event loop in a thread of its own, so a call
waiting for its request costs no thread (see ``calls.py``); handlers run on worker threads.
:class:`Server` itself is synchronous: ``start``, ``stop``, ``wait``.

Startup refusals raise :class:`~.settings.StartupError` (or the store's error) with a one-line
message: an address in use (gRPC's port sharing is off, so a second server on a taken address
fails at once), a non-loopback address without authentication, unreadable TLS files, a store in
a format this release does not read.  Before it serves, the server reports its release in the
store (``releases.py``) and renews the report while it runs; a store raised meanwhile past what
it reads stops it.
"""

from __future__ import annotations

import asyncio
import errno
import gc
import logging
import signal
import socket
import sys
import threading
from collections.abc import Callable
from typing import Any

import grpc
from grpc import aio
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from .. import formats
from ..store import Database, open_database
from .calls import Dispatcher
from .catalog import ROOT, Catalog
from .grpc_service import SERVICE_NAME, LeaderboardService
from .housekeeping import Housekeeping
from .interceptors import AccessInterceptor
from .metrics import MeasuredDatabase, Metrics
from .readers import ReadProcesses, can_share
from .releases import Reporter, StoreFormatState
from .settings import ServerSettings, StartupError
from .webhooks import WebhookDelivery

log = logging.getLogger("fdb_leaderboard.service")
# Allocations between young collections (CPython's default: 700).
GC_YOUNG_THRESHOLD = 20_000


class Server:
    """A running server: the gRPC server, its health service, its metrics and the store it owns.

    Other front ends of the same service (the HTTP layer) call :attr:`service` with the same
    :attr:`settings` and register with :meth:`add_stop_hook` to stop with the server, before the
    store closes.
    """

    def __init__(
        self,
        store_url: str,
        address: str = "127.0.0.1:50051",
        max_workers: int = 16,
        reuse_port: bool = False,
        *,
        settings: ServerSettings | None = None,
        catalog_root: bytes = ROOT,
    ) -> None:
        """``reuse_port``: share the port with other processes of one ``serve --processes``
        group (see processes.py); off, binding an address in use fails at once.  ``catalog_root``:
        the key prefix of every index this server keeps (one store can hold several)."""
        self.settings = settings = settings or ServerSettings()
        self.reuse_port = reuse_port
        settings.check_address(address)
        credentials = _server_credentials(settings)
        if not reuse_port:
            _check_free(address)
        self.metrics = Metrics()
        self.db: Database = MeasuredDatabase(open_database(store_url), self.metrics)
        self.max_workers = max_workers
        self._stop_hooks: list[Callable[[float], None]] = []
        self._stop_requested = threading.Event()
        self._grace = 10.0
        try:
            self.reporter = Reporter(self.db, catalog_root, address, self._stop_requested, self._store_too_new)
            try:
                self.store_format: StoreFormatState = self.reporter.report_now()
            except formats.FormatTooNew as exc:
                raise StartupError(str(exc)) from None
            self.catalog = Catalog(self.db, catalog_root)
            self.metrics.watch_catalog(self.catalog)
            self.service = LeaderboardService(self.catalog, settings.max_page)
            readers = None
            if settings.read_processes and can_share(self.db):
                readers = ReadProcesses(
                    store_url,
                    catalog_root,
                    settings.max_page,
                    settings.read_processes,
                    settings.read_priority,
                    on_stats=self._count_reader_work,
                )
            self.dispatcher = Dispatcher(self.service, settings, max_workers, self.metrics, readers)
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=self._loop.run_forever, name="grpc-loop", daemon=True)
            self._thread.start()
            try:
                self.port = self._on_loop(self._build(address, credentials))
            except BaseException:
                self._close_loop()
                raise
        except BaseException:
            if hasattr(self, "dispatcher"):
                self.dispatcher.shutdown()
            if hasattr(self, "catalog"):  # reported: a process that never served leaves no report
                self.reporter.withdraw()
            self.db.close()
            raise
        self.address = f"{address.rsplit(':', 1)[0]}:{self.port}"
        self.reporter.report.address = self.address
        self._stopped = threading.Event()
        self._stop_lock = threading.Lock()
        self.service.window_events.metrics = self.metrics
        self.delivery: WebhookDelivery | None = None
        if settings.webhooks:
            self.delivery = WebhookDelivery(
                self.service.window_events,
                self._stop_requested,
                self.metrics,
                settings.webhook_timeout,
                settings.webhook_first_retry,
            )
            self.service.delivery = self.delivery
        self.housekeeping: Housekeeping | None = None
        if settings.maintain_every > 0:
            self.housekeeping = Housekeeping(
                self.catalog,
                settings.maintain_every,
                self._stop_requested,
                self.metrics,
                self.service.window_events,
                self.delivery,
                raise_formats=settings.raise_formats,
            )
            self.service.housekeeping = self.housekeeping
            self.catalog.latest_left = self.housekeeping.wake

    def _count_reader_work(self, stats: dict[str, int], transactions: list[tuple]) -> None:
        """A reader process's store work for one call, added to this server's counters and metrics."""
        if stats:
            self.db.stats.add(**stats)
        for transaction in transactions:
            self.metrics.observe_transaction(*transaction)

    def _on_loop(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    async def _build(self, address: str, credentials: grpc.ServerCredentials | None) -> int:
        settings = self.settings
        limit = settings.max_message_bytes
        self.grpc = aio.server(
            interceptors=[AccessInterceptor(settings.tokens)] if settings.tokens is not None else None,
            options=[
                ("grpc.so_reuseport", int(self.reuse_port)),
                ("grpc.max_receive_message_length", limit),
                ("grpc.max_send_message_length", limit),
                ("grpc.server_handshake_timeout_ms", int(settings.receive_timeout * 1000)),
                # gRPC drops calls at random (the caller sees CANCELLED) once over 1,000 wait for the
                # event loop to take them (its default).  A burst within the cap, such as stalled
                # callers re-opening their calls as their receive timeouts end, must cost nobody a call.
                ("grpc.server.max_pending_requests", settings.max_concurrent_calls),
                ("grpc.server.max_pending_requests_hard_limit", 2 * settings.max_concurrent_calls),
            ],
            maximum_concurrent_rpcs=settings.max_concurrent_calls,
        )
        self.grpc.add_generic_rpc_handlers((self.dispatcher,))
        names = [SERVICE_NAME]
        self.health: Any = None
        if settings.health:
            self.health = health.aio.HealthServicer()
            health_pb2_grpc.add_HealthServicer_to_server(self.health, self.grpc)
            names.append(health_pb2.DESCRIPTOR.services_by_name["Health"].full_name)
        if settings.reflection:
            reflection.enable_server_reflection((*names, reflection.SERVICE_NAME), self.grpc)
        try:
            if credentials is None:
                return self.grpc.add_insecure_port(address)
            return self.grpc.add_secure_port(address, credentials)
        except RuntimeError:
            raise StartupError(f"cannot listen on {address} (in use, or not an address of this machine)") from None

    def _store_too_new(self, exc: Exception) -> None:
        """The store was raised past what this release reads: stop serving it (on a thread of its own:
        a stop waits for the reporter's thread, which calls this)."""
        threading.Thread(target=self.stop, args=(self._grace,), name="stop-store-too-new", daemon=True).start()

    def start(self) -> Server:
        self.reporter.report_now()  # with the address it serves (known since the port was bound)
        self.reporter.start()
        self._on_loop(self.grpc.start())
        if self.health is not None:
            for name in ("", SERVICE_NAME):
                self._on_loop(self.health.set(name, health_pb2.HealthCheckResponse.SERVING))
        if self.housekeeping is not None:
            self.housekeeping.start()
        if self.delivery is not None:
            self.delivery.start()
        return self

    def start_readers(self) -> None:
        """Start the reader processes now, in the background, instead of at the first heavy read
        (a fresh interpreter takes a second to start)."""
        if self.dispatcher.readers is not None:
            self.dispatcher.readers.start()

    def stop(self, grace: float = 10.0) -> None:
        """Refuse new calls, let in-flight ones (writes included) finish within ``grace`` seconds,
        stop the rest at their next check, then close the store."""
        with self._stop_lock:
            if self._stopped.is_set():
                return
            self._stop_requested.set()
            # Other front ends drain side by side with the gRPC server.
            hooks = [threading.Thread(target=self._run_stop_hook, args=(hook, grace)) for hook in self._stop_hooks]
            for hook in hooks:
                hook.start()
            try:
                if self.health is not None:
                    self._on_loop(self.health.enter_graceful_shutdown())
                self._on_loop(self.grpc.stop(grace))
            finally:
                for hook in hooks:
                    hook.join()
                self.dispatcher.shutdown()  # threads of cancelled calls end before the store closes
                if self.housekeeping is not None:
                    self.housekeeping.join()
                if self.delivery is not None:
                    self.delivery.join()
                self.reporter.join()
                self.reporter.withdraw()
                self._close_loop()
                self.db.close()
                self._stopped.set()

    def add_stop_hook(self, stop: Callable[[float], None]) -> None:
        """Have :meth:`stop` call ``stop(grace)`` (another front end's own graceful stop) before
        the store closes."""
        self._stop_hooks.append(stop)

    @staticmethod
    def _run_stop_hook(stop: Callable[[float], None], grace: float) -> None:
        try:
            stop(grace)
        except Exception:
            log.exception("stopping %r failed", stop)

    def _close_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def wait(self) -> None:
        """Block until a stop is requested (``stop``, or a signal after ``stop_on_signals``); a
        signal's stop runs here, in the calling thread, so the store is closed before this returns."""
        while not self._stop_requested.wait(0.5):
            pass
        self.stop(self._grace)

    def stop_on_signals(self, grace: float = 10.0) -> None:
        """SIGTERM and SIGINT (Ctrl-C) make ``wait`` stop the server gracefully (call from the main thread)."""
        self._grace = grace

        def handler(signum: int, frame: object) -> None:
            if self._stop_requested.is_set():
                log.warning("signal %d: already stopping", signum)
                return
            log.warning("signal %d: shutting down (up to %.0f s for in-flight calls)", signum, grace)
            self._stop_requested.set()

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)


def tune_for_serving() -> None:
    """Interpreter settings for a process that serves calls (``serve``, each ``--processes`` worker),
    once its server has started.

    - Threads switch every 0.5 ms instead of 5 ms, so a point read waiting for the interpreter
      behind a long call is not delayed by whole 5 ms slices.
    - What start-up made (modules, descriptors: most of the process's objects) is moved out of
      the garbage collector's sight, and the young generation is collected less often: every call
      allocates many objects, and full collections that walked them all paused every call.
    """
    sys.setswitchinterval(0.0005)
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, 20, 20)


def _server_credentials(settings: ServerSettings) -> grpc.ServerCredentials | None:
    if settings.tls is None:
        return None
    cert, key, client_ca = settings.tls.read()
    try:
        return grpc.ssl_server_credentials(
            [(key, cert)], root_certificates=client_ca, require_client_auth=client_ca is not None
        )
    except Exception as exc:
        raise StartupError(f"the TLS certificate or key is not usable: {exc}") from None


def _check_free(address: str) -> None:
    """Refuse an address another process listens on, before opening the store (gRPC's own bind
    refuses it too, later and with a log line of its own)."""
    host, _, port = address.rpartition(":")
    if not port.isdigit() or int(port) == 0:
        return
    try:
        infos = socket.getaddrinfo(host.strip("[]") or None, int(port), type=socket.SOCK_STREAM)
    except OSError as exc:
        raise StartupError(f"cannot listen on {address}: {exc.strerror}") from None
    for family, kind, proto, _, where in infos:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC does: TIME_WAIT is no owner
            try:
                probe.bind(where)
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    raise StartupError(
                        f"cannot listen on {address}: the address is in use by another process"
                    ) from None
                if exc.errno == errno.EADDRNOTAVAIL:
                    raise StartupError(f"cannot listen on {address}: not an address of this machine") from None
