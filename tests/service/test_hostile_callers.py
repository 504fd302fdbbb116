"""The service against slow, careless and hostile callers: bounded work, stalled calls, bad bytes,
tampered continuations, access control (tokens, roles, TLS), startup refusals and clean stops.

Stalled calls are real: gRPC calls whose request message never comes, BulkLoad streams that stop
after one message, and raw TCP connections that send nothing.  Certificates are made by openssl
in the test; tokens are real bearer tokens.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import signal
import socket
import ssl
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
from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.index import (
    IndexSettings,
    LeaderboardIndex,
    ScanType,
    WindowUpdate,
    tuplecodec,
)
from fdb_leaderboard.proto import service_pb2 as pb
from fdb_leaderboard.service import SERVICE_NAME, Server, ServerSettings, StartupError, TlsFiles
from fdb_leaderboard.store import StoreUnavailable, open_database
from tests.conftest import wait_until
from tests.support.servers import _cli, serve

Code = grpc.StatusCode
DAY = 86_400
READ, WRITE, ADMIN = "reader-token-0123456789", "writer-token-0123456789", "admin-token-0123456789abc"
ROOT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).parent / "fdb-leaderboard")


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
