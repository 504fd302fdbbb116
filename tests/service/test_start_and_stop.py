"""A server's start and stop: owner-only store files, one opener's durability at a time, a taken address
and other startup refusals as one line, a signal's clean stop, and fills left unfinished completed
when a server starts or by the maintenance."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fdb_leaderboard.cli.maintenance import maintenance_pass
from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.index import LeaderboardIndex
from fdb_leaderboard.service import Server, StartupError
from fdb_leaderboard.store import StoreError, open_database
from tests.conftest import wait_until
from tests.support.servers import _cli, serve

DAY = 86_400
ROOT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).parent / "fdb-leaderboard")


# -- the store ------------------------------------------------------------------------------------


def test_store_files_are_owner_only(tmp_path: Path) -> None:
    (tmp_path / "c").mkdir(mode=0o755)  # made beforehand, as the usual umask makes directories
    for url in (
        f"lmdb:{tmp_path / 'a'}?redo_log=false",
        f"lmdb:{tmp_path / 'b'}?checkpoint_seconds=0.01&log_segment_bytes=65536",
        f"lmdb:{tmp_path / 'c'}",
    ):
        with open_database(url) as db:
            db.run(lambda tr: tr.set(b"k", b"v"))
            path = Path(url[5:].split("?")[0])
            if "log_segment_bytes" in url:  # the files the log makes too: a preallocated segment, the checkpoint
                for i in range(40):
                    db.run(lambda tr, i=i: tr.set(b"big%d" % i, bytes(4000)))
                head = db.redo_log.head  # type: ignore[attr-defined]
                wait_until(lambda head=head: head.cursor().room > 0, "a preallocated log segment in use")
            assert stat.S_IMODE(path.stat().st_mode) == 0o700
            modes = {}
            for file in path.iterdir():
                with contextlib.suppress(FileNotFoundError):  # a log segment the next checkpoint removed
                    modes[file.name] = stat.S_IMODE(file.stat().st_mode)
            assert "data.mdb" in modes and all(mode & 0o077 == 0 for mode in modes.values()), modes


@contextlib.contextmanager
def _held_by_another_process(url: str) -> Iterator[None]:
    holder = subprocess.Popen(
        [sys.executable, "-c", f"import sys; from fdb_leaderboard.store import open_database; "
         f"db = open_database({url!r}); print('open', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "open"  # type: ignore[union-attr]
        yield
    finally:
        holder.communicate("")


def test_a_store_refuses_an_opener_with_another_durability(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with _held_by_another_process(f"lmdb:{path}"):  # durable through the redo log, the default
        for other in ("durable=false", "redo_log=false"):
            with pytest.raises(StoreError, match="open in another process with the redo log"):
                open_database(f"lmdb:{path}?{other}")
        open_database(f"lmdb:{path}").close()  # the same options share it
    with _held_by_another_process(f"lmdb:{path}?redo_log=false"):  # durable, every commit's pages synced
        with pytest.raises(StoreError, match="open in another process with another mode"):
            open_database(f"lmdb:{path}?redo_log=true")
        with open_database(f"lmdb:{path}") as db:  # naming no mode, it joins the holder's
            assert db.redo_log is None
        with pytest.raises(StoreError, match="open in another process with durable=True"):
            open_database(f"lmdb:{path}?durable=false")
        open_database(f"lmdb:{path}?redo_log=false").close()
    open_database(f"lmdb:{path}?durable=false").close()  # once it is gone, anything goes


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_second_server_on_a_taken_address_fails_at_once(tmp_path: Path) -> None:
    running = serve(tmp_path / "a")
    try:
        with pytest.raises(
            StartupError, match=f"cannot listen on {running.address}: the address is in use by another process"
        ):
            Server(f"lmdb:{tmp_path / 'b'}?durable=false", running.address)
        # At once: _cli's timeout would end a server waiting for the address to become free.
        done = _cli([CLI, "serve", "--store", f"lmdb:{tmp_path / 'c'}",
                     "--address", running.address, "--http-address", "off"])  # fmt: skip
        assert done.returncode == 1
        assert done.stderr.strip().splitlines() == [
            f"Error: cannot listen on {running.address}: the address is in use by another process"
        ]
    finally:
        running.stop(grace=1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--store", "nosuch:x"], "Error: "),
        (
            ["--address", "0.0.0.0:0"],
            "Error: refusing to listen on 0.0.0.0:0 without authentication: configure tokens (serve --tokens FILE",
        ),
        (["--tokens", "/nonexistent/tokens"], "Error: cannot read token file /nonexistent/tokens"),
    ],
)
def test_startup_refusals_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    base = [CLI, "serve", "--store", f"lmdb:{tmp_path / 's'}", "--http-address", "off"]
    done = _cli([*base, "--address", "127.0.0.1:0", *args])
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1 and lines[0].startswith(message), done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_gracefully_and_closes_the_store(tmp_path: Path, stop_signal: int) -> None:
    path = tmp_path / "s"
    port = _free_port()
    server = subprocess.Popen(
        [CLI, "serve", "--store", f"lmdb:{path}",
         "--address", f"127.0.0.1:{port}", "--grace", "5", "--http-address", "127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    try:
        assert "serving on" in server.stdout.readline()
        with LeaderboardClient(f"127.0.0.1:{port}") as lb:
            lb.create_index("game")
            lb.update_windows("game")
            for i in range(50):
                lb.add_score("game", (f"p{i}",), i, i)
        assert any(name.startswith("redo") and name != "redo.lock" for name in os.listdir(path))
        server.send_signal(stop_signal)
        out, err = server.communicate(timeout=30)
    finally:
        server.kill()
    assert server.returncode == 0, err
    assert "store closed" in out
    left = sorted(os.listdir(path))
    assert not [n for n in left if n.endswith((".log", ".checkpoint", ".head"))], left  # no log: nothing to replay
    with open_database(f"lmdb:{path}") as db:
        assert LeaderboardIndex.open(db, _prefix_of(db, "game")).count() == 50


def _prefix_of(db: object, name: str) -> bytes:
    from fdb_leaderboard.service.catalog import Catalog

    return Catalog(db).entry(name).prefix  # type: ignore[arg-type]


def test_windows_left_filling_are_finished_when_a_server_starts(tmp_path: Path) -> None:
    running = serve(tmp_path / "s")  # (without maintenance: the windows stay filling)
    with LeaderboardClient(running.address) as lb:
        for name in ("started", "maintained"):  # two indexes: each is resumed
            lb.create_index(name)
            lb.update_windows(name)
            lb.write_batch(name, [((f"p{i}",), [(i, i)]) for i in range(300)])
            # A new window over stored scores, left filling (as a crashed load or fill leaves it).
            lb.update_windows(name, specs=[(1, 0, DAY, DAY, 1)], rebuild="IF_OVERLAPPING_CHANGED")
            assert any(w.filling for w in lb.list_windows(name).windows)
    running.stop(grace=1)
    running = serve(tmp_path / "s", maintain_every=60)  # the default: it maintains on start
    try:
        with LeaderboardClient(running.address) as lb:
            wait_until(
                lambda: not any(w.filling for name in ("started", "maintained") for w in lb.list_windows(name).windows),
                "the server finishing the fills it found on start",
            )
            for name in ("started", "maintained"):
                assert lb.count(name, 1, 0) == 300 and lb.verify(name) == []
    finally:
        running.stop(grace=1)


def test_maintain_finishes_fills_whatever_the_policy(board) -> None:
    _, lb = board
    lb.update_windows("game", high_score_first=True, specs=[(1, 0, DAY, DAY, 1)], rebuild="IF_OVERLAPPING_CHANGED")
    assert any(w.filling for w in lb.list_windows("game").windows)
    report = maintenance_pass(lb, 0)
    assert report == ["game: filled windows from 12 records"]
    assert not any(w.filling for w in lb.list_windows("game").windows) and lb.count("game", 1, 0) == 12
