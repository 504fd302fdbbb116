"""Leagues (fdb_leaderboard/index/leagues.py) against tests/support/model.py's LeagueModel, on both stores.

A state machine scores records into league windows (type 1, three windows of width 10) and an
other type's window, hides, restores and deletes records and expires windows; after every step
each record's tier and cohort in every league window, and every cohort's ranked records (the
three rank modes), match the model's, and the checker finds nothing.  Concurrent first scores
(threads; processes share the store on FoundationDB) never overfill a cohort.  On stores whose
reads are batched the test counts a league join's read rounds.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import random
import threading
import uuid

import fdb.tuple
import grpc
import httpx
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from fdb_leaderboard.cli import main
from fdb_leaderboard.client import AsyncLeaderboardClient, LeaderboardClient
from fdb_leaderboard.errors import FailedPrecondition, InvalidArgument
from fdb_leaderboard.index import Entry, IndexSettings, LeaderboardIndex, RankMode, WindowUpdate
from fdb_leaderboard.index.directory import WindowSpec
from fdb_leaderboard.index.restore import restore_parts
from fdb_leaderboard.index.settings import Leagues
from fdb_leaderboard.index.snapshot import dump_parts
from fdb_leaderboard.proto import service_pb2 as pb
from fdb_leaderboard.store import Database, open_database
from tests.support.model import LeagueModel, Listed, Model

LEAGUE = 1
WINDOWS = [(LEAGUE, 0, 10), (LEAGUE, 10, 20), (LEAGUE, 20, 30), (2, 0, 30)]
PKS = [("a",), ("b",), ("c",), ("d",), ("e",), ("f",), ("g",), ("a", 1)]


def listed(entry) -> Listed:
    return Listed(tuple(entry.pk), entry.score, entry.timestamp, tuple(entry.context), tuple(entry.group), entry.rank)


class LeagueMachine(RuleBasedStateMachine):
    db: Database
    aggregation = "BEST"
    leagues = Leagues(LEAGUE, cohort_size=3, tiers=3, promote=1, demote=1)

    @initialize()
    def create(self) -> None:
        prefix = b"lg" + uuid.uuid4().bytes[:6]
        self.index = LeaderboardIndex.create(
            self.db, prefix, IndexSettings(aggregation=self.aggregation, leagues=self.leagues)
        )
        self.index.update_windows(WindowUpdate(high_score_first=True, windows=WINDOWS))
        self.model = Model(self.aggregation, high_score_first=True)
        self.model.update_windows(True, WINDOWS)
        spec = self.leagues
        self.league = LeagueModel(self.model, LEAGUE, spec.cohort_size, spec.tiers, spec.promote, spec.demote)

    @rule(pk=st.sampled_from(PKS), score=st.integers(0, 4), ts=st.integers(0, 29))
    def score(self, pk: tuple, score: int, ts: int) -> None:
        self.index.add_score(pk, score, ts)
        self.model.add(pk, [((), score, ts, ())])
        self.league.joined(pk)

    @rule(pk=st.sampled_from(PKS), scores=st.lists(st.integers(0, 4), min_size=1, max_size=3), ts=st.integers(0, 29))
    def save(self, pk: tuple, scores: list[int], ts: int) -> None:
        """Every entry in one league window: a write joins at most one window at a time."""
        self.index.save_record(pk, [Entry(score, ts) for score in scores])
        self.model.save(pk, [((), score, ts, ()) for score in scores])
        self.league.joined(pk)

    @rule(pk=st.sampled_from(PKS))
    def hide_or_restore(self, pk: tuple) -> None:
        if pk not in self.model.records:
            return
        if pk in self.model.hidden:
            assert self.index.restore_record(pk)
            self.model.restore(pk)
        else:
            assert self.index.hide_record(pk, reason="test")
            self.model.hide(pk)

    @rule(pk=st.sampled_from(PKS))
    def delete(self, pk: tuple) -> None:
        assert self.index.delete_record(pk) == self.model.delete(pk)
        self.league.forget(pk)

    @rule(before=st.sampled_from([10, 20]))
    def expire(self, before: int) -> None:
        self.index.expire(before)
        self.model.expire(before)
        self.league.expired()

    @invariant()
    def cohorts_match(self) -> None:
        if not hasattr(self, "index"):
            return
        for window in self.league.windows():
            at = window[1]
            for pk in PKS:
                found = self.index.cohort(pk, timestamp=at)
                member = self.league.members.get((window, pk))
                assert (found.tier, found.cohort) == member if found else member is None, (window, pk)
            tiers = {tier for (w, tier) in self.league.open if w == window}
            for tier in range(self.leagues.tiers):
                newest = self.league.open.get((window, tier), (-1, 0))[0]
                for cohort in range(newest + 2):  # one past the newest: empty
                    for mode in ("ORDINAL", "COMPETITION", "DENSE"):
                        got = self.index.cohort(tier=tier, cohort=cohort, timestamp=at, mode=RankMode[mode])
                        expected = self.league.cohort(window, tier, cohort, mode)
                        assert [listed(e) for e in got.entries] == expected, (window, tier, cohort, mode)
                        assert got.total == len(expected)
            assert tiers <= set(range(self.leagues.tiers))

    @invariant()
    def checker_finds_nothing(self) -> None:
        if hasattr(self, "index"):
            assert self.index.check() == []


def run_league_machine(db: Database, examples: int, steps: int, aggregation: str = "BEST") -> None:
    machine = type("LeagueMachine_" + aggregation, (LeagueMachine,), {"db": db, "aggregation": aggregation})
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=examples,
            stateful_step_count=steps,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )


@pytest.mark.parametrize("aggregation", ["BEST", "LATEST", "SUM"])
def test_leagues_match_the_model(tmp_path, aggregation: str) -> None:
    db = open_database(f"lmdb:{tmp_path / 'store'}?durable=false")
    try:
        run_league_machine(db, 30, 30, aggregation)
    finally:
        db.close()


def test_leagues_match_the_model_on_each_store(store_url: str) -> None:
    db = open_database(store_url)
    try:
        run_league_machine(db, 4, 20)
    finally:
        db.close()


def test_tiers_move_by_the_last_cohort_ranks(db: Database, prefix: bytes) -> None:
    """Worked example: cohorts of 3, one up and one down; skipping a window keeps the tier."""
    index = LeaderboardIndex.create(db, prefix, IndexSettings(leagues=Leagues(LEAGUE, 3, 3, 1, 1)))
    index.update_windows(WindowUpdate(specs=[WindowSpec(LEAGUE, 0, 100, 100, 4)]))
    for i in range(6):  # joined in this order: p0-p2 in cohort 0, p3-p5 in cohort 1
        index.add_score(f"p{i}", i, 5)
    first = [index.cohort(f"p{i}", timestamp=5) for i in range(6)]
    expected = [(0, 0, 2), (0, 0, 1), (0, 0, 0), (0, 1, 2), (0, 1, 1), (0, 1, 0)]
    assert [(c.tier, c.cohort, c.entry.rank) for c in first] == expected
    for i in (0, 1, 2, 4, 5):  # p3 sits the second window out
        index.add_score(f"p{i}", 10 - i, 105)
    tiers = {i: index.cohort(f"p{i}", timestamp=105).tier for i in (0, 1, 2, 4, 5)}
    assert tiers == {0: 0, 1: 0, 2: 1, 4: 0, 5: 1}  # the top of each moved up; the bottom stayed at 0
    index.add_score("p3", 1, 205)  # p3's last league window is the first: it was last there
    assert index.cohort("p3", timestamp=205).tier == 0
    index.add_score("p5", 1, 205)  # p5 was second of two in tier 1: demoted
    assert index.cohort("p5", timestamp=205).tier == 0
    index.add_score("p2", 1, 205)  # p2 was first in tier 1: up to tier 2
    assert index.cohort("p2", timestamp=205).tier == 2
    assert index.cohort("nobody", timestamp=205) is None
    page = index.cohort(tier=0, cohort=0, timestamp=5, page=2, size=2)
    assert [(e.pk, e.rank) for e in page.entries] == [(("p0",), 2)] and page.total == 3
    around = index.cohort("p1", timestamp=5, around=(1, 0))
    assert [e.pk for e in around.entries] == [("p2",), ("p1",)]


def test_league_settings_are_checked(db: Database, prefix: bytes) -> None:
    with pytest.raises(InvalidArgument, match="cohort_size"):
        Leagues(LEAGUE, 1)
    with pytest.raises(InvalidArgument, match="exceed the cohort size"):
        Leagues(LEAGUE, 3, 2, 2, 2)
    with pytest.raises(InvalidArgument, match="without groups"):
        IndexSettings(group_size=1, leagues=Leagues(LEAGUE, 3))
    plain = LeaderboardIndex.create(db, prefix, IndexSettings())
    with pytest.raises(FailedPrecondition, match="no leagues"):
        plain.cohort("p")
    index = LeaderboardIndex.create(db, prefix + b"l", IndexSettings(leagues=Leagues(LEAGUE, 3, 2, 1, 1)))
    assert LeaderboardIndex.open(db, prefix + b"l").settings.leagues == Leagues(LEAGUE, 3, 2, 1, 1)
    index.update_windows(WindowUpdate(specs=[WindowSpec(LEAGUE, 0, 100, 100, 1)]))
    with pytest.raises(InvalidArgument, match="not both"):
        index.cohort("p", tier=0, cohort=0, timestamp=5)
    with pytest.raises(InvalidArgument, match="tier"):
        index.cohort(tier=2, cohort=0, timestamp=5)


def _first_scores(index: LeaderboardIndex, name: str, count: int) -> None:
    for i in range(count):
        index.add_score(f"{name}-{i}", i, 5)


def _first_scores_process(store_url: str, prefix: bytes, name: str, count: int, ready, start) -> None:
    db = open_database(store_url)
    try:
        index = LeaderboardIndex.open(db, prefix)
        ready.put(name)
        start.wait(60)
        _first_scores(index, name, count)
    finally:
        db.close()


def test_concurrent_first_scores_never_overfill_a_cohort(store_url: str, db: Database, prefix: bytes) -> None:
    """Six threads here and two processes each score 12 new records into one league window at
    once: every cohort of the tier holds 5 records but the newest, and every record joined once."""
    size, count = 5, 12
    index = LeaderboardIndex.create(db, prefix, IndexSettings(leagues=Leagues(LEAGUE, size)))
    index.update_windows(WindowUpdate(specs=[WindowSpec(LEAGUE, 0, 100, 100, 1)]))
    context = multiprocessing.get_context("spawn")  # an LMDB environment must not cross a fork
    ready, start = context.Queue(), context.Event()
    names = [f"p{n}" for n in range(2)]
    processes = [
        context.Process(target=_first_scores_process, args=(store_url, prefix, name, count, ready, start))
        for name in names
    ]
    threads = [threading.Thread(target=_first_scores, args=(index, f"t{t}", count)) for t in range(6)]
    for process in processes:
        process.start()
    try:
        for _ in processes:
            ready.get(timeout=60)
        start.set()
        for thread in threads:
            thread.start()
        for worker in [*threads, *processes]:
            worker.join(120)
    finally:
        start.set()
        for process in processes:
            if process.is_alive():
                process.kill()
    assert [p.exitcode for p in processes] == [0, 0]
    everyone = [f"{name}-{i}" for name in [*names, *(f"t{t}" for t in range(6))] for i in range(count)]
    sizes = []
    while (found := index.cohort(tier=0, cohort=len(sizes), timestamp=5)).total:
        sizes.append(found.total)
    assert sum(sizes) == len(everyone) == 96 and sizes == [size] * (96 // size) + [96 % size]
    assert {index.cohort(pk, timestamp=5).cohort for pk in everyone} == set(range(len(sizes)))
    assert index.check() == []


def test_league_join_read_rounds(db: Database, prefix: bytes) -> None:
    """Where reads cost a round trip: a score into a league window costs no more rounds than
    one elsewhere once joined; a first join adds one round (the tier's newest cohort), and one
    more when the record has a league history (its last cohort, for its tier)."""
    if not db.batched_reads:
        pytest.skip("this store's reads cost no round trip")
    plain = LeaderboardIndex.create(db, prefix + b"p", IndexSettings())
    index = LeaderboardIndex.create(db, prefix, IndexSettings(leagues=Leagues(LEAGUE, 50, 3, 5, 5)))
    update = WindowUpdate(specs=[WindowSpec(LEAGUE, 0, 100, 100, 2), WindowSpec(2, 0, 1000, 1000, 1)])
    for each in (plain, index):
        each.update_windows(update)
        for i in range(40):
            each.add_score(f"p{i}", i, 5)

    def rounds(call) -> int:
        before = db.stats.snapshot()
        call()
        return db.stats.snapshot()["read_rounds"] - before["read_rounds"]

    assert rounds(lambda: index.add_score("p1", 100, 6)) == rounds(lambda: plain.add_score("p1", 100, 6))
    new_plain = rounds(lambda: plain.add_score("new", 1, 6))
    assert rounds(lambda: index.add_score("new", 1, 6)) - new_plain == 1
    moved_plain = rounds(lambda: plain.add_score("p2", 1, 105))
    assert rounds(lambda: index.add_score("p2", 1, 105)) - moved_plain == 2


def test_the_checker_finds_damaged_cohorts(db: Database, prefix: bytes) -> None:
    index = LeaderboardIndex.create(db, prefix, IndexSettings(leagues=Leagues(LEAGUE, 2)))
    index.update_windows(WindowUpdate(specs=[WindowSpec(LEAGUE, 0, 100, 100, 1)]))
    for i in range(3):
        index.add_score(f"p{i}", i, 5)
    assert index.check() == []
    window = index.directory().of_type(LEAGUE)[0]
    layout = index.layout
    row = db.read(lambda tr: tr.get_range_startswith(layout.cohort_prefix(window.key_bytes, 0, 0)))[0][0]
    db.run(lambda tr: tr.clear(row))
    assert any("cohort row is missing" in problem for problem in index.check())
    db.run(lambda tr: tr.set(row, b""))
    stray = layout.cohort_prefix(window.key_bytes, 0, 1) + row[len(layout.cohort_prefix(window.key_bytes, 0, 0)) :]
    db.run(lambda tr: tr.set(stray, b""))
    assert any("membership says (0, 0)" in problem for problem in index.check())
    db.run(lambda tr: tr.clear(stray))
    db.run(lambda tr: tr.set(layout.open_cohort_key(window.key_bytes, 0), fdb.tuple.pack((1, 3))))
    assert any("counts 3 members" in problem for problem in index.check())


def test_a_dump_restores_the_leagues(db: Database, prefix: bytes) -> None:
    """A restored index has the same members, cohorts, ranks and league history: its next
    window's tiers come out the same as the source's."""
    source = LeaderboardIndex.create(db, prefix + b"s", IndexSettings(leagues=Leagues(LEAGUE, 4, 3, 1, 1)))
    source.update_windows(WindowUpdate(specs=[WindowSpec(LEAGUE, 0, 100, 100, 3)]))
    rng = random.Random(4)
    for _ in range(60):
        source.add_score(f"r{rng.randrange(25)}", rng.randrange(50), rng.randrange(200))
    source.hide_record("r3", reason="test")
    restore_parts(db, prefix + b"t", dump_parts(db, source, pb.DumpHeader(index="leagues")))
    copy = LeaderboardIndex.open(db, prefix + b"t")
    assert copy.check() == [] and copy.settings == source.settings
    layout = source.layout
    assert db.read(lambda tr: [(k[len(prefix) + 1 :], v) for k, v in tr.get_range_startswith(layout.leagues)]) == (
        db.read(lambda tr: [(k[len(prefix) + 1 :], v) for k, v in tr.get_range_startswith(copy.layout.leagues)])
    )
    for at in (0, 100):
        for pk in (f"r{i}" for i in range(25)):
            assert copy.cohort(pk, timestamp=at) == source.cohort(pk, timestamp=at)
    for index in (source, copy):  # the third window's tiers, from the second's ranks
        for i in range(25):
            index.add_score(f"r{i}", i, 250)
    assert [copy.cohort(f"r{i}", timestamp=250) for i in range(25)] == [
        source.cohort(f"r{i}", timestamp=250) for i in range(25)
    ]


# -- every door ---------------------------------------------------------------------------------


def _door_model() -> tuple[Model, LeagueModel]:
    model = Model("BEST", high_score_first=True)
    model.update_windows(True, [(LEAGUE, 0, 100), (LEAGUE, 100, 200)])
    return model, LeagueModel(model, LEAGUE, 3, 3, 1, 1)


def _write_both(write, model: Model, league: LeagueModel, pk: str, score: int, ts: int) -> None:
    write(pk, score, ts)
    model.add((pk,), [((), score, ts, ())])
    league.joined((pk,))


def _cohort_json(web: httpx.Client, path: str, **params) -> httpx.Response:
    return web.get(f"/v1/indexes/lg{path}", params=params)


def test_leagues_through_every_door(server, client, tmp_path) -> None:
    """Created through gRPC, written through the client; each record's cohort and every cohort
    read back through the blocking and asyncio clients, REST and the CLI, against the model."""
    from fdb_leaderboard.http import HttpServer

    assert client.create_index("lg", leagues=Leagues(LEAGUE, 3, 3, 1, 1), all_time=False)
    client.update_windows("lg", specs=[(LEAGUE, 0, 100, 100, 2)], all_time=False)
    model, league = _door_model()
    for i in range(7):
        _write_both(lambda pk, s, ts: client.add_score("lg", pk, s, ts), model, league, f"p{i}", i % 4, 5)
    for i in range(7):
        _write_both(lambda pk, s, ts: client.add_score("lg", pk, s, ts), model, league, f"p{i}", 10 - i, 150)
    client.set_metadata("lg", "p2", {"name": "Two"})
    front = HttpServer(server, "127.0.0.1:0").start()
    seen = {}
    try:
        with httpx.Client(base_url=front.url, timeout=20) as web:
            for window in ((LEAGUE, 0, 100), (LEAGUE, 100, 200)):
                at = window[1] + 5
                for i in range(8):
                    pk = f"p{i}"
                    member = league.members.get((window, (pk,)))
                    found = client.cohort("lg", pk, timestamp=at)
                    web_found = _cohort_json(web, f"/records/{pk}/cohort", at=at)
                    if member is None:
                        assert found is None and web_found.status_code == 404
                        continue
                    expected = league.cohort(window, *member)
                    assert (found.tier, found.cohort) == member
                    assert [listed(e) for e in found.entries] == expected
                    assert listed(found.entry) == next(e for e in expected if e.pk == (pk,))
                    plain = web_found.json()
                    assert (plain["tier"], plain["cohort"], int(plain["total"])) == (*member, len(expected))
                    assert [(e["pk"], e["rank"]) for e in plain["entries"]] == [
                        ([pk_[0]], e.rank) for e in expected for pk_ in [e.pk]
                    ]
                    assert plain["entry"]["pk"] == [pk]
                    seen[(pk, at)] = found
                    around = client.cohort("lg", pk, timestamp=at, around=(1, 1))
                    mine = [e.pk for e in expected].index((pk,))
                    assert [listed(e) for e in around.entries] == expected[max(0, mine - 1) : mine + 2]
                for (w, tier), (newest, _) in league.open.items():
                    if w != window:
                        continue
                    for number in range(newest + 1):
                        expected = league.cohort(window, tier, number, "COMPETITION")
                        got = client.cohort("lg", tier=tier, cohort=number, timestamp=at, mode="COMPETITION")
                        assert [listed(e) for e in got.entries] == expected
                        paged = _cohort_json(web, f"/cohorts/{tier}/{number}", at=at, page=2, size=2).json()
                        assert [e["rank"] for e in paged["entries"]] == [
                            e.rank for e in league.cohort(window, tier, number)[2:4]
                        ]
            named = client.cohort("lg", "p2", timestamp=5)
            assert next(e for e in named.entries if e.pk == ("p2",)).metadata == {"name": "Two"}
            assert _cohort_json(web, "/records/p1/cohort", at=5, size=5000).status_code == 400
            client.create_index("plain")
            refused = web.get("/v1/indexes/plain/records/p1/cohort")
            # Created and read through the call-and-answer routes too (protobuf JSON).
            options = {"leagues": {"window_type": 1, "cohort_size": 2, "tiers": 2, "promote": 1, "demote": 1}}
            assert web.post("/v1/CreateIndex", json={"name": "viaweb", "options": options}).status_code == 200
            assert next(i for i in client.list_indexes() if i.name == "viaweb").options.leagues.cohort_size == 2
            body = {"index": "lg", "window": {"type": LEAGUE, "timestamp": 5}, "tier": 0, "cohort": 0}
            called = web.post("/v1/GetCohort", json=body).json()
            assert [e["rank"] for e in called["entries"]] == [e.rank for e in league.cohort((LEAGUE, 0, 100), 0, 0)]
            assert refused.status_code >= 400 and "no leagues" in refused.text
    finally:
        front.stop()
    assert asyncio.run(_async_cohorts(server.address, list(seen))) == list(seen.values())
    with pytest.raises(grpc.RpcError) as caught:
        client.cohort("plain", "p1")
    assert caught.value.code() is grpc.StatusCode.FAILED_PRECONDITION
    with pytest.raises(InvalidArgument):
        client.cohort("lg", "p1", tier=0, cohort=0)


async def _async_cohorts(address: str, asked: list[tuple[str, int]]) -> list:
    async with AsyncLeaderboardClient(address) as async_client:
        return [await async_client.cohort("lg", pk, timestamp=at) for pk, at in asked]


def test_leagues_in_the_cli(server) -> None:
    def cli(*args: object, code: int = 0) -> str:
        result = CliRunner().invoke(main, ["--server", server.address, *map(str, args)], catch_exceptions=False)
        assert result.exit_code == code, result.output
        return result.output

    cli("index", "create", "cl", "--league-type", 1, "--cohort-size", 2, "--tiers", 2, "--promote", 1, "--demote", 1)
    listed_indexes = json.loads(cli("index", "list", "--json"))
    assert next(i for i in listed_indexes if i["name"] == "cl")["leagues"] == {
        "window_type": 1, "cohort_size": 2, "tiers": 2, "promote": 1, "demote": 1
    }  # fmt: skip
    assert "leagues on type 1: cohorts of 2" in cli("index", "list")
    with LeaderboardClient(server.address) as lb:
        lb.update_windows("cl", specs=[(1, 0, 100, 100, 1)])
        for i, score in enumerate((5, 9, 7)):
            lb.add_score("cl", f"p{i}", score, 5)
    mine = json.loads(cli("cohort", "cl", "p0", "--at", 5, "--json"))
    assert (mine["tier"], mine["cohort"], mine["total"]) == (0, 0, 2)
    assert [(e["pk"], e["rank"]) for e in mine["entries"]] == [(["p1"], 0), (["p0"], 1)]
    shown = cli("cohort", "cl", "--tier", 0, "--cohort", 1, "--at", 5)
    assert shown.splitlines()[0].startswith("tier 0, cohort 1: 1 record") and "#1" in shown and "p2" in shown
    assert "joined no cohort" in cli("cohort", "cl", "nobody", "--at", 5)
    assert "not both" in cli("cohort", "cl", "p0", "--tier", 0, "--cohort", 0, code=2)
    assert "--league-type" in cli("index", "create", "bad", "--tiers", 3, code=2)
    # A window file's leagues section must be the index's (leagues are fixed at creation).
    same = "leagues: {window_type: 1, cohort_size: 2, tiers: 2, promote: 1, demote: 1}\nspecs: []\n"
    assert (
        "added 0"
        in CliRunner().invoke(main, ["--server", server.address, "windows", "apply", "cl", "-"], input=same).output
    )
    other = same.replace("cohort_size: 2", "cohort_size: 3")
    refused = CliRunner().invoke(main, ["--server", server.address, "windows", "apply", "cl", "-"], input=other)
    assert refused.exit_code == 1 and "nothing was applied" in refused.output
    assert "exceed" in cli(
        "index",
        "create",
        "bad",
        "--league-type",
        1,
        "--cohort-size",
        2,
        "--tiers",
        2,
        "--promote",
        2,
        "--demote",
        1,
        code=2,
    )
