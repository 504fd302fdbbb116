"""The HTTP/JSON front end end to end: a real server (gRPC and HTTP in one process) and httpx.

- Every RPC is served at ``POST /v1/<Method>``: reads answer exactly what gRPC answers for the
  same request; writes sent over HTTP (NDJSON bulk loads included) leave boards that match the
  brute-force model in ``tests/support/model.py``.
- Errors carry gRPC's code and message, with the HTTP status of each code (400, 404, 409, 412, 429, 503...).
- The REST routes (top, rank, around, count, scores, Server-Sent Events) answer what the model does.
- The OpenAPI document is a valid OpenAPI 3.1 document naming exactly the routes served; its
  examples validate and succeed; every JSON answer here is checked against its schema.
- The HTTP server stops with the gRPC server, and ``fdb-leaderboard serve`` runs both.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import grpc
import httpx
import jsonschema
import pytest
from google.protobuf import json_format
from openapi_spec_validator import validate as validate_openapi
from starlette.routing import Mount, Route

from fdb_leaderboard.access import Tokens
from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.http import HttpServer, events, rest
from fdb_leaderboard.http.plain import typed_json
from fdb_leaderboard.http.transcode import HTTP_STATUS, rpcs
from fdb_leaderboard.proto import service_pb2 as pb
from fdb_leaderboard.proto import service_pb2_grpc as pb_grpc
from fdb_leaderboard.service import Server, ServerSettings, StartupError, TlsFiles
from tests.conftest import start_server, wait_until
from tests.support.model import Model

pytestmark = pytest.mark.usefixtures("no_unexpected_server_errors")

DAY = 86_400
T0 = 1_795_420_000  # 2026-11-23 in Paris; windows of type 1 are days from D0, type 2 a week
D0 = T0 - T0 % DAY


@pytest.fixture
def running(tmp_path) -> Iterator[tuple[Server, HttpServer]]:
    server = start_server(tmp_path / "s")
    http = HttpServer(server, "127.0.0.1:0").start()
    yield server, http
    server.stop(grace=1)


@pytest.fixture
def web(running: tuple[Server, HttpServer]) -> Iterator[httpx.Client]:
    # A body is JSON (the server refuses other types: see tests/http/test_hostile_callers.py).
    with httpx.Client(base_url=running[1].url, timeout=20, headers={"content-type": "application/json"}) as client:
        yield client


@pytest.fixture
def lb(running: tuple[Server, HttpServer]) -> Iterator[LeaderboardClient]:
    with LeaderboardClient(running[0].address, timeout=20) as client:
        yield client


@pytest.fixture
def stub(running: tuple[Server, HttpServer]) -> Iterator[pb_grpc.LeaderboardStub]:
    with grpc.insecure_channel(running[0].address) as channel:
        yield pb_grpc.LeaderboardStub(channel)


@pytest.fixture
def document(web: httpx.Client) -> dict[str, Any]:
    return web.get("/openapi.json").json()


def conforms(document: dict[str, Any], path: str, method: str, response: httpx.Response) -> Any:
    """``response``'s JSON, checked against the schema the document gives for it."""
    operation = document["paths"][path][method.lower()]
    answer = operation["responses"].get(str(response.status_code)) or operation["responses"]["default"]
    schema = answer["content"]["application/json"]["schema"]
    body = response.json()
    jsonschema.Draft202012Validator({**schema, "components": document["components"]}).validate(body)
    return body


def call(web: httpx.Client, method: str, request: dict[str, Any] | Any, document: dict | None = None) -> Any:
    """POST an RPC; the answer must be 200 (and conform to the document if given)."""
    body = request if isinstance(request, dict) else json.loads(json_format.MessageToJson(request))
    response = web.post(f"/v1/{method}", json=body)
    assert response.status_code == 200, response.text
    return conforms(document, f"/v1/{method}", "post", response) if document else response.json()


def refused(web: httpx.Client, method: str, body: Any, status: int, code: str, *needles: str) -> str:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    response = web.post(f"/v1/{method}", content=raw)
    assert response.status_code == status, response.text
    answer = response.json()
    assert answer["code"] == code, answer
    for needle in needles:
        assert needle in answer["message"], answer
    return answer["message"]


def grpc_message(call: Any) -> str:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    return caught.value.details()


def plain(entries: list[Any]) -> list[tuple]:
    return [(e.rank, list(e.pk), e.score, e.timestamp) for e in entries]


def rest_rows(body: dict[str, Any]) -> list[tuple]:
    return [(e["rank"], e["pk"], e["score"], e["timestamp"]) for e in body["entries"]]


def model_rows(listed: list[Any]) -> list[tuple]:
    return [(e.rank, list(e.pk), e.score, e.timestamp) for e in listed]


# -- every RPC ----------------------------------------------------------------------------------------


def seed(lb: LeaderboardClient) -> Model:
    """An index 'game' with days, a week and all time, scores in two groups; the model of it."""
    lb.create_index("game", high_score_first=True, group_size=1)
    lb.update_windows(
        "game", high_score_first=True, specs=[(1, D0, DAY, DAY, 3), (2, D0, 7 * DAY, 7 * DAY, 1)], update_timestamp=T0
    )
    model = Model("BEST", high_score_first=True, group_size=1)
    model.update_windows(True, [(1, D0 + i * DAY, D0 + (i + 1) * DAY) for i in range(3)] + [(2, D0, D0 + 7 * DAY)])
    scores = [(f"p{i:02d}", (i * 37) % 23 * 100, T0 + i * 3000, ("eu",) if i % 3 else ("us",)) for i in range(40)]
    for name, score, ts, group in scores:
        lb.add_score("game", (name,), score, ts, group=group)
        model.add((name,), [(group, score, ts, ())])
    return model


READS = [
    (
        "GetRank",
        pb.RankRequest(
            index="game", pk=[pb.Item(string="p07")], window=pb.WindowSelector(type=0), group=[pb.Item(string="eu")]
        ),
    ),
    (
        "GetRankAndEntry",
        pb.RankRequest(
            index="game",
            pk=[pb.Item(string="p05")],
            window=pb.WindowSelector(type=1, timestamp=T0),
            group=[pb.Item(string="eu")],
            mode=pb.COMPETITION,
        ),
    ),
    (
        "GetRankAndEntry",
        pb.RankRequest(
            index="game", pk=[pb.Item(string="nobody")], window=pb.WindowSelector(type=0), group=[pb.Item(string="eu")]
        ),
    ),
    (
        "AroundMe",
        pb.AroundMeRequest(
            index="game",
            pk=[pb.Item(string="p10")],
            window=pb.WindowSelector(type=2, timestamp=T0),
            group=[pb.Item(string="eu")],
            above=3,
            below=2,
        ),
    ),
    (
        "Top",
        pb.TopRequest(
            index="game", window=pb.WindowSelector(type=1, timestamp=T0 + DAY), group=[pb.Item(string="eu")], n=7
        ),
    ),
    (
        "Top",
        pb.TopRequest(
            index="game", window=pb.WindowSelector(type=0), group=[pb.Item(string="us")], n=100, mode=pb.COMPETITION
        ),
    ),
    (
        "Count",
        pb.CountRequest(index="game", window=pb.WindowSelector(type=1, timestamp=T0), group=[pb.Item(string="eu")]),
    ),
    (
        "ScoreForRank",
        pb.ScoreForRankRequest(index="game", window=pb.WindowSelector(type=0), group=[pb.Item(string="eu")], rank=4),
    ),
    (
        "RankForScore",
        pb.RankForScoreRequest(
            index="game", window=pb.WindowSelector(type=0), group=[pb.Item(string="eu")], score=pb.Score(int=1000)
        ),
    ),
    (
        "Scan",
        pb.ScanRequest(index="game", type=pb.BY_VALUE, group=[pb.Item(string="eu")], low=pb.Score(int=500), limit=4),
    ),
    (
        "Scan",
        pb.ScanRequest(
            index="game", type=pb.BY_RANK, window=pb.WindowSelector(type=0), group=[pb.Item(string="us")], limit=5
        ),
    ),
    ("ListWindows", pb.ListWindowsRequest(index="game")),
    ("ListIndexes", pb.ListIndexesRequest()),
    ("ListSubDirectories", pb.ListSubDirectoriesRequest(index="game")),
    ("Verify", pb.VerifyRequest(index="game")),
]


SCAN = pb.ScanResponse.DESCRIPTOR


def test_reads_answer_over_http_exactly_what_grpc_answers(
    web: httpx.Client, lb: LeaderboardClient, stub: pb_grpc.LeaderboardStub, document: dict
) -> None:
    seed(lb)
    for method, request in READS:
        expected = getattr(stub, method)(request)
        answer = call(web, method, request, document)
        got = json_format.ParseDict(typed_json(answer, expected.DESCRIPTOR), type(expected)())
        assert got == expected, (method, answer)  # the one shape read back is exactly gRPC's answer
    # A scan's continuation (bytes, base64 in JSON) pages on over HTTP as over gRPC.
    request = pb.ScanRequest(index="game", type=pb.BY_VALUE, group=[pb.Item(string="eu")], limit=4)
    pages_grpc, pages_http = [], []
    for pages, fetch in (
        (pages_grpc, lambda r: stub.Scan(r)),
        (
            pages_http,
            lambda r: json_format.ParseDict(typed_json(call(web, "Scan", r, document), SCAN), pb.ScanResponse()),
        ),
    ):
        page_request = pb.ScanRequest()
        page_request.CopyFrom(request)
        while True:
            page = fetch(page_request)
            pages.append(list(page.entries))
            if not page.continuation:
                break
            page_request.continuation = page.continuation
    assert pages_http == pages_grpc and len(pages_http) > 2
    assert sum(map(len, pages_http)) == 40 - 14  # every eu record (i % 3 != 0), once


def test_writes_over_http_leave_what_the_model_computes(
    web: httpx.Client, lb: LeaderboardClient, document: dict
) -> None:
    model = Model("BEST", high_score_first=False)
    call(web, "CreateIndex", {"name": "race", "options": {"aggregation": "BEST", "high_score_first": False}}, document)
    call(web, "UpdateWindows", {"index": "race", "high_score_first": False, "all_time": True}, document)
    model.update_windows(False, [])
    assert call(
        web,
        "AddScore",
        {"index": "race", "pk": ["ann"], "entry": {"score": 61, "timestamp": T0}},  # the one shape, as answered
        document,
    ) == {"windows_changed": 1}
    model.add(("ann",), [((), 61, T0, ())])
    call(
        web,
        "AddEntries",
        {
            "index": "race",
            "pk": [{"int": 7}],
            "entries": [{"score": {"int": 70}, "timestamp": T0 + 1}, {"score": {"int": 58}, "timestamp": T0 + 2}],
        },
    )
    model.add((7,), [((), 70, T0 + 1, ()), ((), 58, T0 + 2, ())])
    call(
        web,
        "SaveRecord",
        {"index": "race", "pk": [{"string": "cid"}], "entries": [{"score": {"int": 59}, "timestamp": T0 + 3}]},
    )
    model.save(("cid",), [((), 59, T0 + 3, ())])
    big = 2**62 + 1  # beyond JavaScript's exact integers: a string in JSON, both ways
    eve = ["eve", {"base64": base64.b64encode(b"\x00\xff").decode()}]  # plain items, typed below
    call(web, "WriteBatch", {"index": "race", "replace": True, "records": [
        {"pk": [{"string": "dee"}], "entries": [{"score": {"int": str(big)}, "timestamp": T0 + 4}]},
        {"pk": eve, "entries": [{"score": {"int": 60}, "timestamp": T0 + 5}]},
    ]})  # fmt: skip
    model.save(("dee",), [((), big, T0 + 4, ())])
    model.save(("eve", b"\x00\xff"), [((), 60, T0 + 5, ())])
    assert call(web, "DeleteRecord", {"index": "race", "pk": [{"string": "ann"}]}) == {"existed": True}
    model.delete(("ann",))
    # A bulk load streams NDJSON: the first line names the index, blank lines are skipped.
    lines = [
        {"index": "race", "batch_size": 2},
        *(
            {
                "records": [
                    {"pk": [{"string": f"r{i}"}], "entries": [{"score": {"int": 100 - i}, "timestamp": T0 + 10 + i}]}
                ]
            }
            for i in range(5)
        ),
    ]
    body = (
        "\n".join(json.dumps(line) for line in lines[:3]) + "\n\n" + "\n".join(json.dumps(line) for line in lines[3:])
    )
    response = web.post("/v1/BulkLoad", content=body.encode(), headers={"content-type": "application/x-ndjson"})
    assert response.status_code == 200 and response.json() == {"records_written": 5}, response.text
    for i in range(5):
        model.save((f"r{i}",), [((), 100 - i, T0 + 10 + i, ())])
    top = lb.top("race", 100)
    assert plain(top) == model_rows(model.top(100, 0, None, (), "ORDINAL"))
    answer = call(web, "Top", {"index": "race", "window": {"type": 0}, "n": 100}, document)
    dee = next(e for e in answer["entries"] if e["pk"] == ["dee"])
    assert dee["score"] == str(big)  # exact, as a string
    assert next(e for e in answer["entries"] if e["pk"][0] == "eve")["pk"] == eve
    verified = call(web, "Verify", {"index": "race"}, document)
    assert verified["problems"] == [] and verified["complete"]
    # Admin calls: sub-directories, maintenance policies, keep-ahead, fill, trim, expire.
    call(web, "CreateIndex", {"name": "cups", "options": {"group_size": 1}})
    call(web, "SaveSubDirectory", {"index": "cups", "group": [{"string": "eu"}], "high_score_first": True})
    listed = call(web, "ListSubDirectories", {"index": "cups"}, document)
    assert listed == {"sub_directories": [{"group": ["eu"], "high_score_first": True}]}
    policy = {
        "windows": [{"type": 1, "base": 0, "increment": DAY, "duration": DAY}],
        "horizon": DAY,
        "certain_within": DAY,
    }
    call(web, "SetMaintenancePolicy", {"index": "race", "maintenance": policy})
    added = call(web, "KeepAhead", {"index": "race", "now": T0}, document)["added"]
    assert [(w["type"], w["start"]) for w in added] == [(1, D0), (1, D0 + DAY)]
    fill = call(web, "Fill", {"index": "race"}, document)
    assert fill["done"] and fill["records_processed"] == len(model.records)
    assert lb.count("race", 1, T0) == len(model.records)  # the filled day holds every record
    # Before T0 + 3 only record 7 has two entries: its 70 goes, its best (58, low first) stays.
    assert call(web, "Trim", {"index": "race", "before": T0 + 3}, document) == {"entries_removed": 1}
    assert [w["start"] for w in call(web, "Expire", {"index": "race", "before": D0 + DAY})["deleted"]] == [D0]


def test_every_rpc_of_the_service_is_served(running: tuple[Server, HttpServer], web: httpx.Client) -> None:
    served = {r.path for r in running[1].api.routes if isinstance(r, Route) and "POST" in (r.methods or ())}
    methods = pb.DESCRIPTOR.services_by_name["Leaderboard"].methods
    watches = {"WatchRank", "WatchWindowEnds"}  # GET .../rank/events, .../window-ends/events
    assert {f"/v1/{m.name}" for m in methods if m.name not in watches} <= served
    # Each answers (an empty request is refused with the RPC's own validation, never 404/405/500).
    for rpc in rpcs():
        response = web.post(rpc.path, content=b"")
        assert response.status_code in (200, 400, 404, 412), (rpc.name, response.text)


# -- errors ----------------------------------------------------------------------------------------------


def test_errors_carry_grpc_codes_and_messages_with_http_statuses(
    web: httpx.Client, lb: LeaderboardClient, stub: pb_grpc.LeaderboardStub, document: dict
) -> None:
    seed(lb)
    for method, request, status, code in [
        ("Top", pb.TopRequest(index="nope", n=1), 404, "NOT_FOUND"),
        ("Top", pb.TopRequest(index="game", window=pb.WindowSelector(type=7), n=1), 404, "NOT_FOUND"),
        (
            "CreateIndex",
            pb.CreateIndexRequest(name="game", options=pb.IndexOptions(high_score_first=False)),
            409,
            "ALREADY_EXISTS",
        ),
        ("KeepAhead", pb.KeepAheadRequest(index="game"), 412, "FAILED_PRECONDITION"),
        ("AddScore", pb.AddScoreRequest(index="game", pk=[pb.Item(string="x")]), 400, "INVALID_ARGUMENT"),
    ]:
        expected = grpc_message(lambda: getattr(stub, method)(request))  # noqa: B023
        body = json.loads(json_format.MessageToJson(request))
        response = web.post(f"/v1/{method}", json=body)
        assert response.status_code == status, response.text
        assert conforms(document, f"/v1/{method}", "post", response) == {"code": code, "message": expected}
    refused(web, "Top", b"{not json", 400, "INVALID_ARGUMENT", "not a valid TopRequest")
    refused(web, "Top", {"index": "game", "colour": 1}, 400, "INVALID_ARGUMENT", "colour")
    refused(web, "Top", {"index": "game", "n": -1}, 400, "INVALID_ARGUMENT")
    refused(web, "Top", {"index": "game", "mode": "SIDEWAYS"}, 400, "INVALID_ARGUMENT", "SIDEWAYS")
    refused(
        web,
        "AddScore",
        {"index": "game", "pk": [{}], "entry": {"score": {"int": 1}}},
        400,
        "INVALID_ARGUMENT",
        "no value",
    )
    refused(web, "Top", b"[" * 5_000_000, 429, "RESOURCE_EXHAUSTED", "larger than")
    lb.create_index("plain")
    lb.update_windows("plain")
    good = {"records": [{"pk": [{"string": "z"}], "entries": [{"score": {"int": 1}}]}]}
    bad_line = b'{"index": "plain", "batch_size": 1}\n' + json.dumps(good).encode() + b'\n{"records": 5}\n'
    refused(web, "BulkLoad", bad_line, 400, "INVALID_ARGUMENT", "line 3", "the record before it was saved")
    assert lb.rank_and_entry("plain", ("z",)).score == 1  # the record before the bad line stays saved
    refused(web, "BulkLoad", b"", 400, "INVALID_ARGUMENT", "first message must name the index")
    assert web.get("/v1/Top").status_code == 405
    assert web.post("/v1/NoSuchMethod", json={}).status_code == 404


def test_every_status_code_has_an_http_status() -> None:
    assert set(HTTP_STATUS) == set(grpc.StatusCode)
    named = {
        "INVALID_ARGUMENT": 400,
        "NOT_FOUND": 404,
        "ALREADY_EXISTS": 409,
        "ABORTED": 409,
        "FAILED_PRECONDITION": 412,
    }
    named |= {"RESOURCE_EXHAUSTED": 429, "UNAVAILABLE": 503, "UNAUTHENTICATED": 401, "PERMISSION_DENIED": 403}
    named |= {"DEADLINE_EXCEEDED": 504, "OK": 200}
    assert {code.name: status for code, status in HTTP_STATUS.items() if code.name in named} == named


# -- REST routes -------------------------------------------------------------------------------------------


def test_rest_reads_match_the_model(
    running: tuple[Server, HttpServer], web: httpx.Client, lb: LeaderboardClient, document: dict
) -> None:
    model = seed(lb)
    base = "/v1/indexes/game/windows"
    for window_type, at in ((0, None), (1, T0), (1, T0 + DAY), (2, T0)):
        query = {"group": "eu", **({"at": at} if at is not None else {})}
        path = f"{base}/{window_type}/top"
        body = conforms(
            document, "/v1/indexes/{index}/windows/{type}/top", "get", web.get(path, params={**query, "n": 5})
        )
        assert rest_rows(body) == model_rows(model.top(5, window_type, at, ("eu",), "ORDINAL"))
        counted = web.get(f"{base}/{window_type}/count", params=query).json()
        assert counted["count"] == model.count(window_type, at, ("eu",)) and counted["window"]["type"] == window_type
        for name in ("p01", "p10", "p02", "p03"):
            mine = model.rank_and_entry((name,), window_type, at, ("eu",), "COMPETITION")
            response = web.get(f"{base}/{window_type}/records/{name}/rank", params={**query, "mode": "COMPETITION"})
            if mine is None:
                assert response.status_code == 404 and response.json()["code"] == "NOT_FOUND"
            else:
                entry = conforms(document, "/v1/indexes/{index}/windows/{type}/records/{pk}/rank", "get", response)
                assert (entry["rank"], entry["pk"], entry["score"], entry["group"]) == (
                    mine.rank,
                    [name],
                    mine.score,
                    ["eu"],
                )
            around = web.get(
                f"{base}/{window_type}/records/{name}/around",
                params={**query, "above": 2, "below": 1, "if_absent": "TOP"},
            )
            expected = model.around((name,), 2, 1, window_type, at, ("eu",), "ORDINAL", "TOP")
            assert rest_rows(around.json()) == model_rows(expected)
    # A key as a JSON array; a group of any items; the latest timestamp; the server's clock.
    lb.add_score("game", (7, "x"), 5, T0, group=("eu",))
    response = web.get(f"{base}/0/records/{json.dumps([7, 'x'])}/rank", params={"group": '["eu"]'})
    assert response.json()["pk"] == [7, "x"]
    latest = web.get(f"{base}/1/top", params={"at": "latest", "group": "eu", "n": 3}).json()
    assert rest_rows(latest) == model_rows(model.top(3, 1, model.latest, ("eu",), "ORDINAL"))
    # "now" (the default) is the index's clock: pinned inside the second day of the windows, then
    # after them (the answers do not depend on the date the test runs).
    index = running[0].catalog.get("game")
    index.clock = lambda: T0 + DAY + 7
    now = web.get(f"{base}/1/top", params={"at": "now", "group": "eu"})
    assert now.status_code == 200 and rest_rows(now.json())
    assert rest_rows(now.json()) == model_rows(model.top(10, 1, T0 + DAY + 7, ("eu",), "ORDINAL"))
    assert web.get(f"{base}/1/top", params={"group": "eu"}).json() == now.json()  # now: the default
    index.clock = lambda: T0 + 10 * DAY
    now = web.get(f"{base}/1/top", params={"at": "now", "group": "eu"})
    assert now.status_code == 404 and "no window of type 1 contains now" in now.json()["message"]
    indexes = conforms(document, "/v1/indexes", "get", web.get("/v1/indexes"))
    assert [i["name"] for i in indexes["indexes"]] == ["game"]
    windows = conforms(document, "/v1/indexes/{index}/windows", "get", web.get("/v1/indexes/game/windows"))
    assert len(windows["windows"]) == 5 and windows["latest_timestamp"] == model.latest


def test_rest_refusals(web: httpx.Client, lb: LeaderboardClient) -> None:
    seed(lb)
    for path, params, status, needle in [
        ("/v1/indexes/game/windows/0/top", {"n": "ten"}, 400, "n must be an integer"),
        ("/v1/indexes/game/windows/0/top", {"colour": "red"}, 400, "unknown query parameter 'colour'"),
        ("/v1/indexes/game/windows/0/top", {"at": "yesterday"}, 400, "'now' or 'latest'"),
        ("/v1/indexes/game/windows/0/top", {"mode": "dense"}, 400, "ORDINAL, COMPETITION, DENSE"),
        ("/v1/indexes/game/windows/x/top", {}, 400, "type must be an integer"),
        ("/v1/indexes/game/windows/0/records/[1,/rank", {}, 400, "not a JSON array"),
        ("/v1/indexes/game/windows/0/records/p01/rank", {"group": "[[1]]"}, 400, "cannot be a list"),
        ("/v1/indexes/game/windows/0/top", {"group": '[{"int": "99999999999999999999"}]'}, 400, "group holds 9999"),
        ("/v1/indexes/game/windows/0/top", {"group": "[NaN]"}, 400, "group holds nan: NaN and infinities"),
        ("/v1/indexes/game/windows/0/records/[1e999]/rank", {}, 400, "pk holds inf: NaN and infinities"),
        ("/v1/indexes/game/windows/0/records/%5B%22%5Cud800%22%5D/rank", {}, 400, "pk holds a string with surrogates"),
        ("/v1/indexes/game/windows/0/top", {"n": "99999999999"}, 400, "n must be between 0 and 4294967295"),
        ("/v1/indexes/game/windows/1/top", {"at": str(2**63)}, 400, "at 9223372036854775808 is out of the int64"),
        ("/v1/indexes/nope/windows/0/top", {}, 404, "no index named 'nope'"),
        ("/v1/indexes/game/windows/0/top/events", {"interval": "0"}, 400, "between 0.2 and 60"),
    ]:
        response = web.get(path, params=params)
        assert response.status_code == status, (path, response.text)
        assert needle in response.json()["message"], (path, response.json())
    lb.create_index("empty")
    assert web.get("/v1/indexes/empty/windows/1/top", params={"at": "latest"}).status_code == 412


def test_a_route_describing_its_request_wrongly_is_refused_where_it_is_declared() -> None:
    """A route's request described in ROUTES (rest/requests.py) names real fields and values the route
    takes: a misspelled one would otherwise leave a field unset without a word."""
    with pytest.raises(ValueError, match="TopRequest has no field 'limit'"):
        rest.Request(pb.TopRequest, "index", "limit")
    top = rest.Request(pb.TopRequest, "index", "window", "group", "mode", "n")
    with pytest.raises(ValueError, match=r"TopRequest\.n copies 'n', which the route does not take"):
        rest.RestRoute(
            "/v1/x/{index}",
            "GET",
            "Top",
            "",
            (rest.INDEX, rest.AT, rest.GROUP, rest.MODE),
            top,
            rest.answer_entries,
            {},
        )
    route = rest.RestRoute(
        "/v1/x/{index}", "GET", "Top", "", (rest.INDEX, rest.GROUP, rest.MODE, rest.TOP_N), top, rest.answer_entries, {}
    )
    assert route.build({"index": "g", "n": 3}, None, None, {}) == pb.TopRequest(
        index="g", window=pb.WindowSelector(), n=3
    )  # type: ignore[arg-type]


def test_scores_route_submits_like_add_score(
    web: httpx.Client, lb: LeaderboardClient, document: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    lb.create_index("g", high_score_first=True)
    lb.update_windows("g", high_score_first=True)
    path = "/v1/indexes/{index}/scores"
    example = document["paths"][path]["post"]["requestBody"]["content"]["application/json"]["example"]
    assert conforms(document, path, "post", web.post("/v1/indexes/g/scores", json=example)) == {"windows_changed": 1}
    web.post("/v1/indexes/g/scores", json={"pk": ["bob", 2], "score": 1500, "timestamp": T0 + 1})
    before = int(time.time())
    web.post("/v1/indexes/g/scores", json={"pk": "now", "score": 10})  # no timestamp: the server's clock
    assert [(e.pk, e.score) for e in lb.top("g", 5)] == [(("bob", 2), 1500), (("alice",), 1200), (("now",), 10)]
    assert before <= lb.rank_and_entry("g", ("now",)).timestamp <= time.time()
    for body, needle in [
        ({"pk": "a"}, "needs pk and score"),
        ({"pk": "a", "score": "lots"}, "not a valid Entry"),
        ({"pk": "a", "score": True}, "must be a number"),
        ({"pk": "a", "score": 1, "when": 3}, "unknown field 'when'"),
        ({"pk": {"x": 1}, "score": 1}, "must be a string or an array"),
        ([1, 2], "must be a JSON object"),
    ]:
        response = web.post("/v1/indexes/g/scores", json=body)
        assert response.status_code == 400 and needle in response.json()["message"], (body, response.text)
    assert lb.count("g") == 3  # nothing refused was written


def test_events_stream_the_top_as_it_changes(running: tuple[Server, HttpServer], lb: LeaderboardClient) -> None:
    lb.create_index("g", high_score_first=True)
    lb.update_windows("g", high_score_first=True)
    lb.add_score("g", ("ann",), 10, T0)
    events: list[dict] = []
    with (
        httpx.Client(base_url=running[1].url, timeout=20) as web,
        web.stream("GET", "/v1/indexes/g/windows/0/top/events", params={"n": 2, "interval": 0.2}) as stream,
    ):
        assert stream.headers["content-type"].startswith("text/event-stream")
        for line in stream.iter_lines():
            if not line.startswith("data: "):
                continue
            events.append(json.loads(line[len("data: ") :]))
            if len(events) == 1:
                lb.add_score("g", ("bob",), 20, T0 + 1)
            elif len(events) == 2:
                lb.add_score("g", ("cid",), 1, T0 + 2)  # below the top 2: no event
                # Twice checked since (the second check began after the score): then a change.
                checked = answered_tops(running[0])
                wait_until(lambda c=checked: answered_tops(running[0]) >= c + 2, "two checks of the board")
                lb.add_score("g", ("dan",), 30, T0 + 3)
            else:
                break
    assert [[e["pk"][0] for e in event["entries"]] for event in events] == [["ann"], ["bob", "ann"], ["dan", "bob"]]


def answered_tops(server: Server) -> float:
    """How many Top calls the server answered over HTTP: an events stream makes one each check."""
    labels = {"transport": "http", "method": "Top", "code": "OK"}
    return server.metrics.registry.get_sample_value("fdb_leaderboard_calls_total", labels) or 0.0


def sse(stream: httpx.Response) -> Iterator[tuple[str, Any]]:
    """The events of a stream as (event, data): "message" unless named, and comments as (":", text)."""
    event, data = "message", []
    for line in stream.iter_lines():
        if line.startswith(":"):
            yield ":", line[1:].strip()
        elif line.startswith("event: "):
            event = line[len("event: ") :]
        elif line.startswith("data: "):
            data.append(line[len("data: ") :])
        elif not line and data:
            yield event, json.loads("\n".join(data))
            event, data = "message", []


def test_events_answer_a_first_failure_and_send_later_ones_as_problem_events(
    running: tuple[Server, HttpServer], lb: LeaderboardClient
) -> None:
    with httpx.Client(base_url=running[1].url, timeout=20) as web:
        # A failure before the first answer is the HTTP answer itself, not a stream.
        lb.create_index("g", high_score_first=True)
        lb.update_windows("g", high_score_first=True)
        lb.add_score("g", ("ann",), 10, T0)
        for path, params, status, needle in [
            ("/v1/indexes/nope/windows/0/top/events", {}, 404, "no index named 'nope'"),
            ("/v1/indexes/g/windows/1/top/events", {}, 404, "no window of type 1 contains now"),
            ("/v1/indexes/g/windows/0/top/events", {"group": "eu"}, 400, "this index groups by 0 element(s)"),
        ]:
            response = web.get(path, params=params)
            assert response.status_code == status and response.headers["content-type"] == "application/json"
            assert needle in response.json()["message"], response.text
        seen = []
        with web.stream("GET", "/v1/indexes/g/windows/0/top/events", params={"interval": 0.2}) as stream:
            for event, data in sse(stream):
                if event == ":":
                    continue
                seen.append((event, data))
                if len(seen) == 1:
                    lb.drop_index("g")  # later failures: problem events, and the stream goes on
                elif len(seen) == 2:
                    lb.create_index("g", high_score_first=True)
                    lb.update_windows("g", high_score_first=True)
                    lb.add_score("g", ("bob",), 20, T0)
                else:
                    break
    assert [event for event, _ in seen] == ["message", "problem", "message"]
    assert [e["pk"] for e in seen[0][1]["entries"]] == [["ann"]]
    assert seen[1][1] == {"code": "NOT_FOUND", "message": "no index named 'g'"}
    assert [e["pk"] for e in seen[2][1]["entries"]] == [["bob"]]


def test_events_keep_a_quiet_stream_alive_and_end_it_in_time(
    running: tuple[Server, HttpServer], lb: LeaderboardClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A comment after QUIET_SECONDS without an event, and the end after STREAM_SECONDS
    (15 s and 10 minutes, pinned shorter here)."""
    monkeypatch.setattr(events, "KEEP_ALIVE_SECONDS", 0.5)
    monkeypatch.setattr(events, "STREAM_SECONDS", 3.0)
    lb.create_index("g", high_score_first=True)
    lb.update_windows("g", high_score_first=True)
    lb.add_score("g", ("ann",), 10, T0)
    seen = []
    with (
        httpx.Client(base_url=running[1].url, timeout=20) as web,
        web.stream("GET", "/v1/indexes/g/windows/0/top/events", params={"interval": 0.2}) as stream,
    ):
        for event in sse(stream):
            seen.append(event)
            assert len(seen) < 100, seen  # the stream would go on forever
    assert seen[0][0] == "message" and [e["pk"] for e in seen[0][1]["entries"]] == [["ann"]]
    assert set(seen[1:]) == {(":", "unchanged")} and len(seen) >= 3, seen  # nothing changed: comments only


def test_a_bulk_load_line_over_the_message_limit_is_refused(tmp_path) -> None:
    server = Server(
        f"lmdb:{tmp_path / 's'}?durable=false", "127.0.0.1:0", settings=ServerSettings(max_message_bytes=2000)
    ).start()
    try:
        http = HttpServer(server, "127.0.0.1:0").start()
        with LeaderboardClient(server.address) as lb, httpx.Client(base_url=http.url, timeout=20) as web:
            lb.create_index("plain")
            lb.update_windows("plain")

            def line(pk: str) -> bytes:
                record = {"pk": [{"string": pk}], "entries": [{"score": {"int": 1}, "timestamp": 5}]}
                return json.dumps({"records": [record]}).encode() + b"\n"

            first = json.dumps({"index": "plain", "batch_size": 1}).encode() + b"\n"
            for long_line in (line("x" * 2000), line("y" * 30_000)):  # within a chunk, and over several
                body = first + line("before") + long_line + line("after")
                response = web.post("/v1/BulkLoad", content=body, headers={"content-type": "application/x-ndjson"})
                assert response.status_code == 429, response.text
                assert response.json() == {
                    "code": "RESOURCE_EXHAUSTED",
                    "message": "a line is larger than 2000 bytes; the record before it was saved",
                }
            assert lb.rank_and_entry("plain", ("before",)).score == 1  # what came before the line is saved
            assert lb.count("plain") == 1 and lb.verify("plain") == []
    finally:
        server.stop(grace=1)


# -- the OpenAPI document ------------------------------------------------------------------------------------


def test_the_document_is_valid_and_names_exactly_the_routes_served(
    running: tuple[Server, HttpServer], document: dict
) -> None:
    validate_openapi(document)
    served = set()
    for route in running[1].api.routes:
        if isinstance(route, Mount):
            served.add((route.path + "/{path}", "get"))
        else:
            path = route.path.replace(":path}", "}")  # a key's segment may hold a "/" (%2F)
            served.update((path, m.lower()) for m in route.methods or () if m != "HEAD")
    documented = {(path, method) for path, item in document["paths"].items() for method in item}
    assert served == documented
    assert {f"/v1/{rpc.name}" for rpc in rpcs()} <= {p for p, _ in documented}


def test_the_documents_examples_validate_and_succeed(tmp_path, document: dict) -> None:
    """Run against a fresh server: every example of the document, in order."""
    server = start_server(tmp_path / "fresh")
    try:
        http = HttpServer(server, "127.0.0.1:0").start()
        with httpx.Client(base_url=http.url, timeout=20) as web:
            examples = 0
            for path, item in document["paths"].items():
                for method, operation in item.items():
                    content = operation.get("requestBody", {}).get("content", {}).get("application/json", {})
                    if "example" not in content:
                        continue
                    schema = {**content["schema"], "components": document["components"]}
                    jsonschema.Draft202012Validator(schema).validate(content["example"])
                    target = path.replace("{index}", "game").replace("{pk}", "alice")  # alice has scores by then
                    response = web.request(method, target, json=content["example"])
                    assert response.status_code == 200, (path, response.text)
                    conforms(document, path, method, response)
                    examples += 1
            assert examples >= 9
            top = web.post(
                "/v1/Top",
                json=document["paths"]["/v1/Top"]["post"]["requestBody"]["content"]["application/json"]["example"],
            )
            assert [e["pk"] for e in top.json()["entries"]] == [["alice"]]
    finally:
        server.stop(grace=1)


def test_every_operation_schema_and_field_is_described(document: dict) -> None:
    operations = [(path, method, op) for path, methods in document["paths"].items() for method, op in methods.items()]
    assert len(operations) > 80
    assert [(path, method) for path, method, op in operations if not op.get("description", "").strip()] == []
    assert [(path, method) for path, method, op in operations if not op.get("summary", "").strip()] == []
    schemas = document["components"]["schemas"]
    assert [name for name, schema in schemas.items() if not schema.get("description", "").strip()] == []
    # From the proto's comments: an RPC's, a message's, a field's; a request by its RPC's.
    assert document["paths"]["/v1/Top"]["post"]["summary"] == "The best n entries of a window."
    assert schemas["Window"]["description"].startswith("A window of an index")
    assert schemas["WindowSelector"]["properties"]["type"]["description"] == "0: all-time"
    assert schemas["TopRequest"]["description"] == "The request of Top: The best n entries of a window."
    rest = document["paths"]["/v1/indexes/{index}/windows/{type}/groups"]["get"]
    assert rest["description"].startswith("Answered by the ListGroups RPC: The groups holding a value")


def test_schemas_refuse_what_the_server_refuses(document: dict) -> None:
    def valid(name: str, value: Any) -> bool:
        validator = jsonschema.Draft202012Validator(
            {"$ref": f"#/components/schemas/{name}", "components": document["components"]}
        )
        return validator.is_valid(value)

    assert (
        valid("Item", {"string": "a"}) and valid("Item", {"int": "9223372036854775807"}) and valid("Item", {"int": 5})
    )
    assert not valid("Item", {"string": "a", "int": 1})  # a oneof holds one value
    assert not valid("TopRequest", {"index": "g", "colour": 1})
    assert not valid("TopRequest", {"index": "g", "mode": "SIDEWAYS"})
    assert not valid("TopRequest", {"index": "g", "n": -1})
    assert valid("ScanRequest", {"index": "g", "continuation": "AAE="})


# -- lifecycle ---------------------------------------------------------------------------------------------


def test_the_http_server_stops_with_the_server_even_with_a_stream_open(tmp_path) -> None:
    server = start_server(tmp_path / "s")
    http = HttpServer(server, "127.0.0.1:0").start()
    LeaderboardClient(server.address).create_index("g")
    LeaderboardClient(server.address).update_windows("g")
    opened = threading.Event()

    def listen() -> None:
        with (
            httpx.Client(base_url=http.url, timeout=30) as web,
            web.stream("GET", "/v1/indexes/g/windows/0/top/events") as s,
        ):
            for _ in s.iter_lines():
                opened.set()

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    assert opened.wait(10)
    server.stop(grace=2)  # returns, though the stream would otherwise run for STREAM_SECONDS
    listener.join(60)  # a guard against a hang only
    assert not listener.is_alive()
    with pytest.raises(httpx.ConnectError):
        httpx.get(http.url + "/v1/indexes", timeout=30)


def test_serve_runs_http_beside_grpc_and_stops_on_sigterm(tmp_path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", "from fdb_leaderboard.cli import main; main()", "serve", "--store",
         f"lmdb:{tmp_path / 's'}", "--address", "127.0.0.1:0", "--http-address", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        line = process.stdout.readline()
        assert " and http://127.0.0.1:" in line, line
        url = line.split(" and ")[1].split()[0]
        assert httpx.get(url + "/v1/indexes", timeout=10).json() == {"indexes": []}
        assert httpx.get(url + "/", timeout=10).text.startswith("<!doctype html>")
        process.send_signal(signal.SIGTERM)
        assert process.wait(20) == 0
    finally:
        if process.poll() is None:
            process.kill()


# -- access ----------------------------------------------------------------------------------------------------

READER, WRITER, ADMIN = "r" * 20, "w" * 20, "a" * 20


def test_http_refuses_to_listen_beyond_loopback_without_tokens(running: tuple[Server, HttpServer]) -> None:
    with pytest.raises(StartupError, match="without authentication"):
        HttpServer(running[0], "0.0.0.0:0")


def test_bearer_tokens_and_roles_apply_as_on_grpc(tmp_path) -> None:
    tokens = Tokens.parse(f"read:{READER} write:{WRITER} admin:{ADMIN}")
    server = Server(
        f"lmdb:{tmp_path / 's'}?durable=false", "127.0.0.1:0", settings=ServerSettings(tokens=tokens)
    ).start()
    try:
        http = HttpServer(server, "127.0.0.1:0").start()
        with httpx.Client(base_url=http.url, timeout=20) as web:

            def status(method: str, path: str, token: str | None, **kwargs: Any) -> tuple[int, str]:
                headers = {"authorization": f"Bearer {token}"} if token else {}
                response = web.request(method, path, headers=headers, **kwargs)
                return response.status_code, response.json().get("code", "OK") if "json" in response.headers.get(
                    "content-type", ""
                ) else "OK"

            create = {"json": {"name": "g", "options": {"high_score_first": True}}}
            assert status("POST", "/v1/CreateIndex", None, **create) == (401, "UNAUTHENTICATED")
            assert status("POST", "/v1/CreateIndex", "x" * 20, **create) == (401, "UNAUTHENTICATED")
            assert status("POST", "/v1/CreateIndex", WRITER, **create) == (403, "PERMISSION_DENIED")
            assert status("POST", "/v1/CreateIndex", ADMIN, **create) == (200, "OK")
            assert (
                status(
                    "POST", "/v1/UpdateWindows", ADMIN, json={"index": "g", "high_score_first": True, "all_time": True}
                )[0]
                == 200
            )
            score = {"json": {"pk": "ann", "score": 5, "timestamp": T0}}
            assert status("POST", "/v1/indexes/g/scores", READER, **score) == (403, "PERMISSION_DENIED")
            assert status("POST", "/v1/indexes/g/scores", WRITER, **score) == (200, "OK")
            assert status("GET", "/v1/indexes/g/windows/0/top", None) == (401, "UNAUTHENTICATED")
            assert status("GET", "/v1/indexes/g/windows/0/top", READER) == (200, "OK")
            assert status("GET", "/v1/indexes/g/windows/0/top/events", None) == (401, "UNAUTHENTICATED")
            assert status("GET", "/metrics", None) == (401, "UNAUTHENTICATED")
            assert status("GET", "/metrics", READER) == (200, "OK")
            for public in ("/", "/openapi.json", "/static/app.js"):  # no data: the page asks for a token
                assert web.get(public).status_code == 200
            assert LeaderboardClient(server.address, token=READER).top("g", 5)[0].pk == ("ann",)
    finally:
        server.stop(grace=1)


def test_serve_refuses_a_taken_http_address_in_one_line(tmp_path, running: tuple[Server, HttpServer]) -> None:
    taken = running[1].address
    done = subprocess.run(
        [sys.executable, "-c", "from fdb_leaderboard.cli import main; main()", "serve", "--store",
         f"lmdb:{tmp_path / 'other'}", "--address", "127.0.0.1:0", "--http-address", taken],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [f"Error: cannot listen on {taken} for HTTP: Address already in use"]


def test_http_serves_the_servers_tls_and_requires_its_client_certificates(tmp_path, request) -> None:
    pem = request.getfixturevalue("certificates")

    def trusting(ca: str, with_client_certificate: bool = True) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=ca)
        if with_client_certificate:
            context.load_cert_chain(pem["client"], pem["client_key"])
        return context

    tls = TlsFiles(pem["server"], pem["server_key"], pem["ca"])
    server = Server(f"lmdb:{tmp_path / 's'}?durable=false", "127.0.0.1:0", settings=ServerSettings(tls=tls)).start()
    try:
        http = HttpServer(server, "127.0.0.1:0").start()
        assert http.url.startswith("https://127.0.0.1:")
        with httpx.Client(base_url=http.url, verify=trusting(pem["ca"]), timeout=20) as web:
            assert web.get("/v1/indexes").json() == {"indexes": []}
        with pytest.raises(httpx.HTTPError):  # no client certificate: refused
            httpx.get(http.url + "/v1/indexes", verify=trusting(pem["ca"], False), timeout=10)
        with pytest.raises(httpx.HTTPError):  # the server's certificate is not of this CA
            httpx.get(http.url + "/v1/indexes", verify=trusting(pem["other"]), timeout=10)
    finally:
        server.stop(grace=1)
