"""Bad requests at every door of a real server process, generated from the service's descriptors.

``fdb-leaderboard serve`` runs as a process of its own (one per store, shared by this module's
tests), its log in a file.  The list of RPCs, their request messages and their streaming kinds
come from the service's protobuf descriptor, and so do the routes of the HTTP door (the RPC
mapping's from the same descriptor, the resource routes' from their parameter lists): an RPC
added to the proto is fuzzed with no change here.  Requests are built field by field from the
descriptors with valid and invalid values (index names, key items, scores of one or several
columns, windows, unknown enum numbers, int64 bounds, NaN, continuations of other scans, league
and webhook options...), and each RPC is called with its streaming kind: unary, a client stream
of messages, a server stream read for its first messages and cancelled (a Dump among them).
Every call must succeed or be refused with one of the project's own refusals (never UNKNOWN,
INTERNAL or DATA_LOSS), a refusal and every read must leave the store as it was (a full range
read, by this process, before and after), every index must verify afterwards, and the server's
log must hold no traceback at the end.  Hand cases pin the exact refusal of each RPC added since
the hardening, and a pass over every read shows that reads never write (the store's commits).

The Python API's fuzzer and the in-process cases are in tests/index/test_bad_input.py.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import math
import re
import select
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import fdb.tuple
import grpc
import httpx
import pytest
from google.protobuf import json_format, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor, MethodDescriptor
from google.protobuf.message import Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fdb_leaderboard import access
from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.http import rest, transcode
from fdb_leaderboard.index import Leagues
from fdb_leaderboard.index.directory import INT64_MAX, INT64_MIN
from fdb_leaderboard.proto import service_pb2 as pb
from fdb_leaderboard.service import SERVICE_NAME
from fdb_leaderboard.service.catalog import ROOT
from fdb_leaderboard.service.releases import processes
from fdb_leaderboard.store import Database, open_database
from tests.conftest import fdb_url, store_rows
from tests.index.test_bad_input import populate as scored

Code = grpc.StatusCode
CLI = str(Path(sys.executable).parent / "fdb-leaderboard")
SERVICE = pb.DESCRIPTOR.services_by_name["Leaderboard"]
GRPC_EXAMPLES = 300
HTTP_EXAMPLES = 250
# The project's own refusals (status.py): what a bad request may be answered with.
REFUSALS = {
    Code.INVALID_ARGUMENT,
    Code.NOT_FOUND,
    Code.FAILED_PRECONDITION,
    Code.ALREADY_EXISTS,
    Code.RESOURCE_EXHAUSTED,
}
HTTP_REFUSALS = {400, 404, 409, 412, 429}
PAUSED = re.compile(r"writes to index '.*' are refused")  # UNAVAILABLE: an index whose writes are paused
STREAM_SECONDS = 0.5  # a watch is read this long at most, then cancelled
WRITING_SECONDS = 3.0  # and a stream that writes (a Dump, a Load)
# Methods the fuzz calls with throwaway names only: they would take the other indexes away.
DESTRUCTIVE = {"DropIndex", "SetWritesPaused", "DeleteRecords", "SetScoreRules", "Restore"}
LOG_PROBLEMS = re.compile(r"Traceback|never retrieved|Unexpected \[|Exception in")


# What a refused call may leave behind, by design: loads note their start and end in the audit
# trail whether their records are refused or not, and a restore takes a prefix number as it starts.
LEFT_BEHIND = {
    "BulkLoad": ROOT + fdb.tuple.pack(("audit",)),
    "Load": ROOT + fdb.tuple.pack(("audit",)),
    "Restore": ROOT + fdb.tuple.pack(("next_index",)),
}


def snapshot(db: Database, method: str = "") -> list[tuple[bytes, bytes]]:
    """Every key and value in the store but what a refused call of ``method`` may leave behind
    (and what ``store_rows`` leaves out: the processes' reports, FoundationDB's commit markers)."""
    left = LEFT_BEHIND.get(method)
    return [(key, value) for key, value in store_rows(db) if left is None or not key.startswith(left)]


def settled(db: Database) -> None:
    """Wait for what a stream the client let go of still does on the server (a Load's last
    batch, a Dump's end) to be done: the store unchanged for a second."""
    deadline = time.monotonic() + 30
    previous, same = snapshot(db), 0
    while same < 10:
        time.sleep(0.1)
        now = snapshot(db)
        same = same + 1 if now == previous else 0
        assert time.monotonic() < deadline, "the store still changes 30 s after the calls ended"
        previous = now


# Streams that write, which the server may still be ending when their client let go.
WRITING_STREAMS = {"Dump", "Load", "Restore", "BulkLoad"}


def kind_of(method: MethodDescriptor) -> str:
    if method.client_streaming:
        return "bidirectional" if method.server_streaming else "client stream"
    return "server stream" if method.server_streaming else "unary"


def role_of(method: str) -> access.Role:
    return access.required_role(method)


# -- the server process ---------------------------------------------------------------------------


@dataclasses.dataclass
class Board:
    """The indexes the fuzz plays on (names end in the run's tag: FoundationDB's catalog is shared)."""

    tag: str
    tokens: list[bytes]

    def name(self, base: str) -> str:
        return base + self.tag

    @property
    def kept(self) -> list[str]:
        """Indexes the fuzz may change but never drops."""
        return [self.name(n) for n in ("best", "sum", "cols", "league", "ends", "empty")]

    @property
    def scratch(self) -> list[str]:
        """Names the fuzz may create, drop, pause and empty."""
        return [self.name(n) for n in ("scratch", "new")]

    def target(self, method: str) -> str:
        """An index for a plain call of ``method``."""
        return self.scratch[0] if method in DESTRUCTIVE else self.kept[0]


@dataclasses.dataclass
class Served:
    """A ``fdb-leaderboard serve`` process and the store it serves, opened here too (read only)."""

    process: subprocess.Popen
    address: str
    http_url: str
    db: Database
    log: Path
    board: Board

    def problems_logged(self) -> list[str]:
        text = self.log.read_text(errors="replace")
        return [line for line in text.splitlines() if LOG_PROBLEMS.search(line)]

    def assert_log_clean(self) -> None:
        problems = self.problems_logged()
        assert not problems, "the server logged:\n" + self.log.read_text(errors="replace")[-6000:]

    def commits(self) -> int:
        """The store's commits so far, by the server's metrics."""
        text = httpx.get(f"{self.http_url}/metrics", timeout=30).text
        match = re.search(r"^fdb_leaderboard_store_commits_total (\S+)$", text, re.M)
        assert match is not None, text[:500]
        return int(float(match.group(1)))

    def last_report(self) -> int:
        """When the server last renewed its report of itself (a commit of its own every 10 s)."""
        reports = self.db.read(lambda tr: processes(tr, ROOT))
        return next(p.report.seen_at for p in reports if p.report.pid == self.process.pid)

    def commits_beside_reports(self) -> tuple[int, int]:
        """The commit count and the report's time, read with no renewal of the report between them."""
        while True:
            seen = self.last_report()
            count = self.commits()
            if self.last_report() == seen:
                return count, seen

    def commits_of(self, action: Callable[[], object]) -> int:
        """The commits made while ``action`` ran (a few seconds at most), the report's renewal aside."""
        count, seen = self.commits_beside_reports()
        action()
        after, seen_after = self.commits_beside_reports()
        return after - count - (seen_after != seen)


@pytest.fixture(scope="module", params=["lmdb", "fdb"])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server process per store for the module's tests (its maintenance and webhook delivery
    off: nothing but the calls made here writes)."""
    path = tmp_path_factory.mktemp(f"served-{request.param}")
    if request.param == "fdb":
        url, tag = fdb_url(), f"-{uuid.uuid4().hex[:8]}"
    else:
        url, tag = f"lmdb:{path / 'store'}?durable=false", ""
    log = path / "serve.log"
    with log.open("w") as err:
        process = subprocess.Popen(
            [CLI, "serve", "--store", url, "--address", "127.0.0.1:0", "--http-address", "127.0.0.1:0",
             "--maintain-every", "0", "--no-webhooks", "--grace", "1", "--max-page", "500"],
            stdout=subprocess.PIPE, stderr=err, text=True,
        )  # fmt: skip
    try:
        ready, _, _ = select.select([process.stdout], [], [], 90)
        line = process.stdout.readline() if ready else ""  # type: ignore[union-attr]
        found = re.search(r"serving on (\S+) and (http://\S+)", line)
        assert found, f"the server did not start: {line!r} {log.read_text()}"
        db = open_database(url)
        try:
            with LeaderboardClient(found.group(1), timeout=30) as lb:
                board = populate(lb, tag)
            yield Served(process, found.group(1), found.group(2), db, log, board)
            if request.param == "fdb":
                with LeaderboardClient(found.group(1), timeout=60) as lb:
                    for info in lb.list_indexes():
                        if info.name.endswith(tag):
                            lb.drop_index(info.name)
        finally:
            db.close()
    finally:
        process.terminate()
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    problems = [line for line in log.read_text(errors="replace").splitlines() if LOG_PROBLEMS.search(line)]
    assert not problems, log.read_text(errors="replace")[-6000:]


def populate(lb: LeaderboardClient, tag: str) -> Board:
    """Indexes with data, windows and continuations: best (BEST, high score first), sum (SUM, a
    group and a context), cols (two columns), league (leagues on type 1), ends (window ends
    noticed, so its event log has events), empty (no score), scratch (to drop)."""
    board = Board(tag, [])
    best, total, cols, league, ends = (board.name(n) for n in ("best", "sum", "cols", "league", "ends"))
    board.tokens.extend(scored(lb, best, total))
    lb.create_index(cols, columns=("HIGH", "LOW"))
    lb.create_index(league, leagues=Leagues(1, 3, 3, 1, 1), all_time=False)
    lb.create_index(ends, high_score_first=True)
    lb.create_index(board.name("empty"))
    lb.create_index(board.name("scratch"))
    lb.update_windows(cols, specs=[(1, 0, 1000, 1000, 12)], high_score_first=True)
    lb.update_windows(league, specs=[(1, 0, 1000, 1000, 12)], all_time=False)
    for i, pk in enumerate("abcd"):
        lb.add_score(cols, (pk,), (i, 10 - i), 500 + i)
        lb.add_score(league, (pk,), i, 500 + i)
        lb.add_score(board.name("scratch"), (pk,), i, 500 + i)
    lb.hide_record(best, ("d",), "aimbot")
    end = int(time.time()) + 10_000  # after the webhook is added, noticed with a clock given
    lb.update_windows(ends, windows=[(1, end - 100, end), (2, end - 50, end)], high_score_first=True)
    lb.add_score(ends, "p", 5, end - 60)
    lb.add_webhook(ends, "http://127.0.0.1:9/hook", "s" * 16)  # never delivered: webhooks are off
    lb.notice_window_ends(ends, end)
    board.tokens.append(lb.stub.ListHiddenRecords(pb.ListHiddenRecordsRequest(index=best, limit=1)).continuation)
    board.tokens.append(lb.stub.ListGroups(pb.ListGroupsRequest(index=total, limit=1)).continuation)
    board.tokens.append(lb.stub.ListAuditEvents(pb.ListAuditEventsRequest(limit=1)).continuation)
    return board


# -- requests built from the descriptors -------------------------------------------------------------

T = FieldDescriptor
INT_RANGES = {
    T.TYPE_INT32: (-(1 << 31), (1 << 31) - 1),
    T.TYPE_SINT32: (-(1 << 31), (1 << 31) - 1),
    T.TYPE_SFIXED32: (-(1 << 31), (1 << 31) - 1),
    T.TYPE_UINT32: (0, (1 << 32) - 1),
    T.TYPE_FIXED32: (0, (1 << 32) - 1),
    T.TYPE_INT64: (INT64_MIN, INT64_MAX),
    T.TYPE_SINT64: (INT64_MIN, INT64_MAX),
    T.TYPE_SFIXED64: (INT64_MIN, INT64_MAX),
    T.TYPE_UINT64: (0, (1 << 64) - 1),
    T.TYPE_FIXED64: (0, (1 << 64) - 1),
}
# Strings of fields known by name: valid ones first (a well-formed request takes the first two).
TEXT_BY_FIELD = {
    "url": ["http://127.0.0.1:9/hook", "https://example.com/hook", "ftp://example.com/x", "", "http://", "x" * 2100],
    "secret": ["s" * 16, "", "short", "s" * 257],
    "timebase": ["", "seconds", "milliseconds", "days", "fortnights"],
    "timezone": ["", "UTC", "Europe/Paris", "Mars/Olympus", "../../etc/passwd"],
    "period": ["day", "week", "month", "year", "", "fortnight"],
    "action": ["", "AddScore", "DropIndex", "HideRecord", "bogus"],
    "idempotency_key": ["", "key-1", "x" * 300],
    "reason": ["", "aimbot", "r" * 5000],
    "id": ["wh_0000000000000000", "", "x" * 300],
}
# Fields a well-formed request always sets (where its message has them).
REQUIRED = ("index", "name", "pk", "entry", "score")
KEYS = st.sampled_from([[pb.Item(string=c)] for c in "abcde"])


@dataclasses.dataclass(frozen=True)
class Pools:
    """Where a request's values come from: ``names`` for index names, ``tokens`` for
    continuations; ``well_formed``: values of the right types and ranges only (a request may
    still be refused: a record that does not exist, a window the index has not), which reach the
    handlers' deep paths where junk stops at the first check."""

    names: st.SearchStrategy[str]
    tokens: tuple[bytes, ...]
    well_formed: bool

    def item(self) -> st.SearchStrategy[pb.Item]:
        valid = st.one_of(
            st.sampled_from([pb.Item(string=c) for c in "abcde"]),
            st.integers(-1000, 1000).map(lambda v: pb.Item(int=v)),
            st.text(max_size=8).map(lambda v: pb.Item(string=v)),
            st.binary(max_size=8).map(lambda v: pb.Item(bytes=v)),
            st.booleans().map(lambda v: pb.Item(bool=v)),
            st.just(pb.Item(null=True)),
        )
        if self.well_formed:
            return valid
        return st.one_of(
            valid,
            st.integers(INT64_MIN, INT64_MAX).map(lambda v: pb.Item(int=v)),
            st.text(min_size=150, max_size=2000).map(lambda v: pb.Item(string=v)),
            st.floats().map(lambda v: pb.Item(double=v)),
            st.just(pb.Item()),  # no value set
        )

    def items(self, field: str) -> st.SearchStrategy[list[pb.Item]]:
        if self.well_formed and field in ("group", "context", "key_context"):  # sum's are "g", the others' none
            return st.sampled_from([[], [], [pb.Item(string="g")]])
        if self.well_formed:  # a record of the boards, or another
            return st.one_of(KEYS, KEYS, st.lists(self.item(), min_size=1, max_size=2))
        return st.one_of(
            KEYS,
            st.just([]),
            st.lists(self.item(), max_size=3),
            st.lists(st.just(pb.Item(int=1)), min_size=40, max_size=300),
        )

    def score(self) -> st.SearchStrategy[pb.Score]:
        columns = st.lists(st.integers(-100, 100), min_size=2, max_size=2)
        valid = st.one_of(
            st.integers(-100, 100).map(lambda v: pb.Score(int=v)),
            columns.map(lambda v: pb.Score(columns=pb.ScoreColumns(values=v))),
        )
        if self.well_formed:
            return valid
        return st.one_of(
            valid,
            st.sampled_from([INT64_MIN, INT64_MAX]).map(lambda v: pb.Score(int=v)),
            st.floats().map(lambda v: pb.Score(double=v)),
            st.lists(st.integers(-100, 100), max_size=5).map(lambda v: pb.Score(columns=pb.ScoreColumns(values=v))),
            st.just(pb.Score()),
        )

    def selector(self) -> st.SearchStrategy[pb.WindowSelector]:
        if self.well_formed:  # all time, or the boards' type 1 windows (1000 s from 0)
            return st.sampled_from(
                [pb.WindowSelector(type=0)] * 2 + [pb.WindowSelector(type=1, timestamp=t) for t in (5, 500, 1500)]
            )
        types = st.one_of(st.integers(0, 3), st.sampled_from([2**32 - 1]))
        times = st.one_of(st.integers(0, 12_000), st.sampled_from([INT64_MIN, INT64_MAX, -1]))
        return st.builds(
            lambda t, ts: pb.WindowSelector(type=t) if ts is None else pb.WindowSelector(type=t, timestamp=ts),
            types,
            st.one_of(st.none(), times),
        )

    def integers(self, low: int, high: int) -> st.SearchStrategy[int]:
        """Small values mostly (counts, window types, timestamps within the windows), and the bounds."""
        small = st.integers(max(low, 0), min(high, 20))
        within = st.integers(max(low, 0), min(high, 12_000))
        if self.well_formed:
            return st.one_of(small, small, within)
        return st.one_of(small, within, st.sampled_from(sorted({low, high, max(low, -1)})), st.integers(low, high))

    def scalar(self, field: FieldDescriptor) -> st.SearchStrategy:
        if field.type == T.TYPE_ENUM:
            numbers = [value.number for value in field.enum_type.values]
            return st.sampled_from(numbers if self.well_formed else [*numbers, *numbers, 99, -1, (1 << 31) - 1])
        if field.type in INT_RANGES:
            return self.integers(*INT_RANGES[field.type])
        if field.type in (T.TYPE_DOUBLE, T.TYPE_FLOAT):
            if self.well_formed:
                return st.floats(0, 100)
            return st.one_of(st.floats(0, 100), st.floats(), st.sampled_from([math.nan, math.inf, -1.0, 0.0]))
        if field.type == T.TYPE_BOOL:
            return st.booleans()
        if field.type == T.TYPE_BYTES:
            if self.well_formed:
                return st.one_of(st.just(b""), st.sampled_from(self.tokens))
            return st.one_of(st.just(b""), st.sampled_from(self.tokens), st.binary(max_size=40))
        if field.name in ("index", "name"):
            return self.names
        known = TEXT_BY_FIELD.get(field.name)
        if known is not None:
            return st.sampled_from(known[:2]) if self.well_formed else st.one_of(st.sampled_from(known), st.text())
        if self.well_formed:
            return st.text(alphabet="abcdefgh", max_size=8)
        return st.one_of(st.text(max_size=12), st.text(min_size=200, max_size=3000))

    def field(self, field: FieldDescriptor, depth: int) -> st.SearchStrategy:
        kind = field.message_type
        if kind is not None and kind.GetOptions().map_entry:
            small = st.dictionaries(st.text(alphabet="abcdef", min_size=1, max_size=4), st.text(max_size=8), max_size=3)
            if self.well_formed:
                return small
            large = st.dictionaries(st.text(min_size=1, max_size=3), st.text(min_size=3000, max_size=5000), max_size=2)
            return st.one_of(small, st.dictionaries(st.text(max_size=8), st.text(max_size=20), max_size=3), large)
        if kind is not None and kind.full_name == pb.Item.DESCRIPTOR.full_name and field.is_repeated:
            return self.items(field.name)
        one = self.message(kind, depth + 1) if kind is not None else self.scalar(field)
        return st.lists(one, max_size=2 if self.well_formed else 3) if field.is_repeated else one

    def message(self, descriptor: Descriptor, depth: int = 0) -> st.SearchStrategy[Message]:
        """Messages of ``descriptor`` with any subset of their fields set (at most one field of
        each oneof), each from values for its type and name."""
        full = descriptor.full_name
        if full == pb.Item.DESCRIPTOR.full_name:
            return self.item()
        if full == pb.Score.DESCRIPTOR.full_name:
            return self.score()
        if full == pb.WindowSelector.DESCRIPTOR.full_name:
            return self.selector()
        cls = message_factory.GetMessageClass(descriptor)
        if depth > 3:
            return st.just(cls())
        fields = list(descriptor.fields)
        values = {field.name: self.field(field, depth) for field in fields}
        required = {name: values.pop(name) for name in REQUIRED if self.well_formed and name in values}

        def build(values: dict[str, Any]) -> Message:
            message = cls()
            oneofs: set[str] = set()
            for field in fields:
                if field.name not in values:
                    continue
                oneof = field.containing_oneof
                if oneof is not None:
                    if oneof.name in oneofs:
                        continue
                    oneofs.add(oneof.name)
                value = values[field.name]
                target = getattr(message, field.name)
                if field.message_type is not None and field.message_type.GetOptions().map_entry:
                    target.update(value)
                elif field.is_repeated:
                    target.extend(value)
                elif field.message_type is not None:
                    target.CopyFrom(value)
                else:
                    setattr(message, field.name, value)
            return message

        return st.fixed_dictionaries(required, optional=values).map(build)


def name_pool(board: Board, method: str, well_formed: bool = False) -> st.SearchStrategy[str]:
    bad = [] if well_formed else ["", "missing", "x" * 101, "bad name", "ü", "g\x00", "../x"]
    if method in DESTRUCTIVE:
        return st.sampled_from([*board.scratch, *board.scratch, *bad])
    return st.sampled_from([*board.kept, *board.kept, *board.scratch, *bad])


def requests_of(board: Board, method: MethodDescriptor, well_formed: bool = False) -> st.SearchStrategy[list[Message]]:
    """The messages of one call of ``method``: one for a unary request, none to three for a
    stream (one to three, the first naming an index, if ``well_formed``)."""
    names = name_pool(board, method.name, well_formed)
    one = Pools(names, tuple(board.tokens), well_formed).message(method.input_type)
    if not method.client_streaming:
        return one.map(lambda m: [m])
    if not well_formed:
        return st.lists(one, max_size=3)

    def named(name: str, requests: list[Message]) -> list[Message]:
        if "index" in requests[0].DESCRIPTOR.fields_by_name and not requests[0].index:  # type: ignore[attr-defined]
            requests[0].index = name  # type: ignore[attr-defined]
        return requests

    return st.builds(named, names, st.lists(one, min_size=1, max_size=3))


# -- calling an RPC with its streaming kind ------------------------------------------------------------


def serialized(message: Message) -> bytes:
    return message.SerializeToString()


@dataclasses.dataclass
class Outcome:
    replies: int = 0
    code: Code | None = None  # None: answered OK (or read as far as wanted, and let go)
    details: str = ""
    saved: bool = False  # a load refused partway, the records before the refused one saved
    let_go: bool = False  # a stream cancelled here: the server may still be ending it


def call(channel: grpc.Channel, method: MethodDescriptor, requests: list[Message]) -> Outcome:
    """Call ``method`` as its streaming kind does; a server stream is read for its first replies
    (at most STREAM_SECONDS), then cancelled."""
    path = f"/{SERVICE_NAME}/{method.name}"
    answer = message_factory.GetMessageClass(method.output_type).FromString
    serialize = serialized
    kind = kind_of(method)
    outcome = Outcome()
    try:
        if kind == "unary":
            channel.unary_unary(path, serialize, answer)(requests[0], timeout=60)
            outcome.replies = 1
        elif kind == "client stream":
            channel.stream_unary(path, serialize, answer)(iter(requests), timeout=60)
            outcome.replies = 1
        else:
            if kind == "server stream":
                stream = channel.unary_stream(path, serialize, answer)(requests[0], timeout=60)
            else:
                stream = channel.stream_stream(path, serialize, answer)(iter(requests), timeout=60)
            # A watch never ends: its first replies are enough.  A stream that writes is read to
            # its end, unless it is a move's Dump (which waits for its index's writes to pause).
            writes = method.name in WRITING_STREAMS
            ends = time.monotonic() + (WRITING_SECONDS if writes else STREAM_SECONDS)
            with contextlib.closing(_Stopper(stream, ends)):
                for _ in stream:
                    outcome.replies += 1
                    if (outcome.replies == 3 and not writes) or time.monotonic() > ends:
                        stream.cancel()
    except grpc.RpcError as exc:
        if exc.code() is Code.CANCELLED and exc.details() == "Locally cancelled by application!":
            outcome.let_go = True  # read as far as wanted
            return outcome
        outcome.code, outcome.details = exc.code(), exc.details() or ""
        trailing = dict(exc.trailing_metadata() or ())
        outcome.saved = trailing.get("records-saved", "0") != "0"
    return outcome


class _Stopper:
    """Cancels a stream still silent at ``ends`` (a watch with nothing to say yet)."""

    def __init__(self, stream: Any, ends: float) -> None:
        self.timer = threading.Timer(max(0.0, ends - time.monotonic()), stream.cancel)
        self.timer.start()

    def close(self) -> None:
        self.timer.cancel()


def judge(method: MethodDescriptor, requests: list[Message], outcome: Outcome) -> str:
    """The outcome's tally key; fails the test on an answer other than success or a refusal."""
    if outcome.code is None:
        return "succeeded"
    shown = "\n".join(str(r)[:600] for r in requests)
    allowed = outcome.code in REFUSALS or (outcome.code is Code.UNAVAILABLE and PAUSED.search(outcome.details))
    assert allowed, f"{method.name} answered {outcome.code.name}: {outcome.details}\n{shown}"
    assert outcome.details, f"{method.name}: {outcome.code.name} without a message"
    return f"refused {outcome.code.name}"


def naming(descriptor: Descriptor, index: str) -> Message:
    """An empty request of ``descriptor`` that names ``index`` (if it has an index field)."""
    message = message_factory.GetMessageClass(descriptor)()
    if "index" in descriptor.fields_by_name:
        message.index = index  # type: ignore[attr-defined]
    return message


def verify_all(lb: LeaderboardClient, board: Board) -> None:
    """Every index of the run is consistent."""
    names = [info.name for info in lb.list_indexes() if info.name.endswith(board.tag)]
    assert set(board.kept) <= set(names)
    for name in names:
        assert lb.verify(name) == [], name


@pytest.mark.slow
def test_every_rpc_of_the_descriptor_gets_bad_requests_with_its_streaming_kind(served: Served) -> None:
    board = served.board
    methods = list(SERVICE.methods)
    tally: collections.Counter[str] = collections.Counter()
    called: collections.Counter[str] = collections.Counter()
    with grpc.insecure_channel(served.address) as channel, LeaderboardClient(served.address, timeout=30) as lb:

        def attempt(method: MethodDescriptor, requests: list[Message]) -> None:
            before = snapshot(served.db, method.name)
            outcome = call(channel, method, requests)
            if outcome.let_go and method.name in WRITING_STREAMS:
                settled(served.db)
            called[method.name] += 1
            verdict = judge(method, requests, outcome)
            tally[verdict] += 1
            if verdict == "succeeded":
                tally[f"succeeded {method.name}"] += 1
            unchanged = snapshot(served.db, method.name) == before
            if verdict != "succeeded" and not outcome.saved:
                assert unchanged, f"{method.name} was refused ({outcome.details}) but changed the store"
            if role_of(method.name) is access.Role.READ:
                assert unchanged, f"the read {method.name} changed the store: {requests}"

        @settings(max_examples=GRPC_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
        @given(st.data())
        def run(data: st.DataObject) -> None:
            for _ in range(data.draw(st.integers(1, 2))):
                method = data.draw(st.sampled_from(methods))
                attempt(method, data.draw(requests_of(board, method, data.draw(st.booleans()))))

        run()
        # Whatever the draws missed, once each with an empty request (a stream: none at all).
        for method in methods:
            if not called[method.name]:
                request = naming(method.input_type, board.target(method.name))
                attempt(method, [] if method.client_streaming else [request])
        verify_all(lb, board)
    print(f"\ngRPC by descriptor: {dict(tally)}, {len(called)} RPCs, {sum(called.values())} calls")
    assert set(called) == {method.name for method in methods}
    assert tally["refused INVALID_ARGUMENT"] > 0 and tally["refused NOT_FOUND"] > 0
    # The well-formed requests reach the handlers' ends, where a defect would show. Counted by role:
    # a run draws each of the 60-odd RPCs about 8 times, and succeeds in 40-100 reads, 50-100
    # operators' calls and 8-25 writes of scores and records.
    succeeded = collections.Counter[access.Role]()
    for name in called:
        succeeded[role_of(name)] += tally[f"succeeded {name}"]
    assert succeeded[access.Role.READ] >= 25 and succeeded[access.Role.ADMIN] >= 25, tally
    assert succeeded[access.Role.WRITE] >= 3, tally
    served.assert_log_clean()


# -- the HTTP door: every RPC's route and every resource route -------------------------------------

# Query parameter values and path parts: valid ones, near misses and junk.
HTTP_TEXT = st.one_of(
    st.sampled_from(["0", "1", "2", "3", "7", "-1", "4294967296", "99999999999999999999", "1e3", "1.5", "NaN", ""]),
    st.sampled_from(["now", "latest", "500", "ORDINAL", "COMPETITION", "DENSE", "TOP", "BOTTOM", "EMPTY", "0.2"]),
    st.sampled_from(["true", "false", "value", "rank", "a", "[1]", '["a"]', "10,3", "12,a", "AAE=", "!!"]),
    st.sampled_from(['["g"]', '["eu", 1]', "[1,", "[[1]]", '[{"int": "99999999999999999999"}]', '[{"base64": "!"}]']),
    st.sampled_from(['[{"int": [1]}]', '[{"x": 1}]', "[NaN]", '["\\ud800"]', "[1e999]", "[null, true, 1.5]"]),
    st.integers(INT64_MIN - 5, INT64_MAX + 5).map(str),
    st.text(max_size=12),
)
json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(INT64_MIN - 5, INT64_MAX + 5),
        st.sampled_from([1 << 70, -(1 << 70)]),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=8),
        st.sampled_from(["\ud800", "AAE=", "!!", "a", "HIGH"]),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=8,
)
PLACEHOLDER = re.compile(r"{(\w+)}")


def plain_path(route: rest.RestRoute, index: str, **values: str) -> str:
    """The route's path for ``index``, its other parts plain values (0, a record "a")."""
    plain = {"type": "0", "pk": "a", "group": "g", "id": "wh_1", **values}
    parts = {part: plain.get(part, "0") for part in PLACEHOLDER.findall(route.path)}
    return route.path.format(**{**parts, "index": index})


def rpc_body(draw: Callable, board: Board, rpc: transcode.Rpc) -> bytes:
    """A JSON body of the RPC's route: its requests as protobuf's JSON, some fields given values of
    any JSON type; NDJSON, one message a line, for a client stream."""
    if draw(st.integers(0, 9)) == 0:  # a body that is no object of fields at all
        return json.dumps(draw(json_values.filter(lambda value: not isinstance(value, dict)))).encode()
    values = []
    well_formed = draw(st.booleans())
    for request in draw(requests_of(board, rpc.descriptor, well_formed)):
        value = json_format.MessageToDict(request, preserving_proto_field_name=True)
        fields = [field.name for field in request.DESCRIPTOR.fields]
        if not well_formed and fields:
            value.update(draw(st.dictionaries(st.sampled_from(fields), json_values, max_size=2)))
        values.append(value)
    if rpc.client_streaming:
        return "\n".join(json.dumps(value) for value in values).encode()
    return json.dumps(values[0] if values else {}).encode()


def rest_request(draw: Callable, board: Board, route: rest.RestRoute) -> tuple[str, dict[str, str], bytes | None]:
    """A path, query and body of a resource route, from its parameters."""
    segment = HTTP_TEXT.filter(lambda text: text and "/" not in text)  # no route matches an empty one
    names = name_pool(board, route.rpc).filter(bool)
    parts = {}
    for placeholder in PLACEHOLDER.findall(route.path):
        value = draw(names) if placeholder == "index" else draw(segment)
        parts[placeholder] = urllib.parse.quote(value, safe="")
    query_names = [param.name for param in route.params if param.where == "query"]
    chosen = draw(st.lists(st.sampled_from([*query_names, "colour"]), unique=True, max_size=4))
    query = {name: draw(HTTP_TEXT) for name in chosen}
    body = None
    if route.method == "POST":
        fields = list((route.body_schema or {}).get("properties", {})) or ["pk", "score"]
        body = json.dumps(
            draw(st.one_of(st.dictionaries(st.sampled_from(fields), json_values, max_size=4), json_values))
        ).encode()
    return route.path.format(**parts), query, body


def answer_of(
    web: httpx.Client, method: str, path: str, query: dict[str, str], body: bytes | None
) -> httpx.Response | None:
    """The answer (an event stream's status only: it is let go at once); None for a Dump given up
    on after a moment (a move's Dump ends only once its writes are paused: the server stops it
    when its client goes away)."""
    streamed = path.endswith(("/BulkLoad", "/Load", "/Dump", "/Restore"))
    headers = {"Content-Type": "application/x-ndjson" if streamed else "application/json"} if body is not None else {}
    timeout = STREAM_SECONDS * 4 if path.endswith("/Dump") else 60
    try:
        with web.stream(method, path, params=query, content=body, headers=headers, timeout=timeout) as response:
            if response.headers.get("content-type", "").startswith("text/event-stream"):
                return response  # its status says enough
            response.read()
            return response
    except httpx.ReadTimeout:
        if path.endswith("/Dump"):
            return None
        raise


@pytest.mark.slow
def test_every_route_of_the_http_door_gets_bad_requests(served: Served) -> None:
    """Every RPC's route and every resource route: 200 or a refusal with the RPC's code and a
    message, never a 5xx; a refused request and every GET leave the store as it was."""
    board = served.board
    rpcs = transcode.rpcs()
    routes = list(rest.ROUTES)
    tally: collections.Counter[str] = collections.Counter()
    hit: set[str] = set()
    with (
        httpx.Client(base_url=served.http_url, timeout=60) as web,
        LeaderboardClient(served.address, timeout=30) as lb,
    ):

        def attempt(method: str, path: str, query: dict[str, str], body: bytes | None) -> None:
            called = path.removeprefix("/v1/") if method == "POST" else ""  # an RPC's route: its name
            before = snapshot(served.db, called)
            response = answer_of(web, method, path, query, body)
            tally["requests"] += 1
            where = f"{method} {path} {query} {body[:300] if body else b''!r}"
            if response is None:
                tally["given up"] += 1
                return
            if response.status_code == 200:
                tally["succeeded"] += 1
                if method == "GET":
                    assert snapshot(served.db, called) == before, f"the read changed the store: {where}"
                return
            answer = response.json()
            paused = response.status_code == 503 and PAUSED.search(answer.get("message", ""))
            assert response.status_code in HTTP_REFUSALS or paused, f"{response.status_code} {answer}: {where}"
            assert answer["code"] and answer["message"], f"{answer}: {where}"
            if "were saved" not in answer["message"]:
                changed = snapshot(served.db, called) != before
                assert not changed, f"refused ({answer['message']}) but changed the store: {where}"
            tally[f"refused {response.status_code}"] += 1

        @settings(max_examples=HTTP_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
        @given(st.data())
        def run(data: st.DataObject) -> None:
            if data.draw(st.booleans()):
                rpc = data.draw(st.sampled_from(rpcs))
                hit.add(rpc.path)
                attempt("POST", rpc.path, {}, rpc_body(data.draw, board, rpc))
            else:
                route = data.draw(st.sampled_from(routes))
                hit.add(f"{route.method} {route.path}")
                attempt(route.method, *rest_request(data.draw, board, route))

        run()
        # Whatever the draws missed, once each, naming a kept index.
        for rpc in rpcs:
            if rpc.path not in hit:
                hit.add(rpc.path)
                attempt("POST", rpc.path, {}, json.dumps({"index": board.target(rpc.name)}).encode())
        for route in routes:
            if f"{route.method} {route.path}" not in hit:
                hit.add(f"{route.method} {route.path}")
                path = plain_path(route, board.target(route.rpc))
                attempt(route.method, path, {}, b"{}" if route.method == "POST" else None)
        verify_all(lb, board)
    print(f"\nHTTP by descriptor and routes: {dict(tally)}, {len(hit)} of {len(rpcs) + len(routes)} routes")
    assert tally["succeeded"] > 0 and tally["refused 400"] > 0 and tally["refused 404"] > 0
    assert len(hit) == len(rpcs) + len(routes)
    served.assert_log_clean()


# -- each RPC added since the hardening: its exact refusals ---------------------------------------------


def item(*values: str) -> list[pb.Item]:
    return [pb.Item(string=value) for value in values]


def hand_cases(board: Board) -> list[tuple[Code, str, list[Message], str]]:
    """(code, RPC, its messages, a phrase of the refusal) for the RPCs added since the hardening:
    hiding and restoring records, score rules, deletion, dumps, restores, pauses, loads, watches,
    the audit trail, cohorts, groups, webhooks, window ends and index upgrades (GetStoreStatus and
    UpgradeStore take no fields: the fuzz calls them); and the defects found by fuzzing."""
    best, total, league, scratch = board.name("best"), board.name("sum"), board.name("league"), board.name("cases")
    missing = board.name("nowhere")  # a name no fuzz draws
    header = pb.DumpPart(header=pb.DumpHeader(format_version=1, index=best))
    return [
        (
            Code.INVALID_ARGUMENT,
            "CreateIndex",
            [pb.CreateIndexRequest(name=scratch + "x", options=pb.IndexOptions(columns=[1, 99]))],
            "columns 99 is unknown",
        ),
        (Code.NOT_FOUND, "HideRecord", [pb.HideRecordRequest(index=missing, pk=item("a"))], "no index named"),
        (Code.INVALID_ARGUMENT, "HideRecord", [pb.HideRecordRequest(index=best, pk=[])], "must not be empty"),
        (
            Code.INVALID_ARGUMENT,
            "HideRecord",
            [pb.HideRecordRequest(index=best, pk=item("a"), reason="r" * 1001)],
            "1000",
        ),
        (Code.INVALID_ARGUMENT, "RestoreRecord", [pb.RestoreRecordRequest(index=best, pk=[pb.Item()])], "no value set"),
        (Code.NOT_FOUND, "ListHiddenRecords", [pb.ListHiddenRecordsRequest(index=missing)], "no index named"),
        (Code.NOT_FOUND, "GetScoreRules", [pb.GetScoreRulesRequest(index=missing)], "no index named"),
        (
            Code.INVALID_ARGUMENT,
            "SetScoreRules",
            [
                pb.SetScoreRulesRequest(
                    index=scratch, rules=pb.ScoreRules(min_score=pb.Score(int=10), max_score=pb.Score(int=1))
                )
            ],
            "min_score",
        ),
        (Code.INVALID_ARGUMENT, "DeleteRecords", [pb.DeleteRecordsRequest(index=scratch)], "either a group"),
        (
            Code.INVALID_ARGUMENT,
            "DeleteRecords",
            [pb.DeleteRecordsRequest(index=scratch, all_records=True, max_records=1001)],
            "at most 1000",
        ),
        (Code.INVALID_ARGUMENT, "Dump", [pb.DumpRequest(index="../x")], "index name '../x' is invalid"),
        (Code.INVALID_ARGUMENT, "Dump", [pb.DumpRequest(index="g\x00")], "is invalid"),
        (Code.INVALID_ARGUMENT, "Dump", [pb.DumpRequest(index=best)] * 2, "exactly one request"),
        (Code.INVALID_ARGUMENT, "Dump", [pb.DumpRequest(index=best, catch_up_seconds=math.nan)], "catch_up_seconds"),
        (Code.INVALID_ARGUMENT, "Dump", [], "must name the index"),
        (Code.NOT_FOUND, "Dump", [pb.DumpRequest(index=missing)], "no index named"),
        (
            Code.INVALID_ARGUMENT,
            "Restore",
            [pb.RestoreRequest(index=scratch + "r", part=pb.DumpPart(end=pb.DumpEnd()))],
            "header",
        ),
        (Code.ALREADY_EXISTS, "Restore", [pb.RestoreRequest(index=best, part=header)], "exists"),
        (Code.INVALID_ARGUMENT, "Restore", [pb.RestoreRequest(index="../x", part=header)], "is invalid"),
        (Code.NOT_FOUND, "SetWritesPaused", [pb.SetWritesPausedRequest(index=missing, paused=True)], "no index"),
        (Code.INVALID_ARGUMENT, "Load", [pb.BulkLoadRequest()], "must name the index"),
        (
            Code.INVALID_ARGUMENT,
            "Load",
            [pb.BulkLoadRequest(index=scratch), pb.BulkLoadRequest(index=best)],
            "a later message names",
        ),
        (Code.INVALID_ARGUMENT, "BulkLoad", [pb.BulkLoadRequest()], "must name the index"),
        (Code.INVALID_ARGUMENT, "WatchRank", [pb.RankRequest(index=best, pk=item("a"), mode=9)], "rank mode"),
        (Code.NOT_FOUND, "WatchRank", [pb.RankRequest(index=missing, pk=item("a"))], "no index named"),
        (Code.INVALID_ARGUMENT, "WatchWindowEnds", [pb.WatchWindowEndsRequest(index=best, top=101)], "at most 100"),
        (Code.FAILED_PRECONDITION, "WatchWindowEnds", [pb.WatchWindowEndsRequest(index=total)], "grouped"),
        (Code.INVALID_ARGUMENT, "ListAuditEvents", [pb.ListAuditEventsRequest(limit=1001)], "at most 1000"),
        (
            Code.INVALID_ARGUMENT,
            "ListAuditEvents",
            [pb.ListAuditEventsRequest(continuation=b"\x01junk")],
            "continuation",
        ),
        (Code.INVALID_ARGUMENT, "SetAuditRetention", [pb.SetAuditRetentionRequest(retention=-1)], "retention"),
        (Code.INVALID_ARGUMENT, "ExpireAuditEvents", [pb.ExpireAuditEventsRequest(max_events=1001)], "at most 1000"),
        (Code.FAILED_PRECONDITION, "GetCohort", [pb.CohortRequest(index=best, pk=item("a"))], "no leagues"),
        (
            Code.INVALID_ARGUMENT,
            "GetCohort",
            [pb.CohortRequest(index=league, pk=item("a"), window=pb.WindowSelector(type=2))],
            "window type 1",
        ),
        (
            Code.INVALID_ARGUMENT,
            "ListGroups",
            [pb.ListGroupsRequest(index=total, continuation=b"\x01junk")],
            "continuation",
        ),
        (Code.INVALID_ARGUMENT, "AddWebhook", [pb.AddWebhookRequest(index=best, url="ftp://x/y")], "http://"),
        (
            Code.INVALID_ARGUMENT,
            "AddWebhook",
            [pb.AddWebhookRequest(index=best, url="https://x/y", secret="short")],
            "16 to 256",
        ),
        (
            Code.INVALID_ARGUMENT,
            "AddWebhook",
            [pb.AddWebhookRequest(index=best, url="https://x/y", top=0)],
            "top is 1 to 100",
        ),
        (
            Code.INVALID_ARGUMENT,
            "AddWebhook",
            [pb.AddWebhookRequest(index=best, url="https://x/y", window_types=[0])],
            "never ends",
        ),
        (Code.FAILED_PRECONDITION, "AddWebhook", [pb.AddWebhookRequest(index=total, url="https://x/y")], "grouped"),
        (Code.NOT_FOUND, "ListWebhooks", [pb.ListWebhooksRequest(index=missing)], "no index named"),
        (Code.NOT_FOUND, "DeleteWebhook", [pb.DeleteWebhookRequest(index=missing, id="wh_1")], "no index named"),
        (Code.NOT_FOUND, "NoticeWindowEnds", [pb.NoticeWindowEndsRequest(index=missing)], "no index named"),
        (Code.INVALID_ARGUMENT, "NoticeWindowEnds", [pb.NoticeWindowEndsRequest(index="bad name")], "is invalid"),
        (Code.NOT_FOUND, "UpgradeIndex", [pb.UpgradeIndexRequest(index=missing)], "no index named"),
        (Code.INVALID_ARGUMENT, "UpgradeIndex", [pb.UpgradeIndexRequest(index="../x", max_records=1)], "is invalid"),
    ]


def test_each_rpc_added_since_the_hardening_refuses_with_its_code(served: Served) -> None:
    """Each case is refused with its code and says why, changing nothing; a Dump and a Load the
    client cancels partway, and the refusals, leave no traceback in the server's log."""
    methods = {method.name: method for method in SERVICE.methods}
    with LeaderboardClient(served.address, timeout=30) as lb:  # an index of the cases' own: the fuzz's may be gone
        lb.create_index(served.board.name("cases"))
        lb.add_score(served.board.name("cases"), "a", 1, 1)
    cases = hand_cases(served.board)
    settled(served.db)
    assert {name for _, name, _, _ in cases} >= {
        "HideRecord", "RestoreRecord", "ListHiddenRecords", "GetScoreRules", "SetScoreRules", "DeleteRecords",
        "Dump", "Restore", "SetWritesPaused", "Load", "BulkLoad", "WatchRank", "WatchWindowEnds",
        "ListAuditEvents", "SetAuditRetention", "ExpireAuditEvents", "GetCohort", "ListGroups", "AddWebhook",
        "ListWebhooks", "DeleteWebhook", "NoticeWindowEnds", "UpgradeIndex",
    }  # fmt: skip
    with grpc.insecure_channel(served.address) as channel:
        wrong = []  # every case answered otherwise, not just the first
        for code, name, requests, needle in cases:
            before = snapshot(served.db, name)
            outcome = call(channel, methods[name], requests)
            if outcome.code is not code or needle not in outcome.details:
                wrong.append((name, requests, code, outcome))
            elif snapshot(served.db, name) != before:
                wrong.append((name, requests, "the store changed", outcome))
        assert not wrong, "\n".join(map(str, wrong))
        # Streams the client goes away from: a Dump after its first part, a Load after its first message.
        for _ in range(3):
            dump = channel.stream_stream(f"/{SERVICE_NAME}/Dump", serialized, pb.DumpPart.FromString)
            parts = dump(iter([pb.DumpRequest(index=served.board.name("best"))]), timeout=30)
            next(parts)
            parts.cancel()
            release = threading.Event()

            def loading(release: threading.Event = release) -> Iterator[pb.BulkLoadRequest]:
                yield pb.BulkLoadRequest(index=served.board.name("cases"))
                release.wait(10)

            load = channel.stream_stream(f"/{SERVICE_NAME}/Load", serialized, pb.LoadProgress.FromString)
            progress = load(loading(), timeout=30)
            time.sleep(0.2)
            progress.cancel()
            release.set()
    time.sleep(1)  # what the server logs of them, it has logged
    served.assert_log_clean()


# -- reads never write ------------------------------------------------------------------------------------


def test_reads_never_write_whether_answered_or_refused(served: Served) -> None:
    """Every read RPC (by its role) with requests answered and refused, and every GET route (an
    index without scores at=latest among them: a 412), commit nothing to the store: the server's
    commits around each call are only its report's renewals (``releases.py``), told by the time
    the report carries."""
    board = served.board
    reads = [method for method in SERVICE.methods if role_of(method.name) is access.Role.READ]
    gets = [route for route in rest.ROUTES if route.method == "GET" and not (route.events or route.window_ends)]
    empty = board.name("unscored")  # an index of its own: the fuzz's "empty" may have scores by now
    with LeaderboardClient(served.address, timeout=30) as lb:
        lb.create_index(empty)
    settled(served.db)
    with (
        grpc.insecure_channel(served.address) as channel,
        httpx.Client(base_url=served.http_url, timeout=30) as web,
    ):

        def read(method: MethodDescriptor, requests: list[Message]) -> None:
            outcomes: list[Outcome] = []
            assert served.commits_of(lambda: outcomes.append(call(channel, method, requests))) == 0, (method, requests)
            judge(method, requests, outcomes[0])

        def get(path: str, query: dict[str, str]) -> httpx.Response:
            answers: list[httpx.Response | None] = []
            assert served.commits_of(lambda: answers.append(answer_of(web, "GET", path, query, None))) == 0, path
            answer = answers[0]
            assert answer is not None and answer.status_code < 500, (path, query)
            return answer

        @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
        @given(st.data())
        def run(data: st.DataObject) -> None:
            method = data.draw(st.sampled_from(reads))
            read(method, data.draw(requests_of(board, method)))
            route = data.draw(st.sampled_from(gets))
            get(*rest_request(data.draw, board, route)[:2])

        run()
        for method in reads:  # each once, naming a kept index, then the unscored one
            read(method, [naming(method.input_type, board.target(method.name))])
            read(method, [naming(method.input_type, empty)])
        for route in gets:
            at = {"at": "latest"} if "at" in [p.name for p in route.params] else {}
            get(plain_path(route, empty, type="1"), at)
        for window in (0, 1):  # the refused read, and what the CLI's --at latest reads over gRPC
            refused = get(f"/v1/indexes/{empty}/windows/{window}/top", {"at": "latest"})
            assert refused.status_code == 412 and "no score yet" in refused.json()["message"]
        for name in ("ListWindows", "Top"):
            read(SERVICE.methods_by_name[name], [naming(SERVICE.methods_by_name[name].input_type, empty)])
    served.assert_log_clean()
