"""The players' reads and writes over the resource routes, answered as the gRPC client answers
them (the client's own answers are checked against the model elsewhere), in the routes' one JSON
shape: entries as listings show them, windows with their bounds."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.http import HttpServer
from fdb_leaderboard.index import RankedEntry
from fdb_leaderboard.service import Server

pytestmark = pytest.mark.usefixtures("no_unexpected_server_errors", "no_unexpected_http_errors")

DAY = 86_400
D0 = 1_795_392_000  # a midnight, UTC
T0 = D0 + 3_600


@pytest.fixture
def web(server: Server) -> Iterator[httpx.Client]:
    http = HttpServer(server, "127.0.0.1:0").start()
    with httpx.Client(base_url=http.url, timeout=20, headers={"content-type": "application/json"}) as client:
        yield client


@pytest.fixture
def arena(client: LeaderboardClient) -> LeaderboardClient:
    client.create_index("arena")
    client.update_windows("arena", high_score_first=True, specs=[(1, D0 - DAY, DAY, DAY, 2)])
    yesterday = {"ann": 50, "bob": 40, "cat": 30, "dan": 20}
    today = {"ann": 10, "bob": 60, "cat": 70, "eve": 65}
    for pk, score in yesterday.items():
        client.add_score("arena", (pk,), score, D0 - DAY + 5)
    for pk, score in today.items():
        client.add_score("arena", (pk,), score, T0, metadata={"name": pk.title()})
    return client


def plain(entry: RankedEntry | None) -> dict | None:
    if entry is None:
        return None
    rank = {} if entry.rank is None else {"rank": entry.rank}  # none from a scan by value
    return {
        **rank,
        "pk": list(entry.pk),
        "score": entry.score,
        "timestamp": entry.timestamp,
        "context": list(entry.context),
        "group": list(entry.group),
        "metadata": dict(entry.metadata or {}),
    }


def window_of(window) -> dict:
    return {"type": window.type, "start": window.start, "end": window.end}


BASE = "/v1/indexes/arena/windows/1"
AT = {"at": str(T0)}


def test_page_ranks_and_friends(web: httpx.Client, arena: LeaderboardClient) -> None:
    page = web.get(f"{BASE}/page", params={**AT, "page": 2, "size": 2}).json()
    expected = arena.page("arena", 2, 2, 1, T0)
    assert page["entries"] == [plain(e) for e in expected.entries]
    assert (page["page"], page["size"], page["total"], page["pages"]) == (2, 2, expected.total, expected.pages)
    records = json.dumps(["eve", "zed", "ann"])
    ranks = web.get(f"{BASE}/ranks", params={**AT, "records": records, "mode": "COMPETITION"}).json()
    assert ranks == {
        "entries": [plain(e) for e in arena.ranks("arena", ["eve", "zed", "ann"], 1, T0, mode="COMPETITION")]
    }
    assert ranks["entries"][1] is None  # zed has no score
    friends = web.get(f"{BASE}/friends", params={**AT, "records": records}).json()
    assert friends["entries"] == [plain(e) for e in arena.friends_board("arena", ["eve", "zed", "ann"], 1, T0)]
    assert [e["pk"] for e in friends["entries"]] == [["eve"], ["ann"]]
    # Each key a parameter of its own, as a path takes it: no brackets for curl to glob.
    one_by_one = [*AT.items(), ("records", "eve"), ("records", "zed"), ("mode", "COMPETITION")]
    assert web.get(f"{BASE}/ranks", params=one_by_one).json()["entries"] == ranks["entries"][:2]
    error = web.get(f"{BASE}/ranks", params={**AT, "records": "[eve"})
    assert error.status_code == 400 and error.json()["message"] == "records must be a JSON array of keys, not '[eve'"


def test_percentiles_movement_and_history(web: httpx.Client, arena: LeaderboardClient) -> None:
    percentile = web.get(f"{BASE}/records/eve/percentile", params=AT).json()
    assert percentile == {"percentile": arena.percentile("arena", ("eve",), 1, T0)}
    score = web.get(f"{BASE}/score-for-percentile", params={**AT, "percentile": 50}).json()
    assert score == {"score": arena.score_for_percentile("arena", 50, 1, T0)}
    assert web.get(f"{BASE}/score-for-percentile", params={"percentile": "x"}).json()["message"] == (
        "percentile must be a number, not 'x'"
    )
    moved = web.get(f"{BASE}/records/cat/movement", params=AT).json()
    movement = arena.movement("arena", ("cat",), 1, T0)
    assert moved["entry"] == plain(movement.entry) and moved["previous_entry"] == plain(movement.previous_entry)
    assert moved["window"] == window_of(movement.window)
    assert moved["previous_window"] == window_of(movement.previous_window)
    assert moved["change"] == movement.change == 2  # third yesterday, first today
    history = web.get("/v1/indexes/arena/records/ann/history", params={"type": 1, "until": T0}).json()
    expected = arena.rank_history("arena", ("ann",), 1, until=T0)
    assert [(row["window"], row.get("entry")) for row in history["windows"]] == [
        (window_of(w), plain(e)) for w, e in expected.windows
    ]
    assert history["best"]["entry"] == plain(expected.best[1])


def test_metadata_get_and_set(web: httpx.Client, arena: LeaderboardClient) -> None:
    path = "/v1/indexes/arena/records/eve/metadata"
    assert web.get(path).json() == {"metadata": {"name": "Eve"}}
    changed = web.post(path, json={"metadata": {"country": "FR"}, "merge": True})
    assert (
        changed.json()
        == {"metadata": {"country": "FR", "name": "Eve"}}
        == {"metadata": arena.metadata("arena", ("eve",))}
    )
    replaced = web.post(path, json={"metadata": {"name": "Eva"}}).json()
    assert replaced == {"metadata": {"name": "Eva"}} == {"metadata": arena.metadata("arena", ("eve",))}
    missing = web.get("/v1/indexes/arena/records/zed/metadata")
    assert missing.status_code == 404 and missing.json() == {"code": "NOT_FOUND", "message": "no such record"}
    refused = web.post(path, json={"metadata": {"name": 1}})
    assert (
        refused.status_code == 400
        and refused.json()["message"] == "metadata must be an object of strings, not {'name': 1}"
    )
    # The top lists the new name (metadata in every listing).
    top = web.get(f"{BASE}/top", params=AT).json()["entries"]
    assert {e["pk"][0]: e["metadata"].get("name") for e in top}["eve"] == "Eva"


def test_delete_a_record_once_with_an_idempotency_key(
    server: Server, web: httpx.Client, arena: LeaderboardClient
) -> None:
    path = "/v1/indexes/arena/records/eve"
    with httpx.Client(base_url=str(web.base_url), timeout=20) as bare:  # no Content-Type: a DELETE has no body
        first = bare.delete(path, headers={"Idempotency-Key": "del-eve"})
        assert first.status_code == 200 and first.json() == {"existed": True}
        assert arena.metadata("arena", ("eve",)) is None and arena.rank("arena", ("eve",)) is None
        arena.add_score("arena", ("eve",), 5, T0)  # written again after the delete
        again = bare.delete(path, headers={"Idempotency-Key": "del-eve"})  # a retry: applied once
        assert again.json() == {"existed": True} and arena.rank("arena", ("eve",)) is not None
        assert bare.delete(path).json() == {"existed": True}  # no key: a new delete
        assert bare.delete(path).json() == {"existed": False}
        untyped = bare.request("DELETE", path, content=b"{}")  # a body still needs its type
        assert untyped.status_code == 415 and untyped.json()["code"] == "INVALID_ARGUMENT"
        assert bare.get(path).status_code == 405


def test_windows_of_a_type_by_page(web: httpx.Client, arena: LeaderboardClient, cli) -> None:
    arena.update_windows(
        "arena", high_score_first=True, specs=[(1, D0 + DAY, DAY, DAY, 3), (2, D0, 7 * DAY, 7 * DAY, 1)]
    )
    everything = arena.list_windows("arena").windows
    listed = [w for w in everything if w.type == 1]
    # Every door filters the same way: the RPC's window_type, the CLI's --type.
    assert len(everything) > len(listed) and list(arena.list_windows("arena", 1).windows) == listed
    assert not arena.list_windows("arena", 9).windows and arena.list_windows("arena", 9).exists
    shown = json.loads(cli("windows", "show", "arena", "--type", 1, "--json").output)["windows"]
    assert [(w["type"], w["start"], w["end"]) for w in shown] == [(w.type, w.start, w.end) for w in listed]
    expected = sorted((window_of(w) | {"filling": w.filling} for w in listed), key=lambda w: -w["start"])
    assert len(expected) == 5
    first = web.get("/v1/indexes/arena/windows/1", params={"size": 2}).json()
    assert first == {"windows": expected[:2], "page": 1, "size": 2, "total": 5, "pages": 3}
    last = web.get("/v1/indexes/arena/windows/1", params={"size": 2, "page": 3}).json()
    assert last["windows"] == expected[4:]
    assert web.get("/v1/indexes/arena/windows/1").json()["windows"] == expected
    assert web.get("/v1/indexes/arena/windows/9").json() == {
        "windows": [],
        "page": 1,
        "size": 100,
        "total": 0,
        "pages": 1,
    }
    refused = web.get("/v1/indexes/arena/windows/1", params={"size": 0})
    assert refused.status_code == 400 and refused.json()["message"] == "size must be between 1 and 1000, not 0"


def test_scans_ranks_for_scores_and_score_trims(web: httpx.Client, arena: LeaderboardClient) -> None:
    entries, continuation = [], ""
    while True:  # the whole window from the bottom, two at a time
        params = {**AT, "reverse": "true", "limit": 2, "continuation": continuation}
        answer = web.get(f"{BASE}/scan", params=params).json()
        entries += answer["entries"]
        continuation = answer["continuation"]
        if not continuation:
            break
    expected = list(arena.scan_all("arena", "BY_TIME_WINDOW", window_type=1, timestamp=T0, reverse=True, page=2))
    assert entries == [plain(e) for e in expected] and len(entries) == 4
    by_value = web.get("/v1/indexes/arena/windows/0/scan", params={"by": "value", "from": 40, "to": 60}).json()
    assert by_value["entries"] == [plain(e) for e in arena.scan("arena", "BY_VALUE", low=40, high=60, limit=100)[0]]
    assert web.get(f"{BASE}/scan", params={"by": "value"}).status_code == 400
    rank = web.get(f"{BASE}/rank-for-score", params={**AT, "score": 65}).json()
    assert rank == {"rank": arena.rank_for_score("arena", 65, 1, T0)} == {"rank": 1}
    keyed = web.get(f"{BASE}/rank-for-score", params={**AT, "score": 65, "timestamp": T0 + 1}).json()
    assert keyed == {"rank": arena.rank_for_score("arena", (65, T0 + 1), 1, T0)} == {"rank": 2}
    score = web.get(f"{BASE}/score-for-rank", params={**AT, "rank": 2}).json()
    assert score == {"score": arena.score_for_rank("arena", 2, 1, T0)} == {"score": 60}
    assert web.get(f"{BASE}/score-for-rank", params={**AT, "rank": 9}).json() == {}
    refused = web.get(f"{BASE}/rank-for-score", params={"score": "x"})
    assert refused.status_code == 400 and "score must be" in refused.json()["message"]
    sent = [(1000, D0 - DAY + 9), (1100, T0 + 5), (800, T0 + 6)]
    trimmed = web.post(
        "/v1/indexes/arena/score-trim", json={"entries": [{"score": s, "timestamp": t} for s, t in sent]}
    )
    expected_trim = arena.score_trim("arena", sent)
    assert trimmed.json() == {
        "entries": [{"score": e.score, "timestamp": e.timestamp, "context": [], "group": []} for e in expected_trim]
    }
