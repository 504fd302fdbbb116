"""A rejected gRPC request changes nothing: each RPC's INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION and
ALREADY_EXISTS cases on a real server, each message checked for the problem it names, and every
window, sub-directory, board and count and the index list left as they were."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.errors import NoWindowsWarning
from fdb_leaderboard.proto import service_pb2 as pb
from fdb_leaderboard.service import Server
from tests.conftest import SERVER_BACKENDS, ServerPlace
from tests.support.service_calls import _entry, populate_game, rpc_error, snapshot

DAY = 86_400
Code = grpc.StatusCode

pytestmark = pytest.mark.usefixtures("no_unexpected_server_errors")


# -- errors: a rejected request changes nothing -----------------------------------------------


@pytest.fixture(scope="module", params=SERVER_BACKENDS)
def populated(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Server, LeaderboardClient, dict]]:
    """One server with a few indexes for the error cases (each must leave it unchanged)."""
    place = ServerPlace(request.param, tmp_path_factory.mktemp("errors") / "s")
    running = place.start()
    lb = LeaderboardClient(running.address, timeout=20)
    populate_game(lb)
    populate_game(lb, "other")
    lb.create_index("points", aggregation="SUM")
    lb.update_windows("points")
    lb.add_score("points", ("a",), 5, 10)
    lb.create_index("grouped", group_size=1, context_size=1, high_score_first=True)
    lb.update_windows("grouped", specs=[(1, 0, DAY, DAY, 2)], high_score_first=True)
    lb.add_score("grouped", ("a",), 5, 10, context=("c",), group=("g",))
    lb.add_score("grouped", ("b",), 7, 20, context=("c",), group=("h",))
    lb.create_index("bare", all_time=False)  # no window at all
    with pytest.warns(NoWindowsWarning):
        lb.add_score("bare", ("a",), 1, 1)  # entries are kept even without windows, with a warning
    token_game = lb.scan("game", "BY_RANK", limit=2)[1]
    token_value = lb.scan("game", "BY_VALUE", limit=2)[1]
    token_day = lb.scan("game", "BY_TIME_WINDOW", window_type=1, timestamp=0, limit=2)[1]
    assert token_game and token_value and token_day
    tokens = {"rank": token_game, "value": token_value, "day": token_day}
    yield running, lb, tokens
    lb.close()
    running.stop(grace=1)
    place.clear()


WATCHED = {
    "game": [()],
    "other": [()],
    "points": [()],
    "grouped": [("g",), ("h",)],
    "bare": [],
}


S = pb.Item(string="pk")
INT = pb.Score(int=5)


def _invalid_argument_cases(tokens: dict) -> list[tuple[str, str, Any, tuple[str, ...]]]:
    nan, inf = float("nan"), float("inf")
    return [
        # malformed primary keys
        (
            "AddScore",
            "empty pk",
            pb.AddScoreRequest(index="game", entry=_entry(INT)),
            ("primary key must not be empty",),
        ),
        (
            "AddScore",
            "item without value",
            pb.AddScoreRequest(index="game", pk=[pb.Item()], entry=_entry(INT)),
            ("Item has no value",),
        ),
        (
            "AddScore",
            "NaN pk item",
            pb.AddScoreRequest(index="game", pk=[pb.Item(double=nan)], entry=_entry(INT)),
            ("NaN and infinities",),
        ),
        (
            "AddScore",
            "pk too large",
            pb.AddScoreRequest(index="game", pk=[pb.Item(string="x" * 300)], entry=_entry(INT)),
            ("primary key packs to", "200"),
        ),
        ("GetRank", "empty pk read", pb.RankRequest(index="game"), ("primary key must not be empty",)),
        ("DeleteRecord", "empty pk delete", pb.DeleteRecordRequest(index="game"), ("primary key must not be empty",)),
        # scores
        ("AddScore", "no entry", pb.AddScoreRequest(index="game", pk=[S]), ("needs an entry",)),
        ("AddScore", "score not set", pb.AddScoreRequest(index="game", pk=[S], entry=_entry()), ("no score",)),
        (
            "AddScore",
            "empty score",
            pb.AddScoreRequest(index="game", pk=[S], entry=_entry(pb.Score())),
            ("score is not set",),
        ),
        (
            "AddScore",
            "NaN score",
            pb.AddScoreRequest(index="game", pk=[S], entry=_entry(pb.Score(double=nan))),
            ("not finite",),
        ),
        (
            "AddScore",
            "inf score",
            pb.AddScoreRequest(index="game", pk=[S], entry=_entry(pb.Score(double=inf))),
            ("not finite",),
        ),
        (
            "AddScore",
            "-inf score",
            pb.AddScoreRequest(index="game", pk=[S], entry=_entry(pb.Score(double=-inf))),
            ("not finite",),
        ),
        (
            "AddScore",
            "double in SUM",
            pb.AddScoreRequest(index="points", pk=[S], entry=_entry(pb.Score(double=1.5))),
            ("index takes integer scores",),
        ),
        (
            "AddScore",
            "SUM overflow",
            pb.AddScoreRequest(index="points", pk=[pb.Item(string="a")], entry=_entry(pb.Score(int=2**63 - 1))),
            ("int64 range",),
        ),
        (
            "RankForScore",
            "NaN probe",
            pb.RankForScoreRequest(index="game", score=pb.Score(double=nan)),
            ("not finite",),
        ),
        ("RankForScore", "probe not set", pb.RankForScoreRequest(index="game"), ("score is not set",)),
        (
            "Scan",
            "NaN bound",
            pb.ScanRequest(index="game", type=pb.BY_VALUE, low=pb.Score(double=nan)),
            ("not finite",),
        ),
        # partially valid writes: the valid part must not land either
        (
            "AddEntries",
            "second entry bad",
            pb.AddEntriesRequest(index="game", pk=[S], entries=[_entry(INT), _entry(pb.Score(double=nan))]),
            ("not finite",),
        ),
        (
            "SaveRecord",
            "save with bad entry",
            pb.SaveRecordRequest(index="game", pk=[pb.Item(string="alice")], entries=[_entry(INT), _entry()]),
            ("no score",),
        ),
        (
            "WriteBatch",
            "second record bad",
            pb.WriteBatchRequest(
                index="game",
                replace=True,
                records=[
                    pb.RecordEntries(pk=[pb.Item(string="bob")], entries=[_entry(pb.Score(int=10**6))]),
                    pb.RecordEntries(pk=[], entries=[_entry(INT)]),
                ],
            ),
            ("primary key must not be empty",),
        ),
        (
            "WriteBatch",
            "second record bad (add)",
            pb.WriteBatchRequest(
                index="game",
                replace=False,
                records=[
                    pb.RecordEntries(pk=[pb.Item(string="new")], entries=[_entry(INT)]),
                    pb.RecordEntries(pk=[S], entries=[_entry(pb.Score(double=inf))]),
                ],
            ),
            ("not finite",),
        ),
        (
            "BulkLoad",
            "second record bad",
            pb.BulkLoadRequest(
                index="game",
                records=[
                    pb.RecordEntries(pk=[pb.Item(string="bob")], entries=[_entry(pb.Score(int=10**6))]),
                    pb.RecordEntries(pk=[], entries=[_entry(INT)]),
                ],
            ),
            ("primary key must not be empty",),
        ),
        (
            "BulkLoad",
            "first message without the index",
            pb.BulkLoadRequest(records=[pb.RecordEntries(pk=[S], entries=[_entry(INT)])]),
            ("first message must name the index",),
        ),
        # windows
        (
            "UpdateWindows",
            "empty window",
            pb.UpdateWindowsRequest(
                index="game", high_score_first=True, windows=[pb.ExplicitWindow(type=2, start=9, end=9)]
            ),
            ("must end after it starts",),
        ),
        (
            "UpdateWindows",
            "inverted window",
            pb.UpdateWindowsRequest(
                index="game",
                high_score_first=True,
                specs=[pb.WindowSpec(type=3, base=0, increment=1, duration=1, count=2)],
                windows=[pb.ExplicitWindow(type=2, start=100, end=50)],
            ),
            ("must end after it starts",),
        ),
        (
            "UpdateWindows",
            "zero duration",
            pb.UpdateWindowsRequest(
                index="game",
                high_score_first=True,
                specs=[pb.WindowSpec(type=3, base=0, increment=1, duration=0, count=2)],
            ),
            ("duration must be positive",),
        ),
        (
            "UpdateWindows",
            "too many windows",
            pb.UpdateWindowsRequest(
                index="game",
                high_score_first=True,
                specs=[pb.WindowSpec(type=3, base=0, increment=1, duration=1, count=100_000)],
            ),
            ("at most 2500",),
        ),
        (
            "UpdateWindows",
            "explicit all-time type",
            pb.UpdateWindowsRequest(
                index="game", high_score_first=True, windows=[pb.ExplicitWindow(type=0, start=1, end=2)]
            ),
            ("window type must be between 1",),
        ),
        (
            "UpdateWindows",
            "bad nlevels",
            pb.UpdateWindowsRequest(index="game", high_score_first=True, nlevels=12),
            ("nlevels must be an integer between 2 and 8",),
        ),
        # ranks and rank ranges
        (
            "Scan",
            "inverted rank range",
            pb.ScanRequest(index="game", type=pb.BY_RANK, low=pb.Score(int=3), high=pb.Score(int=1)),
            ("rank range is inverted",),
        ),
        (
            "Scan",
            "negative rank bound",
            pb.ScanRequest(index="game", type=pb.BY_RANK, low=pb.Score(int=-1)),
            ("must not be negative",),
        ),
        (
            "Scan",
            "negative high rank",
            pb.ScanRequest(
                index="game",
                type=pb.BY_TIME_WINDOW,
                window=pb.WindowSelector(type=1, timestamp=0),
                high=pb.Score(int=-2),
            ),
            ("must not be negative",),
        ),
        (
            "Scan",
            "double rank bound",
            pb.ScanRequest(index="game", type=pb.BY_RANK, high=pb.Score(double=2.0)),
            ("rank bounds must be integers",),
        ),
        (
            "SetMaintenancePolicy",
            "negative horizon",
            pb.SetMaintenancePolicyRequest(index="game", maintenance=pb.MaintenancePolicy(horizon=-1)),
            ("must not be negative",),
        ),
        (
            "SetMaintenancePolicy",
            "negative retain",
            pb.SetMaintenancePolicyRequest(index="game", maintenance=pb.MaintenancePolicy(retain=-5)),
            ("must not be negative",),
        ),
        (
            "SetMaintenancePolicy",
            "maintained all-time",
            pb.SetMaintenancePolicyRequest(
                index="game",
                maintenance=pb.MaintenancePolicy(windows=[pb.RegularWindows(type=0, increment=1, duration=1)]),
            ),
            ("type >= 1",),
        ),
        (
            "SetMaintenancePolicy",
            "negative increment",
            pb.SetMaintenancePolicyRequest(
                index="game",
                maintenance=pb.MaintenancePolicy(windows=[pb.RegularWindows(type=1, increment=-DAY, duration=DAY)]),
            ),
            ("positive increment",),
        ),
        # groups and contexts
        (
            "Top",
            "group on ungrouped index",
            pb.TopRequest(index="game", n=5, group=[pb.Item(string="g")]),
            ("groups by 0 element(s)",),
        ),
        ("Top", "empty group", pb.TopRequest(index="grouped", n=5), ("groups by 1 element(s)",)),
        (
            "Count",
            "two-element group",
            pb.CountRequest(index="grouped", group=[pb.Item(int=1), pb.Item(int=2)]),
            ("groups by 1 element(s)",),
        ),
        (
            "AddScore",
            "write without group",
            pb.AddScoreRequest(index="grouped", pk=[S], entry=_entry(INT, context=[pb.Item(string="c")])),
            ("groups by 1 element(s)",),
        ),
        (
            "AddScore",
            "write without context",
            pb.AddScoreRequest(index="grouped", pk=[S], entry=_entry(INT, group=[pb.Item(string="g")])),
            ("takes 1 context element(s)",),
        ),
        (
            "SaveSubDirectory",
            "sub-directory without group",
            pb.SaveSubDirectoryRequest(index="grouped"),
            ("sub-directory needs a group of 1",),
        ),
        (
            "SaveSubDirectory",
            "sub-directory on ungrouped",
            pb.SaveSubDirectoryRequest(index="game"),
            ("sub-directory needs a group of 0",),
        ),
        # continuations and scans
        (
            "Scan",
            "garbage continuation",
            pb.ScanRequest(index="game", type=pb.BY_RANK, continuation=b"garbage"),
            ("continuation is not one this server handed out",),
        ),
        (
            "Scan",
            "foreign tuple continuation",
            pb.ScanRequest(index="game", type=pb.BY_RANK, continuation=b"\x01abc\x00"),
            ("continuation is not one this server handed out",),
        ),
        (
            "Scan",
            "continuation of another index",
            pb.ScanRequest(index="other", type=pb.BY_RANK, continuation=tokens["rank"]),
            ("continuation belongs to another index",),
        ),
        (
            "Scan",
            "rank continuation in a value scan",
            pb.ScanRequest(index="game", type=pb.BY_VALUE, continuation=tokens["rank"]),
            ("another window, group or kind of scan",),
        ),
        (
            "Scan",
            "value continuation in a rank scan",
            pb.ScanRequest(index="game", type=pb.BY_RANK, continuation=tokens["value"]),
            ("another window, group or kind of scan",),
        ),
        (
            "Scan",
            "daily continuation in an all-time scan",
            pb.ScanRequest(index="game", type=pb.BY_RANK, continuation=tokens["day"]),
            ("another window, group or kind of scan",),
        ),
        # unknown enum values sent as raw ints
        ("Top", "unknown rank mode", pb.TopRequest(index="game", n=5, mode=7), ("unknown rank mode 7",)),
        ("GetRank", "unknown rank mode (rank)", pb.RankRequest(index="game", pk=[S], mode=7), ("unknown rank mode",)),
        (
            "Scan",
            "unknown rank mode (scan)",
            pb.ScanRequest(index="game", type=pb.BY_RANK, mode=9),
            ("unknown rank mode",),
        ),
        (
            "AroundMe",
            "unknown rank mode (around)",
            pb.AroundMeRequest(index="game", pk=[S], mode=3),
            ("unknown rank mode",),
        ),
        (
            "AroundMe",
            "unknown if_absent",
            pb.AroundMeRequest(index="game", pk=[S], if_absent=7),
            ("if_absent 7 is unknown", "EMPTY, TOP, BOTTOM"),
        ),
        ("Scan", "unknown scan type", pb.ScanRequest(index="game", type=7), ("scan type 7 is unknown", "BY_RANK")),
        (
            "UpdateWindows",
            "unknown rebuild",
            pb.UpdateWindowsRequest(index="game", high_score_first=True, rebuild=7),
            ("rebuild 7 is unknown", "IF_OVERLAPPING_CHANGED"),
        ),
        (
            "CreateIndex",
            "unknown aggregation",
            pb.CreateIndexRequest(name="new", options=pb.IndexOptions(aggregation=7)),
            ("aggregation 7 is unknown", "BEST, SUM, LATEST"),
        ),
        (
            "CreateIndex",
            "unknown hash",
            pb.CreateIndexRequest(name="new", options=pb.IndexOptions(hash_function=7)),
            ("hash_function 7 is unknown", "MURMUR3"),
        ),
        # index names and options
        (
            "CreateIndex",
            "bad index name",
            pb.CreateIndexRequest(name="no spaces"),
            ("index name 'no spaces' is invalid",),
        ),
        ("CreateIndex", "empty index name", pb.CreateIndexRequest(name=""), ("index name '' is invalid",)),
        (
            "CreateIndex",
            "group size too large",
            pb.CreateIndexRequest(name="new", options=pb.IndexOptions(group_size=9)),
            ("group_size must be",),
        ),
        (
            "CreateIndex",
            "bad policy",
            pb.CreateIndexRequest(name="new", maintenance=pb.MaintenancePolicy(certain_within=-1)),
            ("must not be negative",),
        ),
        ("ListWindows", "bad name on read", pb.ListWindowsRequest(index="a/b"), ("is invalid",)),
    ]


def _call(lb: LeaderboardClient, method: str, request: Any) -> Any:
    if method in ("BulkLoad", "Load", "Dump"):  # client streaming: the request is its first (here only) message
        request = iter([request])
    if method in ("Load", "Dump"):  # and streamed answers
        return list(getattr(lb.stub, method)(request, timeout=20))
    if method in ("WatchRank", "WatchWindowEnds"):  # a stream of answers, the first of which may be the error
        return next(getattr(lb.stub, method)(request, timeout=20))
    return getattr(lb.stub, method)(request, timeout=20)


def test_invalid_argument_changes_nothing(populated) -> None:
    _, lb, tokens = populated
    cases = _invalid_argument_cases(tokens)
    methods = {method for method, *_ in cases}
    assert len(methods) >= 15
    before = snapshot(lb, WATCHED)
    for method, label, request, needles in cases:
        try:
            rpc_error(Code.INVALID_ARGUMENT, lambda m=method, r=request: _call(lb, m, r), *needles)
        except AssertionError as exc:
            raise AssertionError(f"{method} / {label}: {exc}") from None
        assert snapshot(lb, WATCHED) == before, f"{method} / {label} changed the store"
    for name in ("game", "other", "points", "grouped"):
        assert lb.verify(name) == []


def test_not_found_changes_nothing(populated) -> None:
    _, lb, _ = populated
    before = snapshot(lb, WATCHED)
    unknown = [
        ("Top", pb.TopRequest(index="nope", n=3)),
        ("Count", pb.CountRequest(index="nope")),
        ("GetRank", pb.RankRequest(index="nope", pk=[S])),
        ("GetRankAndEntry", pb.RankRequest(index="nope", pk=[S])),
        ("WatchRank", pb.RankRequest(index="nope", pk=[S])),
        ("AroundMe", pb.AroundMeRequest(index="nope", pk=[S])),
        ("ScoreForRank", pb.ScoreForRankRequest(index="nope")),
        ("RankForScore", pb.RankForScoreRequest(index="nope", score=INT)),
        ("Scan", pb.ScanRequest(index="nope")),
        ("AddScore", pb.AddScoreRequest(index="nope", pk=[S], entry=_entry(INT))),
        ("AddEntries", pb.AddEntriesRequest(index="nope", pk=[S], entries=[_entry(INT)])),
        ("SaveRecord", pb.SaveRecordRequest(index="nope", pk=[S])),
        ("DeleteRecord", pb.DeleteRecordRequest(index="nope", pk=[S])),
        ("WriteBatch", pb.WriteBatchRequest(index="nope")),
        ("BulkLoad", pb.BulkLoadRequest(index="nope", records=[pb.RecordEntries(pk=[S])])),
        ("Load", pb.BulkLoadRequest(index="nope", records=[pb.RecordEntries(pk=[S])])),
        ("DropIndex", pb.DropIndexRequest(index="nope")),
        ("UpdateWindows", pb.UpdateWindowsRequest(index="nope")),
        ("ListWindows", pb.ListWindowsRequest(index="nope")),
        ("SaveSubDirectory", pb.SaveSubDirectoryRequest(index="nope", group=[S])),
        ("ListSubDirectories", pb.ListSubDirectoriesRequest(index="nope")),
        ("Expire", pb.ExpireRequest(index="nope", before=10)),
        ("Fill", pb.FillRequest(index="nope")),
        ("Trim", pb.TrimRequest(index="nope", before=10)),
        ("KeepAhead", pb.KeepAheadRequest(index="nope", now=10)),
        ("Verify", pb.VerifyRequest(index="nope")),
        ("SetMaintenancePolicy", pb.SetMaintenancePolicyRequest(index="nope")),
        ("SetMetadata", pb.SetMetadataRequest(index="nope", pk=[S])),
        ("GetMetadata", pb.MetadataRequest(index="nope", pk=[S])),
        ("GetRanks", pb.RanksRequest(index="nope", records=[pb.RecordKey(pk=[S])])),
        ("FriendsBoard", pb.RanksRequest(index="nope", records=[pb.RecordKey(pk=[S])])),
        ("GetPage", pb.PageRequest(index="nope", page=1, size=10)),
        ("GetPercentile", pb.PercentileRequest(index="nope", pk=[S])),
        ("ScoreForPercentile", pb.ScoreForPercentileRequest(index="nope", percentile=50)),
        ("GetMovement", pb.RankRequest(index="nope", pk=[S], window=pb.WindowSelector(type=1, timestamp=5))),
        ("GetRankHistory", pb.RankHistoryRequest(index="nope", pk=[S], window_type=1)),
        ("ScoreTrim", pb.ScoreTrimRequest(index="nope")),
        ("ExpireIdempotencyKeys", pb.ExpireIdempotencyKeysRequest(index="nope")),
        ("HideRecord", pb.HideRecordRequest(index="nope", pk=[S])),
        ("RestoreRecord", pb.RestoreRecordRequest(index="nope", pk=[S])),
        ("ListHiddenRecords", pb.ListHiddenRecordsRequest(index="nope")),
        ("GetScoreRules", pb.GetScoreRulesRequest(index="nope")),
        ("SetScoreRules", pb.SetScoreRulesRequest(index="nope")),
        ("DeleteRecords", pb.DeleteRecordsRequest(index="nope", all_records=True)),
        ("Dump", pb.DumpRequest(index="nope")),
        ("SetWritesPaused", pb.SetWritesPausedRequest(index="nope", paused=True)),
        ("GetCohort", pb.CohortRequest(index="nope", pk=[S])),
        ("ListGroups", pb.ListGroupsRequest(index="nope")),
        ("AddWebhook", pb.AddWebhookRequest(index="nope", url="https://example.com/hook")),
        ("ListWebhooks", pb.ListWebhooksRequest(index="nope")),
        ("DeleteWebhook", pb.DeleteWebhookRequest(index="nope", id="wh_1")),
        ("NoticeWindowEnds", pb.NoticeWindowEndsRequest(index="nope")),
        ("WatchWindowEnds", pb.WatchWindowEndsRequest(index="nope")),
        ("UpgradeIndex", pb.UpgradeIndexRequest(index="nope")),
    ]
    # All but CreateIndex, ListIndexes and Restore (which creates the index it names), the audit
    # trail's three (the store's: a dropped index's events are listed by its name), and the
    # store's status and upgrade (of no index).
    assert len({m for m, _ in unknown}) == len(pb.DESCRIPTOR.services_by_name["Leaderboard"].methods) - 8
    for method, request in unknown:
        rpc_error(Code.NOT_FOUND, lambda m=method, r=request: _call(lb, m, r), "no index named 'nope'")

    windows = [
        (
            "Top",
            pb.TopRequest(index="game", n=3, window=pb.WindowSelector(type=1, timestamp=3 * DAY)),
            "no window of type 1 contains timestamp 259200",
        ),
        (
            "Count",
            pb.CountRequest(index="game", window=pb.WindowSelector(type=1, timestamp=-1)),
            "no window of type 1 contains timestamp -1",
        ),
        (
            "GetRank",
            pb.RankRequest(index="game", pk=[S], window=pb.WindowSelector(type=8, timestamp=5)),
            "no window of type 8",
        ),
        (
            "Scan",
            pb.ScanRequest(index="game", type=pb.BY_TIME_WINDOW, window=pb.WindowSelector(type=2, timestamp=5)),
            "no window of type 2",
        ),
        (
            "ScoreForRank",
            pb.ScoreForRankRequest(index="game", window=pb.WindowSelector(type=1, timestamp=10 * DAY)),
            "no window of type 1",
        ),
        # A window type without a timestamp reads the window holding now (these days are in 1970).
        ("Top", pb.TopRequest(index="game", n=3, window=pb.WindowSelector(type=1)), "no window of type 1 contains now"),
        (
            "Scan",
            pb.ScanRequest(index="game", type=pb.BY_TIME_WINDOW, window=pb.WindowSelector(type=1)),
            "no window of type 1 contains now",
        ),
        ("Top", pb.TopRequest(index="bare", n=3), "no all-time window"),
        ("Scan", pb.ScanRequest(index="bare", type=pb.BY_VALUE), "no all-time window"),
    ]
    for method, request, needle in windows:
        rpc_error(Code.NOT_FOUND, lambda m=method, r=request: _call(lb, m, r), needle)
    assert snapshot(lb, WATCHED) == before


def test_failed_precondition_and_already_exists_change_nothing(populated) -> None:
    _, lb, _ = populated
    before = snapshot(lb, WATCHED)
    # rebuild=NEVER refuses a window over stored scores, and a direction flip.
    rpc_error(
        Code.FAILED_PRECONDITION,
        lambda: lb.update_windows("game", windows=[(4, 0, 5000)], high_score_first=True, rebuild="NEVER"),
        "window type 4 [0, 5000)",
        "rebuild=NEVER",
    )
    rpc_error(
        Code.FAILED_PRECONDITION,
        lambda: lb.update_windows("game", high_score_first=False, rebuild="NEVER"),
        "changing high_score_first",
    )
    rpc_error(Code.FAILED_PRECONDITION, lambda: lb.keep_ahead("game", 10), "no maintenance policy")
    rpc_error(
        Code.FAILED_PRECONDITION,
        lambda: lb.save_sub_directory("grouped", ("g",), False),
        "already has scores",
        "('g',)",
    )
    rpc_error(
        Code.ALREADY_EXISTS,
        lambda: lb.create_index("game", high_score_first=False),
        "index 'game' exists with other options",
    )
    rpc_error(Code.ALREADY_EXISTS, lambda: lb.create_index("points", aggregation="BEST"), "other options")
    assert lb.create_index("game", high_score_first=True) is False  # same options: fine
    assert snapshot(lb, WATCHED) == before
    # rebuild=NEVER is fine when nothing needs filling (a window after every stored score).
    result = lb.update_windows("points", windows=[(4, 100, 200)], rebuild="NEVER")
    assert [(w.type, w.filling) for w in result.added] == [(4, False)] and not result.filling
    lb.update_windows("points", delete_before=200)
