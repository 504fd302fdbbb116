"""Window-end events: each ended window is noticed once and told to each webhook of its index,
signed, retried until acknowledged, and streamed over gRPC and SSE, on both stores.

The receiver is a real HTTP server in the test (``http.server`` on a thread): it checks every
POST's HMAC-SHA256 signature with its own code (refusing a wrong one with 401, so an
acknowledged event is a verified one), answers 500 as often as told, or holds a request while
the test kills the server sending it.  Each event's count and top are checked against the
scores the test submitted, sorted here.  Time: windows end a little after the test starts, and
the end is noticed through ``NoticeWindowEnds`` with a clock given (or, in the test of the
server's own maintenance, by the server's clock at the window's end); no test sleeps and then
expects: each waits for what it expects, with a far bound.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import hashlib
import hmac
import http.server
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from fdb_leaderboard.client import AsyncLeaderboardClient, FailedPrecondition, InvalidArgument, LeaderboardClient
from fdb_leaderboard.http import HttpServer
from fdb_leaderboard.index import IndexSettings
from fdb_leaderboard.service import Server, ServerSettings, WindowEvents
from fdb_leaderboard.service.catalog import Catalog
from tests.conftest import ServerPlace, _skip_fdb_if_unavailable, wait_until

SERVE = [sys.executable, "-c", "from fdb_leaderboard.cli import main; main()", "serve"]
CLI = [sys.executable, "-m", "fdb_leaderboard.cli"]


class Receiver:
    """Webhooks' receiving end: one path per webhook, each with its secret and behaviour."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.hooks: dict[str, dict] = {}
        self.tries: collections.Counter[tuple[str, str]] = collections.Counter()
        self.attempts: list[tuple[str, str, int]] = []  # (path, event id, status answered)
        self.acked: dict[str, list[dict]] = collections.defaultdict(list)
        self.acked_at: dict[str, list[float]] = collections.defaultdict(list)  # time.time() of each
        self.release = threading.Event()  # held requests go on (answered 503) once set
        self.holding = threading.Event()  # a request is being held
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                receiver.handle(self)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str, secret: str = "", fail: int = 0, hold: bool = False) -> str:
        self.hooks[path] = {"secret": secret, "fail": fail, "hold": hold}
        return f"http://127.0.0.1:{self.server.server_port}{path}"

    def handle(self, request: http.server.BaseHTTPRequestHandler) -> None:
        body = request.rfile.read(int(request.headers["Content-Length"]))
        hook = self.hooks[request.path]
        stamp = request.headers["X-Leaderboard-Timestamp"]
        expected = (
            "sha256=" + hmac.new(hook["secret"].encode(), stamp.encode() + b"." + body, hashlib.sha256).hexdigest()
        )
        event = json.loads(body)
        event_id = request.headers["X-Leaderboard-Event"]
        with self.lock:
            self.tries[(request.path, event_id)] += 1
            tries = self.tries[(request.path, event_id)]
        if not hmac.compare_digest(request.headers["X-Leaderboard-Signature"], expected) or event["id"] != event_id:
            status = 401
        elif hook["hold"]:  # the first request only
            hook["hold"] = False
            self.holding.set()
            self.release.wait(120)
            status = 503
        else:
            status = 500 if tries <= hook["fail"] else 200
        with self.lock:
            self.attempts.append((request.path, event_id, status))
            if status == 200:
                self.acked[request.path].append(event)
                self.acked_at[request.path].append(time.time())
        try:
            request.send_response(status)
            request.send_header("Content-Length", "0")
            request.end_headers()
        except OSError:  # the sender was killed meanwhile
            pass

    def acked_ids(self, path: str) -> list[str]:
        with self.lock:
            return [event["id"] for event in self.acked[path]]

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver()
    yield running
    running.close()


class BadReceiver:
    """A webhook's receiving end that reads each POST whole, then answers badly: ``hang`` (never),
    ``fail`` (500, every time), ``drip`` (a good answer, a byte a second) or ``garble`` (a status
    line that is no status line).  Raw sockets, a thread per connection."""

    ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"

    def __init__(self, behaviour: str) -> None:
        self.behaviour = behaviour
        self.tries: list[float] = []  # when each POST had arrived (time.monotonic())
        self.stop = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}/{self.behaviour}"

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                connection, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:  # closed
                return
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection: socket.socket) -> None:
        with connection:
            data = b""
            while b"\r\n\r\n" not in data:
                data += connection.recv(65536) or b"\r\n\r\n"
            head, _, body = data.partition(b"\r\n\r\n")
            length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))  # type: ignore[union-attr]
            while len(body) < length and (got := connection.recv(65536)):
                body += got
            self.tries.append(time.monotonic())
            with contextlib.suppress(OSError):
                if self.behaviour == "fail":
                    connection.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n")
                elif self.behaviour == "garble":
                    connection.sendall(b"HTTP/1.1 20\r\n\r\n")
                elif self.behaviour == "drip":
                    for byte in self.ANSWER:
                        connection.sendall(bytes([byte]))
                        if self.stop.wait(1):
                            return
                else:  # until the sender gives up and closes the connection
                    connection.settimeout(0.1)
                    while not self.stop.is_set():
                        with contextlib.suppress(TimeoutError):
                            if not connection.recv(1):
                                return

    def close(self) -> None:
        self.stop.set()
        self.listener.close()


@contextlib.contextmanager
def serving(place: ServerPlace, settings: ServerSettings) -> Iterator[tuple[Server, HttpServer, LeaderboardClient]]:
    """A gRPC server, its HTTP front end and a client, stopped afterwards."""
    server = place.start(settings)
    http_server = HttpServer(server, "127.0.0.1:0").start()
    try:
        with LeaderboardClient(server.address, timeout=30) as lb:
            yield server, http_server, lb
    finally:
        http_server.stop(grace=1)
        server.stop(grace=1)


def standings(scores: dict[str, tuple[int, int]], window: tuple[int, int]) -> list[tuple[str, int]]:
    """The oracle: (pk, score) of the records scored in [start, end), best first (ties: earlier)."""
    start, end = window
    inside = [(pk, score, ts) for pk, (score, ts) in scores.items() if start <= ts < end]
    return [(pk, score) for pk, score, _ in sorted(inside, key=lambda row: (-row[1], row[2], row[0]))]


def shown(event: dict) -> list[tuple[str, int]]:
    return [(entry["pk"][0], entry["score"]) for entry in event["entries"]]


def make_board(lb: LeaderboardClient, name: str, base: int) -> dict[str, dict[str, tuple[int, int]]]:
    """An index with type 1 windows [base, base+100), [base+100, base+200) and a type 2 window
    [base, base+200); scores in both halves.  Returns each window's scores by record."""
    lb.create_index(name, high_score_first=True)
    lb.update_windows(
        name, windows=[(1, base, base + 100), (1, base + 100, base + 200), (2, base, base + 200)], high_score_first=True
    )
    first = {f"p{i}": (10 * i + 3, base + i) for i in range(7)}
    second = {f"q{i}": (5 * i, base + 100 + i) for i in range(4)}
    for pk, (score, ts) in {**first, **second}.items():
        lb.add_score(name, pk, score, ts)
    return {"first": first, "second": second}


def test_each_webhook_is_told_each_ended_window_once_signed_with_its_top(
    server_place: ServerPlace, receiver: Receiver
) -> None:
    server = server_place.start(ServerSettings(maintain_every=0))
    try:
        with LeaderboardClient(server.address, timeout=30) as lb:
            base = int(time.time()) - 50  # the first window ends 50 s from now: after the webhooks exist
            scores = make_board(lb, "game", base)
            daily = lb.add_webhook("game", receiver.url("/a", "a-secret-of-16-chars"), "a-secret-of-16-chars", [1], 3)
            assert not daily.HasField("secret")  # given, never sent back
            every = lb.add_webhook("game", receiver.url("/b"), top=2)
            assert len(every.secret) == 64  # made up, shown this once
            receiver.hooks["/b"]["secret"] = every.secret
            listed = {w.id: w for w in lb.webhooks("game")}
            assert set(listed) == {daily.id, every.id}
            assert not any(w.HasField("secret") for w in listed.values())
            assert list(listed[daily.id].window_types) == [1] and listed[every.id].top == 2

            before = lb.notice_window_ends("game", base + 99)
            assert list(before.windows) == [] and before.events == 0
            noticed = lb.notice_window_ends("game", base + 100)
            assert [(w.type, w.start, w.end) for w in noticed.windows] == [(1, base, base + 100)]
            assert noticed.events == 2
            again = lb.notice_window_ends("game", base + 100)  # noticed once, whoever asks again
            assert list(again.windows) == [] and again.events == 0
            wait_until(lambda: len(receiver.acked_ids("/a")) == 1 and len(receiver.acked_ids("/b")) == 1)
            everyone = {**scores["first"], **scores["second"]}
            for path, top in (("/a", 3), ("/b", 2)):
                event = receiver.acked["/" + path[1:]][0]
                assert event["index"] == "game" and event["window"] == {"type": 1, "start": base, "end": base + 100}
                assert event["count"] == len(scores["first"])
                assert shown(event) == standings(everyone, (base, base + 100))[:top]
                assert [entry["rank"] for entry in event["entries"]] == list(range(top))
            assert receiver.acked_ids("/a") != receiver.acked_ids("/b")  # an id per webhook

            later = lb.notice_window_ends("game", base + 200)
            assert sorted((w.type, w.start) for w in later.windows) == [(1, base + 100), (2, base)]
            assert later.events == 3  # /a: the type 1 window; /b: both
            wait_until(lambda: len(receiver.acked_ids("/a")) == 2 and len(receiver.acked_ids("/b")) == 3)
            by_window = {(e["window"]["type"], e["window"]["start"]): e for e in receiver.acked["/b"]}
            assert shown(by_window[(2, base)]) == standings(everyone, (base, base + 200))[:2]
            assert by_window[(2, base)]["count"] == len(everyone)
            assert shown(by_window[(1, base + 100)]) == standings(everyone, (base + 100, base + 200))[:2]
            # Exactly one try each: acknowledged at once, never sent again.
            assert len(receiver.attempts) == 5 and all(status == 200 for _, _, status in receiver.attempts)
            wait_until(lambda: all(w.pending == 0 for w in lb.webhooks("game")))

            assert lb.delete_webhook("game", every.id) is True
            assert lb.delete_webhook("game", every.id) is False
            assert [w.id for w in lb.webhooks("game")] == [daily.id]
            # Added and deleted webhooks are in the audit trail; their secrets are not.
            trail = lb.audit_events("game")[0]
            audited = [(e.action, e.details["id"]) for e in trail if "Webhook" in e.action]
            assert audited == [("AddWebhook", daily.id), ("AddWebhook", every.id), ("DeleteWebhook", every.id)]
            assert "a-secret-of-16-chars" not in str(trail) and every.secret not in str(trail)
    finally:
        server.stop(grace=1)


def test_a_receiver_failing_three_times_gets_the_event_on_the_fourth_try(
    server_place: ServerPlace, receiver: Receiver
) -> None:
    server = server_place.start(ServerSettings(maintain_every=0, webhook_first_retry=0.05))
    try:
        with LeaderboardClient(server.address, timeout=30) as lb:
            base = int(time.time()) - 50
            make_board(lb, "flaky", base)
            secret = "s" * 20
            lb.add_webhook("flaky", receiver.url("/flaky", secret, fail=3), secret, [1])
            assert lb.notice_window_ends("flaky", base + 100).events == 1
            wait_until(lambda: len(receiver.acked_ids("/flaky")) == 1)
            tries = [(event_id, status) for path, event_id, status in receiver.attempts if path == "/flaky"]
            assert [status for _, status in tries] == [500, 500, 500, 200]
            assert len({event_id for event_id, _ in tries}) == 1  # the same event id every time
            wait_until(lambda: lb.webhooks("flaky")[0].pending == 0)
    finally:
        server.stop(grace=1)


def test_a_bad_receiver_delays_its_own_events_only(
    server_place: ServerPlace, receiver: Receiver, no_unexpected_server_errors: None
) -> None:
    """Beside one good receiver, five that never answer, one that answers 500 forever, one that
    drips its answer a byte a second and one whose status line is garbled: the good one gets each
    of its events at once, and each bad try fails within the whole-request deadline (3 s here),
    recorded as a failed try with why (no traceback, nothing logged as unexpected)."""
    bad = [BadReceiver(kind) for kind in ("hang",) * 5 + ("fail", "drip", "garble")]
    deadline = 3.0
    try:
        with serving(server_place, ServerSettings(maintain_every=0, webhook_timeout=deadline)) as (_, _, lb):
            base = int(time.time()) - 50
            lb.create_index("busy", high_score_first=True)
            lb.update_windows("busy", windows=[(1, base + 100 * i, base + 100 * (i + 1)) for i in range(3)])
            for i in range(3):
                lb.add_score("busy", f"p{i}", 10 + i, base + 100 * i)
            webhooks = {lb.add_webhook("busy", hook.url, "s" * 16).id: hook for hook in bad}
            lb.add_webhook("busy", receiver.url("/good", "g" * 16), "g" * 16)
            noticed = time.time()
            assert lb.notice_window_ends("busy", base + 300).events == 3 * 9
            wait_until(lambda: len(receiver.acked_ids("/good")) == 3, "the good receiver's three events", 30)
            delays = [at - noticed for at in receiver.acked_at["/good"]]
            assert max(delays) < deadline / 2, delays  # none waited for a bad receiver's deadline
            failed = time.time()
            wait_until(lambda: all(hook.tries for hook in bad), "a try at every bad receiver", 30)

            def errors() -> dict[str, str]:
                return {webhooks[w.id].behaviour: w.last_error for w in lb.webhooks("busy") if w.id in webhooks}

            wait_until(lambda: "" not in errors().values(), "every bad webhook's failure recorded", 30)
            assert time.time() - failed < 3 * deadline  # the dripping one's too: a deadline for the whole try
            shown = errors()
            assert shown["hang"] == shown["drip"] == f"no answer within {deadline:g} s", shown
            assert shown["fail"] == "HTTP 500" and shown["garble"].startswith("RemoteProtocolError"), shown
            assert all(w.pending == 3 for w in lb.webhooks("busy") if w.id in webhooks)  # to be tried again
            for hook in bad[:5]:  # two POSTs at once at most: the third only once one gave up
                assert len([t for t in hook.tries if t < hook.tries[0] + deadline * 0.9]) == 2, hook.tries
    finally:
        for hook in bad:
            hook.close()


def test_the_servers_own_maintenance_notices_an_end_by_its_clock_and_streams_it(
    server_place: ServerPlace, receiver: Receiver
) -> None:
    # maintain_every: it wakes for the window's end
    with serving(server_place, ServerSettings(maintain_every=300)) as (_, http_server, lb):
        lb.create_index("live", high_score_first=True)
        end = int(time.time()) + 2
        lb.update_windows("live", windows=[(1, end - 100, end)], high_score_first=True)
        lb.add_score("live", "alice", 30, end - 50)
        lb.add_score("live", "bob", 40, end - 40)
        secret = "k" * 32
        lb.add_webhook("live", receiver.url("/live", secret), secret)
        streamed: list = []
        sse: list[str] = []

        def follow() -> None:
            with lb.watch_window_ends("live", timeout=60) as watch:
                for event in watch:
                    streamed.append(event)
                    return

        def follow_sse() -> None:
            with httpx.stream("GET", f"{http_server.url}/v1/indexes/live/window-ends/events", timeout=60) as answer:
                for line in answer.iter_lines():
                    sse.append(line)
                    if line.startswith("data:"):
                        return

        threads = [threading.Thread(target=follow), threading.Thread(target=follow_sse)]
        for thread in threads:
            thread.start()
        wait_until(lambda: len(receiver.acked_ids("/live")) == 1)
        for thread in threads:
            thread.join(60)
        event = receiver.acked["/live"][0]
        assert event["window"]["end"] == end and event["count"] == 2
        assert shown(event) == [("bob", 40), ("alice", 30)]
        assert event["noticed_at"] >= end  # noticed once its end had passed on the server's clock
        (watched,) = streamed
        assert (watched.window.end, watched.count, [e.pk[0] for e in watched.entries]) == (end, 2, ["bob", "alice"])
        assert sse[0] == f"id: {watched.cursor}"
        assert json.loads(sse[1][len("data: ") :])["window"]["end"] == end


def test_streams_resume_after_a_cursor_over_grpc_sse_and_asyncio(server_place: ServerPlace) -> None:
    with serving(server_place, ServerSettings(maintain_every=0, webhooks=False)) as (server, http_server, lb):
        base = int(time.time()) - 50
        scores = make_board(lb, "resume", base)
        lb.notice_window_ends("resume", base + 200)  # three windows: cursors 1, 2, 3
        with lb.watch_window_ends("resume", after=0, top=1, timeout=30) as watch:
            events = [event for _, event in zip(range(3), watch, strict=False)]
        assert [e.cursor for e in events] == [1, 2, 3]
        assert [(e.window.type, e.window.start) for e in events] == [(1, base), (1, base + 100), (2, base)]
        everyone = {**scores["first"], **scores["second"]}
        assert [[(x.pk[0], x.score) for x in e.entries] for e in events] == [
            standings(everyone, (e.window.start, e.window.end))[:1] for e in events
        ]
        with lb.watch_window_ends("resume", after=2, timeout=30) as watch:
            assert next(iter(watch)).cursor == 3
        lines = []
        headers = {"Last-Event-ID": "1"}
        with httpx.stream("GET", f"{http_server.url}/v1/indexes/resume/window-ends/events", headers=headers) as sse:
            for line in sse.iter_lines():
                lines.append(line)
                if len([x for x in lines if x.startswith("id:")]) == 2:
                    break
        assert [line for line in lines if line.startswith("id:")] == ["id: 2", "id: 3"]

        async def from_asyncio() -> list[int]:
            async with AsyncLeaderboardClient(server.address) as alb:
                made = await alb.add_webhook("resume", "https://example.com/hook", "x" * 16, [2])
                assert [w.id for w in await alb.webhooks("resume")] == [made.id]
                assert await alb.delete_webhook("resume", made.id) is True
                cursors = []
                async for event in alb.watch_window_ends("resume", after=1, timeout=30):
                    cursors.append(event.cursor)
                    if len(cursors) == 2:
                        break
                return cursors

        assert asyncio.run(from_asyncio()) == [2, 3]


def test_bad_subscriptions_are_refused_at_each_door(server_place: ServerPlace) -> None:
    with serving(server_place, ServerSettings(maintain_every=0, webhooks=False)) as (_, http_server, lb):
        lb.create_index("plain")
        lb.create_index("grouped", group_size=1)
        for args, kwargs, said in [
            (("plain", "ftp://example.com/x"), {}, "http:// or https://"),
            (("plain", "https://example.com/x", "short"), {}, "16 to 256 characters"),
            (("plain", "https://example.com/x"), {"top": 101}, "top is 1 to 100"),
            (("plain", "https://example.com/x"), {"window_types": [0]}, "all-time window never ends"),
        ]:
            with pytest.raises(InvalidArgument, match=said):
                lb.add_webhook(*args, **kwargs)
        with pytest.raises(FailedPrecondition, match="grouped"):
            lb.add_webhook("grouped", "https://example.com/x")
        with pytest.raises(FailedPrecondition, match="grouped"):
            next(iter(lb.watch_window_ends("grouped", timeout=10)))
        url = f"{http_server.url}/v1/indexes/plain/webhooks"
        refused = httpx.post(url, json={"url": "https://example.com/x", "top": 0})
        assert refused.status_code == 400 and "top is 1 to 100" in refused.json()["message"]
        assert httpx.post(url, json={"url": "https://example.com/x", "colour": 1}).status_code == 400
        made = httpx.post(url, json={"url": "https://example.com/x", "window_types": [1]})
        assert made.status_code == 200 and "secret" in made.json()["webhook"]  # made up: shown this once
        assert all("secret" not in w for w in httpx.get(url).json()["webhooks"])
        gone = httpx.delete(f"{url}/{made.json()['webhook']['id']}")
        assert gone.status_code == 200 and gone.json()["deleted"] is True
        too_many = httpx.get(f"{http_server.url}/v1/indexes/plain/window-ends/events?top=101")
        assert too_many.status_code == 400
        missing = httpx.get(f"{http_server.url}/v1/indexes/nothing/window-ends/events")
        assert missing.status_code == 404


def test_cli_adds_lists_deletes_webhooks_and_maintain_notices_ends(cli, client: LeaderboardClient) -> None:
    base = int(time.time()) - 50
    make_board(client, "cli", base)
    added = cli("webhook", "add", "cli", "https://example.com/hook", "--type", "1", "--top", "3", "--json")
    made = json.loads(added.output)
    assert made["window_types"] == [1] and made["top"] == 3 and len(made["secret"]) == 64
    listed = cli("webhook", "list", "cli").output
    assert made["id"] in listed and "0 events waiting" in listed and made["secret"] not in listed
    report = cli("maintain", "--once", "--now", str(base + 100)).output
    assert "cli: noticed 1 ended window, 1 webhook event" in report
    assert "1 event waiting" in cli("webhook", "list", "cli").output  # this server delivers nothing
    shown_ends = cli("window-ends", "cli", "--after", "0", "--events", "1").output
    assert f"window type 1 [{base}, {base + 100}) ended with 7 records" in shown_ends
    assert "#1" in shown_ends
    cli("webhook", "delete", "cli", made["id"])
    assert "no webhook" in cli("webhook", "delete", "cli", made["id"], code=1).output


# -- several processes, and a SIGKILL -----------------------------------------------------------------


@pytest.fixture(params=["lmdb", "fdb"])
def shared_store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "lmdb":
        return f"lmdb:{tmp_path / 'store'}"
    _skip_fdb_if_unavailable()
    return f"fdb:{os.environ['FDB_CLUSTER_FILE']}"


def serve(store: str) -> tuple[subprocess.Popen, str]:
    """A server process on ``store``: maintenance every 0.3 s, webhooks answering within 1 s (so a
    dead process's leases run out after 3 s), retries after 0.1 s."""
    child = subprocess.Popen(
        [*SERVE, "--store", store, "--address", "127.0.0.1:0", "--http-address", "off", "--read-processes", "0",
         "--maintain-every", "0.3s", "--webhook-timeout", "1s", "--webhook-first-retry", "0.1s", "--grace", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    readable, _, _ = select.select([child.stdout], [], [], 90)
    line = child.stdout.readline() if readable else ""  # type: ignore[union-attr]
    if "serving on" not in line:
        child.kill()
        raise AssertionError(f"the server did not start: {line!r} {child.stderr.read()}")  # type: ignore[union-attr]
    return child, line.split(" serving on ")[1].split()[0]


def test_one_delivery_per_webhook_and_window_across_sigkill_and_two_processes(
    shared_store: str, receiver: Receiver
) -> None:
    name = f"ends-{uuid.uuid4().hex[:12]}"  # FoundationDB's default catalog is shared by tests
    children = []
    try:
        first, second = serve(shared_store), serve(shared_store)
        children += [first[0], second[0]]
        with LeaderboardClient(first[1], timeout=30) as lb:
            lb.create_index(name, high_score_first=True)
            start = int(time.time())
            # The first window ends 3 s from now, the others a second apart from 8 s on: the kill
            # below comes between (no other event is then being delivered).
            ends = [start + 3, start + 8, start + 9, start + 10]
            lb.update_windows(name, windows=[(1, end - 1, end) for end in ends], high_score_first=True)
            for i, end in enumerate(ends):
                lb.add_score(name, f"p{i}", 100 + i, end - 1)
            secrets_ = {path: f"secret-{path[1:]}-0123456789" for path in ("/held", "/one", "/two")}
            lb.add_webhook(name, receiver.url("/held", secrets_["/held"], hold=True), secrets_["/held"])
            for path in ("/one", "/two"):
                lb.add_webhook(name, receiver.url(path, secrets_[path]), secrets_[path])
        # Both processes notice the first end; one sends /held its event, which the receiver holds,
        # while the others are delivered (and cleared: a kill between a 2xx and its clear would
        # send that event again, as the README says).
        wait_until(receiver.holding.is_set, "a delivery held by the receiver")
        with LeaderboardClient(first[1], timeout=30) as lb:
            wait_until(lambda: sum(w.pending for w in lb.webhooks(name)) == 1, "the others delivered")
        for child in children:
            child.send_signal(signal.SIGKILL)
            child.wait()
        receiver.release.set()  # the held request is answered (to nobody)
        children = []
        restarted = [serve(shared_store), serve(shared_store)]
        children += [child for child, _ in restarted]
        for path in ("/held", "/one", "/two"):
            wait_until(lambda path=path: len(set(receiver.acked_ids(path))) == 4, f"four events at {path}", 120)
        with LeaderboardClient(restarted[0][1], timeout=30) as lb:
            wait_until(lambda: all(w.pending == 0 for w in lb.webhooks(name)), "the outbox emptied")
        for path in ("/held", "/one", "/two"):
            ids = receiver.acked_ids(path)
            assert len(ids) == len(set(ids)) == 4  # each window once
            assert sorted(e["window"]["end"] for e in receiver.acked[path]) == ends
            for event in receiver.acked[path]:
                i = ends.index(event["window"]["end"])
                assert shown(event) == [(f"p{i}", 100 + i)]
        # The held event was tried twice (held, then after the lease ran out); nothing else was
        # sent twice: no two processes sent one event.
        tried = collections.Counter((path, event_id) for path, event_id, _ in receiver.attempts)
        assert sorted(tried.values()) == [1] * 11 + [2]
        with LeaderboardClient(restarted[0][1], timeout=30) as lb:
            lb.drop_index(name)
    finally:
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        for child in children:
            try:
                child.wait(30)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()


# -- the Python API: leases and retries, by the clock given ---------------------------------------


def test_a_lease_keeps_an_event_to_one_process_until_it_runs_out(db, prefix) -> None:
    catalog = Catalog(db, prefix)
    events = WindowEvents(catalog)
    end = int(time.time()) + 100
    catalog.create("api", IndexSettings(), windows=[(1, end - 200, end)])
    catalog.get("api").add_score(("ann",), 5, end - 150)
    made = events.add_webhook("api", "https://example.com/hook", "", [1], 1)
    assert events.notice("api", now=end - 1) == ([], 0, end)  # not ended: when it will
    (window,) = [w for w in catalog.get("api").directory().windows if w.type == 1]
    clock = end + 1.0
    assert events.notice("api", now=end, clock=clock) == ([window], 1, None)
    assert events.notice("api", now=end, clock=clock) == ([], 0, None)  # once
    (taken,), _ = events.claim("a", lease=10, batch=16, clock=clock)
    assert json.loads(taken.body)["entries"][0]["pk"] == ["ann"] and taken.secret == made.secret
    assert events.claim("b", lease=10, batch=16, clock=clock + 9) == ([], True)  # a's lease holds
    (again,), _ = events.claim("b", lease=10, batch=16, clock=clock + 11)  # a died: b takes over
    assert again.id == taken.id
    assert events.failed(again.id, "HTTP 500", first_retry=2, clock=clock + 12) == "failed"
    assert events.claim("b", lease=10, batch=16, clock=clock + 13) == ([], True)  # due again 2 s later
    (third,), _ = events.claim("b", lease=10, batch=16, clock=clock + 14)
    assert [w.last_error for w in events.webhooks("api")] == ["HTTP 500"]
    events.delivered(third.id)
    assert events.failed(third.id, "late", first_retry=2, clock=clock + 15) == "delivered"
    assert [w.pending for w in events.webhooks("api")] == [0]
    assert [e.cursor for e in events.events_after("api", 0)] == [1]


def test_claims_listings_and_deletions_reach_past_the_outboxs_first_thousand_rows(db, prefix) -> None:
    """2,500 events of a webhook whose receiver is down (waiting for a later try) lie ahead of
    another webhook's due event in the outbox's order: a claim finds it all the same, a listing
    counts every event and a deletion drops every one, in transactions of 1,000; a webhook with
    POSTs under way gets no more than its share of a claim."""
    catalog = Catalog(db, prefix)
    events = WindowEvents(catalog)
    catalog.create("api", IndexSettings())
    down = events.add_webhook("api", "https://example.com/down", "", [], 1)
    fresh = events.add_webhook("api", "https://example.com/fresh", "", [], 1)
    now = time.time()

    def waiting(tr: object, event_id: str, webhook: str, due: float) -> None:  # as noticing writes them
        state = {"webhook": webhook, "index": "api", "created": now, "due": due, "attempts": 0, "owner": "",
                 "lease_until": 0.0, "error": ""}  # fmt: skip
        tr.set(events._key("outbox", event_id), json.dumps(state).encode())  # type: ignore[attr-defined]
        tr.set(events._key("outbox_body", event_id), b"{}")  # type: ignore[attr-defined]

    def backlog(tr: object) -> None:
        for i in range(2500):
            waiting(tr, f"evt_0{i:023x}", down.id, now + 600)
        waiting(tr, "evt_f" + "0" * 23, fresh.id, now)

    db.run(backlog)
    (taken,), _ = events.claim("a", lease=10, batch=16, clock=now)
    assert taken.webhook == fresh.id and taken.url == "https://example.com/fresh"
    assert {w.id: w.pending for w in events.webhooks("api")} == {down.id: 2500, fresh.id: 1}
    assert events.claim("a", lease=10, batch=16, clock=now) == ([], True)  # every row looked at: nothing due
    # Three of the backlog come due: a process with one POST of it under way takes one more (two at once).
    db.run(lambda tr: [waiting(tr, f"evt_0{i:023x}", down.id, now) for i in (7, 1500, 2400)])
    claimed, _ = events.claim("a", lease=10, batch=16, clock=now, busy={down.id: 1}, per_webhook=2)
    assert [event.webhook for event in claimed] == [down.id]
    assert events.delete_webhook("api", down.id) == (True, 2500)
    assert [(w.id, w.pending) for w in events.webhooks("api")] == [(fresh.id, 1)]
    assert events.pending() == 1
