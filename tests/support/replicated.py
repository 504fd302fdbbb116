"""A replicated FoundationDB cluster, service processes on it, and a keyed write and read load
(not a test module: tests/fdb/test_replicated.py and tools/bench failover use it).

- :class:`Cluster`: ``fdb-local`` on a directory (``start DIR ssd 3 double``: 3 processes, each
  its own zone and machine, 3 coordinators; or one process); kill and bring back processes, read
  each one's roles from ``status json``, exclude and include them; :func:`own_cluster`, a test's
  own (skipped, or failed where FoundationDB is required, when none can start here).
- :class:`ServeProcess`: ``fdb-leaderboard serve`` in a process of its own, as a user runs it.
- :class:`Load`: writer threads adding to records of a SUM and a BEST index and reader threads
  asking ranks and top 10s, each call sent once per attempt (``retry=None``) and sent again with
  the same idempotency key after UNAVAILABLE or DEADLINE_EXCEEDED with the client's backoff
  (:class:`~fdb_leaderboard.client.RetryPolicy`), until answered, as the client does (its
  attempts are bounded; an application keeps the key and sends again).  Every attempt is
  recorded, so a test sees each one's outcome and time; every write's acknowledgement too, so
  totals can be compared with what was acknowledged.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc

from fdb_leaderboard.client import LeaderboardClient, RetryPolicy

FDB_LOCAL = Path(os.environ.get("FDB_LOCAL") or Path(__file__).resolve().parents[3] / "shared" / "fdb" / "fdb-local")
RETRYABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


class Cluster:
    """A throwaway cluster in ``directory``, driven by fdb-local."""

    def __init__(self, directory: Path, processes: int = 3, redundancy: str = "double") -> None:
        self.directory = directory
        self.processes = processes
        self.redundancy = redundancy
        self.cluster_file = str(directory / "fdb.cluster")

    def _run(self, *args: str, timeout: float = 240) -> str:
        done = subprocess.run([str(FDB_LOCAL), *args], capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise AssertionError(f"fdb-local {' '.join(args)} failed: {done.stderr or done.stdout}")
        return done.stdout.strip()

    def start(self) -> None:
        """Create (ssd engine) or bring back every stopped process, and wait until available."""
        self._run("start", str(self.directory), "ssd", str(self.processes), self.redundancy)

    def kill(self, number: int | None = None) -> None:
        """SIGKILL process ``number``, or every process."""
        self._run("kill", str(self.directory), *([str(number)] if number is not None else []))

    def stop(self) -> None:
        self._run("stop", str(self.directory))

    def cli(self, command: str, timeout: float = 120) -> str:
        arguments = ("cli", str(self.directory), "--timeout", str(int(timeout)), "--exec", command)
        return self._run(*arguments, timeout=timeout + 30)

    def ports(self) -> dict[int, int]:
        """Each running process's port, by number."""
        out = {}
        for line in self._run("pids", str(self.directory)).splitlines():
            number, _pid, port = line.split()
            out[int(number)] = int(port)
        return out

    def status(self) -> dict:
        return json.loads(self.cli("status json", timeout=20))

    def roles(self) -> dict[int, list[str]]:
        """The roles of each process, by number (``status json``)."""
        by_port = {port: number for number, port in self.ports().items()}
        out: dict[int, list[str]] = {}
        for process in self.status()["cluster"]["processes"].values():
            port = int(process["address"].rsplit(":", 1)[1])
            if port in by_port:
                out[by_port[port]] = sorted(role["role"] for role in process.get("roles", ()))
        return out

    def wait_recovered(self, timeout: float = 120) -> float:
        """Wait until the cluster has recovered with every process back (the new generation of
        logs recruited, storage caught up: FoundationDB's ``fully_recovered``); returns the
        seconds it took.  Data distribution may still be starting: ``exclude`` waits for it."""
        started = time.monotonic()
        while True:
            try:
                cluster = self.status()["cluster"]
                if cluster.get("recovery_state", {}).get("name") == "fully_recovered":
                    return time.monotonic() - started
            except (AssertionError, ValueError, KeyError, subprocess.TimeoutExpired):
                pass
            if time.monotonic() - started > timeout:
                raise AssertionError(f"the cluster in {self.directory} did not recover in {timeout} s")
            time.sleep(0.5)


def own_cluster(directory: Path, processes: int = 1, redundancy: str = "single") -> Iterator[Cluster]:
    """A cluster of a test's own in ``directory`` (ssd engine), stopped afterwards; the test is
    skipped (failed where FoundationDB is required) when none can start here."""
    from fdb_leaderboard.store import StoreUnavailable
    from fdb_leaderboard.store.fdb_backend import load_fdb
    from tests.conftest import skip_unless_required

    if not os.access(FDB_LOCAL, os.X_OK):
        skip_unless_required(f"no FoundationDB server to start here ({FDB_LOCAL} is missing; set FDB_LOCAL)")
    try:
        load_fdb()
    except StoreUnavailable as exc:
        skip_unless_required(f"the FoundationDB client cannot be used here: {exc}")
    own = Cluster(directory, processes, redundancy)
    own.start()
    try:
        yield own
    finally:
        own.stop()


class ServeProcess:
    """``fdb-leaderboard serve`` on ``url`` in a process of its own, on a free local port
    (``verbose``: its log at INFO, maintenance passes included, in :attr:`output`)."""

    def __init__(self, url: str, *extra: str, verbose: bool = False) -> None:
        command = [sys.executable, "-m", "fdb_leaderboard.cli", *(["-v"] if verbose else []), "serve"]
        command += ["--store", url, "--address", "127.0.0.1:0"]
        command += ["--http-address", "off", "--read-processes", "0", *extra]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.output: list[str] = []
        line = ""
        deadline = time.monotonic() + 60
        while "serving on" not in line:
            line = self.process.stdout.readline()  # type: ignore[union-attr]
            self.output.append(line)
            if (not line and self.process.poll() is not None) or time.monotonic() > deadline:
                raise AssertionError(f"serve did not start: {''.join(self.output)}")
        self.address = line.split("serving on ", 1)[1].split()[0]
        self.pid = self.process.pid
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        for line in self.process.stdout:  # type: ignore[union-attr]
            self.output.append(line)

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        if self.alive():
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@dataclasses.dataclass
class Attempt:
    """One call sent once: what, when it started (monotonic), how long it took, how it ended."""

    kind: str  # "write" or "read"
    started: float
    seconds: float
    code: str  # "OK" or the status code's name
    message: str = ""

    @property
    def ended(self) -> float:
        return self.started + self.seconds


@dataclasses.dataclass
class Write:
    index: str
    pk: str
    value: int
    key: str
    sent_at: float = 0.0  # its first attempt (monotonic)
    acked_at: float | None = None


class Load:
    """Writers and readers on the service at ``address()`` (a callable: a test may switch it)."""

    def __init__(
        self,
        address: Callable[[], str],
        indexes: dict[str, str],  # name -> aggregation (SUM or BEST)
        writers: int = 4,
        readers: int = 2,
        timeout: float = 5.0,
        records: int = 50,
        seed: int = 0,
        patience: float = 120.0,
    ) -> None:
        self.address = address
        self.indexes = indexes
        self.timeout = timeout
        self.records = [f"r{i}" for i in range(records)]
        self.retry = RetryPolicy()
        self.patience = patience  # how long a write stopped by the test may still be sent again
        self.attempts: list[Attempt] = []
        self.writes: list[Write] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._write, args=(seed + i,), daemon=True) for i in range(writers)]
        self._threads += [
            threading.Thread(target=self._read, args=(seed + 100 + i,), daemon=True) for i in range(readers)
        ]
        self._clients: dict[tuple[int, str], LeaderboardClient] = {}

    def __enter__(self) -> Load:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop sending new calls and wait for every write under way to be acknowledged."""
        self._stop.set()
        for thread in self._threads:
            thread.join(self.patience + 30)
        for client in self._clients.values():
            client.close()
        assert not any(thread.is_alive() for thread in self._threads), "a load thread hung"

    def _client(self) -> LeaderboardClient:
        """This thread's client of the current address (a new one when the address changes)."""
        key = (threading.get_ident(), self.address())
        client = self._clients.get(key)
        if client is None:
            client = self._clients[key] = LeaderboardClient(key[1], timeout=self.timeout, retry=None)
        return client

    def _attempt(self, kind: str, call: Callable[[LeaderboardClient], object]) -> tuple[str, object]:
        started = time.monotonic()
        try:
            result = call(self._client())
            code, message = "OK", ""
        except grpc.RpcError as exc:
            result, code, message = None, exc.code().name, exc.details() or ""
        self.attempts.append(Attempt(kind, started, time.monotonic() - started, code, message))
        return code, result

    def _write(self, seed: int) -> None:
        rng = random.Random(seed)
        names = sorted(self.indexes)
        while not self._stop.is_set():
            name = rng.choice(names)
            value = rng.randint(1, 5) if self.indexes[name] == "SUM" else rng.randint(0, 1_000_000)
            write = Write(name, rng.choice(self.records), value, uuid.uuid4().hex, time.monotonic())
            self.writes.append(write)
            tries = 0
            give_up = None
            while True:
                code, _ = self._attempt(
                    "write", lambda lb, w=write: lb.add_score(w.index, w.pk, w.value, 1000, idempotency_key=w.key)
                )
                if code == "OK":
                    write.acked_at = time.monotonic()
                    break
                if code not in {c.name for c in RETRYABLE}:
                    break  # not sent again: the test reports it
                if self._stop.is_set():
                    give_up = give_up or time.monotonic() + self.patience
                    if time.monotonic() > give_up:
                        break
                tries += 1
                time.sleep(self.retry.backoff(min(tries, 5)))

    def _read(self, seed: int) -> None:
        rng = random.Random(seed)
        names = sorted(self.indexes)
        while not self._stop.is_set():
            name, pk = rng.choice(names), rng.choice(self.records)
            if rng.random() < 0.5:
                code, _ = self._attempt("read", lambda lb, name=name: lb.top(name, 10))
            else:
                code, _ = self._attempt("read", lambda lb, name=name, pk=pk: lb.rank(name, pk))
            if code != "OK":
                time.sleep(self.retry.backoff(1))

    # -- what happened -----------------------------------------------------------------------

    def acknowledged(self) -> list[Write]:
        return [write for write in self.writes if write.acked_at is not None]

    def expected_boards(self) -> dict[str, dict[str, int]]:
        """Each index's scores as the acknowledged writes make them (SUM: totals; BEST: maxima)."""
        boards: dict[str, dict[str, int]] = {name: {} for name in self.indexes}
        for write in self.acknowledged():
            board = boards[write.index]
            if self.indexes[write.index] == "SUM":
                board[write.pk] = board.get(write.pk, 0) + write.value
            else:
                board[write.pk] = max(board.get(write.pk, write.value), write.value)
        return boards

    def between(self, begin: float, end: float) -> list[Attempt]:
        """Attempts started in ``[begin, end)``."""
        return [attempt for attempt in self.attempts if begin <= attempt.started < end]

    def first_write_after(self, moment: float) -> float | None:
        """When the first write sent after ``moment`` was acknowledged (None: none was)."""
        acks = [a.ended for a in self.attempts if a.kind == "write" and a.code == "OK" and a.started >= moment]
        return min(acks, default=None)

    def unexpected(self) -> list[Attempt]:
        """Attempts that ended otherwise than answered, or UNAVAILABLE with a message saying to retry."""
        return [a for a in self.attempts if a.code != "OK" and not (a.code == "UNAVAILABLE" and "retry" in a.message)]


def boards_served(lb: LeaderboardClient, indexes: dict[str, str], records: int) -> dict[str, dict[str, int]]:
    """Each index's all-time board as the service has it: pk -> score."""
    return {name: {e.pk[0]: e.score for e in lb.top(name, records)} for name in indexes}


def outage_figures(load: Load, lost: float, back: float) -> dict[str, float]:
    """What losing processes at ``lost`` (brought back at ``back``) cost the load, in seconds:

    - ``first_write``: from the kill to the acknowledgement of the first write sent after it
      (a write sent before the cluster noticed the loss may be acknowledged at once);
    - ``unavailable``: the longest time without an acknowledged write, from a second before the
      kill until the processes were brought back: how long writes stopped;
    - ``p99``: the 99th percentile of calls (writes and reads) sent within 10 s of the kill, and
      ``calls`` how many there were; ``refused``: attempts answered otherwise than OK meanwhile.
    """
    first = load.first_write_after(lost)
    acks = sorted(a.ended for a in load.attempts if a.kind == "write" and a.code == "OK" and a.ended >= lost - 1)
    gaps = [later - earlier for earlier, later in itertools.pairwise(acks) if earlier <= back]
    during = [a.seconds for a in load.between(lost, lost + 10)]
    return {
        "first_write": first - lost if first is not None else float("inf"),
        "unavailable": max(gaps, default=0.0),
        "p99": percentile(during, 0.99),
        "calls": len(during),
        "refused": sum(a.code != "OK" for a in load.between(lost, back + 10)),
    }


def describe_outage(figures: dict[str, float]) -> str:
    return (
        f"writes stopped for {figures['unavailable']:.2f} s (first write sent after the kill acknowledged "
        f"{figures['first_write']:.2f} s after it), p99 of {figures['calls']:.0f} calls sent within 10 s "
        f"{figures['p99'] * 1000:.0f} ms, {figures['refused']:.0f} attempts answered UNAVAILABLE"
    )


def percentile(values: list[float], share: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def wait_for(predicate: Callable[[], bool], timeout: float, every: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every)
    return predicate()
