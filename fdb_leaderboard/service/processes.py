"""Several server processes answering on one address: ``fdb-leaderboard serve --processes N``.

Python runs one thread of Python code at a time per process, so a gRPC server uses about one
core however many threads it has.  The usual way past that is several processes listening on
the same port with ``SO_REUSEPORT``, the kernel spreading connections over them.  The
processes share nothing but the store (FoundationDB, or an LMDB store, which several
processes may open), so each is an ordinary :class:`~.server.Server`.

Port sharing must stay deliberate: the supervisor first binds the address *without*
``SO_REUSEPORT``, which fails if anything at all listens there (another server, ours or not),
and reports that plainly.  It then keeps a ``SO_REUSEPORT`` socket bound to the port for as
long as it runs, so the port stays its group's: a server started later without port sharing
(every single-process server) cannot bind it, and another supervisor's probe fails.

The supervisor starts each worker with the ``spawn`` method (a fresh interpreter: gRPC must
not be forked once running), replaces a worker that dies (at most ``MAX_RESTARTS`` in
``RESTART_WINDOW`` seconds, then it gives up and stops them all), and on SIGTERM or SIGINT
asks every worker to stop gracefully and waits for them.  A worker whose supervisor died
(SIGKILL) stops by itself.
"""

from __future__ import annotations

import errno
import logging
import multiprocessing
import os
import signal
import socket
import threading
import time
from collections import deque
from multiprocessing.process import BaseProcess

from ..errors import InvalidArgument
from ..store import StoreUnavailable
from .settings import ServerSettings

log = logging.getLogger("fdb_leaderboard.service")

MAX_PROCESSES = 64
MAX_RESTARTS = 5
RESTART_WINDOW = 60.0
READY_TIMEOUT = 60.0
ORPHAN_CHECK_SECONDS = 1.0


def split_address(address: str) -> tuple[str, int]:
    """``host:port`` (IPv6 hosts in brackets) as (host, port)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise InvalidArgument(f"address {address!r} is not host:port")
    return host.strip("[]") or "0.0.0.0", int(port)


def claim_port(address: str) -> socket.socket:
    """A ``SO_REUSEPORT`` socket bound to ``address`` (port 0 picks a free port), after checking
    that nothing listens there.  Keep it open as long as the workers run."""
    host, port = split_address(address)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    probe = socket.socket(family, socket.SOCK_STREAM)
    try:
        probe.bind((host, port))
        port = probe.getsockname()[1]
    except OSError as exc:
        probe.close()
        if exc.errno == errno.EADDRINUSE:
            raise StoreUnavailable(f"cannot listen on {address}: the address is in use by another process") from None
        raise StoreUnavailable(f"cannot listen on {address}: {exc.strerror}") from None
    probe.close()
    holder = socket.socket(family, socket.SOCK_STREAM)
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        holder.bind((host, port))
    except OSError as exc:  # taken in the instant between the probe and now
        holder.close()
        raise StoreUnavailable(f"cannot listen on {address}: {exc.strerror}") from None
    return holder


def _worker(
    store_url: str,
    address: str,
    max_workers: int,
    grace: float,
    supervisor: int,
    ready: multiprocessing.Queue,
    settings: ServerSettings | None = None,
) -> None:
    """One worker process: a port-sharing server until SIGTERM, or until its supervisor is gone
    (killed without a chance to stop it: the worker must not keep serving alone)."""
    from .server import Server, tune_for_serving

    try:
        server = Server(store_url, address, max_workers, reuse_port=True, settings=settings).start()
        server.start_readers()
        tune_for_serving()
    except Exception as exc:  # reported by the supervisor, in one line
        ready.put(f"{type(exc).__name__}: {exc}")
        return
    server.stop_on_signals(grace)
    ready.put((server.store_format.version, server.store_format.recorded))  # started: the store's format

    def watch_supervisor() -> None:
        while os.getppid() == supervisor:
            time.sleep(ORPHAN_CHECK_SECONDS)
        log.warning("the supervisor of server process %d is gone: stopping", os.getpid())
        server.stop(grace)

    threading.Thread(target=watch_supervisor, name="supervisor-watch", daemon=True).start()
    server.wait()


class Supervisor:
    """``processes`` workers serving ``store_url`` on ``address``."""

    def __init__(
        self,
        store_url: str,
        address: str,
        processes: int,
        max_workers: int = 16,
        grace: float = 10.0,
        settings: ServerSettings | None = None,
    ):
        if not 1 <= processes <= MAX_PROCESSES:
            raise InvalidArgument(f"processes must be from 1 to {MAX_PROCESSES}, not {processes}")
        self.store_url = store_url
        self.processes = processes
        self.max_workers = max_workers
        self.grace = grace
        self.settings = settings
        self._holder = claim_port(address)
        host = address.rpartition(":")[0]
        self.address = f"{host}:{self._holder.getsockname()[1]}"
        self._context = multiprocessing.get_context("spawn")
        self._workers: list[BaseProcess] = []
        self._restarts: deque[float] = deque()
        self._stopping = threading.Event()
        self.store_format: tuple[int, bool] = (0, False)  # (version, recorded), as the workers found it

    def _spawn(self) -> BaseProcess:
        ready = self._context.Queue()
        worker = self._context.Process(
            target=_worker,
            args=(self.store_url, self.address, self.max_workers, self.grace, os.getpid(), ready, self.settings),
            name="fdb-leaderboard-worker",
        )
        worker.start()
        try:
            answer = ready.get(timeout=READY_TIMEOUT)  # the store's format, or why it failed
        except Exception:
            answer = f"the worker did not start within {READY_TIMEOUT:.0f} s"
        if isinstance(answer, str):
            worker.terminate()
            worker.join()
            raise StoreUnavailable(f"a server process could not start: {answer}")
        self.store_format = answer
        return worker

    def start(self) -> Supervisor:
        """Start every worker; each answers once this returns.  Raises if one cannot start."""
        try:
            for _ in range(self.processes):
                self._workers.append(self._spawn())
        except BaseException:
            self.stop()
            raise
        return self

    def pids(self) -> list[int]:
        return [worker.pid for worker in self._workers if worker.pid is not None]

    def stop(self) -> None:
        """Ask every worker to stop gracefully (SIGTERM), wait for them, and free the port."""
        self._stopping.set()
        for worker in self._workers:
            if worker.is_alive():
                worker.terminate()  # SIGTERM: the worker's graceful stop
        for worker in self._workers:
            worker.join(self.grace + 5)
            if worker.is_alive():
                log.warning("server process %s did not stop in time: killing it", worker.pid)
                worker.kill()
                worker.join()
        self._holder.close()

    def stop_on_signals(self) -> None:
        def handler(signum: int, frame: object) -> None:
            log.info("signal %d: stopping %d server processes", signum, len(self._workers))
            self._stopping.set()

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)

    def wait(self) -> int:
        """Keep the workers running until asked to stop; returns the exit status (0: a clean stop)."""
        status = 0
        while not self._stopping.wait(0.5):
            for i, worker in enumerate(self._workers):
                if worker.is_alive():
                    continue
                now = time.monotonic()
                while self._restarts and now - self._restarts[0] > RESTART_WINDOW:
                    self._restarts.popleft()
                if len(self._restarts) >= MAX_RESTARTS:
                    log.error(
                        "server processes exited %d times within %.0f s: stopping", MAX_RESTARTS + 1, RESTART_WINDOW
                    )
                    self._stopping.set()
                    status = 1
                    break
                self._restarts.append(now)
                log.warning("server process %s exited with status %s: starting another", worker.pid, worker.exitcode)
                try:
                    self._workers[i] = self._spawn()
                except StoreUnavailable as exc:
                    log.error("%s: stopping", exc)
                    self._stopping.set()
                    status = 1
                    break
        self.stop()
        return status
