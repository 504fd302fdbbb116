"""``serve --processes N``: several server processes answer on one address, deliberately.

Each test starts the real command in a child process and talks to it with the client:
connections spread over the workers, every worker serves the same store, a second server
on the address is refused at once, a worker that dies is replaced, and SIGTERM stops the
whole group cleanly.
"""

from __future__ import annotations

import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.proto import service_pb2_grpc as pb_grpc
from fdb_leaderboard.service.catalog import Catalog
from fdb_leaderboard.store import open_database
from tests.conftest import ServerPlace, _skip_fdb_if_unavailable, wait_until

SERVE = [sys.executable, "-c", "from fdb_leaderboard.cli import main; main()", "serve"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def worker_pids(parent: int) -> list[int]:
    """The supervisor's worker processes (its children running a server)."""
    out = subprocess.run(["ps", "-ww", "-o", "pid=,ppid=,args=", "-e"], capture_output=True, text=True, check=True)
    pids = []
    for line in out.stdout.splitlines():
        pid, ppid, args = line.split(None, 2)
        if int(ppid) == parent and "spawn_main" in args:
            pids.append(int(pid))
    return pids


def established_on(pid: int, port: int) -> int:
    """How many TCP connections process ``pid`` accepted on local ``port``."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if match := re.fullmatch(r"socket:\[(\d+)\]", target):
            inodes.add(match.group(1))
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local_port = int(fields[1].rsplit(":", 1)[1], 16)
            if local_port == port and fields[3] == "01" and fields[9] in inodes:  # 01: ESTABLISHED
                count += 1
    return count


def is_worker(pid: int) -> bool:
    try:
        return "spawn_main" in Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:
        return False


def own_connection(address: str) -> LeaderboardClient:
    """A client with a connection of its own (channels of one process share connections to
    one address unless told otherwise, and the kernel spreads connections, not calls)."""
    client = LeaderboardClient(address)
    client.channel.close()
    client.channel = grpc.insecure_channel(address, options=[("grpc.use_local_subchannel_pool", 1)])
    client.stub = pb_grpc.LeaderboardStub(client.channel)
    return client


class Group:
    def __init__(self, child: subprocess.Popen, address: str) -> None:
        self.child = child
        self.address = address
        self.port = int(address.rsplit(":", 1)[1])


def start_group(store: str, processes: int) -> Group:
    address = f"127.0.0.1:{free_port()}"
    child = subprocess.Popen(
        [*SERVE, "--store", store, "--address", address, "--processes", str(processes), "--grace", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    readable, _, _ = select.select([child.stdout], [], [], 90)
    line = child.stdout.readline() if readable else ""  # type: ignore[union-attr]
    if "serving on" not in line:
        child.kill()
        raise AssertionError(f"the server group did not start: {line!r} {child.stderr.read()}")  # type: ignore[union-attr]
    return Group(child, address)


@pytest.fixture(params=["lmdb", "fdb"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "lmdb":
        return f"lmdb:{tmp_path / 'store'}"
    _skip_fdb_if_unavailable()
    return f"fdb:{os.environ['FDB_CLUSTER_FILE']}"


@pytest.fixture
def group(store: str) -> Iterator[Group]:
    running = start_group(store, 2)
    yield running
    if running.child.poll() is None:
        running.child.kill()
        running.child.wait()


def test_workers_share_the_address_and_the_store(group: Group) -> None:
    name = f"shared-{os.getpid()}-{time.monotonic_ns()}"
    workers = worker_pids(group.child.pid)
    assert len(workers) == 2
    clients = [own_connection(group.address) for _ in range(24)]
    try:
        clients[0].create_index(name, high_score_first=True)
        clients[0].update_windows(name, windows=[], high_score_first=True)
        for i, client in enumerate(clients):
            client.add_score(name, (f"p{i}",), 100 + i, 1)
        # Every client, whichever worker it reached, reads every write.
        for client in clients:
            assert [entry.pk[0] for entry in client.top(name, 3)] == ["p23", "p22", "p21"]
        # The kernel spread the 24 connections over both workers (all on one: probability 2**-23).
        spread = [established_on(pid, group.port) for pid in workers]
        assert sum(spread) >= 24 and min(spread) > 0, spread
    finally:
        for client in clients:
            client.close()


def test_processes_serve_grpc_only_and_refuse_an_http_address(tmp_path: Path) -> None:
    cli = str(Path(sys.executable).parent / "fdb-leaderboard")
    serve = [cli, "serve", "--store", f"lmdb:{tmp_path / 's'}", "--address", "127.0.0.1:0", "--processes", "2"]
    done = subprocess.run([*serve, "--http-address", "127.0.0.1:0"], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr.splitlines()) == (
        2,
        [
            "Error: --processes serves gRPC only: run the HTTP front end (--http-address) in a server of its own "
            "(see fdb-leaderboard serve --help)"
        ],
    )
    assert not (tmp_path / "s").exists()  # refused before the store was opened


def test_a_second_server_on_the_address_is_refused_at_once(group: Group, tmp_path: Path) -> None:
    for extra in ([], ["--processes", "2"]):  # at once: the run's timeout would end one waiting for the address
        result = subprocess.run(
            [*SERVE, "--store", f"lmdb:{tmp_path / 'other'}", "--address", group.address, *extra],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode != 0
        assert "in use" in result.stderr or "bind" in result.stderr.lower(), result.stderr
    assert group.child.poll() is None  # the group still serves


def test_a_dead_worker_is_replaced_and_sigterm_stops_the_group(group: Group, store: str) -> None:
    """On the embedded store the first worker makes the redo log's checkpoints: killed, it takes
    its pin with it, and the others take over; no acknowledged write is lost, and the group's
    stop leaves a plain store."""
    name = f"dead-{os.getpid()}-{time.monotonic_ns()}"
    clients = [own_connection(group.address) for _ in range(8)]
    try:
        clients[0].create_index(name, high_score_first=True)
        clients[0].update_windows(name, windows=[], high_score_first=True)
        for i, client in enumerate(clients):
            client.add_score(name, (f"before{i}",), i, 1)
        first, _ = worker_pids(group.child.pid)
        os.kill(first, signal.SIGKILL)
        wait_until(
            lambda: len(now := worker_pids(group.child.pid)) == 2 and first not in now, f"a worker replacing {first}"
        )
    finally:
        for client in clients:
            client.close()
    clients = [own_connection(group.address) for _ in range(8)]
    try:
        for i, client in enumerate(clients):
            client.add_score(name, (f"after{i}",), 100 + i, 1)
        assert clients[0].count(name) == 16
    finally:
        for client in clients:
            client.close()
    group.child.send_signal(signal.SIGTERM)
    assert group.child.wait(30) == 0
    assert not worker_pids(group.child.pid)
    with socket.socket() as probe:  # the address is free again (the clients' closed connections may linger)
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", group.port))
    if store.startswith("lmdb:"):
        path = Path(store[5:])
        assert not [p.name for p in path.iterdir() if p.name.endswith((".checkpoint", ".log", ".head"))]
        with open_database(store) as db:
            index = Catalog(db).get(name)
            assert index.count() == 16 and index.check() == []


def test_workers_stop_when_the_supervisor_is_killed(group: Group) -> None:
    workers = worker_pids(group.child.pid)
    group.child.kill()
    group.child.wait()
    wait_until(lambda: not any(is_worker(pid) for pid in workers), "orphaned workers stopping")


def test_servers_of_one_store_follow_an_index_another_dropped_and_created_again(server_place: ServerPlace) -> None:
    """Each server process keeps the indexes it opened; when another process drops an index and
    creates one of the same name, a kept index's transactions find out and commit nothing, and
    the call runs again on the new index: no write is acknowledged into the dropped one."""
    first, second = server_place.start(), server_place.start()
    try:
        with LeaderboardClient(first.address) as a, LeaderboardClient(second.address) as b:
            a.create_index("game")
            a.update_windows("game")
            a.add_score("game", ("old",), 10, 1)
            assert [e.pk for e in a.top("game", 5)] == [("old",)]  # `first` keeps the index open
            b.drop_index("game")
            b.create_index("game")
            b.update_windows("game")
            a.add_score("game", ("new",), 20, 2)  # through `first`: must land in the new index
            assert [(e.pk, e.score) for e in b.top("game", 5)] == [(("new",), 20)]
            assert [(e.pk, e.score) for e in a.top("game", 5)] == [(("new",), 20)]
            b.drop_index("game")
            with pytest.raises(grpc.RpcError) as gone:
                a.add_score("game", ("late",), 30, 3)
            assert gone.value.code() is grpc.StatusCode.NOT_FOUND
            assert b.list_indexes() == []
    finally:
        first.stop(grace=1)
        second.stop(grace=1)
