"""A normal client's latency while hostile callers press the server, over gRPC and over
HTTP, and the memory unparseable requests cost.

Starts ``fdb-leaderboard serve`` (gRPC and HTTP, with tokens) on a fresh store, loads ``--records``
records, then measures two normal clients at once, each its own process making sequential point
reads 2 ms apart with a read token: GetRank over gRPC, the REST rank route over HTTP (one kept-alive
connection).  Each phase lasts ``--seconds``:

1. ``baseline``: the clients alone;
2. ``grpc``: while ``--stalled`` gRPC calls whose request never arrives are held open (re-opened as
   the server times them out) and ``--heavy`` clients loop maximal reads (Top of the max page);
3. ``http``: while ``--idle`` connections send nothing and ``--slow`` more send their request head,
   and as many their body, a line or a byte a second (each re-opened as the server closes it);
   ``--uploads`` NDJSON uploads stall after their first record; ``--posters`` clients post 4 MB
   WriteBatch bodies without a token (``--post-rate`` a second each); ``--streams`` event streams
   watch as many boards (top 1 to 100 rows, every 0.2 to 0.5 s); and ``--junk`` clients loop
   made-up HTTP methods, unknown paths and malformed requests (a lone surrogate, a key >= 2^64,
   nesting 1,000 deep).

4. ``webhooks``: the delivery delay of a good webhook receiver (from the NoticeWindowEnds that
   noticed a window's end to its POST's arrival), ``--webhook-rounds`` windows alone, as many
   beside ``--hanging`` receivers that hold each POST 60 s, one answering 500 forever, one
   dripping its answer a byte every 4 s and one whose status line is malformed (``HTTP/1.1 20``),
   and as many once those are deleted; the receivers are a process of their own (asyncio).

Before the phases, ``--unauthenticated`` 4 MB posts without a token, one at a time, give the
server's CPU for each before its refusal.  The server runs with ``--nofile`` file descriptors.

It reports each client's p50/p99 per phase and the ratio of its p99 to the baseline's (a table
after the phases; ``--markdown``, ``--json PATH``), what the attackers got, the server's
resident memory, open file descriptors and log growth, and its ``/metrics`` size.  Then it
sends ``--bad`` gRPC requests that do not parse and reports the server's memory before and after.

    .venv/bin/python tools/bench hostile [--records 20000] [--seconds 20] [--phases baseline,grpc,http,webhooks]
        [--stalled 2000] [--heavy 4] [--idle 1100] [--slow 200] [--uploads 2] [--posters 4] [--post-rate 5]
        [--streams 400] [--junk 1] [--read-processes 1] [--read-priority idle]
        [--attacker-priority 0|NICE|idle] [--control] [--unauthenticated 10] [--nofile 1024]
        [--webhook-rounds 30] [--hanging 5] [--webhook-wait 60]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import multiprocessing
import os
import queue as queue_module
import random
import resource
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import grpc
import httpx
from grpc import aio

from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.proto import service_pb2 as pb
from fdb_leaderboard.service import SERVICE_NAME

from .options import add_output
from .output import show
from .timing import Sample, percentile, process_cpu, time_each, time_until

ROOT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).parent / "fdb-leaderboard")
ADMIN, READ = "bench-admin-token-0123456789", "bench-read-token-0123456789"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def _descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _bearer(token: str) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {token}"),)


# -- the normal clients ---------------------------------------------------------------------------


def grpc_client(address: str, records: int, seconds: float, out: multiprocessing.Queue) -> None:
    failures: Counter[str] = Counter()
    with LeaderboardClient(address, token=READ) as lb:
        with contextlib.suppress(grpc.RpcError):  # connect (a failure is counted below, as the calls')
            lb.rank("bench", ("p0",))

        def rank(_: int) -> None:
            try:
                lb.rank("bench", (f"p{random.randrange(records)}",))
            except grpc.RpcError as exc:
                failures[exc.code().name] += 1

        end = time.monotonic() + seconds
        sample = time_until(rank, lambda: time.monotonic() >= end, pause=0.002)
    out.put(("grpc", sample, failures))


def http_client(url: str, records: int, seconds: float, out: multiprocessing.Queue) -> None:
    failures: Counter[str] = Counter()
    with httpx.Client(base_url=url, headers={"authorization": f"Bearer {READ}"}, timeout=60) as web:
        with contextlib.suppress(httpx.HTTPError):  # connect
            web.get("/v1/indexes/bench/windows/0/records/p0/rank")

        def rank(_: int) -> None:
            try:
                answer = web.get(f"/v1/indexes/bench/windows/0/records/p{random.randrange(records)}/rank")
                if answer.status_code != 200:
                    failures[str(answer.status_code)] += 1
            except httpx.HTTPError as exc:
                failures[type(exc).__name__] += 1

        end = time.monotonic() + seconds
        sample = time_until(rank, lambda: time.monotonic() >= end, pause=0.002)
    out.put(("http", sample, failures))


def measure(address: str, url: str, args: argparse.Namespace) -> dict[str, tuple[Sample, Counter]]:
    """Both normal clients at once: their calls (failed ones included) and failures."""
    queue: multiprocessing.Queue = multiprocessing.Queue()
    clients = [
        multiprocessing.Process(target=grpc_client, args=(address, args.records, args.seconds, queue)),
        multiprocessing.Process(target=http_client, args=(url, args.records, args.seconds, queue)),
    ]
    for client in clients:
        client.start()
    measured = {}
    for _ in clients:
        kind, sample, failures = queue.get()
        measured[kind] = (sample, failures)
    for client in clients:
        client.join()
    return measured


# -- the gRPC attackers ---------------------------------------------------------------------------


def staller(address: str, count: int, stop: Any, ready: Any, out: multiprocessing.Queue, priority: str) -> None:
    """Keep ``count`` calls open whose request message never arrives (over 8 connections), re-opening
    each as the server times it out.  An asyncio client: the attacker costs little CPU of its own."""
    lower_priority(priority)

    async def run() -> int:
        forever = asyncio.Event()
        channels = [aio.insecure_channel(address, options=[("grpc.use_local_subchannel_pool", 1)]) for _ in range(8)]

        async def never() -> AsyncIterator[bytes]:
            await forever.wait()
            yield b""

        opened = 0

        async def hold(i: int) -> None:
            nonlocal opened
            method = channels[i % 8].stream_unary(f"/{SERVICE_NAME}/Top")
            while not stop.is_set():
                opened += 1
                with contextlib.suppress(grpc.RpcError):
                    await method(never(), timeout=3600, metadata=_bearer(READ))

        tasks = [asyncio.create_task(hold(i)) for i in range(count)]
        await run_until_stopped(tasks, lambda: opened >= count, ready, stop)
        for channel in channels:
            await channel.close()
        return opened

    out.put(("stalled calls opened", asyncio.run(run()), Counter()))


def heavy_reader(address: str, n: int, stop: Any, ready: Any, out: multiprocessing.Queue, priority: str) -> None:
    """Loop maximal Top reads.  As a hostile caller would, it takes the answers as bytes without
    decoding them (the first is decoded, to check it holds ``n`` rows): the server does all the
    work, the attacker's own CPU little."""
    lower_priority(priority)
    done, failures = 0, Counter()
    request = pb.TopRequest(index="bench", n=n).SerializeToString()
    with grpc.insecure_channel(address) as channel:
        top = channel.unary_unary(f"/{SERVICE_NAME}/Top")
        ready.set()
        while not stop.is_set():
            try:
                answer = top(request, timeout=120, metadata=_bearer(READ))
                if not done:
                    assert len(pb.EntriesResponse.FromString(answer).entries) == n
                done += 1
            except grpc.RpcError as exc:
                failures[exc.code().name] += 1
    out.put(("maximal reads", done, failures))


# -- the HTTP attackers ---------------------------------------------------------------------------


def http_holder(
    url: str, idle: int, slow: int, stop: Any, ready: Any, out: multiprocessing.Queue, priority: str
) -> None:
    """``idle`` connections that send nothing, ``slow`` that send a request head a header line a
    second and ``slow`` that send a body a byte a second (with a read token, so its time limit is
    what ends it), each re-opened 0.1 s after the server closes it."""
    lower_priority(priority)
    host, port = url.removeprefix("http://").rsplit(":", 1)
    head = f"Host: {host}:{port}\r\n"
    slow_head = f"GET /v1/indexes HTTP/1.1\r\n{head}".encode()
    slow_body = (
        f"POST /v1/Top HTTP/1.1\r\n{head}Authorization: Bearer {READ}\r\nContent-Type: application/json\r\n"
        "Content-Length: 10000\r\n\r\n{"
    ).encode()
    opened = Counter()

    async def hold(kind: str, first: bytes, drip: bytes) -> None:
        while not stop.is_set():
            try:
                reader, writer = await asyncio.open_connection(host, int(port))
            except OSError:
                opened["refused at connect"] += 1
                await asyncio.sleep(0.1)
                continue
            opened[kind] += 1
            try:
                writer.write(first)
                while not stop.is_set():
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(1):
                            if not await reader.read(65536):
                                break  # closed by the server
                    if drip:
                        writer.write(drip)
            except OSError:
                pass
            finally:
                writer.close()
            await asyncio.sleep(0.1)

    async def run() -> None:
        tasks = [asyncio.create_task(hold("idle", b"", b"")) for _ in range(idle)]
        tasks += [asyncio.create_task(hold("slow head", slow_head, b"X-Slow: 1\r\n")) for _ in range(slow)]
        tasks += [asyncio.create_task(hold("slow body", slow_body, b" ")) for _ in range(slow)]
        await run_until_stopped(tasks, lambda: sum(opened.values()) >= idle + 2 * slow, ready, stop)

    asyncio.run(run())
    out.put(("HTTP connections opened " + str(dict(opened)), sum(opened.values()), Counter()))


def http_uploader(url: str, count: int, stop: Any, ready: Any, out: multiprocessing.Queue, priority: str) -> None:
    """``count`` NDJSON uploads (admin token) that stall after their first record, re-opened when answered."""
    lower_priority(priority)
    host, port = url.removeprefix("http://").rsplit(":", 1)
    lines = b'{"index": "bench", "batch_size": 1}\n{"records": [{"pk": [{"string": "stalled"}], "entries": []}]}\n'
    answers = Counter()

    async def upload() -> None:
        while not stop.is_set():
            reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(
                f"POST /v1/BulkLoad HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {ADMIN}\r\n"
                "Content-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
                + b"%x\r\n%s\r\n" % (len(lines), lines)
            )
            while not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(1):
                        answer = await reader.read(65536)
                        answers[answer.split(b" ", 2)[1].decode() if answer else "closed"] += 1
                        break
            writer.close()

    async def run() -> None:
        tasks = [asyncio.create_task(upload()) for _ in range(count)]
        ready.set()
        await asyncio.gather(*tasks)

    asyncio.run(run())
    out.put((f"stalled uploads answered {dict(answers) or 'never (still stalled)'}", sum(answers.values()), Counter()))


def _large_body() -> bytes:
    """A well-formed WriteBatch body of about 4 MB (within the server's message limit)."""
    records = [
        {"pk": [{"string": f"x{i:07d}"}], "entries": [{"score": {"int": i}, "timestamp": i}]} for i in range(44_500)
    ]
    body = json.dumps({"index": "bench", "records": records}).encode()
    assert 3_900_000 < len(body) < 4 * 1024 * 1024, len(body)
    return body


def unauthenticated_cost(url: str, pid: int, count: int) -> None:
    """``count`` 4 MB WriteBatch posts without a token, one after another: the server's CPU and the
    wall time each costs before its answer."""
    body = _large_body()
    with httpx.Client(base_url=url, timeout=120, headers={"content-type": "application/json"}) as web:
        web.get("/v1/indexes")  # connect
        cpu = process_cpu(pid)
        sample, answers = time_each(lambda _: web.post("/v1/WriteBatch", content=body).status_code, range(count))
        cpu = process_cpu(pid) - cpu
    print(
        f"{count} unauthenticated 4 MB posts, one at a time: answered {dict(Counter(answers))}, server CPU "
        f"{cpu / count * 1000:.0f} ms each, answer after {sample.percentile_us(50) / 1000:.0f} ms (p50)"
    )


def http_poster(url: str, rate: float, stop: Any, ready: Any, out: multiprocessing.Queue, priority: str) -> None:
    """Post a 4 MB WriteBatch body without a token, ``rate`` times a second (0: as fast as it can)."""
    lower_priority(priority)
    body = _large_body()
    done, failures = 0, Counter()
    with httpx.Client(base_url=url, timeout=60, headers={"content-type": "application/json"}) as web:
        ready.set()
        started = time.monotonic()
        while not stop.is_set():
            try:
                answer = web.post("/v1/WriteBatch", content=body)
                failures[str(answer.status_code)] += 1
            except httpx.HTTPError as exc:
                failures[type(exc).__name__] += 1
            done += 1
            if rate:
                time.sleep(max(0.0, started + done / rate - time.monotonic()))
    out.put(("unauthenticated 4 MB posts", done, failures))


def http_streams(url: str, count: int, stop: Any, ready: Any, out: multiprocessing.Queue, priority: str) -> None:
    """``count`` event streams, each on a board of its own (top 1-100, every 0.2-0.5 s)."""
    lower_priority(priority)
    statuses, events = Counter(), 0

    async def watch(web: httpx.AsyncClient, i: int) -> None:
        nonlocal events
        params = {"n": 1 + i % 100, "interval": 0.2 + 0.1 * (i // 100 % 4)}
        while not stop.is_set():
            try:
                request = web.build_request("GET", "/v1/indexes/bench/windows/0/top/events", params=params)
                response = await web.send(request, stream=True)
                statuses[response.status_code] += 1
                if response.status_code != 200:
                    await response.aclose()
                    await asyncio.sleep(1)
                    continue
                async for _ in response.aiter_raw():
                    events += 1
                    if stop.is_set():
                        break
                await response.aclose()
            except httpx.HTTPError:
                statuses["error"] += 1
                await asyncio.sleep(1)

    async def run() -> None:
        limits = httpx.Limits(max_connections=count + 10)
        headers = {"authorization": f"Bearer {READ}"}
        async with httpx.AsyncClient(base_url=url, timeout=None, limits=limits, headers=headers) as web:
            tasks = [asyncio.create_task(watch(web, i)) for i in range(count)]
            await run_until_stopped(tasks, lambda: sum(statuses.values()) >= count, ready, stop)

    asyncio.run(run())
    out.put((f"event streams opened {dict(statuses)}, chunks read", events, Counter()))


def http_junk(url: str, stop: Any, ready: Any, out: multiprocessing.Queue, priority: str) -> None:
    """Made-up methods, unknown paths and malformed requests, one after another."""
    lower_priority(priority)
    bad = [
        ("POST", "/v1/indexes/bench/scores", b'{"pk": "\\ud800", "score": 1}'),
        ("GET", "/v1/indexes/bench/windows/0/records/[18446744073709551616]/rank", None),
        ("POST", "/v1/indexes/bench/scores", b"[" * 1000 + b"]" * 1000),
        ("GET", "/v1/indexes/bench/windows/0/records/" + "[" * 5000 + "/rank", None),
    ]
    statuses, done = Counter(), 0
    # With the admin token: the malformed requests get as far as being parsed.
    headers = {"authorization": f"Bearer {ADMIN}", "content-type": "application/json"}
    with httpx.Client(base_url=url, timeout=60, headers=headers) as web:
        ready.set()
        while not stop.is_set():
            if done % 3 == 0:
                method, path, body = f"M{random.randrange(10**9)}", f"/x/{random.randrange(10**9)}", None
            else:
                method, path, body = bad[done % len(bad)]
            with contextlib.suppress(httpx.HTTPError):
                statuses[web.request(method, path, content=body).status_code] += 1
            done += 1
    out.put(("made-up and malformed requests", done, Counter({str(k): v for k, v in statuses.items()})))


async def run_until_stopped(tasks: list[asyncio.Task], started: Callable[[], bool], ready: Any, stop: Any) -> None:
    """Say ``ready`` once ``started()``, then let ``tasks`` run until ``stop``, and cancel them."""
    while not started():
        await asyncio.sleep(0.1)
    ready.set()
    while not stop.is_set():
        await asyncio.sleep(0.2)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def lower_priority(priority: str) -> None:
    """Run this process at ``priority``: a nice level, or ``idle`` (Linux's idle policy)."""
    if priority == "idle":
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    else:
        os.nice(int(priority))


# -- webhook receivers, good and bad ---------------------------------------------------------------

OK_ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


async def _read_post(reader: asyncio.StreamReader) -> bytes:
    """A POST's body (its head read first)."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
    )
    return await reader.readexactly(length)


def receivers(hanging: int, ports: multiprocessing.Queue, arrivals: multiprocessing.Queue, stop: Any) -> None:
    """One good receiver (each POST's window start and arrival time go to ``arrivals``) and the bad
    ones, their ports sent to ``ports``: {"good": port, "hang": [ports], "fail", "drip", "garble"}."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, kind: str) -> None:
        try:
            body = await _read_post(reader)
            if kind == "good":
                arrivals.put((json.loads(body)["window"]["start"], time.time()))
                writer.write(OK_ANSWER)
            elif kind == "hang":
                await asyncio.sleep(60)
            elif kind == "fail":
                writer.write(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n")
            elif kind == "drip":
                for byte in OK_ANSWER:
                    writer.write(bytes([byte]))
                    await writer.drain()
                    await asyncio.sleep(4)
            else:
                writer.write(b"HTTP/1.1 20\r\n\r\n")
            await writer.drain()
        except (OSError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # the sender gave up, or the receivers stop
        finally:
            writer.close()

    async def run() -> None:
        kinds = ["good", *["hang"] * hanging, "fail", "drip", "garble"]
        servers = []
        for kind in kinds:
            servers.append(await asyncio.start_server(lambda r, w, kind=kind: answer(r, w, kind), "127.0.0.1", 0))
        found: dict[str, Any] = {"hang": []}
        for kind, server in zip(kinds, servers, strict=True):
            port = server.sockets[0].getsockname()[1]
            if kind == "hang":
                found["hang"].append(port)
            else:
                found[kind] = port
        ports.put(found)
        while not stop.is_set():
            await asyncio.sleep(0.2)

    asyncio.run(run())


def webhook_phase(address: str, args: argparse.Namespace) -> None:
    """The good receiver's delivery delays alone, beside the bad receivers, and after they are deleted."""
    ports: multiprocessing.Queue = multiprocessing.Queue()
    arrivals: multiprocessing.Queue = multiprocessing.Queue()
    stop = multiprocessing.Event()
    process = multiprocessing.Process(target=receivers, args=(args.hanging, ports, arrivals, stop))
    process.start()
    found = ports.get(timeout=60)
    url = "http://127.0.0.1:{}/hook".format
    rounds = args.webhook_rounds
    step = 10  # each round's window, in seconds of the index's time (noticed with a clock given)
    with LeaderboardClient(address, timeout=60, token=ADMIN) as lb:
        lb.create_index("ends", high_score_first=True)
        base = int(time.time()) + 10**6  # windows ending after the webhooks are added
        lb.update_windows(
            "ends",
            windows=[(1, base + step * i, base + step * (i + 1)) for i in range(3 * rounds)],
            high_score_first=True,
        )
        lb.add_webhook("ends", url(found["good"]), "good-receiver-secret")

        noticed_at: dict[int, float] = {}
        arrived_at: dict[int, float] = {}  # by window start (events may come late, out of order)

        def measure(first: int) -> list[int]:
            starts = []
            for i in range(first, first + rounds):
                start = base + step * i
                starts.append(start)
                noticed_at[start] = time.time()
                lb.notice_window_ends("ends", base + step * (i + 1))
                deadline = time.monotonic() + args.webhook_wait
                while start not in arrived_at and (left := deadline - time.monotonic()) > 0:
                    with contextlib.suppress(queue_module.Empty):
                        window, at = arrivals.get(timeout=left)
                        arrived_at.setdefault(window, at)
                time.sleep(0.5)
            return starts

        alone = measure(0)
        bad = [url(port) for port in found["hang"]] + [url(found[kind]) for kind in ("fail", "drip", "garble")]
        ids = [lb.add_webhook("ends", hook, "bad-receiver-secret").id for hook in bad]
        beside = measure(rounds)
        waiting = {w.id: (w.pending, w.last_error) for w in lb.webhooks("ends") if w.id in ids}
        for webhook_id in ids:
            lb.delete_webhook("ends", webhook_id)
        after = measure(2 * rounds)
        while len(arrived_at) < 3 * rounds:  # the late ones, a while longer
            try:
                window, at = arrivals.get(timeout=args.webhook_wait)
            except queue_module.Empty:
                break
            arrived_at.setdefault(window, at)
    stop.set()
    process.join(10)
    if process.is_alive():
        process.terminate()

    def delays(starts: list[int]) -> list[float]:
        return [arrived_at[s] - noticed_at[s] if s in arrived_at else math.inf for s in starts]

    def seconds(value: float) -> str:
        return "never" if value == math.inf else f"{value * 1000:.1f} ms" if value < 1 else f"{value:.1f} s"

    def shown(starts: list[int]) -> str:
        found = delays(starts)
        p50, p90, most = percentile(found, 0.5), percentile(found, 0.9), max(found)
        text = ", ".join(f"{name} {seconds(v)}" for name, v in (("p50", p50), ("p90", p90), ("max", most)))
        missed = sum(1 for v in found if v > args.webhook_wait)
        return text + (f"; {missed} of {len(found)} not within {args.webhook_wait:g} s" if missed else "")

    print(f"webhooks, the good receiver's delivery delay over {rounds} windows each:")
    print(f"{'':>17}alone: {shown(alone)}")
    ratios = [percentile(delays(beside), q) / percentile(delays(alone), q) for q in (0.5, 0.9)]
    print(
        f"{'':>17}beside {args.hanging} hanging, 1 failing, 1 dripping, 1 garbled: {shown(beside)} "
        f"(p50 {ratios[0]:.2f}x, p90 {ratios[1]:.2f}x alone)"
    )
    print(f"{'':>17}after deleting them: {shown(after)}")
    errors = Counter(error.split(":")[0] for _, error in waiting.values())
    print(
        f"{'':>17}bad webhooks then: {sum(p for p, _ in waiting.values())} events waiting, last errors {dict(errors)}"
    )


# -- the run ----------------------------------------------------------------------------------------


def attackers_of(phase: str, address: str, url: str, args: argparse.Namespace) -> list[tuple[Callable, tuple]]:
    """The attacking processes of a phase: (target, arguments before stop, ready, out, priority)."""
    if phase == "grpc":
        return [(staller, (address, args.stalled))] + [(heavy_reader, (address, args.max_page))] * args.heavy
    if phase == "http":
        return [
            (http_holder, (url, args.idle, args.slow)),
            *[(http_uploader, (url, args.uploads))] * bool(args.uploads),
            *[(http_poster, (url, args.post_rate))] * args.posters,
            *[(http_streams, (url, args.streams))] * bool(args.streams),
            *[(http_junk, (url,))] * args.junk,
        ]
    return []


def run_phase(
    phase: str, servers: list[tuple[subprocess.Popen, str, str, str]], args: argparse.Namespace
) -> tuple[dict[str, tuple[list[float], Counter]], list[tuple[str, int, Counter]], float, int]:
    """Measure the normal clients on the first server while the phase's attackers press the last
    (the same server unless ``--control``): their latencies, what the attackers got, the attacked
    server's resident memory and open file descriptors (the more of when they start and end)."""
    _, address, url, _ = servers[0]
    target, target_address, target_url, _ = servers[-1]
    stop = multiprocessing.Event()
    queue: multiprocessing.Queue = multiprocessing.Queue()
    started = []
    for fn, fn_args in attackers_of(phase, target_address, target_url, args):
        ready = multiprocessing.Event()
        process = multiprocessing.Process(target=fn, args=(*fn_args, stop, ready, queue, args.attacker_priority))
        process.start()
        started.append((process, ready))
    for _, ready in started:
        ready.wait()  # every connection and stream open, every loop running
    if started:
        time.sleep(1)
    rss, descriptors = _rss_mb(target.pid), _descriptors(target.pid)
    measured = measure(address, url, args)
    descriptors = max(descriptors, _descriptors(target.pid))
    stop.set()
    results = [queue.get() for _ in started]
    for process, _ in started:
        process.join()
    return measured, results, rss, descriptors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument(
        "--phases", default="baseline,grpc,http,webhooks", help="Comma-separated: baseline, grpc, http, webhooks."
    )
    parser.add_argument(
        "--webhook-rounds", type=int, default=30, help="Windows noticed in each webhook phase (one each 0.5 s)."
    )
    parser.add_argument("--hanging", type=int, default=5, help="Webhook receivers that hold each POST 60 s.")
    parser.add_argument(
        "--webhook-wait", type=float, default=60, help="Seconds a round waits for the good receiver's event."
    )
    parser.add_argument("--stalled", type=int, default=2000)
    parser.add_argument("--heavy", type=int, default=4)
    parser.add_argument("--idle", type=int, default=1100)
    parser.add_argument("--slow", type=int, default=200)
    parser.add_argument("--uploads", type=int, default=2)
    parser.add_argument("--posters", type=int, default=4)
    parser.add_argument(
        "--post-rate",
        type=float,
        default=5,
        help="4 MB posts per second per poster (0: as fast as it can; 5 by 4 posters: 80 MB/s, as from other "
        "machines over a gigabit link; faster, the attackers' own copying takes this machine's cores).",
    )
    parser.add_argument("--streams", type=int, default=400)
    parser.add_argument("--junk", type=int, default=1, help="Clients looping made-up and malformed requests.")
    parser.add_argument("--bad", type=int, default=10_000)
    parser.add_argument(
        "--unauthenticated",
        type=int,
        default=10,
        help="4 MB posts without a token sent one at a time before the phases: the server's CPU for each.",
    )
    parser.add_argument(
        "--nofile", type=int, default=1024, help="The server's file descriptor limit (1024: a usual default)."
    )
    parser.add_argument("--max-page", type=int, default=2000)
    parser.add_argument("--read-processes", type=int, default=1, help="The server's --read-processes.")
    parser.add_argument("--read-priority", default="idle", help="The server's --read-priority.")
    parser.add_argument(
        "--attacker-priority",
        default="0",
        help="Run the attacking processes at this nice level, or 'idle' (Linux's idle policy): on a small "
        "machine their own CPU (decoding 2000-row answers) otherwise competes with the server and the "
        "normal clients, as it would not from other machines.",
    )
    parser.add_argument(
        "--control",
        action="store_true",
        help="Run the attacks against a second server on this machine instead: what sharing the machine "
        "with the attackers costs the normal clients, the server's own share left out.",
    )
    add_output(parser)
    args = parser.parse_args()
    phases = [p for p in args.phases.split(",") if p]
    assert set(phases) <= {"baseline", "grpc", "http", "webhooks"}, "phases: baseline, grpc, http, webhooks"
    assert phases[0] == "baseline" or phases == ["webhooks"], "phases start with baseline (or are webhooks alone)"

    tokens = tempfile.NamedTemporaryFile("w", prefix="bench-tokens-", delete=False)  # noqa: SIM115
    tokens.write(f"admin:{ADMIN}\nread:{READ}\n")
    tokens.close()
    servers = [start_server(args, tokens.name)]
    if args.control:
        servers.append(start_server(args, tokens.name))
    try:
        for process, address, url, _ in servers:
            with LeaderboardClient(address, timeout=600, token=ADMIN) as lb:
                lb.create_index("bench", high_score_first=True)
                lb.update_windows("bench", high_score_first=True)
                lb.bulk_load("bench", (((f"p{i}",), [(random.randrange(10**6), i)]) for i in range(args.records)))
            rss = _rss_mb(process.pid)
            print(f"server pid {process.pid} ({address}, {url}), {args.records} records, RSS {rss:.0f} MB")
        if args.unauthenticated:
            unauthenticated_cost(servers[0][2], servers[0][0].pid, args.unauthenticated)
        if args.control:
            print("[control: the attacks press another server on this machine]")
        baseline: dict[str, float] = {}
        rows: list[list[str]] = []
        for phase in phases:
            if phase == "webhooks":
                webhook_phase(servers[-1][1], args)
                continue
            logged = os.path.getsize(servers[-1][3] + ".log")
            measured, results, rss, descriptors = run_phase(phase, servers, args)
            logged = os.path.getsize(servers[-1][3] + ".log") - logged
            for kind in ("grpc", "http"):
                sample, failures = measured[kind]
                p99 = sample.percentile_us(99) / 1000
                baseline.setdefault(kind, p99)
                rows.append(
                    [
                        phase,
                        kind,
                        str(sample.ops),
                        f"{sample.percentile_us(50) / 1000:.2f}",
                        f"{p99:.2f}",
                        f"{p99 / baseline[kind]:.2f}x",
                        str(dict(failures) or "none"),
                    ]
                )
            print(f"{phase}: the clients {', '.join(f'{r[1]} p99 {r[4]} ms' for r in rows[-2:])}")
            for what, count, failures in results:
                print(f"{'':>17}{what}: {count}{f', answered {dict(failures)}' if failures else ''}")
            if results:
                print(
                    f"{'':>17}attacked server: RSS {rss:.0f} MB, {descriptors} file descriptors open "
                    f"(of {args.nofile}), {logged} bytes logged"
                )
        if rows:
            print()
            headers = ["phase", "client", "calls", "p50 ms", "p99 ms", "p99 ratio", "failed"]
            show(headers, rows, args.markdown, args.json, {"config": vars(args), "clients": rows})
            print()
        metrics = httpx.get(servers[-1][2] + "/metrics", headers={"authorization": f"Bearer {READ}"}, timeout=60)
        print(f"/metrics of the attacked server: {len(metrics.content)} bytes, {len(metrics.text.splitlines())} lines")

        server, address = servers[0][0], servers[0][1]
        before = _rss_mb(server.pid)
        with grpc.insecure_channel(address) as channel:
            bad = channel.unary_unary(f"/{SERVICE_NAME}/AddScore")
            codes = set()
            for _ in range(args.bad):
                try:
                    bad(b"\xff\xff\xff\xff not a request", timeout=10, metadata=_bearer(ADMIN))
                except grpc.RpcError as exc:
                    codes.add(exc.code().name)
        after = _rss_mb(server.pid)
        print(f"{args.bad} unparseable requests: answered {sorted(codes)}, RSS {before:.1f} -> {after:.1f} MB")
    finally:
        for process, _, _, store in servers:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                print(f"server pid {process.pid} did not stop within 30 s of SIGTERM: killed")
                process.kill()
                process.wait()
            subprocess.run(["rm", "-rf", store, store + ".log"], check=False)
        os.unlink(tokens.name)


def start_server(args: argparse.Namespace, tokens: str) -> tuple[subprocess.Popen, str, str, str]:
    """``fdb-leaderboard serve`` on a fresh store: (process, gRPC address, HTTP URL, store directory)."""
    store = tempfile.mkdtemp(prefix="bench-hostile-")
    address, http = f"127.0.0.1:{_free_port()}", f"127.0.0.1:{_free_port()}"
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    with open(store + ".log", "wb") as log:  # the server's log, measured per phase
        process = subprocess.Popen(
            [CLI, "serve", "--store", f"lmdb:{store}?durable=false", "--address", address, "--max-page",
             str(args.max_page), "--http-address", http, "--tokens", tokens, "--read-processes",
             str(args.read_processes), "--read-priority", args.read_priority],
            stdout=subprocess.PIPE, stderr=log, text=True, cwd=ROOT,
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (min(args.nofile, hard), hard)),
        )  # fmt: skip
    assert process.stdout is not None and "serving on" in process.stdout.readline()
    return process, address, f"http://{http}", store


if __name__ == "__main__":
    main()
