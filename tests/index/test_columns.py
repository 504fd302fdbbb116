"""Multi-column scores through every door: the index, gRPC (the client), REST and the CLI.

An index ranking by (kills HIGH, deaths LOW, time LOW) is written through each door and read
back through each; every rank, listing, page, percentile and score lookup is compared with
the brute-force model (tests/support/model.py), on both stores.  Refusals (SUM, DOUBLE, a direction
change, a score of the wrong shape) are clear errors with the right status at each door, and
the stored element is the documented one: the columns as one nested tuple, HIGH ones negated.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
from collections.abc import Iterator

import grpc
import httpx
import pytest
from click.testing import CliRunner

from fdb_leaderboard.cli import main
from fdb_leaderboard.client import AsyncLeaderboardClient, LeaderboardClient
from fdb_leaderboard.errors import FailedPrecondition, InvalidArgument
from fdb_leaderboard.http import HttpServer
from fdb_leaderboard.index import IndexSettings, LeaderboardIndex, RankMode, ScanType, WindowUpdate
from fdb_leaderboard.index import tuplecodec as tuples
from fdb_leaderboard.index.rules import ScoreRules
from fdb_leaderboard.service import Server
from tests.support.model import Listed, Model

pytestmark = pytest.mark.usefixtures("no_unexpected_server_errors")

COLUMNS = ("HIGH", "LOW", "LOW")  # most kills, then fewest deaths, then the earliest time
DAY = 86_400
T0 = 1_795_420_000 - 1_795_420_000 % DAY
MODES = ("ORDINAL", "COMPETITION", "DENSE")


def listed(entry) -> Listed | None:
    if entry is None:
        return None
    return Listed(tuple(entry.pk), entry.score, entry.timestamp, tuple(entry.context), tuple(entry.group), entry.rank)


@pytest.fixture
def http(server: Server) -> Iterator[httpx.Client]:
    front = HttpServer(server, "127.0.0.1:0").start()
    with httpx.Client(base_url=front.url, timeout=20) as web:
        yield web


def cli(server: Server, *args: object, code: int = 0) -> str:
    result = CliRunner().invoke(main, ["--server", server.address, *map(str, args)], catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result.output


def test_column_index_through_every_door(server: Server, client: LeaderboardClient, http: httpx.Client) -> None:
    assert "created" in cli(server, "index", "create", "arena", "--columns", "high,low,low", "--dense-ranks")
    client.update_windows("arena", windows=[(1, T0, T0 + DAY)])
    model = Model("BEST", high_score_first=True, columns=COLUMNS)
    model.update_windows(True, [(1, T0, T0 + DAY)])
    scores = [  # (pk, columns, ts): ties on kills, on kills and deaths, on all three (then the earlier ts)
        ("ann", (12, 3, 95), 10),
        ("bob", (12, 3, 80), 20),
        ("cyd", (12, 1, 300), 30),
        ("dee", (7, 0, 10), 40),
        ("eve", (12, 3, 80), 50),
        ("fay", (-2, 5, 0), 60),
        ("ann", (11, 0, 0), 70),  # worse than ann's best: BEST keeps (12, 3, 95)
        ("gus", (12, 3, 80), 15),
    ]
    for i, (pk, columns, ts) in enumerate(scores):
        door = i % 4
        if door == 0:
            client.add_score("arena", pk, columns, T0 + ts)
        elif door == 1:
            answer = http.post(
                "/v1/indexes/arena/scores", json={"pk": pk, "score": list(columns), "timestamp": T0 + ts}
            )
            assert answer.status_code == 200, answer.text
        elif door == 2:
            cli(server, "add", "arena", pk, "--score", ",".join(map(str, columns)), "--at", T0 + ts)
        else:
            client.add_entries("arena", pk, [(list(columns), T0 + ts)])
        model.add((pk,), [((), columns, T0 + ts, ())])

    pks = [*sorted({(pk,) for pk, _, _ in scores}), ("nobody",)]
    for window_type, ts in ((0, None), (1, T0 + 5)):
        where = {"window_type": window_type, "timestamp": ts}
        size = model.count(window_type, ts, ())
        assert client.count("arena", **where) == size
        for mode in MODES:
            assert [listed(e) for e in client.top("arena", 20, mode=mode, **where)] == model.top(
                20, window_type, ts, (), mode
            )
            for pk in pks:
                assert listed(client.rank_and_entry("arena", pk, mode=mode, **where)) == model.rank_and_entry(
                    pk, window_type, ts, (), mode
                )
                assert [listed(e) for e in client.around("arena", pk, 1, 2, mode=mode, **where)] == model.around(
                    pk, 1, 2, window_type, ts, (), mode
                )
            page, total, pages = model.page(2, 3, window_type, ts, (), mode)
            got = client.page("arena", 2, 3, mode=mode, **where)
            assert ([listed(e) for e in got.entries], got.total, got.pages) == (page, total, pages)
        for pk in pks:
            assert client.percentile("arena", pk, **where) == model.percentile(pk, window_type, ts, ())
        for rank in range(size + 1):
            assert client.score_for_rank("arena", rank, **where) == model.score_for_rank(rank, window_type, ts, ())
        for percent in (0, 10, 50, 99.5, 100):
            assert client.score_for_percentile("arena", percent, **where) == model.score_for_percentile(
                percent, window_type, ts, ()
            )
        for probe in [(12, 3, 80), (12, 2, 0), (7, 0, 10), (0, 0, 0), (13, 9, 9)]:
            expected = model.rank_for_score(probe, window_type, ts, ())
            assert client.rank_for_score("arena", list(probe), **where) == expected
            # A score key: the columns, then a timestamp (records reaching the score earlier count).
            key_rank = client.rank_for_score("arena", (probe, T0 + 20), **where)
            assert key_rank == model.rank_for_score_key((probe, T0 + 20), window_type, ts, ())

    # BY_VALUE scans run from the worst score to the best, bounds given as columns.
    for low, high in [(None, None), ((7, 0, 10), (12, 3, 80)), ((12, 3, 95), None)]:
        for reverse in (False, True):
            got = [listed(e) for e in client.scan_all("arena", "BY_VALUE", low=low, high=high, reverse=reverse)]
            assert got == model.scan_by_value((), low, high, reverse=reverse)
    got = [listed(e) for e in client.scan_all("arena", "BY_TIME_WINDOW", window_type=1, timestamp=T0, mode="DENSE")]
    assert got == model.scan_by_rank(1, T0, (), mode="DENSE")

    # REST answers the model's entries with scores as arrays; the CLI shows them with commas.
    answer = http.get("/v1/indexes/arena/windows/1/top", params={"at": T0, "n": 3})
    assert answer.status_code == 200, answer.text
    assert [(e["pk"], e["score"], e["rank"]) for e in answer.json()["entries"]] == [
        ([row.pk[0]], list(row.score), row.rank) for row in model.top(3, 1, T0, (), "ORDINAL")
    ]
    answer = http.get("/v1/indexes/arena/windows/0/records/ann/rank", params={"mode": "COMPETITION"})
    expected = model.rank_and_entry(("ann",), 0, None, (), "COMPETITION")
    assert (answer.json()["score"], answer.json()["rank"]) == (list(expected.score), expected.rank)
    top_lines = cli(server, "top", "arena", "-n", "2").splitlines()
    first = model.top(1, 0, None, (), "ORDINAL")[0]
    assert top_lines[0].split()[:3] == ["#1", first.pk[0], ",".join(map(str, first.score))]
    shown = json.loads(cli(server, "rank", "arena", "gus", "--json"))
    assert shown["score"] == [12, 3, 80]
    assert client.verify("arena") == []
    assert "columns HIGH,LOW,LOW" in cli(server, "index", "list")
    assert [i["columns"] for i in json.loads(cli(server, "index", "list", "--json")) if i["name"] == "arena"] == [
        list(COLUMNS)
    ]


def test_column_scores_on_the_command_line(server: Server, client: LeaderboardClient, tmp_path) -> None:
    """rank-for-score, score-trim and score-for-percentile take and show columns with commas; an
    export (CSV or JSON lines) loads back into another column index unchanged."""
    client.create_index("duel", columns=("HIGH", "LOW"))
    model = Model("BEST", high_score_first=True, columns=("HIGH", "LOW"))
    model.update_windows(True, [])
    for pk, score, ts in [("ann", (5, 2), 10), ("bob", (5, 1), 20), ("cyd", (7, 9), 30), ("dee", (5, 2), 5)]:
        client.add_score("duel", pk, score, ts)
        model.add((pk,), [((), score, ts, ())])
    for probe in ((5, 2), (5, 1), (6, 0), (0, 0)):
        rank = model.rank_for_score(probe, 0, None, ())
        assert cli(server, "rank-for-score", "duel", ",".join(map(str, probe))) == f"#{rank + 1}\n"
    key_rank = model.rank_for_score_key(((5, 2), 7), 0, None, ())
    assert json.loads(cli(server, "rank-for-score", "duel", "5,2", "--key-timestamp", 7, "--json")) == {
        "rank": key_rank
    }
    assert cli(server, "score-for-percentile", "duel", 100) == "7,9\n"
    assert json.loads(cli(server, "score-for-percentile", "duel", 0, "--json")) == {"score": [5, 2]}
    kept = [(score, ts) for _, score, ts, _ in model.score_trim([((), (5, 2), 1, ()), ((), (6, 0), 2, ())])]
    assert cli(server, "score-trim", "duel", "5,2@1", "6,0@2") == " ".join(f"{s[0]},{s[1]}@{t}" for s, t in kept) + "\n"
    assert "SCORE@TIMESTAMP" in cli(server, "score-trim", "duel", "5,x@1", code=2)

    expected = [listed(e) for e in client.top("duel", 10)]
    for file_format in ("csv", "ndjson"):
        exported = CliRunner().invoke(main, ["--server", server.address, "export", "duel", "--format", file_format])
        assert exported.exit_code == 0, exported.output
        path = tmp_path / f"duel.{file_format}"
        if file_format == "csv":  # export's CSV has more columns than load takes: keep load's own
            rows = list(csv.DictReader(io.StringIO(exported.stdout)))
            lines = ["pk,score,timestamp"] + [f'{r["pk"]},"{r["score"]}",{r["timestamp"]}' for r in rows]
        else:
            lines = [
                json.dumps({k: r[k] for k in ("pk", "score", "timestamp")})
                for r in map(json.loads, exported.stdout.splitlines())
            ]
        path.write_text("\n".join(lines) + "\n")
        copy = f"copy_{file_format}"
        client.create_index(copy, columns=("HIGH", "LOW"))
        cli(server, "load", copy, path)
        assert [listed(e) for e in client.top(copy, 10)] == expected


def test_column_refusals_at_every_door(server: Server, client: LeaderboardClient, http: httpx.Client) -> None:
    for options, message in [
        ({"aggregation": "SUM"}, "BEST or LATEST"),
        ({"score_type": "DOUBLE"}, "needs score_type INT"),
        ({"high_score_first": False}, "high_score_first does not apply"),
        ({"columns": ("HIGH",)}, "2 to 4 columns"),
        ({"columns": ("HIGH",) * 5}, "2 to 4 columns"),
    ]:
        with pytest.raises(grpc.RpcError) as refused:
            client.create_index("bad", **{"columns": ("HIGH", "LOW"), **options})
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert message in refused.value.details()
    assert "HIGH or LOW" in cli(server, "index", "create", "bad", "--columns", "high,sideways", code=2)

    client.create_index("duel", columns=("HIGH", "LOW"))
    for score in (5, (1, 2, 3), (1, 2.5), ("a", 1)):
        with pytest.raises((grpc.RpcError, InvalidArgument)) as refused:
            client.add_score("duel", "ann", score, 10)
        if isinstance(refused.value, grpc.RpcError):
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    for score in (5, [1], [1, "x"], [1, True], {"kills": 1}):
        answer = http.post("/v1/indexes/duel/scores", json={"pk": "ann", "score": score, "timestamp": 10})
        assert answer.status_code == 400, (score, answer.text)
    assert "2 integers" in cli(server, "add", "duel", "ann", "--score", "1,2,3", code=1)
    assert "not a number" in cli(server, "add", "duel", "ann", "--score", "1,x", code=2)
    with pytest.raises(grpc.RpcError) as refused:
        client.update_windows("duel", high_score_first=False)
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert client.count("duel") == 0  # nothing refused was stored


def test_column_layout_and_refusals_in_the_index(db, prefix) -> None:
    """The element packs the columns as one nested tuple (HIGH ones negated) ahead of the
    timestamp; an index without columns keeps the reference's element; directions are fixed."""
    index = LeaderboardIndex.create(db, prefix, IndexSettings(columns=("HIGH", "LOW"), group_size=1))
    index.add_score("ann", (12, 3), 50, group=("eu",))
    head = index.read(lambda ops: ops.txn.read_head(ops.txn.pk("ann").nested))
    assert tuples.unpack(head.windows[0].element) == ((-12, 3), 50)
    plain = LeaderboardIndex.create(db, prefix + b"p", IndexSettings())
    plain.add_score("ann", 12, 50)
    head = plain.read(lambda ops: ops.txn.read_head(ops.txn.pk("ann").nested))
    assert tuples.unpack(head.windows[0].element) == (-12, 50)
    with pytest.raises(InvalidArgument, match="no min_score or max_score"):
        index.set_score_rules(ScoreRules(min_score=0))
    index.set_score_rules(ScoreRules(max_per_window=5))  # submission limits apply
    with pytest.raises(FailedPrecondition, match="high_score_first does not apply"):
        index.save_sub_directory(("eu",), False)
    with pytest.raises(FailedPrecondition, match="high_score_first does not apply"):
        index.update_windows(WindowUpdate(high_score_first=False))
    # The extremes of int64 order correctly in both directions (-INT64_MIN is 2**63).
    for pk, score in [("lo", (-(2**63), 2**63 - 1)), ("hi", (2**63 - 1, -(2**63)))]:
        index.add_score(pk, score, 1, group=("eu",))
    assert [e.pk[0] for e in index.top(3, group=("eu",))] == ["hi", "ann", "lo"]
    assert index.rank("lo", group=("eu",), mode=RankMode.COMPETITION) == 2
    assert [e.pk[0] for e in index.scan(ScanType.BY_VALUE, group=("eu",)).entries] == ["lo", "ann", "hi"]
    assert index.check() == []


def test_the_asyncio_client_takes_and_answers_columns(server: Server, client: LeaderboardClient) -> None:
    """The asyncio client sends column scores and bounds and reads them back as the blocking one."""

    async def session() -> tuple:
        async with AsyncLeaderboardClient(server.address) as lb:
            await lb.create_index("duel", columns=("LOW", "HIGH"))
            for pk, score in [("ann", [3, 9]), ("bob", (3, 10)), ("cyd", (1, 0))]:
                await lb.add_score("duel", pk, score, 5)
            top = [(e.pk[0], e.score) for e in await lb.top("duel", 5)]
            rank = await lb.rank_for_score("duel", [3, 9])
            entries, _ = await lb.scan("duel", "BY_VALUE", low=[3, 9], high=(1, 0))
            return top, rank, [e.pk[0] for e in entries], await lb.score_for_rank("duel", 1)

    top, rank, scanned, second = asyncio.run(session())
    assert top == [("cyd", (1, 0)), ("bob", (3, 10)), ("ann", (3, 9))]
    assert top == [(e.pk[0], e.score) for e in client.top("duel", 5)]
    assert rank == client.rank_for_score("duel", [3, 9]) == 2
    assert scanned == ["ann", "bob", "cyd"]  # worst to best, bounds as columns
    assert second == (3, 10)
