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
    return {
        "rank": entry.rank,
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
    error = web.get(f"{BASE}/ranks", params={"records": "eve"})
    assert error.status_code == 400 and error.json()["message"] == "records must be a JSON array of keys, not 'eve'"


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
