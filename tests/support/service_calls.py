"""Calls to a served board for the gRPC service's tests: the hand-checked game, a board's rows, a snapshot
of every index (to show a rejected request changed nothing), an RPC's expected error, a raw entry."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
import pytest

from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.proto import service_pb2 as pb

DAY = 86_400


def rpc_error(code: grpc.StatusCode, call: Callable[[], Any], *needles: str) -> str:
    """Run ``call``; it must fail with ``code`` and a message holding every needle."""
    with pytest.raises(grpc.RpcError) as caught:
        call()
    error = caught.value
    assert error.code() == code, f"expected {code.name}, got {error.code().name}: {error.details()}"
    details = error.details()
    for needle in needles:
        assert needle in details, f"{needle!r} not in {details!r}"
    return details


def rows(entries: list) -> list:
    return [(e.pk[0], e.score, e.timestamp, e.rank) for e in entries]


def snapshot(lb: LeaderboardClient, indexes: dict[str, list[tuple]]) -> dict:
    """Everything a client can see of ``indexes`` ({name: [groups]}), to compare before/after."""
    seen: dict[Any, Any] = {
        "indexes": [info.SerializeToString(deterministic=True) for info in lb.list_indexes()],
    }
    for name, groups in indexes.items():
        listing = lb.list_windows(name)
        seen[name] = listing.SerializeToString(deterministic=True)
        seen[name, "subs"] = lb.sub_directories(name)
        for window in listing.windows:
            if window.filling:
                continue
            ts = None if window.type == 0 else window.start
            for group in groups:
                key = (name, window.key, group)
                seen[key] = (
                    rows(lb.top(name, 1000, window.type, ts, group)),
                    lb.count(name, window.type, ts, group),
                )
    return seen


def populate_game(lb: LeaderboardClient, name: str = "game") -> None:
    """A high-score-first BEST index: all-time plus daily windows for days 0, 1 and 2.

    all-time: alice 400@90001, bob 300@2000, eve 300@2500, carol 100@3000, frank 100@3000, dave 50@90000
    day 0:    bob 300@2000, eve 300@2500, alice 100@1000, carol 100@3000, frank 100@3000
    day 1:    alice 400@90001, dave 50@90000
    """
    assert lb.create_index(name, high_score_first=True) is True
    lb.update_windows(name, specs=[(1, 0, DAY, DAY, 3)], high_score_first=True)
    assert lb.add_score(name, ("alice",), 100, 1000) == 2
    assert lb.add_score(name, ("bob",), 300, 2000) == 2
    assert lb.add_score(name, ("eve",), 300, 2500) == 2
    assert lb.add_score(name, ("carol",), 100, 3000) == 2
    request = pb.AddEntriesRequest(
        index=name,
        pk=[pb.Item(string="frank")],
        entries=[
            pb.Entry(score=pb.Score(int=100), timestamp=3000),
            pb.Entry(score=pb.Score(int=20), timestamp=4000),
        ],
    )
    assert lb.stub.AddEntries(request).windows_changed == 2
    assert lb.add_score(name, ("dave",), 50, 90_000) == 2
    assert lb.add_score(name, ("alice",), 400, 90_001) == 2
    assert lb.add_score(name, ("alice",), 50, 1500) == 0  # worse than alice's best everywhere


def _entry(score: pb.Score | None = None, ts: int = 10, context=(), group=()) -> pb.Entry:
    entry = pb.Entry(timestamp=ts, context=list(context), group=list(group))
    if score is not None:
        entry.score.CopyFrom(score)
    return entry
