"""The Python clients: typed errors, and the asyncio client beside the blocking one.

Against real servers on both stores.  The oracle for the asyncio client is the blocking one: the
same calls on twin indexes answer the same values; its retries are checked as the blocking
client's are (tests/service/test_exactly_once.py), arithmetic on a SUM index through a proxy that loses
answers after the commit.  The errors are checked against what the server answered (code and
message) and against the in-process index, whose classes they share.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

import grpc
import pytest

from fdb_leaderboard import access, client, errors
from fdb_leaderboard.client import AsyncLeaderboardClient, LeaderboardClient, RetryPolicy
from fdb_leaderboard.client.messages import board
from fdb_leaderboard.index import IndexSettings, LeaderboardIndex, WindowRef
from fdb_leaderboard.proto import service_pb2 as pb
from fdb_leaderboard.service import ServerSettings
from tests.conftest import private_prefix
from tests.support.faults import AnswerCutter

DAY = 86_400
T = 1_000
ADMIN, READER = "admin-token-0123456789abc", "reader-token-0123456789"

pytestmark = pytest.mark.usefixtures("no_unexpected_server_errors")


def public_methods(cls: type) -> dict[str, inspect.Signature]:
    return {name: inspect.signature(member) for name, member in vars(cls).items() if not name.startswith("_")}


# -- one set of methods -------------------------------------------------------------------------------


# The clients' own, not shared operations.
STREAMS = ("scan_all", "all_groups", "bulk_load", "dump", "restore", "move", "watch_rank", "watch_window_ends")


def test_both_clients_have_the_same_methods_with_the_same_arguments() -> None:
    blocking, awaiting = public_methods(LeaderboardClient), public_methods(AsyncLeaderboardClient)
    assert blocking.keys() == awaiting.keys()
    assert len(blocking) > 40
    for name, signature in blocking.items():
        if name in STREAMS:  # an iterator, an async one; what they send may be an async iterable
            arguments = [(p.name, p.kind, p.default) for p in signature.parameters.values()]
            assert [(p.name, p.kind, p.default) for p in awaiting[name].parameters.values()] == arguments
            continue
        assert awaiting[name] == signature, name
        method = getattr(AsyncLeaderboardClient, name)
        if name not in ("close", "scan_all", "all_groups", "dump", "restore"):
            assert inspect.iscoroutinefunction(method), name
        if name not in ("close", *STREAMS):  # each written once: the operation's
            assert getattr(LeaderboardClient, name).__doc__ == method.__doc__, name
    for name in ("scan_all", "all_groups", "dump", "restore"):
        assert inspect.isasyncgenfunction(getattr(AsyncLeaderboardClient, name)), name
    for name in ("watch_rank", "watch_window_ends"):  # watches, as the blocking client's: async with, async for
        assert inspect.signature(getattr(AsyncLeaderboardClient, name)).return_annotation.startswith("AsyncWatch")
    top = inspect.signature(LeaderboardClient.top)
    assert list(top.parameters)[:3] == ["self", "index", "n"] and top.return_annotation == "list[RankedEntry]"


def _calls(index: str) -> list[tuple[str, tuple, dict[str, Any]]]:
    """A session of every operation, reads and writes, on ``index``."""
    return [
        ("create_index", (index,), {"aggregation": "best", "dense_ranks": True}),
        ("update_windows", (index,), {"specs": [(1, 0, DAY, DAY, 3)]}),
        ("add_score", (index, "alice", 10, T), {"metadata": {"name": "Alice", "country": "FR"}}),
        ("add_entries", (index, "bob", [(7, T + 1), (8, DAY + 1)]), {}),
        ("save_record", (index, ("carol", 3), [(12, T + 2)]), {}),
        ("write_batch", (index, [("dave", [(4, T + 3)]), ("erin", [(10, DAY + 2)])]), {"replace": False}),
        ("set_metadata", (index, "bob", {"name": "Bob"}), {}),
        ("metadata", (index, "alice"), {}),
        ("metadata", (index, "nobody"), {}),
        ("top", (index, 10), {}),
        ("top", (index, 10, 1, T), {"mode": "dense"}),
        ("rank", (index, "bob"), {"mode": "COMPETITION"}),
        ("rank_and_entry", (index, ("carol", 3)), {}),
        ("around", (index, "dave"), {"above": 1, "below": 1}),
        ("count", (index,), {"window_type": 1, "timestamp": DAY}),
        ("score_for_rank", (index, 1), {}),
        ("rank_for_score", (index, 9), {}),
        ("score_trim", (index, [(1, T), (50, T)]), {}),
        ("ranks", (index, ["erin", "zed", "alice"]), {}),
        ("friends_board", (index, ["erin", "alice"]), {}),
        ("page", (index, 2, 2), {}),
        ("percentile", (index, "dave"), {}),
        ("score_for_percentile", (index, 50), {}),
        ("movement", (index, "bob", 1, DAY), {}),
        ("rank_history", (index, "bob", 1), {"count": 3}),
        ("scan", (index, "BY_VALUE"), {"low": 5, "limit": 2}),
        ("save_sub_directory", (index, (), True), {}),
        ("sub_directories", (index,), {}),
        ("groups", (index, 1, T), {"limit": 1}),
        ("list_windows", (index,), {}),
        ("set_maintenance", (index, POLICY), {}),
        ("keep_ahead", (index,), {"now": T}),
        ("expire", (index, DAY), {}),
        ("trim", (index, 0), {}),
        ("fill", (index,), {}),
        ("expire_idempotency_keys", (index,), {"before": 2**40}),
        ("verify", (index,), {}),
        ("delete_record", (index, "dave"), {}),
        ("delete_record", (index, "dave"), {}),
        ("top", (index, 10), {}),
    ]


POLICY = pb.MaintenancePolicy(
    windows=[pb.RegularWindows(type=1, base=0, increment=DAY, duration=DAY)], horizon=DAY, certain_within=DAY
)


def _comparable(answer: Any, index: str) -> str:
    """An answer (or the error raised) with the index's name taken out: twins have different names."""
    if isinstance(answer, pb.ListWindowsResponse | pb.FillResponse | pb.VerifyResponse):
        answer = answer.SerializeToString(deterministic=True)
    if isinstance(answer, tuple) and len(answer) == 2 and isinstance(answer[1], bytes):  # a scan's page
        answer = (answer[0], bool(answer[1]))  # (a continuation names its index)
    return repr(answer).replace(index, "INDEX")


def test_the_asyncio_client_answers_as_the_blocking_one(server_place) -> None:
    server = server_place.start(ServerSettings(maintain_every=0, tokens=access.Tokens.parse(f"admin:{ADMIN}")))
    try:
        blocking = []
        with LeaderboardClient(server.address, token=ADMIN) as lb:
            for name, args, kwargs in _calls("blocking"):
                try:
                    answer = getattr(lb, name)(*args, **kwargs)
                except client.CallError as exc:
                    answer = exc
                blocking.append(_comparable(answer, "blocking"))
            scanned = [e.pk for e in lb.scan_all("blocking", "BY_VALUE", page=1)]

        async def session() -> list[str]:
            answers = []
            async with AsyncLeaderboardClient(server.address, token=ADMIN) as lb:
                for name, args, kwargs in _calls("awaiting"):
                    try:
                        answer = await getattr(lb, name)(*args, **kwargs)
                    except client.CallError as exc:
                        answer = exc
                    answers.append(_comparable(answer, "awaiting"))
                assert [e.pk async for e in lb.scan_all("awaiting", "BY_VALUE", page=1)] == scanned
                assert await lb.bulk_load("awaiting", [("fay", [(3, T)]), ("gus", [(2, T)])], batch_size=1) == 2
            return answers

        assert asyncio.run(session()) == blocking
        error_names = tuple(cls.__name__ for cls in client.ERRORS.values())
        errors_seen = [answer for answer in blocking if answer.startswith(error_names)]
        assert len(errors_seen) <= 1, errors_seen  # (save_sub_directory of group () may be refused, alike)
        assert "Alice" in blocking[-1] and "erin" in blocking[-1] and "dave" not in blocking[-1]
        with LeaderboardClient(server.address, token=ADMIN) as lb:
            assert lb.count("awaiting") == lb.count("blocking") + 2 and lb.verify("awaiting") == []
    finally:
        server.stop(grace=1)


# -- exactly-once writes, asyncio ------------------------------------------------------------------------


def test_the_asyncio_client_retries_its_writes_under_one_key(server_place) -> None:
    server = server_place.start()
    try:
        with AnswerCutter(server.address) as cutter:

            async def session() -> None:
                async with AsyncLeaderboardClient(cutter.address, timeout=5) as lb:
                    await lb.create_index("game", aggregation="SUM")
                    for i in range(3):
                        cutter.lose_answers(2)  # lost twice: the third try hears back
                        assert await lb.add_score("game", "alice", 10, T + i) == 1
                    cutter.lose_answers(1)
                    await lb.write_batch("game", [("bob", [(3, T)])], replace=False)
                    cutter.lose_answers(1)  # a load from a list is sent again whole, saved once
                    records = [(f"p{i:03d}", [(i, T)]) for i in range(300)]
                    assert await lb.bulk_load("game", records, batch_size=100) == 300
                    assert cutter.lost == 8
                    assert (await lb.rank_and_entry("game", "alice")).score == 30
                    assert (await lb.rank_and_entry("game", "bob")).score == 3
                    async with AsyncLeaderboardClient(cutter.address, timeout=5, retry=None) as once:
                        cutter.lose_answers(1)
                        with pytest.raises(client.Unavailable) as lost:
                            await once.add_score("game", "alice", 1, T)
                        assert lost.value.code() is grpc.StatusCode.UNAVAILABLE
                    assert (await lb.rank_and_entry("game", "alice")).score == 31  # applied, unknown to the caller
                    assert await lb.verify("game") == []

            asyncio.run(session())
    finally:
        server.stop(grace=1)


# -- typed errors ----------------------------------------------------------------------------------------


def _raised(call: Callable[[], Any]) -> client.CallError:
    with pytest.raises(client.CallError) as caught:
        call()
    return caught.value


def test_errors_carry_the_servers_code_and_message(server_place) -> None:
    settings = ServerSettings(maintain_every=0, tokens=access.Tokens.parse(f"admin:{ADMIN}\nread:{READER}"))
    server = server_place.start(settings)
    try:
        with (
            LeaderboardClient(server.address, token=ADMIN) as lb,
            LeaderboardClient(server.address, token=READER) as reader,
        ):
            lb.create_index("game", group_size=1)
            lb.add_score("game", "alice", 5, T, group="eu", idempotency_key="first")
            cases: list[tuple[type, type | None, grpc.StatusCode, str, Callable[[], Any]]] = [
                (client.NotFound, errors.NotFound, grpc.StatusCode.NOT_FOUND, "no index named 'nosuch'",
                 lambda: lb.top("nosuch", 3)),
                (client.NotFound, errors.NotFound, grpc.StatusCode.NOT_FOUND, "no window of type 4",
                 lambda: lb.top("game", 3, 4, T, group="eu")),
                (client.InvalidArgument, errors.InvalidArgument, grpc.StatusCode.INVALID_ARGUMENT, "groups by 1",
                 lambda: lb.top("game", 3)),
                (client.FailedPrecondition, errors.FailedPrecondition, grpc.StatusCode.FAILED_PRECONDITION, "DENSE",
                 lambda: lb.top("game", 3, group="eu", mode="DENSE")),
                (client.AlreadyExists, errors.AlreadyExists, grpc.StatusCode.ALREADY_EXISTS, "'first'",
                 lambda: lb.add_score("game", "alice", 6, T, group="eu", idempotency_key="first")),
                (client.AlreadyExists, errors.AlreadyExists, grpc.StatusCode.ALREADY_EXISTS, "other options",
                 lambda: lb.create_index("game")),
                (client.PermissionDenied, access.PermissionDenied, grpc.StatusCode.PERMISSION_DENIED, "admin",
                 lambda: reader.drop_index("game")),
            ]  # fmt: skip
            with LeaderboardClient(server.address) as anonymous:
                cases.append(
                    (client.Unauthenticated, access.Unauthenticated, grpc.StatusCode.UNAUTHENTICATED, "token",
                     anonymous.list_indexes)
                )  # fmt: skip
                for cls, index_class, code, message, call in cases:
                    raised = _raised(call)
                    assert type(raised) is cls and isinstance(raised, grpc.RpcError), raised
                    assert index_class is None or isinstance(raised, index_class)
                    assert raised.code() is code and message in raised.details() and str(raised) == raised.details()
                    assert repr(raised).startswith(f"{cls.__name__}({code.name}: ")
            assert lb.rank("game", "alice", group="eu") == 0  # nothing refused changed anything
    finally:
        server.stop(grace=1)


def test_arguments_the_client_cannot_send_are_refused_before_any_call() -> None:
    with LeaderboardClient("127.0.0.1:1", retry=None) as lb:  # nothing listens: a call would be UNAVAILABLE
        for call, message in [
            (lambda: lb.top("game", -1), "n must be an integer from 0 to 4294967295, not -1"),
            (
                lambda: lb.top("game", 3, mode="fastest"),
                "mode must be one of ORDINAL, COMPETITION, DENSE, not 'fastest'",
            ),
            (lambda: lb.around("game", "a", above=2**32, below=1), "above must be an integer"),
            (lambda: lb.page("game", 1, "ten"), "size must be an integer from 0"),
            (lambda: lb.add_score("game", "alice", "high", T), "score must be an integer or a finite float, not str"),
            (lambda: lb.add_score("game", ["a", [1]], 1, T), "primary key holds a list"),
            (lambda: lb.create_index("game", aggregation="MAX"), "aggregation must be one of BEST, SUM, LATEST"),
            (lambda: lb.scan("game", "SIDEWAYS"), "scan_type must be one of BY_VALUE, BY_RANK, BY_TIME_WINDOW"),
            (lambda: lb.ranks("game", "alice"), "pks is a list of keys"),
            (lambda: lb.add_entries("game", "a", [(1,)]), "timestamp"),
        ]:
            raised = _raised(call)
            assert type(raised) is client.InvalidArgument and isinstance(raised, ValueError)
            assert raised.code() is grpc.StatusCode.INVALID_ARGUMENT and message in str(raised), str(raised)
        assert type(_raised(lambda: lb.top("game", 3))) is client.Unavailable  # a well-formed call is sent


def test_a_board_is_named_alike_by_loose_arguments_and_by_a_window_ref() -> None:
    loose = board(2, 1_700_000_000, "eu")
    assert loose == board(WindowRef(2, 1_700_000_000, ("eu",)))
    request = pb.TopRequest(index="game", **loose, n=3)
    assert request.window.type == 2 and request.window.timestamp == 1_700_000_000
    assert [item.string for item in request.group] == ["eu"]
    assert not pb.TopRequest(**board()).window.HasField("timestamp")  # all-time, no group
    with pytest.raises(client.InvalidArgument, match="window_type must be an integer"):
        board(-1)


def test_one_except_serves_the_index_in_process_and_through_the_service(server_place) -> None:
    """Code written for one of them handles the other's errors: they are the same classes."""

    def board(read: Callable[[], list]) -> str:
        try:
            return f"{len(read())} rows"
        except errors.WindowNotFound:
            return "no such window"
        except errors.NotFound:
            return "not found"
        except errors.InvalidArgument as exc:
            return f"bad: {'groups by' in str(exc)}"

    server = server_place.start()
    prefix = private_prefix()
    local = LeaderboardIndex.create(server.db, prefix, IndexSettings(group_size=1))
    try:
        with LeaderboardClient(server.address) as lb:
            lb.create_index("game", group_size=1)
            for read in (lambda: local.top(3, 2, T, group=("eu",)), lambda: lb.top("game", 3, 2, T, group="eu")):
                assert board(read) in ("no such window", "not found")  # remote: NOT_FOUND, whatever the kind
            assert board(lambda: local.top(3)) == board(lambda: lb.top("game", 3)) == "bad: True"
            assert (
                board(lambda: local.top(3, group=("eu",))) == board(lambda: lb.top("game", 3, group="eu")) == "0 rows"
            )
    finally:
        server.db.run(lambda tr: tr.clear_range_startswith(prefix))
        server.stop(grace=1)


def test_unavailable_and_deadline_exceeded_are_typed_after_the_retries(server_place) -> None:
    server = server_place.start()
    try:
        with LeaderboardClient(server.address) as patient:  # (a store under load may take longer than 0.5 s)
            patient.create_index("game")
        with (
            AnswerCutter(server.address) as cutter,
            LeaderboardClient(cutter.address, timeout=0.5, retry=RetryPolicy(attempts=2, initial_backoff=0.01)) as lb,
        ):
            cutter.lose_answers(2, stall=1.5)  # both tries run out of time
            raised = _raised(lambda: lb.add_score("game", "alice", 1, T))
            assert type(raised) is client.DeadlineExceeded and raised.code() is grpc.StatusCode.DEADLINE_EXCEEDED
        with LeaderboardClient("127.0.0.1:1", retry=None) as nowhere:
            raised = _raised(lambda: nowhere.count("game"))
        assert type(raised) is client.Unavailable and "127.0.0.1:1" in raised.debug_error_string()

        async def unreachable() -> client.CallError:
            async with AsyncLeaderboardClient("127.0.0.1:1", retry=None) as lb:
                with pytest.raises(client.Unavailable) as caught:
                    await lb.count("game")
                with pytest.raises(client.InvalidArgument, match="n must be"):
                    await lb.top("game", -1)
                return caught.value

        assert asyncio.run(unreachable()).code() is grpc.StatusCode.UNAVAILABLE
    finally:
        server.stop(grace=1)
