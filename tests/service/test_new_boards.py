"""A board that works from its first score, and "today" that is today.

- A new index ranks all-time from creation, and keeps the calendar boards it was created with
  (today's window from the start): create, add, top in three commands.
- Windows added over stored scores are filled by the server itself, in the background, in
  bounded steps whose progress ``windows show`` and a refused read report; a bulk load's
  windows are left to the load while it holds them.
- A window type read without a time reads the window holding now (the index's clock, in its
  timebase), not the one holding the latest score: a score timestamped in the future moves no
  one's "today".  Listings name the window they read.

Calendar periods are checked against zoneinfo's own arithmetic, independently of the index.
"""

from __future__ import annotations

import datetime as dt
import time
from zoneinfo import ZoneInfo

import httpx
import pytest
from click.testing import CliRunner

from fdb_leaderboard.cli import main
from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.errors import WindowNotFound, WindowNotReady
from fdb_leaderboard.http import HttpServer
from fdb_leaderboard.index import Entry, IndexSettings, LeaderboardIndex, WindowUpdate
from fdb_leaderboard.index.build import WindowsBuild
from fdb_leaderboard.service import ServerSettings
from fdb_leaderboard.store import Database

PARIS = ZoneInfo("Europe/Paris")
DAY = 86_400


def paris_period(at: float, period: str) -> tuple[int, int]:
    """[start, end) of the Paris day, ISO week or month holding ``at``, by zoneinfo's arithmetic."""
    day = dt.datetime.fromtimestamp(at, PARIS).date()
    if period == "daily":
        first, after = day, day + dt.timedelta(days=1)
    elif period == "weekly":
        first = day - dt.timedelta(days=day.weekday())
        after = first + dt.timedelta(days=7)
    else:
        first = day.replace(day=1)
        after = (first + dt.timedelta(days=32)).replace(day=1)

    def midnight(date: dt.date) -> int:
        return int(dt.datetime.combine(date, dt.time(), PARIS).timestamp())

    return midnight(first), midnight(after)


def wait_for(condition, what: str, seconds: float = 120.0):
    """``condition()``'s first true value, polled (the condition, not a guess of the time it takes)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


# -- through every door ----------------------------------------------------------------------


def test_create_add_top_in_three_commands(server_place) -> None:
    server = server_place.start()
    try:
        runner = CliRunner()

        def cli(*args: str) -> str:
            result = runner.invoke(main, ["--server", server.address, *args], catch_exceptions=False)
            assert result.exit_code == 0, result.output
            return result.output

        created = cli("index", "create", "fresh", "--daily", "--weekly", "--monthly", "--timezone", "Europe/Paris")
        assert created == "index fresh created (all-time, daily, weekly, monthly boards)\n"
        before = time.time()
        cli("add", "fresh", "alice", "--score", "5")
        assert cli("top", "fresh").split()[:3] == ["#1", "alice", "5"]
        with LeaderboardClient(server.address) as lb:
            for window_type, period in ((1, "daily"), (2, "weekly"), (3, "monthly")):
                assert cli("top", "fresh", "--type", str(window_type)).split()[:3] == ["#1", "alice", "5"]
                listing = lb.stub.Top(lb_top_request("fresh", window_type))
                assert [e.score.int for e in listing.entries] == [5]
                expected = {paris_period(before, period), paris_period(time.time(), period)}  # midnight may pass
                assert (listing.window.start, listing.window.end) in expected
            policy = lb.list_indexes()[0].maintenance
            assert [(c.type, c.period, c.timezone) for c in policy.calendar] == [
                (1, "daily", "Europe/Paris"),
                (2, "iso-weekly", "Europe/Paris"),
                (3, "monthly", "Europe/Paris"),
            ]
            assert lb.create_index("plain", all_time=False) is True
            assert not lb.list_windows("plain").windows
    finally:
        server.stop(grace=1)


def lb_top_request(index: str, window_type: int):
    from fdb_leaderboard.proto import service_pb2 as pb

    return pb.TopRequest(index=index, n=10, window=pb.WindowSelector(type=window_type))


def test_windows_over_stored_scores_are_filled_by_the_server(server_place) -> None:
    server = server_place.start(ServerSettings(maintain_every=3600, read_processes=0))  # passes when woken
    try:
        with LeaderboardClient(server.address) as lb:
            lb.create_index("game")
            scores = {f"p{i:04d}": (i * 7919) % 1000 for i in range(1500)}
            lb.bulk_load("game", [(pk, [(score, 100 + i % 50)]) for i, (pk, score) in enumerate(scores.items())])
            added = lb.update_windows("game", windows=[(1, 100, 125), (1, 125, 150)])
            assert [w.start for w in added.filling] == [100, 125]  # over stored scores: not served yet
            wait_for(lambda: not any(w.filling for w in lb.list_windows("game").windows), "the background fill")
            for start, end in ((100, 125), (125, 150)):
                inside = {pk: s for i, (pk, s) in enumerate(scores.items()) if start <= 100 + i % 50 < end}
                best = sorted(inside, key=lambda pk: (-inside[pk], 100 + list(scores).index(pk) % 50, pk))[:10]
                assert [e.pk[0] for e in lb.top("game", 10, 1, start)] == best
            assert lb.verify("game") == []
        exposition = server.metrics.exposition().decode()
        assert 'fdb_leaderboard_fill_records_total{index="game"} 1500.0' in exposition
        assert "fdb_leaderboard_maintenance_last_pass_timestamp_seconds" in exposition
    finally:
        server.stop(grace=1)


def test_a_window_being_filled_says_how_far_it_got(server_place) -> None:
    server = server_place.start(ServerSettings(maintain_every=0))  # this test fills step by step itself
    try:
        with LeaderboardClient(server.address) as lb:
            lb.create_index("game")
            lb.write_batch("game", [(f"p{i:03d}", [(i, 10)]) for i in range(450)])
            lb.update_windows("game", windows=[(1, 0, 100)])
            index = server.catalog.get("game")
            shown = []
            while True:
                window = next(w for w in lb.list_windows("game").windows if w.type == 1)
                if not window.filling:
                    break
                shown.append((window.records_processed, window.entries_ranked, window.records_total))
                with pytest.raises(Exception, match=r"still being filled .*(phase 1 of 2|phase 2 of 2)"):
                    lb.top("game", 3, 1, 10)
                index.fill_step(max_records=200, max_entries=200)
            assert shown[0] == (0, 0, 450) and (200, 0, 450) in shown and (400, 0, 450) in shown
            assert any(ranked > 0 for _, ranked, _ in shown)  # phase 2, ranking in steps of 200
            runner = CliRunner()
            lb.update_windows("game", windows=[(1, 0, 50)])
            shown_line = runner.invoke(main, ["--server", server.address, "windows", "show", "game"]).output
            assert "type 1 [0, 50)  (filling: 0 of 450 records in)" in shown_line
            assert [e.pk[0] for e in lb.top("game", 3, 1, 10)] == ["p449", "p448", "p447"]
    finally:
        server.stop(grace=1)


# -- in the index, on every store -----------------------------------------------------------------


def test_a_bulk_load_holds_its_windows_from_the_background_fill(db: Database, prefix: bytes) -> None:
    index = LeaderboardIndex.create(db, prefix, IndexSettings())
    index.update_windows(WindowUpdate(windows=[(1, 0, 100)]))
    clock = [1_000_000.0]
    index.clock = lambda: clock[0]
    seen = []

    def records():
        for i in range(60):
            if i in (25, 45):  # a background pass while the load runs leaves its windows alone
                seen.append(index.fill_step(respect_holds=True))
                clock[0] += 50  # time passes; the load renews its hold as it goes
            yield (f"p{i:02d}",), [Entry(i, 5)]

    assert index.bulk_load(records(), batch_size=10) == 60
    assert all(step.done and not step.records_processed and not step.entries_ranked for step in seen)
    assert [e.pk[0] for e in index.top(3, 1, 5)] == ["p59", "p58", "p57"]
    # A load that died leaves its windows held until the hold runs out; then a background pass
    # finishes them.
    index.update_windows(WindowUpdate(windows=[(2, 1000, 2000)]))  # after every score: empty, complete
    dead = WindowsBuild.start(index, lambda ops: ops.filler.empty_windows(), from_records=False)
    assert [window.type for window in dead.windows.values()] == [2]
    dead.close()  # its process is gone: the hold is no longer renewed
    index.add_score(("late",), 3, 1500)
    assert index.fill_step(respect_holds=True) == index.fill_step(respect_holds=True)  # nothing it may do
    with pytest.raises(WindowNotReady):
        index.top(3, 2, 1500)
    clock[0] += 121
    while not index.fill_step(respect_holds=True).done:
        pass
    assert [e.pk[0] for e in index.top(3, 2, 1500)] == ["late"]
    assert index.check() == []


def test_a_window_type_without_a_time_reads_the_window_holding_now(db: Database, prefix: bytes) -> None:
    index = LeaderboardIndex.create(db, prefix, IndexSettings())
    index.update_windows(WindowUpdate(windows=[(1, 0, 100), (1, 100, 200), (1, 200, 300)]))
    index.clock = lambda: 150.5
    index.add_score(("today",), 10, 150)
    index.add_score(("tomorrow",), 99, 250)  # a score timestamped in the future: tomorrow's board only
    today = index.top(5, 1)
    assert [e.pk[0] for e in today] == ["today"] and (today.window.start, today.window.end) == (100, 200)
    assert index.count(1) == 1 and index.rank(("today",), 1) == 0
    page = index.page(1, 10, 1)
    assert page.total == 1 and (page.window.start, page.window.end) == (100, 200)
    index.timebase = 1000  # an index whose times are milliseconds: now is 150,500
    with pytest.raises(WindowNotFound, match=r"no window of type 1 contains now \(150500\)"):
        index.top(5, 1)
    index.timebase = 1
    index.update_windows(WindowUpdate(windows=[(2, 0, 300)]))
    index.fill()
    index.clock = lambda: 10.0
    assert [e.pk[0] for e in index.top(5, 2)] == ["tomorrow", "today"]
    index.update_windows(WindowUpdate(windows=[(3, 0, 300)]))  # over stored scores: filling
    with pytest.raises(WindowNotReady, match="phase 1 of 2, 0 of 2 records put in"):
        index.top(5, 3)


def test_rest_reads_today_by_default_and_names_the_window(server_place) -> None:
    server = server_place.start()
    http = HttpServer(server, "127.0.0.1:0").start()
    try:
        with LeaderboardClient(server.address) as lb:
            lb.create_index("game", boards=["daily"], timezone="Europe/Paris")
            now = time.time()
            lb.add_score("game", "today", 10, int(now))
            lb.add_score("game", "tomorrow", 99, int(now) + DAY)  # held by tomorrow's window, already added
        with httpx.Client(base_url=http.url) as web:
            before = time.time()
            answer = web.get("/v1/indexes/game/windows/1/top").json()
            days = {paris_period(before, "daily"), paris_period(time.time(), "daily")}
            assert [e["pk"] for e in answer["entries"]] == [["today"]]
            assert (answer["window"]["start"], answer["window"]["end"]) in days and answer["window"]["type"] == 1
            assert web.get("/v1/indexes/game/windows/1/top", params={"at": "now"}).json() == answer
            latest = web.get("/v1/indexes/game/windows/1/top", params={"at": "latest"}).json()
            assert [e["pk"] for e in latest["entries"]] == [["tomorrow"]]
            assert latest["window"]["start"] == answer["window"]["end"]
            rank = web.get("/v1/indexes/game/windows/1/records/today/rank").json()
            assert rank["rank"] == 0 and rank["window"] == answer["window"]
            everything = web.get("/v1/indexes/game/windows/0/top").json()
            assert [e["pk"] for e in everything["entries"]] == [["tomorrow"], ["today"]]
            assert everything["window"]["type"] == 0
    finally:
        http.stop(1)
        server.stop(grace=1)
