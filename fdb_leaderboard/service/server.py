"""A running server: the gRPC server, its health and reflection services, and the store it owns."""

from __future__ import annotations

import logging
import signal
import threading
from concurrent import futures

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from ..proto import service_pb2_grpc as pb_grpc
from ..store import StoreUnavailable, open_database
from .catalog import ROOT, Catalog
from .grpc_service import SERVICE_NAME, LeaderboardService

log = logging.getLogger("fdb_leaderboard.service")


class Server:
    """A running server: the gRPC server, its health service and the store it owns."""

    def __init__(
        self,
        store_url: str,
        address: str = "127.0.0.1:50051",
        max_workers: int = 16,
        reuse_port: bool = False,
        catalog_root: bytes = ROOT,
    ) -> None:
        """``reuse_port``: share the port with other processes of one ``serve --processes``
        group (see processes.py); off, binding an address in use fails.  ``catalog_root``: the
        key prefix of every index this server keeps (one store can hold several)."""
        self.db = open_database(store_url)
        self.catalog = Catalog(self.db, catalog_root)
        self.grpc = grpc.server(
            futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="rpc"),
            options=[("grpc.so_reuseport", int(reuse_port))],
        )
        pb_grpc.add_LeaderboardServicer_to_server(LeaderboardService(self.catalog), self.grpc)
        self.health = health.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.grpc)
        reflection.enable_server_reflection(
            (SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME),
            self.grpc,
        )
        self.port = self.grpc.add_insecure_port(address)
        if self.port == 0:
            raise StoreUnavailable(f"cannot listen on {address}")
        self.address = f"{address.rsplit(':', 1)[0]}:{self.port}"
        self._stopped = threading.Event()

    def start(self) -> Server:
        self.grpc.start()
        for name in ("", SERVICE_NAME):
            self.health.set(name, health_pb2.HealthCheckResponse.SERVING)
        return self

    def stop(self, grace: float = 10.0) -> None:
        """Refuse new calls, let in-flight ones (writes included) finish, then close the store."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        self.health.enter_graceful_shutdown()
        self.grpc.stop(grace).wait()
        self.db.close()

    def wait(self) -> None:
        self.grpc.wait_for_termination()

    def stop_on_signals(self, grace: float = 10.0) -> None:
        def handler(signum: int, frame: object) -> None:
            log.info("signal %d: shutting down (up to %.0f s for in-flight calls)", signum, grace)
            threading.Thread(target=self.stop, args=(grace,), daemon=True).start()

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)
