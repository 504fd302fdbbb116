"""The HTTP front end against careless and hostile callers, as tests/service/test_hardening.py holds the
gRPC one: cross-site writes, idle and slow connections, too many connections, stalled uploads,
bodies sent before (or without) a token, made-up methods in the metrics, event streams, malformed
input, abandoned uploads, and Load over HTTP.

The callers are real: raw TCP sockets sending a request's head or body a line at a time or not
at all, httpx clients, a server process given few file descriptors.  A foreign page in a real
browser is in tests/http/test_page.py.
"""

from __future__ import annotations

import asyncio
import json
import re
import resource
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest

from fdb_leaderboard.access import Tokens
from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.http import HttpLimits, HttpServer, rest, transcode
from fdb_leaderboard.service import Server, ServerSettings

pytestmark = pytest.mark.usefixtures("no_unexpected_server_errors", "no_unexpected_http_errors")

ROOT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).parent / "fdb-leaderboard")
T0 = 1_795_420_000
JSON = {"content-type": "application/json"}
NDJSON = {"content-type": "application/x-ndjson"}
READER, ADMIN = "r" * 20, "a" * 20


def start(path: Path, limits: HttpLimits | None = None, **settings: Any) -> tuple[Server, HttpServer]:
    server = Server(f"lmdb:{path}?durable=false", "127.0.0.1:0", settings=ServerSettings(**settings)).start()
    try:
        return server, HttpServer(server, "127.0.0.1:0", limits).start()
    except BaseException:
        server.stop(grace=0)
        raise


@pytest.fixture
def door(tmp_path: Path) -> Iterator[tuple[Server, HttpServer, LeaderboardClient]]:
    """A server with short receive and stream timeouts, an index 'game' with three scores."""
    server, http = start(
        tmp_path / "s", HttpLimits(keep_alive=0.5, max_event_streams=24), receive_timeout=0.5, stream_idle_timeout=2
    )
    with LeaderboardClient(server.address, timeout=20) as lb:
        lb.create_index("game", high_score_first=True)
        lb.update_windows("game", high_score_first=True)
        for i, name in enumerate(("ann", "bob", "cid")):
            lb.add_score("game", (name,), 10 * (i + 1), T0 + i)
        yield server, http, lb
    server.stop(grace=1)


@pytest.fixture
def locked(tmp_path: Path) -> Iterator[tuple[Server, HttpServer]]:
    """A server with tokens (and an index 'game')."""
    server, http = start(tmp_path / "s", tokens=Tokens.parse(f"read:{READER} admin:{ADMIN}"), receive_timeout=30)
    with LeaderboardClient(server.address, token=ADMIN) as lb:
        lb.create_index("game")
        lb.update_windows("game")
    yield server, http
    server.stop(grace=1)


def connect(http: HttpServer) -> socket.socket:
    host, port = http.address.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=10)


def head(http: HttpServer, method: str, path: str, *headers: str) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {http.address}", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def read_answer(sock: socket.socket, timeout: float = 10) -> tuple[int, dict[str, Any]] | None:
    """The status and JSON body of the answer on ``sock``; None if the server closed it without one."""
    sock.settimeout(timeout)
    data = b""
    while b"\r\n\r\n" not in data:
        got = sock.recv(65536)
        if not got:
            return None
        data += got
    top, _, body = data.partition(b"\r\n\r\n")
    length = int(re.search(rb"(?i)content-length: *(\d+)", top).group(1))  # type: ignore[union-attr]
    while len(body) < length:
        got = sock.recv(65536)
        assert got, "the answer was cut"
        body += got
    return int(top.split()[1]), json.loads(body)


def closed_by_server(sock: socket.socket, until: float) -> bool:
    """Whether the server closes ``sock`` (anything it sends meanwhile is read) by ``until``."""
    try:
        while (left := until - time.monotonic()) > 0:
            sock.settimeout(left)
            if not sock.recv(65536):
                return True
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True
    return False


def series(text: str, name: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(name + "{")]


# -- 1. cross-site writes and other hosts --------------------------------------------------------


def test_cross_site_writes_and_foreign_hosts_are_refused(door) -> None:
    _, http, lb = door
    port = http.address.rsplit(":", 1)[1]
    with httpx.Client(base_url=http.url, timeout=10) as web:
        drop = b'{"index": "game"}'
        # What a foreign page's fetch or form sends without asking the server first.
        for headers, status, code in [
            ({"origin": "http://evil.example", "content-type": "text/plain"}, 403, "PERMISSION_DENIED"),
            ({"origin": "null", "content-type": "application/x-www-form-urlencoded"}, 403, "PERMISSION_DENIED"),
            ({"origin": "http://evil.example", "content-type": "application/json"}, 403, "PERMISSION_DENIED"),
            ({"content-type": "text/plain"}, 415, "INVALID_ARGUMENT"),
            ({"content-type": "multipart/form-data; boundary=x"}, 415, "INVALID_ARGUMENT"),
            ({}, 415, "INVALID_ARGUMENT"),  # a Blob without a type: no Content-Type at all
        ]:
            response = web.post("/v1/DropIndex", content=drop, headers=headers)
            assert (response.status_code, response.json()["code"]) == (status, code), (headers, response.text)
        response = web.post("/v1/indexes/game/scores", content=b'{"pk": "eve", "score": 99}', headers={})
        assert response.status_code == 415 and "must be JSON" in response.json()["message"]
        # DNS rebinding: a foreign name resolving to this address, its page then same-origin.
        rebound = {"host": f"evil.example:{port}", "origin": f"http://evil.example:{port}", **JSON}
        assert web.post("/v1/DropIndex", content=drop, headers=rebound).status_code == 400
        foreign = web.get("/v1/indexes", headers={"host": "evil.example"})
        assert foreign.status_code == 400
        assert foreign.json()["message"] == "this server does not answer to the host name 'evil.example'"
        assert [i.name for i in lb.list_indexes()] == ["game"] and lb.count("game") == 3  # nothing written
        # The server's own page, and clients that are not browsers, may write.
        own = {"origin": f"http://127.0.0.1:{port}", **JSON}
        assert web.post("/v1/CreateIndex", json={"name": "mine"}, headers=own).status_code == 200
        assert web.post("/v1/CreateIndex", json={"name": "cli"}, headers=JSON).status_code == 200
        assert web.post("/v1/ListIndexes", content=b"{}", headers={"content-type": "application/json; charset=utf-8"})
        for name in (f"localhost:{port}", f"[::1]:{port}", "127.0.0.1"):
            assert web.get("/v1/indexes", headers={"host": name}).status_code == 200, name
        # The page may not be framed nor load anything from elsewhere; nothing is sniffed.
        page = web.get("/")
        assert page.headers["x-frame-options"] == "DENY" and page.headers["x-content-type-options"] == "nosniff"
        policy = page.headers["content-security-policy"]
        assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy
        assert web.get("/static/app.js").headers["x-content-type-options"] == "nosniff"


def test_hosts_answered_follow_the_address_and_the_operator(tmp_path: Path) -> None:
    assert HttpLimits().allowed_hosts("127.0.0.1:8080") == ["localhost", "*.localhost", "127.0.0.1", "[::1]"]
    assert "127.0.0.2" in HttpLimits().allowed_hosts("127.0.0.2:8080")
    assert HttpLimits().allowed_hosts("0.0.0.0:8080") == ["*"]  # beyond loopback, tokens guard the door
    assert HttpLimits(hosts=("lb.example.com",)).allowed_hosts("0.0.0.0:8080") == ["lb.example.com"]
    server, http = start(tmp_path / "s", HttpLimits(hosts=("lb.example.com", "*.lb.example.com")))
    try:
        with httpx.Client(base_url=http.url, timeout=10) as web:
            for host, status in [("lb.example.com", 200), ("eu.lb.example.com", 200), ("127.0.0.1", 400)]:
                assert web.get("/v1/indexes", headers={"host": host}).status_code == status, host
    finally:
        server.stop(grace=1)


# -- 2. idle, slow and too many connections ---------------------------------------------------------


def test_idle_and_slow_connections_are_closed(door) -> None:
    """receive_timeout 0.5 s for a request's head and body, keep-alive 0.5 s."""
    _, http, _ = door
    idle = [connect(http) for _ in range(20)]  # connect, send nothing
    kept = connect(http)
    kept.sendall(head(http, "GET", "/v1/indexes"))
    assert read_answer(kept)[0] == 200  # type: ignore[index]
    slow_body = connect(http)
    slow_body.sendall(head(http, "POST", "/v1/Top", "Content-Type: application/json", "Content-Length: 100") + b"{")
    slow_head = connect(http)
    slow_head.sendall(b"GET /v1/indexes HTTP/1.1\r\n")
    until = time.monotonic() + 10
    while time.monotonic() < until and not closed_by_server(slow_head, time.monotonic() + 0.1):
        slow_head.sendall(b"X-Slow: a header line every 0.1 s\r\n")  # never a whole head
    assert time.monotonic() < until, "a head sent a line at a time was never timed out"
    answer = read_answer(slow_body)
    assert answer is not None and answer[0] == 504, answer
    assert answer[1]["message"] == "the request body did not arrive within 0.5 s"
    assert all(closed_by_server(sock, until) for sock in [*idle, kept])
    with httpx.Client(base_url=http.url, timeout=10) as web:  # the server answers on
        assert web.get("/v1/indexes").status_code == 200
    for sock in [*idle, kept, slow_body, slow_head]:
        sock.close()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_connections_beyond_the_descriptors_share_are_refused_and_grpc_keeps_its_own(tmp_path: Path) -> None:
    """A server process with 400 file descriptors: 500 connections that send nothing take none
    of gRPC's, a new HTTP client still gets in, and the refusals are logged once."""
    grpc_port, http_port = _free_port(), _free_port()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    process = subprocess.Popen(
        [CLI, "serve", "--store", f"lmdb:{tmp_path / 's'}?durable=false", "--address", f"127.0.0.1:{grpc_port}",
         "--http-address", f"127.0.0.1:{http_port}", "--receive-timeout", "3", "--read-processes", "0",
         "--http-host", "127.0.0.1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (400, hard)),
    )  # fmt: skip
    held: list[socket.socket] = []
    try:
        assert "serving on" in process.stdout.readline()  # type: ignore[union-attr]
        for _ in range(500):
            held.append(socket.create_connection(("127.0.0.1", http_port), timeout=10))
        with LeaderboardClient(f"127.0.0.1:{grpc_port}", timeout=10) as lb:  # a new gRPC connection
            lb.create_index("game")
            assert [i.name for i in lb.list_indexes()] == ["game"]
        response = httpx.get(f"http://127.0.0.1:{http_port}/v1/indexes", timeout=10)
        assert [i["name"] for i in response.json()["indexes"]] == ["game"]
        other_name = httpx.get(f"http://localhost:{http_port}/v1/indexes", timeout=10)  # not a --http-host
        assert other_name.status_code == 400
        until = time.monotonic() + 20
        assert all(closed_by_server(sock, until) for sock in held)
    finally:
        for sock in held:
            sock.close()
        process.terminate()
        _, err = process.communicate(timeout=30)
    refusals = [line for line in err.splitlines() if "HTTP connections are open" in line]
    assert 1 <= len(refusals) <= 3 and len(err.splitlines()) < 10, err[-3000:]


# -- 3. stalled uploads ------------------------------------------------------------------------------


def test_a_stalled_upload_times_out_keeps_what_it_sent_and_frees_its_load_slot(door) -> None:
    """stream_idle_timeout 2 s; two load slots (the default) shared with gRPC."""
    _, http, lb = door
    uploads = []
    for i in range(2):
        upload = connect(http)
        record = {"records": [{"pk": [{"string": f"up{i}"}], "entries": [{"score": {"int": 5}, "timestamp": T0}]}]}
        lines = b'{"index": "game", "batch_size": 1}\n' + json.dumps(record).encode() + b"\n"
        upload.sendall(
            head(http, "POST", "/v1/BulkLoad", "Content-Type: application/x-ndjson", "Transfer-Encoding: chunked")
            + chunk(lines)
        )
        uploads.append(upload)
    until = time.monotonic() + 10
    while lb.rank_and_entry("game", ("up0",)) is None or lb.rank_and_entry("game", ("up1",)) is None:
        assert time.monotonic() < until, "the uploads' first records were not saved"
    with pytest.raises(grpc.RpcError) as refused:  # both slots are held by the stalled uploads
        lb.bulk_load("game", [(("grpc",), [(1, T0)])])
    assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    for upload in uploads:
        answer = read_answer(upload)
        assert answer is not None and answer[0] == 504, answer
        assert answer[1]["message"] == (
            "the next BulkLoad message did not arrive within 2 s; the record before it was saved"
        )
        upload.close()
    assert lb.bulk_load("game", [(("grpc",), [(1, T0)])]) == 1  # the slots are free again


# -- 4. the token before the body ------------------------------------------------------------------


def test_the_token_is_checked_before_the_body_is_read(locked) -> None:
    _, http = locked
    sock = connect(http)
    # 4 MB announced, none sent: the refusal does not wait for it.
    sock.sendall(head(http, "POST", "/v1/WriteBatch", "Content-Type: application/json", "Content-Length: 4000000"))
    answer = read_answer(sock)
    assert answer is not None and answer[0] == 401 and answer[1]["code"] == "UNAUTHENTICATED", answer
    assert closed_by_server(sock, time.monotonic() + 10)  # nor will it read the body afterwards
    sock.close()
    deep_key = "/v1/indexes/game/windows/0/records/" + "[" * 5000 + "/rank"
    with httpx.Client(base_url=http.url, timeout=10) as web:
        for token, status in [(None, 401), (READER, 400)]:
            auth = {"authorization": f"Bearer {token}"} if token else {}
            assert web.post("/v1/Top", content=b"{not json", headers={**JSON, **auth}).status_code == status
            assert web.get(deep_key, headers=auth).status_code == status
            upload = web.post("/v1/BulkLoad", content=b"{not json\n", headers={**NDJSON, **auth})
            assert upload.status_code == (401 if token is None else 403)  # BulkLoad needs admin


def test_a_request_carrying_two_authorization_headers_is_refused(locked) -> None:
    """Which of two tokens a request means is anyone's guess: refused whatever their order (the
    gRPC door refuses the same), before anything is read or done."""
    _, http = locked
    for first, second in ((READER, ADMIN), (ADMIN, READER), (ADMIN, ADMIN)):
        for request in (
            head(http, "GET", "/v1/indexes", f"Authorization: Bearer {first}", f"Authorization: Bearer {second}"),
            head(
                http, "POST", "/v1/DropIndex", f"Authorization: Bearer {first}", "Content-Type: application/json",
                f"Authorization: Bearer {second}", "Content-Length: 17",
            ) + b'{"index": "game"}',
        ):  # fmt: skip
            sock = connect(http)
            sock.sendall(request)
            answer = read_answer(sock)
            sock.close()
            assert answer is not None and answer[0] == 401, answer
            assert answer[1]["code"] == "UNAUTHENTICATED" and "one Authorization header, not 2" in answer[1]["message"]
    with httpx.Client(base_url=http.url, timeout=10, headers={"authorization": f"Bearer {ADMIN}"}) as web:
        assert [i["name"] for i in web.get("/v1/indexes").json()["indexes"]] == ["game"]  # nothing dropped


def test_large_bodies_are_parsed_off_the_event_loop(door, monkeypatch: pytest.MonkeyPatch) -> None:
    from fdb_leaderboard.http import app

    _, http, _ = door
    threads: list[tuple[int, str]] = []
    parse = app.parse_request

    def noting(text: bytes, *args: Any) -> Any:
        threads.append((len(text), threading.current_thread().name))
        return parse(text, *args)

    monkeypatch.setattr(app, "parse_request", noting)
    records = [{"pk": [{"string": f"w{i}"}], "entries": [{"score": {"int": i}, "timestamp": T0}]} for i in range(2000)]
    with httpx.Client(base_url=http.url, timeout=20) as web:
        assert web.post("/v1/WriteBatch", json={"index": "game", "records": records}).status_code == 200
        assert web.post("/v1/Count", json={"index": "game"}).json()["count"] == 2003
    (large, large_thread), (small, small_thread) = threads
    assert large > app.PARSE_ON_LOOP_BYTES > small
    assert small_thread == "http" and large_thread != "http"  # "http": the event loop's thread


# -- 5. the metrics' labels --------------------------------------------------------------------------


def test_made_up_methods_and_paths_do_not_grow_the_metrics(door) -> None:
    _, http, _ = door
    with httpx.Client(base_url=http.url, timeout=10) as web:
        for i in range(200):
            web.request(f"MADEUP{i}", "/v1/indexes")
            web.get(f"/no/such/path/{i}")
        text = web.get("/metrics").text
    requests = series(text, "fdb_leaderboard_http_requests_total")
    methods = {re.search(r'method="([^"]*)"', line).group(1) for line in requests}  # type: ignore[union-attr]
    assert methods == {"GET", "other"}, methods
    assert len(requests) < 10 and len(text) < 200_000, requests


# -- 6. event streams ---------------------------------------------------------------------------------


def test_event_streams_share_one_computation_are_capped_and_freed(door) -> None:
    """24 streams at most (the fixture's limit), 100 rows each (the default)."""
    server, http, lb = door
    path = "/v1/indexes/game/windows/0/top/events"
    events = http.api.events

    def top_calls() -> float:
        labels = {"transport": "http", "method": "Top", "code": "OK"}
        return server.metrics.registry.get_sample_value("fdb_leaderboard_calls_total", labels) or 0.0

    async def watch() -> float:
        async with httpx.AsyncClient(base_url=http.url, timeout=20, limits=httpx.Limits(max_connections=40)) as web:
            opened = []
            before = top_calls()
            for _ in range(24):
                response = await web.send(web.build_request("GET", path, params={"n": 3, "interval": 0.2}), stream=True)
                assert response.status_code == 200
                opened.append((response, response.aiter_lines()))
            refused = await web.get(path, params={"n": 3, "interval": 0.2})
            assert refused.status_code == 429 and "24 event streams are open" in refused.json()["message"]
            too_long = await web.get(path, params={"n": 101})
            assert too_long.status_code == 400 and "at most 100 rows" in too_long.json()["message"]
            assert len(events.boards) == 1 and events.streams == 24
            for change in range(3):
                best = f"best{change}"
                await asyncio.to_thread(lb.add_score, "game", (best,), 100 + change, T0)
                for _, lines in opened:
                    async for line in lines:
                        if line.startswith("data: ") and json.loads(line[6:])["entries"][0]["pk"] == [best]:
                            break
            calls = top_calls() - before
            for response, _ in opened:
                await response.aclose()
            return calls

    calls = asyncio.run(watch())
    # Every stream saw three changes: one computation of the board each interval, not one per stream.
    assert 0 < calls < 24 * 3, calls
    until = time.monotonic() + 10
    while events.boards or events.streams:  # closed streams free their board
        assert time.monotonic() < until, (events.boards, events.streams)
        time.sleep(0.05)
    # Boards are read on the reader process (no caller waits for them: they never hold the server).
    assert server.dispatcher.readers is not None and server.dispatcher.readers.served == top_calls()


def test_event_streams_leave_half_the_connections_to_requests(tmp_path: Path) -> None:
    """8 connections allowed: 4 streams at most (not the 100 asked), and while they and more
    callers of streams are open, a request still gets in and is answered."""
    assert HttpLimits(max_connections=8, max_event_streams=100).event_stream_budget() == 4
    assert HttpLimits(max_connections=1000, max_event_streams=3).event_stream_budget() == 3
    server, http = start(tmp_path / "s", HttpLimits(max_connections=8, max_event_streams=100))
    try:
        with LeaderboardClient(server.address) as lb:
            lb.create_index("game")
            lb.update_windows("game")

        async def crowd() -> list[int]:
            path = "/v1/indexes/game/windows/0/top/events"
            async with httpx.AsyncClient(base_url=http.url, timeout=20) as web:
                opened = []
                for _ in range(4):
                    response = await web.send(web.build_request("GET", path), stream=True)
                    assert response.status_code == 200
                    opened.append(response)
                statuses = []
                for _ in range(3):  # more would-be streams, each refused: their connections wait
                    refused = await web.get(path, timeout=10)  # (a stream, not refused, would not end)
                    assert refused.status_code == 429 and "4 event streams are open" in refused.json()["message"]
                async with httpx.AsyncClient(base_url=http.url, timeout=20) as other:  # new connections
                    for _ in range(10):
                        statuses.append((await other.get("/v1/indexes")).status_code)
                for response in opened:
                    await response.aclose()
                return statuses

        assert asyncio.run(crowd()) == [200] * 10
    finally:
        server.stop(grace=1)


# -- 7. malformed input, abandoned uploads ---------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/v1/indexes/game/scores", b'{"pk": "\\ud800", "score": 1}'),  # a lone surrogate
        ("GET", "/v1/indexes/game/windows/0/records/%5B%22%5Cud800%22%5D/rank", None),
        ("GET", "/v1/indexes/game/windows/0/records/[18446744073709551616]/rank", None),  # >= 2^64
        ("POST", "/v1/indexes/game/scores", b'{"pk": [18446744073709551616], "score": 1}'),
        ("POST", "/v1/indexes/game/scores", b"[" * 1000 + b"]" * 1000),  # nested 1,000 deep
        ("POST", "/v1/Top", b'{"index": "game", "group": ' + b"[" * 1000 + b"]" * 1000 + b"}"),
        ("GET", "/v1/indexes/game/windows/0/records/" + "[" * 5000 + "/rank", None),
        ("POST", "/v1/AddScore", b'{"index": "game", "pk": [{"string": "\\ud800"}], "entry": {"score": {"int": 1}}}'),
    ],
)
def test_malformed_input_is_invalid_argument_never_a_server_error(
    door, method: str, path: str, body: bytes | None
) -> None:
    _, http, lb = door
    with httpx.Client(base_url=http.url, timeout=10) as web:
        response = web.request(method, path, content=body, headers=JSON if body is not None else {})
        assert response.status_code == 400 and response.json()["code"] == "INVALID_ARGUMENT", response.text
        assert len(response.json()["message"]) < 1100
        counted = series(web.get("/metrics").text, "fdb_leaderboard_http_requests_total")
        assert not [line for line in counted if 'status="500"' in line], counted
    assert lb.count("game") == 3


def test_json_bodies_that_are_no_objects_are_refused_on_every_post_route(door) -> None:
    """A request is a JSON object of its message's fields: null, a number, a string or an array
    is refused by every RPC's route (an NDJSON stream's line likewise) and every resource route
    that takes a body, never a server error, and nothing is written."""
    _, http, lb = door
    bodies = [b"null", b"123", b'"game"', b"true", b"[]", b'[{"index": "game"}]']
    with httpx.Client(base_url=http.url, timeout=10) as web:
        for rpc in transcode.rpcs():
            for body in bodies:
                response = web.post(rpc.path, content=body, headers=NDJSON if rpc.client_streaming else JSON)
                assert response.status_code == 400, (rpc.name, body, response.text)
                message = response.json()["message"]
                assert "must be a JSON object" in message and rpc.request_type.DESCRIPTOR.name in message, message
        for route in (route for route in rest.ROUTES if route.method == "POST"):
            path = route.path.format(index="game", pk="ann", group="eu", id="wh_0", type=0)
            for body in bodies[1:]:
                response = web.post(path, content=body, headers=JSON)
                assert response.status_code == 400, (path, body, response.text)
    assert [i.name for i in lb.list_indexes()] == ["game"] and lb.count("game") == 3


def test_json_in_another_encoding_than_utf8_is_refused_naming_it(door) -> None:
    """JSON between systems is UTF-8 (RFC 8259): UTF-16 and UTF-32, which Python's parser would
    take, a body that is not UTF-8 and a charset other than UTF-8 are refused, saying which."""
    _, http, lb = door
    drop = json.dumps({"index": "game"})
    with httpx.Client(base_url=http.url, timeout=10) as web:
        for encoding, named in [
            ("utf-16", "UTF-16"), ("utf-16-le", "UTF-16-LE"), ("utf-16-be", "UTF-16-BE"), ("utf-32", "UTF-32"),
            ("utf-32-le", "UTF-32-LE"), ("utf-32-be", "UTF-32-BE"),
        ]:  # fmt: skip
            for path, body, headers in [
                ("/v1/DropIndex", drop, JSON),
                ("/v1/indexes/game/scores", json.dumps({"pk": "eve", "score": 99}), JSON),
                ("/v1/BulkLoad", json.dumps({"index": "game"}) + "\n", NDJSON),
            ]:
                response = web.post(path, content=body.encode(encoding), headers=headers)
                assert response.status_code == 400, (path, encoding, response.text)
                message = response.json()["message"]
                assert f"it is {named}, not UTF-8" in message and "RFC 8259" in message, message
        latin = web.post("/v1/DropIndex", content='{"index": "gäme"}'.encode("latin-1"), headers=JSON)
        assert latin.status_code == 400 and "it is not UTF-8 (byte 12 is 0xe4" in latin.json()["message"], latin.text
        for charset in ("utf-16", "ISO-8859-1", '"latin1"'):
            typed = {"content-type": f"application/json; charset={charset}"}
            response = web.post("/v1/DropIndex", content=drop.encode(), headers=typed)
            assert response.status_code == 400, response.text
            assert f"not charset={charset.strip(chr(34)).lower()}" in response.json()["message"]
        for charset in ("utf-8", "UTF-8", '"utf-8"'):
            typed = {"content-type": f"application/json; charset={charset}"}
            assert web.post("/v1/Count", content=b'{"index": "game"}', headers=typed).json()["count"] == 3
    assert [i.name for i in lb.list_indexes()] == ["game"] and lb.count("game") == 3


def test_an_abandoned_upload_is_no_server_error(door) -> None:
    _, http, lb = door
    sock = connect(http)
    sock.sendall(head(http, "POST", "/v1/WriteBatch", "Content-Type: application/json", "Content-Length: 100000"))
    sock.sendall(b'{"index": "game", "records": [')
    sock.close()
    until = time.monotonic() + 10
    with httpx.Client(base_url=http.url, timeout=10) as web:
        while True:
            counted = series(web.get("/metrics").text, "fdb_leaderboard_http_requests_total")
            done = [line for line in counted if 'route="/v1/WriteBatch"' in line]
            if done:
                break
            assert time.monotonic() < until, counted
            time.sleep(0.05)
    assert len(done) == 1 and 'status="499"' in done[0], done  # the client closed the request
    assert lb.count("game") == 3


def test_a_dump_whose_client_went_away_stops_and_frees_its_slot(door) -> None:
    """A move's Dump never ends by itself (it waits for the writes to be paused): over HTTP, a
    client that gives up on it stops it, so such clients cannot take every stream's slot."""
    _, http, lb = door
    body = json.dumps({"index": "game", "keep_paused": True}).encode()
    for _ in range(3):  # the fixture's server runs two streams at once
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(f"{http.url}/v1/Dump", content=body, headers=NDJSON, timeout=1)
    loaded = httpx.post(f"{http.url}/v1/BulkLoad", content=b'{"index": "game"}', headers=NDJSON, timeout=20)
    assert loaded.status_code == 200, loaded.text
    lb.add_score("game", ("dan",), 5, T0)  # nothing left the writes paused
    assert lb.count("game") == 4


# -- 8. Load over HTTP --------------------------------------------------------------------------------


def test_load_over_http_saves_and_answers_its_last_progress(door) -> None:
    _, http, lb = door

    def record(name: str, score: int) -> str:
        return json.dumps(
            {"records": [{"pk": [{"string": name}], "entries": [{"score": {"int": score}, "timestamp": T0}]}]}
        )

    body = "\n".join([json.dumps({"index": "game", "batch_size": 2}), *(record(f"l{i}", 50 + i) for i in range(5))])
    with httpx.Client(base_url=http.url, timeout=20) as web:
        response = web.post("/v1/Load", content=body.encode(), headers=NDJSON)
        assert response.status_code == 200 and response.json() == {"records_saved": 5}, response.text
        assert [e.pk[0] for e in lb.top("game", 5)] == ["l4", "l3", "l2", "l1", "l0"]
        refused = "\n".join(
            [json.dumps({"index": "game", "batch_size": 2}), record("m0", 1), record("m1", 2), record("m2", 3),
             json.dumps({"records": [{"pk": [{}], "entries": [{"score": {"int": 1}}]}]})]
        )  # fmt: skip
        response = web.post("/v1/Load", content=refused.encode(), headers=NDJSON)
    assert response.status_code == 400, response.text
    message = response.json()["message"]
    assert message.startswith("record 4 of the load refused") and "the 2 records before it were saved" in message
    assert lb.rank_and_entry("game", ("m1",)) is not None and lb.rank_and_entry("game", ("m2",)) is None


def test_a_lone_surrogate_escape_is_refused_and_a_pair_taken() -> None:
    """``"\\ud800"`` is valid JSON but no character: refused before protobuf's parser meets it."""
    from fdb_leaderboard.http.plain import json_value
    from fdb_leaderboard.http.transcode import CallFailed

    assert json_value(b'{"name": "\\ud83d\\ude00"}', "request body") == {"name": "\U0001f600"}
    for body in (b'{"\\ud800": 1}', b'{"options": {"x\\udc00": 1}}', b'["\\ud800"]'):
        with pytest.raises(CallFailed, match="lone UTF-16 surrogate"):
            json_value(body, "request body")
