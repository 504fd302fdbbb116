"""The HTTP API's answers as a product: every error the same JSON ``{code, message}`` (unknown
paths and wrong methods included) worded without Python's internals, ``/healthz`` and
``/readyz``, and every rank mode (DENSE too) wherever a mode is taken."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator

import httpx
import pytest

from fdb_leaderboard import __version__, formats
from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.http import HttpServer, app
from fdb_leaderboard.service import Server

pytestmark = pytest.mark.usefixtures("no_unexpected_server_errors", "no_unexpected_http_errors")

# Words of Python or of a library that say nothing to the caller.
INTERNALS = re.compile(r"invalid literal|int\(\)|base 10|Traceback|Failed to parse|Available Fields|Error\b|\bNone\b")


@pytest.fixture
def http(server: Server) -> Iterator[HttpServer]:
    yield HttpServer(server, "127.0.0.1:0").start()


@pytest.fixture
def web(http: HttpServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=http.url, timeout=20, headers={"content-type": "application/json"}) as client:
        yield client


@pytest.fixture
def game(client: LeaderboardClient) -> LeaderboardClient:
    client.create_index("game", dense_ranks=True)
    client.update_windows("game", high_score_first=True)
    for pk, score in (("ann", 30), ("bob", 30), ("cat", 20), ("dan", 10)):
        client.add_score("game", (pk,), score, 1_000)
    return client


def error_of(response: httpx.Response, status: int) -> dict[str, str]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"code", "message"} and all(isinstance(v, str) and v for v in body.values()), body
    assert not INTERNALS.search(body["message"]), body["message"]
    return body


def test_unknown_paths_and_wrong_methods_answer_the_api_error(web: httpx.Client) -> None:
    for path in ("/nope", "/v1/nope", "/v1/indexes/game/windows/0/nope", "/static/nope.js"):
        body = error_of(web.get(path), 404)
        assert body == {"code": "NOT_FOUND", "message": f"no such path: {path} (the API is described at /openapi.json)"}
    wrong = web.get("/v1/Top")
    assert error_of(wrong, 405) == {"code": "UNIMPLEMENTED", "message": "GET is not allowed on /v1/Top: use POST"}
    assert wrong.headers["allow"] == "POST"
    assert error_of(web.post("/v1/indexes", json={}), 405)["message"] == (
        "POST is not allowed on /v1/indexes: use GET, HEAD"
    )


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        (
            "/v1/Top",
            {"index": "game", "n": "abc"},
            "request body is not a valid TopRequest: n: 'abc' is not an integer",
        ),
        (
            "/v1/Top",
            {"index": "game", "window": {"type": "x"}},
            "request body is not a valid TopRequest: window.type: 'x' is not an integer",
        ),
        (
            "/v1/Top",
            {"index": "game", "bogus": 1},
            'request body is not a valid TopRequest: unknown field "bogus" '
            "(TopRequest has 'index', 'window', 'group', 'mode', 'n')",
        ),
        (
            "/v1/AddScore",
            {"index": "game", "pk": [{"string": "a"}], "entry": {"score": {"int": "1.5"}}},
            'request body is not a valid AddScoreRequest: entry.score: "1.5" is not an integer',
        ),
        (
            "/v1/indexes/game/scores",
            {"pk": "a", "score": "abc"},
            "the score is not a valid Entry: score.int: 'abc' is not an integer",
        ),
        (
            "/v1/indexes/game/scores",
            {"pk": "a", "score": 1, "timestamp": "x"},
            "the score is not a valid Entry: timestamp: 'x' is not an integer",
        ),
    ],
)
def test_malformed_requests_are_named_by_field_in_plain_words(
    web: httpx.Client, game: LeaderboardClient, path: str, body: dict, message: str
) -> None:
    assert error_of(web.post(path, json=body), 400) == {"code": "INVALID_ARGUMENT", "message": message}
    assert game.count("game") == 4  # nothing written


def test_malformed_json_is_said_so(web: httpx.Client) -> None:
    body = error_of(web.post("/v1/Top", content=b"{bad"), 400)
    assert body["message"].startswith("request body is not a valid TopRequest: not JSON (")


def test_dense_ranks_are_taken_wherever_a_mode_is(web: httpx.Client, game: LeaderboardClient) -> None:
    """DENSE over the resource routes as over the RPCs: ann and bob share 0, cat 1, dan 2."""
    base = "/v1/indexes/game/windows/0"
    top = web.get(f"{base}/top", params={"mode": "DENSE"}).json()["entries"]
    assert [(e["pk"], e["rank"]) for e in top] == [(["ann"], 0), (["bob"], 0), (["cat"], 1), (["dan"], 2)]
    assert web.get(f"{base}/records/dan/rank", params={"mode": "DENSE"}).json()["rank"] == 2
    around = web.get(f"{base}/records/cat/around", params={"mode": "DENSE", "above": 1, "below": 0}).json()
    assert [e["rank"] for e in around["entries"]] == [0, 1]
    for pk in ("ann", "bob", "cat", "dan"):  # the same as gRPC's
        assert web.get(f"{base}/records/{pk}/rank", params={"mode": "DENSE"}).json()["rank"] == game.rank(
            "game", (pk,), mode="DENSE"
        )
    body = error_of(web.get(f"{base}/top", params={"mode": "dense"}), 400)
    assert body["message"] == "mode must be one of ORDINAL, COMPETITION, DENSE, not 'dense'"


def test_health_and_readiness(web: httpx.Client, server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    assert web.get("/healthz").json() == {"status": "SERVING"}
    # The store answered a read; the answer says the formats and the releases running on the store.
    with LeaderboardClient(server.address) as lb:
        lb.create_index("ready")
    assert web.get("/readyz").json() == {
        "status": "SERVING",
        "release": __version__,
        "store_format": {"version": formats.NEWEST_STORE, "recorded": True},
        "releases": {__version__: 1},
        "index_formats": {"ready": formats.NEWEST_INDEX},
    }
    # A store that does not answer in time: not ready (the process is still alive).
    release = threading.Event()
    monkeypatch.setattr(app, "READY_SECONDS", 0.3)
    monkeypatch.setattr(server.catalog, "probe", lambda: release.wait(30))
    try:
        assert error_of(web.get("/readyz"), 503) == {
            "code": "UNAVAILABLE",
            "message": "the store did not answer within 0.3 s",
        }
        assert web.get("/healthz").status_code == 200
    finally:
        release.set()

    def failing() -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(server.catalog, "probe", failing)
    body = error_of(web.get("/readyz"), 503)
    assert body["message"] == "the store failed a read: see the server log"


def test_a_routes_own_window_lookup_is_not_a_users_call(
    web: httpx.Client, game: LeaderboardClient, server: Server
) -> None:
    """``at=latest`` reads the index's windows first: the metrics count the user's Top only."""

    assert web.get("/v1/indexes/game/windows/0/top", params={"at": "latest"}).status_code == 200

    def counted(method: str) -> float:
        labels = {"transport": "http", "method": method, "code": "OK"}
        return server.metrics.registry.get_sample_value("fdb_leaderboard_calls_total", labels) or 0.0

    assert (counted("Top"), counted("ListWindows")) == (1, 0)
