"""The service against slow, careless and hostile callers: bounded work, stalled calls, bad bytes,
tampered continuations, access control (tokens, roles, TLS), startup refusals and clean stops.

Stalled calls are real: gRPC calls whose request message never comes, BulkLoad streams that stop
after one message, and raw TCP connections that send nothing.  Certificates are made by openssl
in the test; tokens are real bearer tokens.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import logging
import os
import signal
import socket
import ssl
import stat
import subprocess
import sys
import threading
import time
import warnings
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import httpx
import pytest
from grpc import aio
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from fdb_leaderboard import access
from fdb_leaderboard.cli.maintenance import maintenance_pass
from fdb_leaderboard.client import AsyncLeaderboardClient, LeaderboardClient
from fdb_leaderboard.errors import InvalidArgument
from fdb_leaderboard.http import HttpServer
from fdb_leaderboard.index import (
    CheckReport,
    Entry,
    IndexSettings,
    LeaderboardIndex,
    ScanType,
    WindowSpec,
    WindowUpdate,
    tuplecodec,
)
from fdb_leaderboard.proto import service_pb2 as pb
from fdb_leaderboard.service import SERVICE_NAME, Server, ServerSettings, StartupError, TlsFiles
from fdb_leaderboard.store import StoreError, StoreUnavailable, open_database
from tests.conftest import wait_until

Code = grpc.StatusCode
DAY = 86_400
READ, WRITE, ADMIN = "reader-token-0123456789", "writer-token-0123456789", "admin-token-0123456789abc"
ROOT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).parent / "fdb-leaderboard")


def serve(path: Path, **settings: object) -> Server:
    """A server over an embedded store; its background maintenance off unless asked for."""
    workers = settings.pop("max_workers", 16)
    settings.setdefault("maintain_every", 0)
    return Server(f"lmdb:{path}?durable=false", "127.0.0.1:0", workers, settings=ServerSettings(**settings)).start()


def call(channel: grpc.Channel, method: str, data: bytes, timeout: float = 10, **kwargs: object) -> bytes:
    """A unary call with a raw request body."""
    return channel.unary_unary(f"/{SERVICE_NAME}/{method}")(data, timeout=timeout, **kwargs)


def code_of(fn: object) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as caught:
        fn()  # type: ignore[operator]
    return caught.value.code(), caught.value.details()


def stalled_calls(channel: grpc.Channel, count: int, method: str = "Top") -> tuple[list, threading.Event]:
    """``count`` calls whose request message never arrives (the client sends headers, then nothing)."""
    release = threading.Event()

    def never() -> Iterator[bytes]:
        release.wait()
        return
        yield b""

    stream = channel.stream_unary(f"/{SERVICE_NAME}/{method}")
    return [stream.future(never(), timeout=60) for _ in range(count)], release


@pytest.fixture
def board(tmp_path: Path) -> Iterator[tuple[Server, LeaderboardClient]]:
    running = serve(tmp_path / "s", max_page=5, receive_timeout=0.5, stream_idle_timeout=0.5, max_workers=2)
    with LeaderboardClient(running.address) as lb:
        lb.create_index("game", high_score_first=True)
        lb.update_windows("game", high_score_first=True)
        lb.write_batch("game", [((f"p{i:02d}",), [(100 - i, i)]) for i in range(12)])
        yield running, lb
    running.stop(grace=1)


# -- bounded work per call -------------------------------------------------------------------------


def test_reads_are_refused_beyond_the_page_limit_and_scans_page_through(board) -> None:
    _, lb = board
    assert [e.pk[0] for e in lb.top("game", 5)] == [f"p{i:02d}" for i in range(5)]
    code, message = code_of(lambda: lb.top("game", 6))
    assert code is Code.INVALID_ARGUMENT and "Top n asks for 6 rows" in message and "at most 5" in message
    code, message = code_of(lambda: lb.around("game", ("p05",), above=3, below=2))
    assert code is Code.INVALID_ARGUMENT and "at most 5" in message
    assert len(lb.around("game", ("p05",), above=2, below=2)) == 5
    code, message = code_of(lambda: lb.scan("game", "BY_RANK", limit=6))
    assert code is Code.INVALID_ARGUMENT and "Scan limit asks for 6 rows" in message
    # No limit: a page of the maximum and a continuation through the rest.
    entries, continuation = lb.scan("game", "BY_RANK")
    assert len(entries) == 5 and continuation
    assert [e.pk[0] for e in lb.scan_all("game", "BY_VALUE", page=5)] == [f"p{i:02d}" for i in reversed(range(12))]
    code, _ = code_of(lambda: lb.top("game", 2**32 - 1))
    assert code is Code.INVALID_ARGUMENT


def test_a_maximal_page_of_maximal_entries_fits_the_message_limit() -> None:
    settings = ServerSettings()
    # Every entry's key stays under 500 bytes (the index's key limit), so a row is under ~600 bytes.
    assert settings.max_page * 600 < settings.max_message_bytes


def test_a_long_range_read_checks_its_time_limit_as_it_goes(tmp_path: Path) -> None:
    from fdb_leaderboard.store import TransactionTimedOut

    with open_database(f"lmdb:{tmp_path / 'a'}?durable=false&transaction_seconds=0.2") as db:
        for start in range(0, 60_000, 10_000):
            db.run(lambda tr, s=start: [tr.set(b"k%08d" % i, b"v" * 50) for i in range(s, s + 10_000)])

        def slow_scan(tr: object) -> None:
            tr.get_range(b"k", b"l", 10)  # type: ignore[attr-defined]
            time.sleep(0.3)  # past the limit: the next long read stops partway, not only at its start
            tr.get_range(b"k", b"l")  # type: ignore[attr-defined]

        with pytest.raises(TransactionTimedOut):
            db.read(slow_scan)


# -- slow and stuck callers -----------------------------------------------------------------------


def test_stalled_calls_hold_no_worker_and_time_out(board, tmp_path: Path) -> None:
    # A receive timeout far longer than the test: every call below is answered while all the
    # stalled calls still wait (were they holding the 2 workers, the calls would wait for them).
    patient = serve(tmp_path / "p", receive_timeout=600, max_workers=2)
    channel = grpc.insecure_channel(patient.address)
    futures, release = stalled_calls(channel, 40)
    raw = [socket.create_connection(("127.0.0.1", patient.port)) for _ in range(20)]  # connect, send nothing
    try:
        with LeaderboardClient(patient.address) as lb:
            lb.create_index("game")
            lb.update_windows("game")
            for i in range(20):
                lb.add_score("game", (f"p{i}",), i, i)
                assert len(lb.top("game", 3)) == min(i + 1, 3)
        assert not any(future.done() for future in futures)
        release.set()  # the stalled calls end their streams without a message
        for future in futures:
            code, message = code_of(future.result)
            assert code is Code.INVALID_ARGUMENT and message == "Top needs a request message"
    finally:
        release.set()
        for sock in raw:
            sock.close()
        channel.close()
        patient.stop(grace=1)
    # A call whose request does not come within the receive timeout ends there.
    running, _ = board  # receive_timeout=0.5
    with grpc.insecure_channel(running.address) as channel:
        futures, release = stalled_calls(channel, 3)
        try:
            for future in futures:
                code, message = code_of(future.result)
                assert code is Code.DEADLINE_EXCEEDED and "the request did not arrive within 0.5 s" in message
        finally:
            release.set()


def hold_the_write_lock(store_url: str) -> subprocess.Popen:
    """Another process in a write transaction of the store at ``store_url`` (so holding its write
    lock) until a line arrives on its stdin."""
    script = (
        "import sys\n"
        "from fdb_leaderboard.store import open_database\n"
        "def hold(tr):\n"
        "    tr.set(b'held', b'')\n"
        "    print('holding', flush=True)\n"
        "    sys.stdin.readline()\n"
        f"with open_database({store_url!r}) as db:\n"
        "    db.run(hold)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
    return holder


def test_reads_of_the_embedded_store_take_no_worker_and_stuck_writes_end_at_their_deadline(tmp_path: Path) -> None:
    """A score write waiting for the store (another process holds its write lock) holds the server's
    only worker thread: reads of a few rows are answered meanwhile, on the event loop, and the write
    answers DEADLINE_EXCEEDED once its deadline and the moment to report progress have passed."""
    running = serve(tmp_path / "s", max_workers=1, default_deadline=1.0)
    holder = None
    try:
        with LeaderboardClient(running.address, timeout=10) as lb:
            lb.create_index("game", high_score_first=True)
            lb.write_batch("game", [((f"p{i}",), [(100 - i, i)]) for i in range(30)])
            holder = hold_the_write_lock(f"lmdb:{tmp_path / 's'}?durable=false")
            outcome: list[tuple[grpc.StatusCode, str]] = []
            channel = grpc.insecure_channel(running.address)  # one attempt (the client would retry)
            request = pb.AddScoreRequest(
                index="game", pk=[pb.Item(string="w")], entry=pb.Entry(score=pb.Score(int=1), timestamp=1)
            )
            write = threading.Thread(
                target=lambda: outcome.append(
                    code_of(lambda: call(channel, "AddScore", request.SerializeToString(), 30))
                )
            )
            write.start()
            while not running.dispatcher.calls:  # the write is on the worker thread
                time.sleep(0.01)
            assert lb.rank("game", ("p3",)) == 3
            assert [entry.pk for entry in lb.top("game", 10)] == [(f"p{i}",) for i in range(10)]
            assert [entry.pk for entry in lb.around("game", ("p9",), above=2, below=2)] == [
                (f"p{i}",) for i in range(7, 12)
            ]
            write.join()  # while the other process still holds the lock: the deadline ended the call
            channel.close()
            code, message = outcome[0]
            assert code is Code.DEADLINE_EXCEEDED and message == "AddScore ran past its deadline on the server"
            holder.stdin.write("\n")  # type: ignore[union-attr]
            holder.stdin.flush()  # type: ignore[union-attr]
            assert holder.wait(timeout=30) == 0
            lb.add_score("game", ("v",), 1000, 1)  # the worker is free again
            assert lb.rank("game", ("v",)) == 0
    finally:
        if holder is not None and holder.poll() is None:
            holder.kill()
        running.stop(grace=1)


def test_score_writes_queued_together_share_a_commit_and_fail_alone(tmp_path: Path) -> None:
    """On the embedded store score writes run on one thread, those queued meanwhile in one commit:
    a write that fails is answered with its own status and takes nothing from the others; when
    the commit itself fails, each write of it is answered with the store's status and none is kept."""
    running = serve(tmp_path / "s")
    store = running.db.inner
    pipeline = running.dispatcher.writes
    assert pipeline is not None
    channel = grpc.insecure_channel(running.address)  # one attempt each (the client would retry)

    def add(index: str, pk: str, score: int | None) -> bytes:
        entry = None if score is None else pb.Entry(score=pb.Score(int=score), timestamp=1)
        return pb.AddScoreRequest(index=index, pk=[pb.Item(string=pk)], entry=entry).SerializeToString()

    def send(requests: dict[str, bytes]) -> dict[str, object]:
        """Each request on a thread of its own, all queued before any runs; what each answered."""
        outcomes: dict[str, object] = {}

        def one(name: str, data: bytes) -> None:
            try:
                outcomes[name] = pb.AddScoreResponse.FromString(call(channel, "AddScore", data)).windows_changed
            except grpc.RpcError as exc:
                outcomes[name] = (exc.code(), exc.details())

        entered, release = threading.Event(), threading.Event()
        holder = threading.Thread(target=lambda: store.run(lambda tr: (entered.set(), release.wait(10))))
        holder.start()  # leads the store's commits until released: the pipeline's batch waits behind it
        assert entered.wait(10)
        first, *rest = requests.items()
        threads = [threading.Thread(target=one, args=item) for item in [first, *rest]]
        threads[0].start()
        wait_until(lambda: running.dispatcher.calls and not pipeline._queue)  # taken, waiting for the store
        for thread in threads[1:]:
            thread.start()
        wait_until(lambda: len(pipeline._queue) == len(rest))
        release.set()
        for thread in [holder, *threads]:
            thread.join(10)
        return outcomes

    try:
        with LeaderboardClient(running.address, timeout=10) as lb:
            lb.create_index("game", high_score_first=True)
            lb.update_windows("game", high_score_first=True)
            commits = store.commits
            outcomes = send(
                {
                    "p0": add("game", "p0", 10),
                    "p1": add("game", "p1", 11),
                    "no entry": add("game", "x", None),
                    "p2": add("game", "p2", 12),
                    "no index": add("nope", "x", 1),
                    "p3": add("game", "p3", 13),
                }
            )
            assert outcomes == {
                "p0": 1,
                "p1": 1,
                "no entry": (Code.INVALID_ARGUMENT, "AddScore needs an entry"),
                "p2": 1,
                "no index": (Code.NOT_FOUND, "no index named 'nope'"),
                "p3": 1,
            }
            assert store.commits - commits == 3  # the holder's, the first write's, then the five queued behind it
            assert [(entry.pk, entry.score) for entry in lb.top("game", 10)] == [
                ((f"p{i}",), 10 + i) for i in (3, 2, 1, 0)
            ]

            commit = store._commit

            def failing_commit(*args: object) -> None:
                if threading.current_thread().name.startswith("writes"):  # the pipeline's (not the holder's)
                    raise StoreUnavailable("the disk went away")
                commit(*args)

            with pytest.MonkeyPatch.context() as patched:
                patched.setattr(store, "_commit", failing_commit)
                outcomes = send({"q0": add("game", "q0", 50), "q1": add("game", "q1", 51), "q2": add("game", "q2", 52)})
            assert set(outcomes.values()) == {(Code.UNAVAILABLE, "the disk went away")}
            assert lb.count("game") == 4  # none of them was kept
            lb.add_score("game", ("q0",), 50, 1)  # the pipeline goes on
            assert lb.rank("game", ("q0",)) == 0
    finally:
        channel.close()
        running.stop(grace=1)


def test_a_unary_method_answers_its_first_message(board) -> None:
    """A unary call carries one request; a raw stream that sends more is answered for the first."""
    running, _ = board
    requests = [pb.CountRequest(index="game").SerializeToString(), pb.CountRequest(index="none").SerializeToString()]
    with grpc.insecure_channel(running.address) as channel:
        answer = channel.stream_unary(f"/{SERVICE_NAME}/Count")(iter(requests), timeout=10)
    assert pb.CountResponse.FromString(answer).count == 12


def test_a_burst_of_calls_within_the_cap_is_taken_whole(tmp_path: Path) -> None:
    """2,500 calls arriving at once (as stalled callers re-open theirs when their receive timeouts
    end) are all taken by the server and end by its receive timeout: gRPC's own backlog limit
    (1,000 by default, beyond which it drops calls at random as CANCELLED) follows the cap."""
    running = serve(tmp_path / "s", receive_timeout=1.0)

    async def burst(count: int) -> list[grpc.StatusCode]:
        channels = [
            aio.insecure_channel(running.address, options=[("grpc.use_local_subchannel_pool", 1)]) for _ in range(4)
        ]
        forever = asyncio.Event()

        async def never() -> AsyncIterator[bytes]:
            await forever.wait()
            yield b""

        async def one(i: int) -> grpc.StatusCode:
            try:
                await channels[i % 4].stream_unary(f"/{SERVICE_NAME}/Top")(never(), timeout=30)
            except grpc.RpcError as exc:
                return exc.code()
            return Code.OK

        for channel in channels:
            await channel.channel_ready()
        try:
            return await asyncio.gather(*(one(i) for i in range(count)))
        finally:
            for channel in channels:
                await channel.close()

    try:
        codes = Counter(asyncio.run(burst(2500)))
        assert codes == {Code.DEADLINE_EXCEEDED: 2500}, codes
    finally:
        running.stop(grace=1)


def test_calls_beyond_the_concurrency_cap_get_resource_exhausted(tmp_path: Path) -> None:
    running = serve(tmp_path / "s", max_concurrent_calls=3, receive_timeout=30)
    channel = grpc.insecure_channel(running.address)
    futures, release = stalled_calls(channel, 3)
    try:
        # Answered until the three stalled calls have reached the server, then refused.
        refusals: list[tuple[grpc.StatusCode, str]] = []

        def refused() -> bool:
            try:
                call(channel, "ListIndexes", b"")
            except grpc.RpcError as exc:
                refusals.append((exc.code(), exc.details()))
            return bool(refusals)

        wait_until(refused, "a fourth concurrent call refused")
        assert refusals[0][0] is Code.RESOURCE_EXHAUSTED, refusals
        release.set()
        for future in futures:
            code_of(future.result)  # the stalled calls end (no message: INVALID_ARGUMENT)
        assert call(channel, "ListIndexes", b"") == b""
    finally:
        release.set()
        channel.close()
        running.stop(grace=1)


def test_a_stalled_bulk_load_times_out_keeps_what_it_sent_and_loads_are_capped(board, tmp_path: Path) -> None:
    running, lb = board
    channel = grpc.insecure_channel(running.address)
    release = threading.Event()

    def one_then_stall() -> Iterator[pb.BulkLoadRequest]:
        yield pb.BulkLoadRequest(
            index="game",
            batch_size=1,
            records=[
                pb.RecordEntries(pk=[pb.Item(string="loaded")], entries=[pb.Entry(score=pb.Score(int=1), timestamp=1)])
            ],
        )
        release.wait()

    load = channel.stream_unary(
        f"/{SERVICE_NAME}/BulkLoad",
        request_serializer=pb.BulkLoadRequest.SerializeToString,
        response_deserializer=pb.BulkLoadResponse.FromString,
    )
    try:
        stalled = [load.future(one_then_stall(), timeout=30) for _ in range(2)]
        results = sorted(code_of(f.result) for f in stalled)
        codes = {code for code, _ in results}
        assert Code.DEADLINE_EXCEEDED in codes
        for code, message in results:
            if code is Code.DEADLINE_EXCEEDED:
                assert (
                    "the next BulkLoad message did not arrive within 0.5 s; the record before it was saved" in message
                )
            else:  # max_bulk_loads is 2 in the defaults; either way no third thread is taken
                assert code is Code.RESOURCE_EXHAUSTED, message
        assert lb.rank("game", ("loaded",)) is not None, results  # the first message's record was saved
    finally:
        release.set()
        channel.close()
    capped = serve(tmp_path / "c", max_bulk_loads=1, stream_idle_timeout=600)  # the first load holds its slot
    channel = grpc.insecure_channel(capped.address)
    load = channel.stream_unary(
        f"/{SERVICE_NAME}/BulkLoad",
        request_serializer=pb.BulkLoadRequest.SerializeToString,
        response_deserializer=pb.BulkLoadResponse.FromString,
    )
    release.clear()
    try:
        with LeaderboardClient(capped.address) as other:
            other.create_index("game")
            other.update_windows("game")
            first = load.future(one_then_stall(), timeout=30)
            # Running (a load keeps the windows it writes filling until it ends), holding its slot:
            wait_until(lambda: any(w.filling for w in other.list_windows("game").windows), "the first load running")
            assert [i.name for i in other.list_indexes()] == ["game"]  # the other calls go on meanwhile
            code, message = code_of(lambda: load(one_then_stall(), timeout=30))
            assert code is Code.RESOURCE_EXHAUSTED and "1 BulkLoad streams are running" in message
            release.set()
            assert first.result().records_written == 1
            assert other.rank("game", ("loaded",)) == 0
    finally:
        release.set()
        channel.close()
        capped.stop(grace=1)


def test_server_work_stops_at_the_default_deadline(tmp_path: Path) -> None:
    setup = serve(tmp_path / "s")  # the usual deadline: the writes are not what is timed here
    with LeaderboardClient(setup.address) as lb:
        lb.create_index("game")
        for start in range(0, 3000, 100):
            lb.write_batch("game", [((f"p{i}",), [(i, i)]) for i in range(start, start + 100)])
        lb.update_windows("game", specs=[(1, 0, DAY, DAY, 1)], rebuild="IF_OVERLAPPING_CHANGED")
    setup.stop(grace=1)
    # 3,000 one-record fill batches take far longer than 10 ms on any machine; each call does one at least.
    hasty = serve(tmp_path / "s", default_deadline=0.01)
    try:
        with LeaderboardClient(hasty.address) as lb:
            step = lb.fill("game", max_records=1)
            assert not step.done and 0 < step.records_processed < 3000
            calls = 1
            while not lb.fill("game", max_records=100).done:
                calls += 1
            assert calls > 1
    finally:
        hasty.stop(grace=1)
    checked = serve(tmp_path / "s")
    try:
        with LeaderboardClient(checked.address) as lb:
            assert lb.count("game", 1, 0) == 3000 and lb.verify("game") == []
    finally:
        checked.stop(grace=1)


# -- hostile bytes and tokens ---------------------------------------------------------------------


def test_requests_that_do_not_parse_get_invalid_argument_and_one_short_log_line(
    board, caplog: pytest.LogCaptureFixture
) -> None:
    running, _ = board
    caplog.set_level(logging.INFO)
    with grpc.insecure_channel(running.address) as channel:
        for _ in range(200):
            code, message = code_of(lambda: call(channel, "AddScore", b"\xff\xff\xff\xff garbage"))
            assert code is Code.INVALID_ARGUMENT
            assert message == "the request does not parse as fdb_leaderboard.v1.AddScoreRequest"
        assert call(channel, "ListIndexes", pb.ListIndexesRequest().SerializeToString())
    lines = [r.getMessage() for r in caplog.records if "does not parse" in r.getMessage()]
    assert len(lines) == 1 and len(lines[0]) < 200, lines  # rate-limited, no traceback
    assert "Traceback" not in caplog.text


def test_tampered_continuations_get_invalid_argument_in_plain_words(tmp_path: Path) -> None:
    with open_database(f"lmdb:{tmp_path / 'i'}?durable=false") as db:
        index = LeaderboardIndex.create(db, b"\x15\x01", IndexSettings(group_size=1))
        index.update_windows(WindowUpdate())
        for i in range(10):
            index.add_score((f"p{i}",), i, i, group=("a",))
            index.add_score((f"q{i}",), i, i, group=("b",))
        for scan in (ScanType.BY_RANK, ScanType.BY_VALUE):
            token = index.scan(scan, group=("a",), limit=3).continuation
            assert token
            for cut in range(1, len(token)):
                with pytest.raises(Exception) as raised:
                    index.scan(scan, group=("a",), limit=3, continuation=token[:cut])
                assert type(raised.value).__name__ == "InvalidArgument", (cut, raised.value)
                assert "handed out" in str(raised.value) or "belongs to" in str(raised.value)
            with pytest.raises(Exception, match="another window, group or kind of scan"):
                index.scan(scan, group=("b",), limit=3, continuation=token)
        with pytest.raises(Exception, match="another window, group or kind of scan"):
            token = index.scan(ScanType.BY_VALUE, group=("a",), limit=3).continuation
            index.scan(ScanType.BY_VALUE, group=("a",), reverse=True, limit=3, continuation=token)
        # Positions are checked: negative or beyond 2^63 are not ours.
        good = tuplecodec.unpack(index.scan(ScanType.BY_RANK, group=("a",), limit=3).continuation[:-8])
        for position in (-1, 2**70, b"x"):  # with a correct digest: the position itself is checked
            body = tuplecodec.pack((*good[:4], position))
            forged = body + hashlib.blake2b(body, digest_size=8).digest()
            with pytest.raises(Exception, match="not one this server handed out"):
                index.scan(ScanType.BY_RANK, group=("a",), limit=3, continuation=forged)


def test_error_messages_cap_what_they_echo(board) -> None:
    running, _ = board
    group = [pb.Item(string="g" * 10) for _ in range(10_000)]
    with grpc.insecure_channel(running.address) as channel:
        request = pb.TopRequest(index="game", n=1, group=group).SerializeToString()
        code, message = code_of(lambda: call(channel, "Top", request))
    assert code is Code.INVALID_ARGUMENT and len(message) < 1100 and "more characters" in message


# -- access: tokens, roles, TLS -------------------------------------------------------------------


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, made by openssl."""
    return make_certificates(tmp_path_factory.mktemp("tls"), "IP:127.0.0.1,DNS:localhost")


def make_certificates(where: Path, names: str) -> dict[str, str]:
    """In ``where``, by openssl: a CA (``ca``), a server and a client certificate (``server``,
    ``client``, with ``server_key``, ``client_key``) for the subjectAltName ``names``, and
    another CA (``other``)."""

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=where, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=test CA",
            "-keyout", "ca.key", "-out", "ca.pem")  # fmt: skip
    (where / "san.cnf").write_text(f"subjectAltName={names}\n")
    for name in ("server", "client"):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}", "-keyout", f"{name}.key",
                "-out", f"{name}.csr")  # fmt: skip
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                "-days", "2", "-extfile", "san.cnf", "-out", f"{name}.pem")  # fmt: skip
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=other CA",
            "-keyout", "other.key", "-out", "other.pem")  # fmt: skip
    return {
        p.stem + ("_key" if p.suffix == ".key" else ""): str(p) for p in where.iterdir() if p.suffix in (".pem", ".key")
    }


def _tokens() -> access.Tokens:
    return access.Tokens.parse(f"read:{READ}\nwrite:{WRITE}\nadmin:{ADMIN}")


def test_roles_guard_every_rpc(tmp_path: Path) -> None:
    running = serve(tmp_path / "s", tokens=_tokens())
    try:
        with LeaderboardClient(running.address) as anonymous:
            code, message = code_of(lambda: anonymous.list_indexes())
            assert code is Code.UNAUTHENTICATED and "bearer token" in message
        with LeaderboardClient(running.address, token="not-a-token-of-this-server") as stranger:
            assert code_of(stranger.list_indexes)[0] is Code.UNAUTHENTICATED
        with (
            LeaderboardClient(running.address, token=ADMIN) as admin,
            LeaderboardClient(running.address, token=WRITE) as writer,
            LeaderboardClient(running.address, token=READ) as reader,
        ):
            admin.create_index("game")
            admin.update_windows("game")
            writer.add_score("game", ("alice",), 10, 1)
            assert reader.rank("game", ("alice",)) == 0 and writer.count("game") == 1
            code, message = code_of(lambda: reader.add_score("game", ("eve",), 99, 1))
            assert code is Code.PERMISSION_DENIED and message == "AddScore needs the write role; this token has read"
            for attempt in (
                lambda: writer.create_index("mine"),
                lambda: writer.expire("game", 10**9),
                lambda: writer.trim("game", 10**9),
                lambda: writer.update_windows("game", high_score_first=True),
                lambda: writer.set_maintenance("game", pb.MaintenancePolicy(retain=1)),
                lambda: writer.fill("game"),
                lambda: writer.verify("game"),
                lambda: writer.bulk_load("game", [(("x",), [(1, 1)])]),
            ):
                assert code_of(attempt)[0] is Code.PERMISSION_DENIED
            assert reader.count("game") == 1 and [i.name for i in admin.list_indexes()] == ["game"]
            # Health needs no token; reflection needs one.
            with grpc.insecure_channel(running.address) as channel:
                health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
                assert health.status == health_pb2.HealthCheckResponse.SERVING
                stream = reflection_pb2_grpc.ServerReflectionStub(channel).ServerReflectionInfo(
                    iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=5
                )
                assert code_of(lambda: list(stream))[0] is Code.UNAUTHENTICATED
    finally:
        running.stop(grace=1)


def test_a_call_carrying_two_authorization_headers_is_refused(tmp_path: Path) -> None:
    """Which of two tokens a call means is anyone's guess: refused, whatever their order (the
    HTTP door refuses the same: tests/http/test_hostile_callers.py)."""
    running = serve(tmp_path / "s", tokens=_tokens())
    try:
        with LeaderboardClient(running.address, token=ADMIN) as admin, grpc.insecure_channel(running.address) as ch:
            admin.create_index("game")
            drop = ch.unary_unary(f"/{SERVICE_NAME}/DropIndex")
            request = pb.DropIndexRequest(index="game").SerializeToString()
            for tokens in ((READ, ADMIN), (ADMIN, READ), (ADMIN, ADMIN)):
                metadata = [("authorization", f"Bearer {token}") for token in tokens]
                code, message = code_of(lambda metadata=metadata: drop(request, timeout=10, metadata=metadata))
                assert code is Code.UNAUTHENTICATED and "one Authorization header, not 2" in message, message
            assert [i.name for i in admin.list_indexes()] == ["game"]  # nothing was dropped
            drop(request, timeout=10, metadata=[("authorization", f"Bearer {ADMIN}")])
            assert admin.list_indexes() == []
    finally:
        running.stop(grace=1)


def test_reflection_and_health_as_the_operator_chooses(tmp_path: Path) -> None:
    running = serve(tmp_path / "s", health=False, reflection=False)
    try:
        with grpc.insecure_channel(running.address) as channel:
            check = lambda: health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)  # noqa: E731
            assert code_of(check)[0] is Code.UNIMPLEMENTED
    finally:
        running.stop(grace=1)


def test_tls_and_mutual_tls(tmp_path: Path, certificates: dict[str, str]) -> None:
    c = certificates
    running = serve(tmp_path / "s", tls=TlsFiles(c["server"], c["server_key"]))
    try:
        with LeaderboardClient(running.address, ca=c["ca"]) as lb:
            assert lb.list_indexes() == []
        with LeaderboardClient(running.address, timeout=30) as plaintext:
            assert code_of(plaintext.list_indexes)[0] is Code.UNAVAILABLE
        with LeaderboardClient(running.address, ca=c["other"], timeout=30) as wrong_ca:
            assert code_of(wrong_ca.list_indexes)[0] is Code.UNAVAILABLE
    finally:
        running.stop(grace=1)
    mutual = serve(tmp_path / "m", tls=TlsFiles(c["server"], c["server_key"], client_ca=c["ca"]), tokens=_tokens())
    try:
        with LeaderboardClient(mutual.address, ca=c["ca"], cert=c["client"], key=c["client_key"], token=READ) as lb:
            assert lb.list_indexes() == []
        with LeaderboardClient(mutual.address, ca=c["ca"], token=READ, timeout=30) as no_cert:
            assert code_of(no_cert.list_indexes)[0] is Code.UNAVAILABLE
    finally:
        mutual.stop(grace=1)


def test_cli_passes_token_and_ca(tmp_path: Path, certificates: dict[str, str]) -> None:
    c = certificates
    running = serve(tmp_path / "s", tls=TlsFiles(c["server"], c["server_key"]), tokens=_tokens())
    token_file = tmp_path / "token"
    token_file.write_text(ADMIN + "\n")
    try:
        base = [CLI, "--server", running.address, "--ca", c["ca"]]
        done = _cli([*base, "--token-file", str(token_file), "index", "create", "game"])
        assert done.returncode == 0 and "index game created" in done.stdout, done.stderr
        done = _cli([*base, "index", "list"], FDB_LEADERBOARD_TOKEN=READ)
        assert done.returncode == 0 and done.stdout.startswith("game:"), done.stderr
        done = _cli([*base, "index", "create", "other"], FDB_LEADERBOARD_TOKEN=READ)
        assert done.returncode == 1 and "PERMISSION_DENIED: CreateIndex needs the admin role" in done.stderr
    finally:
        running.stop(grace=1)


def test_serve_with_tls_files_serves_grpc_and_https_to_certified_clients(
    tmp_path: Path, certificates: dict[str, str]
) -> None:
    c = certificates
    server = subprocess.Popen(
        [CLI, "serve", "--store", f"lmdb:{tmp_path / 's'}?durable=false", "--address", "127.0.0.1:0",
         "--http-address", "127.0.0.1:0", "--tls-cert", c["server"], "--tls-key", c["server_key"],
         "--client-ca", c["ca"]],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    try:
        line = server.stdout.readline()  # type: ignore[union-attr]
        assert "(TLS, no authentication;" in line, line + server.stderr.read()  # type: ignore[union-attr]
        address, url = line.split(" serving on ")[1].split()[0], line.split(" and ")[1].split()[0]
        assert url.startswith("https://127.0.0.1:")
        certified = {"ca": c["ca"], "cert": c["client"], "key": c["client_key"]}
        with LeaderboardClient(address, **certified) as lb:
            lb.create_index("game")
        with LeaderboardClient(address, ca=c["ca"], timeout=30) as no_cert:
            assert code_of(no_cert.list_indexes)[0] is Code.UNAVAILABLE
        context = ssl.create_default_context(cafile=c["ca"])
        context.load_cert_chain(c["client"], c["client_key"])
        assert httpx.get(f"{url}/v1/indexes", verify=context, timeout=30).json()["indexes"][0]["name"] == "game"
        with pytest.raises(httpx.HTTPError):  # no client certificate
            httpx.get(f"{url}/v1/indexes", verify=ssl.create_default_context(cafile=c["ca"]), timeout=30)
        server.send_signal(signal.SIGTERM)
        assert server.wait(30) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


@pytest.mark.parametrize(
    "given",
    [
        ["--tls-cert", "server"],
        ["--tls-key", "server_key"],
        ["--client-ca", "ca"],
        ["--client-ca", "ca", "--tls-key", "server_key"],
    ],
)
def test_serve_refuses_tls_files_apart_as_a_usage_mistake(
    tmp_path: Path, certificates: dict[str, str], given: list[str]
) -> None:
    files = [certificates.get(arg, arg) for arg in given]
    done = _cli([CLI, "serve", "--store", f"lmdb:{tmp_path / 's'}", "--address", "127.0.0.1:0", *files])
    assert (done.returncode, done.stderr.splitlines()) == (
        2,
        ["Error: --tls-cert and --tls-key go together (and --client-ca needs them) (see fdb-leaderboard serve --help)"],
    )
    assert not (tmp_path / "s").exists()  # refused before the store was opened


def test_no_authentication_only_on_loopback_unless_told(tmp_path: Path) -> None:
    with pytest.raises(StartupError, match=r"refusing to listen on 0.0.0.0:0 without authentication"):
        Server(f"lmdb:{tmp_path / 's'}", "0.0.0.0:0")
    assert not (tmp_path / "s").exists()  # refused before the store was opened
    for settings in (ServerSettings(allow_unauthenticated=True), ServerSettings(tokens=_tokens())):
        Server(f"lmdb:{tmp_path / 's'}?durable=false", "0.0.0.0:0", settings=settings).stop(grace=0)
    Server(f"lmdb:{tmp_path / 's'}?durable=false", "[::1]:0").stop(grace=0)


def test_tokens_in_plaintext_beyond_loopback_are_warned_of(caplog: pytest.LogCaptureFixture) -> None:
    with pytest.warns(UserWarning, match=r"sending a bearer token to 10.1.2.3:50051 without TLS"):
        LeaderboardClient("10.1.2.3:50051", token=READ).close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for quiet in ("127.0.0.1:50051", "localhost:1", "[::1]:2", "unix:/tmp/lb.sock"):
            LeaderboardClient(quiet, token=READ).close()
        LeaderboardClient("10.1.2.3:50051").close()  # no token, nothing to leak
    with caplog.at_level(logging.WARNING, logger="fdb_leaderboard.service"):
        ServerSettings(tokens=_tokens()).check_address("0.0.0.0:50051")
        ServerSettings(tokens=_tokens()).check_address("127.0.0.1:50051")
    warned = [r.getMessage() for r in caplog.records if "without TLS" in r.getMessage()]
    assert len(warned) == 1 and "0.0.0.0:50051" in warned[0] and READ not in warned[0]


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


def _cli(args: list[str], **environment: str) -> subprocess.CompletedProcess:
    env = {**os.environ, **environment}
    return subprocess.run(args, capture_output=True, text=True, timeout=60, cwd=ROOT, env=env)


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


# -- verify in bounded batches --------------------------------------------------------------------


def _verified_index(db: object, prefix: bytes = b"\x15\x02") -> LeaderboardIndex:
    index = LeaderboardIndex.create(db, prefix, IndexSettings(group_size=1))  # type: ignore[arg-type]
    index.update_windows(WindowUpdate(specs=[WindowSpec(1, 0, DAY, DAY, 2)]))
    index.write_batch([((f"p{i}",), [Entry(i % 17, i * 300, (), (f"g{i % 3}",))]) for i in range(300)])
    return index


def test_verify_checks_in_small_batches_and_finds_each_kind_of_damage(tmp_path: Path) -> None:
    with open_database(f"lmdb:{tmp_path / 'v'}?durable=false") as db:
        index = _verified_index(db)
        seen: list[int] = []
        report = index.check_report(batch_keys=7, progress=lambda r: seen.append(r.batches))
        assert report.problems == [] and report.complete
        assert report.records == 300 and report.windows == 3
        assert report.entries == 600  # every record in all-time and in its day
        assert report.ranked_sets == 9 and report.batches > 300 // 7 and seen == list(range(1, report.batches + 1))
        layout, space = index.layout, index
        window = index.directory().windows[0]
        group = tuplecodec.pack(("g0",))
        ranked = space.ranked_set(window, group)
        stray = tuplecodec.pack((99, 1))
        db.run(lambda tr: ranked.add(tr, stray))  # an element no record has
        assert any("holds (99, 1) that no record has" in p for p in index.check_report(batch_keys=7).problems)
        db.run(lambda tr: ranked.remove(tr, stray))
        key = layout.primary + window.key_bytes + group + stray + tuplecodec.pack(("ghost",))
        db.run(lambda tr: tr.set(key, b""))  # a B-tree entry no record has
        problems = index.check_report(batch_keys=7).problems
        assert any("holds (99, 1) for record ('ghost',), which the record's head does not have" in p for p in problems)
        assert any("ranked set counts (99, 1) 0 time(s), the B-tree 1" in p for p in problems)
        db.run(lambda tr: tr.clear(key))
        assert index.check() == []
        report = index.check_report(keep_going=lambda: False)
        assert not report.complete and report.batches == 0


def test_verify_tolerates_writes_between_its_batches(tmp_path: Path) -> None:
    with open_database(f"lmdb:{tmp_path / 'v'}?durable=false") as db:
        index = _verified_index(db)
        stop = threading.Event()

        def write() -> None:
            i = 0
            while not stop.is_set():
                index.add_score((f"p{i % 400}",), 50 + i % 13, i * 200, group=(f"g{i % 3}",))
                i += 1

        writer = threading.Thread(target=write)
        writer.start()
        try:
            for _ in range(3):
                assert index.check_report(batch_keys=5).problems == []
        finally:
            stop.set()
            writer.join()
        assert index.check() == []


@pytest.mark.parametrize("count_duplicates", [False, True])
def test_verify_in_small_batches_over_many_ties_finds_what_one_batch_finds(db, prefix, count_duplicates: bool) -> None:
    """Records sharing an element (score and time): a batch's last element goes on past it, and
    the reads over a batch's elements (their entries, their counts in the ranked set) are cut
    short by ties or by stray elements between them, and go on for the rest."""
    settings = IndexSettings(count_duplicates=count_duplicates, dense_ranks=True)
    index = LeaderboardIndex.create(db, prefix, settings)
    index.update_windows(WindowUpdate())
    index.write_batch([((f"p{i}",), [Entry(i % 4 * 10, 100)]) for i in range(40)])  # 10 records per element
    report = index.check_report(batch_keys=3)
    assert report.problems == [] and (report.records, report.entries) == (40, 40)
    assert report.elements == 4 + 4  # the ranked set's elements and the distinct scores
    window = index.directory().windows[0]
    ranked, packed = index.ranked_set(window, b""), tuplecodec.pack
    # (Higher scores first: an element is (-score, time).)  Strays between (-20, 100) and (-10, 100).
    strays = [packed((-20, 101 + i)) for i in range(5)] + [packed((-15, 100))]
    db.run(lambda tr: [ranked.add(tr, stray) for stray in strays])
    ghost = index.layout.primary + window.key_bytes + packed((-10, 100)) + packed(("ghost",))
    db.run(lambda tr: tr.set(ghost, b""))
    whole = index.check_report(batch_keys=10_000).problems  # one batch a step: no read cut short
    assert [p for p in whole if "that no record has" in p] == [
        f"{window.describe()}: ranked set of group () holds {tuplecodec.unpack(s)} that no record has" for s in strays
    ]
    assert any("holds (-10, 100) for record ('ghost',), which the record's head does not have" in p for p in whole)
    counted = [p for p in whole if "ranked set counts" in p]
    assert counted == (
        [f"{window.describe()}: ranked set counts (-10, 100) 10 time(s), the B-tree 11"] if count_duplicates else []
    )
    assert index.check_report(batch_keys=3).problems == whole
    assert index.check_report(batch_keys=2).problems == whole


def _large_index(db: object, prefix: bytes) -> LeaderboardIndex:
    """An all-time window whose ranked set (600 elements) and distinct-score set (300 scores) are
    each many structure batches long at batch_keys=3 (48 node keys a batch)."""
    index = LeaderboardIndex.create(db, prefix, IndexSettings(dense_ranks=True))  # type: ignore[arg-type]
    index.update_windows(WindowUpdate())
    index.bulk_load((((f"p{i}",), [Entry(i * 7 % 300, i)]) for i in range(600)), batch_size=300)
    return index


def test_verify_checks_the_structure_of_large_sets_in_bounded_batches(db, prefix) -> None:
    index = _large_index(db, prefix)
    node_reads: list[int] = []
    report = index.check_report(batch_keys=3, progress=lambda r: node_reads.append(r.nodes))
    assert report.problems == [] and report.complete
    assert report.ranked_sets == 2 and report.windows == 1
    per_batch = [after - before for before, after in itertools.pairwise([0, *node_reads])]
    structure_batches = [n for n in per_batch if n]
    assert sum(structure_batches) == report.nodes > 2 * (600 + 300)  # every level of both sets
    assert len(structure_batches) > (600 + 300) // (3 * 16)  # many batches...
    assert max(structure_batches) <= 2 * 3 * 16 + 100  # ...each bounded (a sound set's spans are short)
    assert f"and 2 ranked sets ({report.nodes} nodes) in 1 windows" in report.describe()


@pytest.mark.parametrize("dense", [False, True])
def test_verify_finds_damage_to_a_large_sets_structure(db, prefix, dense: bool) -> None:
    index = _large_index(db, prefix)
    window = index.directory().windows[0]
    ranked = (index.dense_set if dense else index.ranked_set)(window, b"")
    level_1 = db.read(lambda tr: tr.get_range_startswith(ranked.prefix + tuplecodec.pack((1,))))
    node, _count = level_1[len(level_1) // 2]
    db.run(lambda tr: tr.set(node, (99).to_bytes(8, "little")))  # a wrong count, mid-set
    level_0 = db.read(lambda tr: tr.get_range_startswith(ranked.prefix + tuplecodec.pack((0,))))
    db.run(lambda tr: tr.set(level_0[-2][0], bytes(8)))  # a level-0 count of 0
    where = f"{window.describe()}, group (){', distinct scores' if dense else ''}"
    oracle = [f"{where}: {message}" for message in db.read(ranked.check_consistency)]
    assert any("level 1: node" in p and "counts 99" in p for p in oracle), oracle
    assert any("level 0:" in p and "has count 0" in p for p in oracle), oracle
    found = index.check_report(batch_keys=3).problems
    assert sorted(p for p in found if p.startswith(where + ": level ")) == sorted(oracle)


def test_verify_tolerates_writes_between_its_structure_batches(db, prefix) -> None:
    index = _large_index(db, prefix)
    writes = iter(range(10_000))
    checked = [0]

    def write(report: CheckReport) -> None:  # in its own transaction, after each structure batch
        if report.nodes == checked[0]:
            return
        checked[0] = report.nodes
        i = next(writes)
        if i % 3 == 0:
            index.add_score((f"new{i}",), 300 + i, i)  # an add, with a new distinct score
        elif i % 3 == 1:
            index.add_score((f"p{i * 13 % 600}",), 1000 + i, i)  # a move: a better score
        else:
            index.delete_record((f"p{i * 17 % 600}",))  # a remove
        index.add_score((f"p{i * 11 % 600}",), i % 300, i)  # a score no better: no change

    report = index.check_report(batch_keys=3, progress=write)
    assert report.problems == [] and report.ranked_sets == 2 and next(writes) > 20
    assert index.check() == []


# -- verify in parts ----------------------------------------------------------------------------------


def _damage(db: object, index: LeaderboardIndex) -> None:
    """A stray ranked-set element and a B-tree entry no record has, in the first window's group g0."""
    window = index.directory().windows[0]
    group = tuplecodec.pack(("g0",))
    db.run(lambda tr: index.ranked_set(window, group).add(tr, tuplecodec.pack((99, 1))))  # type: ignore[attr-defined]
    ghost = index.layout.primary + window.key_bytes + group + tuplecodec.pack((98, 1)) + tuplecodec.pack(("ghost",))
    db.run(lambda tr: tr.set(ghost, b""))  # type: ignore[attr-defined]


def _in_parts(index: LeaderboardIndex, batches: int, **options: object) -> tuple[CheckReport, list[str], int]:
    """A check in parts of ``batches`` batches each: the last part's report, every part's problems,
    and how many parts it took."""
    problems: list[str] = []
    continuation = None
    for parts in range(1, 10_001):  # a check that never ends fails here, not at the suite's timeout
        left = [batches]

        def keep_going(left: list[int] = left) -> bool:
            left[0] -= 1
            return left[0] >= 0

        report = index.check_report(keep_going=keep_going, continuation=continuation, **options)  # type: ignore[arg-type]
        problems += report.problems
        if report.complete:
            return report, problems, parts
        assert report.batches > 0 and report.continuation
        continuation = report.continuation
    raise AssertionError(f"the check did not end in {parts} parts")


def _counts(report: CheckReport) -> tuple[int, ...]:
    return (report.records, report.entries, report.elements, report.ranked_sets, report.nodes, report.windows)


def test_verify_in_parts_finds_what_one_check_finds(db, prefix) -> None:
    index = _verified_index(db, prefix)
    dense = _large_index(db, prefix[:-1] + bytes([prefix[-1] ^ 1]))  # every step: distinct-score sets too
    for checked in (index, dense):
        whole = checked.check_report(batch_keys=3)
        report, problems, parts = _in_parts(checked, 1, batch_keys=3)
        assert problems == whole.problems == [] and _counts(report) == _counts(whole)
        assert report.batches == whole.batches and parts == whole.batches  # a part per batch
    _damage(db, index)
    whole = index.check_report(batch_keys=3)
    assert len(whole.problems) == 3, whole.problems  # the stray element, the ghost entry and its count
    for batches in (1, 2, 5):
        report, problems, parts = _in_parts(index, batches, batch_keys=3)
        assert problems == whole.problems and _counts(report) == _counts(whole) and parts > 50 // batches
    # The problem limit holds over every part; reached, the check is over.
    report, problems, _ = _in_parts(index, 1, batch_keys=3, max_problems=2)
    assert problems == whole.problems[:2] and report.complete


def test_a_check_in_parts_resumes_within_hidden_records(db, prefix) -> None:
    """Hidden records' notes and a window's hidden B-tree are steps of their own: a check of one
    batch a part resumes inside them (it started the records over, for ever, when they were not)
    and finds what one check finds."""
    index = _verified_index(db, prefix)
    for i in range(0, 60, 4):
        assert index.hide_record((f"p{i}",), reason="cheat", actor="ops")
    whole = index.check_report(batch_keys=3)
    report, problems, parts = _in_parts(index, 1, batch_keys=3)
    assert problems == whole.problems == [] and _counts(report) == _counts(whole) and parts == whole.batches
    # A note for a record that is not hidden: found in parts as in one check.
    layout = index.layout
    note = layout.hidden_key(tuplecodec.pack((("p0",),)))
    assert db.read(lambda tr: tr.get(note)) is not None  # (the key form of a record's note)
    db.run(lambda tr: tr.set(layout.hidden_key(tuplecodec.pack((("p1",),))), db.read(lambda r: r.get(note))))  # type: ignore[attr-defined]
    whole = index.check_report(batch_keys=3)
    assert whole.problems == ["a note says record ('p1',) is hidden, but it is not hidden"]
    for batches in (1, 2):
        report, problems, _ = _in_parts(index, batches, batch_keys=3)
        assert problems == whole.problems and _counts(report) == _counts(whole)


def test_a_check_goes_on_only_from_its_own_index_continuation(db, prefix) -> None:
    index = _verified_index(db, prefix)
    other = _verified_index(db, prefix[:-1] + bytes([prefix[-1] ^ 1]))
    stopped = index.check_report(batch_keys=3, keep_going=iter([True] * 20 + [False]).__next__)
    token = stopped.continuation
    assert token and stopped.batches == 20
    with pytest.raises(InvalidArgument, match="belongs to another index"):
        other.check_report(continuation=token)
    middle = len(token) // 2
    for broken in (token[:-1], token[:10], token[:middle] + bytes([token[middle] ^ 1]) + token[middle + 1 :], b"x"):
        with pytest.raises(InvalidArgument, match="not one this server handed out"):
            index.check_report(continuation=broken)
    assert index.check_report(batch_keys=3, continuation=token).batches == index.check_report(batch_keys=3).batches


def test_verify_of_a_large_index_runs_in_parts_through_every_door(server_place, tmp_path: Path) -> None:
    """A server whose calls may take 1 ms: no check finishes in one call.  A whole check in one call
    is refused as unfinished; in parts (the client, the CLI, HTTP) the whole index is checked."""
    server = server_place.start()
    with LeaderboardClient(server.address, timeout=30) as lb:
        lb.create_index("game", group_size=1)
        lb.update_windows("game", specs=[(1, 0, DAY, DAY, 2)])
        lb.write_batch("game", [((f"p{i}",), [(i % 17, i * 300, (), (f"g{i % 3}",))]) for i in range(300)])
        # A part answers how far the check got and where it goes on, never complete before the end.
        part = lb.stub.Verify(pb.VerifyRequest(index="game", continuation=b"", max_batches=2), timeout=30)
        assert not part.complete and part.continuation and part.batches == 2 and not part.problems
        with pytest.raises(grpc.RpcError, match="max_batches is for a check in parts"):
            lb.stub.Verify(pb.VerifyRequest(index="game", max_batches=2), timeout=30)
    server.stop(grace=1)
    server = server_place.start(ServerSettings(default_deadline=0.001))
    try:
        with LeaderboardClient(server.address, timeout=30) as lb:
            index = server.catalog.get("game")
            whole = index.check_report()
            assert whole.problems == [] and whole.batches > 10
            _damage(server.db, index)
            found = index.check()
            assert len(found) == 3
            with pytest.raises(grpc.RpcError) as unfinished:
                lb.stub.Verify(pb.VerifyRequest(index="game"), timeout=30)
            assert unfinished.value.code() is Code.DEADLINE_EXCEEDED
            assert "stopped at the call's deadline after it checked" in unfinished.value.details()
            assert "check in parts" in unfinished.value.details()
            report = lb.verify_report("game")
            assert report.complete and list(report.problems) == found and report.records == 300
            assert lb.verify("game", max_problems=1) == found[:1]
            # In pieces over key ranges at once, on connections of their own: the same check.
            seen: list[int] = []
            pieces = lb.verify_report("game", parts=4, progress=lambda merged: seen.append(merged.records))
            assert sorted(pieces.problems) == sorted(found) and pieces.complete
            assert (pieces.records, pieces.entries, pieces.windows) == (300, report.entries, report.windows)
            assert seen == sorted(seen) and seen[-1] == 300
            assert len(lb.verify_plan("game", 4)) > 1

            async def in_pieces() -> pb.VerifyResponse:
                async with AsyncLeaderboardClient(server.address, timeout=30) as alb:
                    return await alb.verify_report("game", parts=3)

            async_pieces = asyncio.run(in_pieces())
            assert sorted(async_pieces.problems) == sorted(found) and async_pieces.records == 300
            with pytest.raises(grpc.RpcError, match="split must be 2 or more"):
                lb.stub.Verify(pb.VerifyRequest(index="game", split=1, continuation=b"x"), timeout=30)
            http = HttpServer(server, "127.0.0.1:0").start()
            with httpx.Client(base_url=http.url, timeout=30, headers={"content-type": "application/json"}) as web:
                assert web.post("/v1/Verify", json={"index": "game"}).status_code == 504
                body: dict = {"index": "game", "continuation": ""}
                problems = []
                while True:
                    answer = web.post("/v1/Verify", json=body).json()
                    problems += answer["problems"]
                    if answer["complete"]:
                        break
                    assert answer["continuation"]
                    body["continuation"] = answer["continuation"]
                assert problems == found
                plan = web.post("/v1/Verify", json={"index": "game", "split": 3}).json()["parts"]
                assert len(plan) > 1 and all(isinstance(token, str) for token in plan)
            done = _cli([CLI, "--server", server.address, "verify", "game", "--parts", "1"])
            assert done.returncode == 1 and done.stdout.splitlines()[:3] == found, done
            done = _cli([CLI, "--server", server.address, "verify", "game"])  # 4 pieces at once
            assert done.returncode == 1 and sorted(done.stdout.splitlines()[:3]) == sorted(found), done
            assert "checked 300 records" in done.stdout and "3 problem(s) found in game" in done.stderr
    finally:
        server.stop(grace=1)
