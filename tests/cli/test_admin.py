"""The ``fdb-leaderboard`` admin tool against a real server, the maintenance job over a
simulated clock, and the window-update file parser.

Commands run in-process through click's CliRunner with ``--server ADDRESS``; the results
are checked through the Python client.  Calendar windows are checked to be local
midnights in Europe/Paris, across the 25-hour day of 2026-10-25 (the end of summer time).
"""

from __future__ import annotations

import datetime as dt
import json
import random
from zoneinfo import ZoneInfo

import pytest

from fdb_leaderboard import __version__, formats
from fdb_leaderboard.cli.records_file import RecordsFileError, read_records
from fdb_leaderboard.cli.spec_file import load_window_update, parse_window_update
from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.errors import InvalidArgument
from fdb_leaderboard.index.directory import Rebuild, WindowSpec, WindowUpdate
from fdb_leaderboard.proto import service_pb2 as pb
from fdb_leaderboard.service import Server
from tests.conftest import Cli

DAY = 86_400
HOUR = 3_600
PARIS = ZoneInfo("Europe/Paris")
# Hand-checked instants: local midnights in Paris (CEST is UTC+2 until 2026-10-25 03:00, then CET UTC+1).
OCT_19 = 1_792_360_800  # Monday 2026-10-19 00:00 +02:00
OCT_25 = 1_792_879_200  # Sunday 2026-10-25 00:00 +02:00: this local day lasts 25 hours
OCT_26 = 1_792_969_200  # Monday 2026-10-26 00:00 +01:00
OCT_1 = 1_790_805_600  # 2026-10-01 00:00 +02:00
NOV_1 = 1_793_487_600  # 2026-11-01 00:00 +01:00
JAN_1_2026_UTC = 1_767_225_600


pytestmark = pytest.mark.usefixtures("no_unexpected_server_errors")


def write(path, text: str):
    path.write_text(text)
    return path


def windows_of(lb: LeaderboardClient, index: str, window_type: int | None = None) -> list[tuple[int, int, int]]:
    return [
        (w.type, w.start, w.end) for w in lb.list_windows(index).windows if window_type is None or w.type == window_type
    ]


def local(ts: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ts, PARIS)


# -- indexes, windows, sub-directories ------------------------------------------------------------


def test_index_create_and_list(cli: Cli, client: LeaderboardClient) -> None:
    assert cli("index", "create", "game").output == "index game created (all-time board)\n"
    assert cli("index", "create", "game").output == "index game already exists with these options and boards\n"
    result = cli("index", "create", "game", "--low-score-first", code=1)
    assert "ALREADY_EXISTS: index 'game' exists with other options" in result.output
    cli(
        "index",
        "create",
        "points",
        "--aggregation",
        "SUM",
        "--hash",
        "CRC",
        "--group-size",
        "1",
        "--context-size",
        "2",
        "--low-score-first",
    )
    cli("index", "create", "ref", "--reference-layout", "--aggregation", "LATEST")
    assert "is invalid" in cli("index", "create", "bad name", code=1).output
    assert "Invalid value for '--aggregation'" in cli("index", "create", "x", "--aggregation", "MAX", code=2).output
    assert cli("index", "list").output.splitlines() == [
        f"game: BEST, hash MURMUR3, group size 0, context size 0, high score first; format {formats.NEWEST_INDEX}",
        f"points: SUM, hash CRC, group size 1, context size 2, low score first; format {formats.NEWEST_INDEX}",
        f"ref: LATEST, hash JDK, group size 0, context size 0, high score first; format {formats.NEWEST_INDEX}",
        f"store format {formats.NEWEST_STORE}; 1 live process of release {__version__}",
    ]
    info = {i.name: i.options for i in client.list_indexes()}
    assert info["game"].count_duplicates and not info["ref"].count_duplicates


CALENDAR_SPEC = """\
high_score_first: true
update_timestamp: 1792300000
specs:
  - {type: 4, base: 1792360800, increment: 3600, duration: 7200, count: 3}
windows:
  - {type: 9, start: 1790805600, end: 1793487600}
calendar:
  - {type: 1, period: daily, timezone: Europe/Paris, start: 2026-10-19, count: 14}
  - {type: 2, period: iso-weekly, timezone: Europe/Paris, start: 2026-10-21, count: 2}
  - {type: 3, period: monthly, timezone: Europe/Paris, start: 2026-10-15, count: 3}
"""


def test_windows_apply_calendar_periods_across_dst(cli: Cli, client: LeaderboardClient, tmp_path) -> None:
    cli("index", "create", "game", "--no-all-time")  # the file adds the all-time window
    spec = write(tmp_path / "windows.yaml", CALENDAR_SPEC)
    result = cli("windows", "apply", "game", spec)
    lines = result.output.splitlines()
    assert lines[0] == "added 24, deleted 0, filling 0"  # all-time + 3 + 1 + 14 + 2 + 3
    # Keys in request order: all-time, specs, explicit windows, then calendar periods.
    assert lines[1] == "  key    0  all-time"
    assert lines[2] == f"  key    1  type 4 [{OCT_19}, {OCT_19 + 2 * HOUR})"
    assert lines[5] == f"  key    4  type 9 [{OCT_1}, {NOV_1})"
    assert lines[6] == f"  key    5  type 1 [{OCT_19}, {OCT_19 + DAY})"

    listing = client.list_windows("game")
    assert listing.exists and listing.high_score_first and listing.update_timestamp == 1_792_300_000
    daily = windows_of(client, "game", 1)
    assert len(daily) == 14
    assert daily[0] == (1, OCT_19, OCT_19 + DAY)
    assert (1, OCT_25, OCT_26) in daily and OCT_26 - OCT_25 == 25 * HOUR
    for (_, start, end), following in zip(daily, [*daily[1:], None], strict=True):
        assert local(start).time() == dt.time(0) and local(end).time() == dt.time(0)
        assert local(end).date() - local(start).date() == dt.timedelta(days=1)
        assert end - start == (25 * HOUR if start == OCT_25 else DAY)
        if following is not None:
            assert following[1] == end
    assert local(daily[-1][1]).date() == dt.date(2026, 11, 1)

    weekly = windows_of(client, "game", 2)
    assert weekly == [(2, OCT_19, OCT_19 + 7 * DAY + HOUR), (2, OCT_19 + 7 * DAY + HOUR, OCT_19 + 14 * DAY + HOUR)]
    assert all(local(s).weekday() == 0 and local(s).time() == dt.time(0) for _, s, _ in weekly)
    monthly = windows_of(client, "game", 3)
    assert monthly[0] == (3, OCT_1, NOV_1) and NOV_1 - OCT_1 == 31 * DAY + HOUR
    assert [(local(s).date(), local(e).date()) for _, s, e in monthly] == [
        (dt.date(2026, 10, 1), dt.date(2026, 11, 1)),
        (dt.date(2026, 11, 1), dt.date(2026, 12, 1)),
        (dt.date(2026, 12, 1), dt.date(2027, 1, 1)),
    ]
    assert [e - s for _, s, e in monthly[1:]] == [30 * DAY, 31 * DAY]
    assert windows_of(client, "game", 4) == [(4, OCT_19 + i * HOUR, OCT_19 + i * HOUR + 2 * HOUR) for i in range(3)]
    assert windows_of(client, "game", 9) == [(9, OCT_1, NOV_1)]

    # Scores land in local days: 23:30 on the 25th (22:30 UTC) is still the 25th in Paris.
    client.add_score("game", ("late",), 5, OCT_26 - 30 * 60)
    client.add_score("game", ("early",), 7, OCT_26)
    assert [e.pk for e in client.top("game", 5, 1, OCT_25)] == [("late",)]
    assert [e.pk for e in client.top("game", 5, 1, OCT_26)] == [("early",)]
    assert [e.pk for e in client.top("game", 5, 2, OCT_25)] == [("late",)]
    assert [e.pk for e in client.top("game", 5, 2, OCT_26 + 7 * DAY - 1)] == [("early",)]
    assert [e.pk for e in client.top("game", 5, 3, OCT_25)] == [("early",), ("late",)]

    # Applying the same file again adds nothing; windows show lists everything.
    again = cli("windows", "apply", "game", spec)
    assert again.output.splitlines()[0] == "added 0, deleted 0, filling 0"
    shown = cli("windows", "show", "game").output.splitlines()
    assert shown[0] == "game: high score first, 24 windows"
    assert shown[1] == "  key    0  all-time"
    assert f"  key    5  type 1 [{OCT_19}, {OCT_19 + DAY})" in shown
    assert f"  key   11  type 1 [{OCT_25}, {OCT_26})" in shown
    assert shown[-1] == f"latest indexed timestamp: {OCT_26}"


def test_windows_apply_json_milliseconds_delete_before_and_filling(
    cli: Cli, client: LeaderboardClient, tmp_path
) -> None:
    cli("index", "create", "ms", "--low-score-first", "--no-all-time", "--timebase", "milliseconds")  # nlevels 3
    spec = {
        "high_score_first": False,
        "timebase": "milliseconds",
        "nlevels": 3,
        "calendar": [{"type": 1, "period": "daily", "timezone": "Europe/Paris", "start": "2026-10-25", "count": 2}],
    }
    cli("windows", "apply", "ms", write(tmp_path / "w.json", json.dumps(spec)))
    assert windows_of(client, "ms", 1) == [
        (1, OCT_25 * 1000, OCT_26 * 1000),
        (1, OCT_26 * 1000, (OCT_26 + DAY) * 1000),
    ]
    assert {w.nlevels for w in client.list_windows("ms").windows} == {3}
    client.add_score("ms", ("a",), 3, OCT_25 * 1000 + 5)
    # A new window over stored scores is filled by `fill`; until then it is listed as filling.
    spec = {
        "high_score_first": False,
        "windows": [{"type": 5, "start": 0, "end": (OCT_26 + DAY) * 1000}],
        "delete_before": OCT_26 * 1000,
        "all_time": True,
    }
    result = cli("windows", "apply", "ms", write(tmp_path / "w2.json", json.dumps(spec)))
    assert result.output.splitlines()[0] == "added 1, deleted 1, filling 1"
    assert "run `fdb-leaderboard fill ms`" in result.output
    assert "(filling: 0 of 1 records in)" in cli("windows", "show", "ms").output
    assert windows_of(client, "ms", 1) == [(1, OCT_26 * 1000, (OCT_26 + DAY) * 1000)]
    filled = cli("fill", "ms", "--batch", "1")
    assert filled.output == "every window is complete\n"  # (the progress bar is for terminals)
    assert [e.pk for e in client.top("ms", 5, 5, 0)] == [("a",)]
    assert "(filling" not in cli("windows", "show", "ms").output


def test_subdir_expire_keep_ahead_trim_fill_verify(
    cli: Cli, client: LeaderboardClient, server: Server, tmp_path
) -> None:
    cli("index", "create", "games", "--group-size", "1", "--no-all-time")
    assert cli("windows", "show", "games").output == "games: no window update yet\n"
    spec = write(
        tmp_path / "w.yaml",
        "high_score_first: true\nspecs:\n  - {type: 1, base: 0, increment: 86400, duration: 86400, count: 3}\n",
    )
    cli("windows", "apply", "games", spec)
    assert cli("subdir", "games", "golf", "--low-score-first").output == "group golf of games: low score first\n"
    assert cli("subdir", "games", "[7]", "--high-score-first").output == "group [7] of games: high score first\n"
    assert "Missing option '--high-score-first" in cli("subdir", "games", "golf", code=2).output
    assert (
        "INVALID_ARGUMENT: a sub-directory needs a group of 1"
        in cli("subdir", "games", '["a", "b"]', "--high-score-first", code=1).output
    )
    several = cli("subdir", "games", "a", "b", "--high-score-first", code=2).output
    assert 'one GROUP, not 2 words: several elements go in one JSON list, e.g. \'["a", "b"]\'' in several
    assert client.sub_directories("games") == {("golf",): False, (7,): True}

    for pk, score, ts in [("ann", 72, 100), ("ben", 68, 200), ("ann", 75, 300), ("ann", 70, DAY + 5)]:
        client.add_score("games", (pk,), score, ts, group=("golf",))
    client.add_score("games", ("ann",), 1500, 50, group=(7,))
    shown = cli("windows", "show", "games").output
    assert "sub-directory golf: low score first" in shown and "sub-directory [7]: high score first" in shown
    assert f"latest indexed timestamp: {DAY + 5}" in shown

    # trim: ann's 75 (day 0) is nobody's value; her 72 is day 0's value.
    assert cli("trim", "games", "--before", DAY).output == "removed 1 entry\n"
    assert f"entries trimmed before: {DAY}" in cli("windows", "show", "games").output
    # expire day 0 (ends at DAY) and then trim what only it needed (ann's 72).
    result = cli("expire", "games", "--before", DAY)
    assert result.output.splitlines() == ["deleted 1 window", f"  key    1  type 1 [0, {DAY})"]
    assert cli("expire", "games", "--before", DAY).output == "deleted 0 windows\n"
    assert cli("trim", "games", "--before", DAY).output == "removed 1 entry\n"
    golf = [(e.pk, e.score) for e in client.top("games", 5, group=("golf",))]
    assert golf == [(("ben",), 68), (("ann",), 70)]

    # keep-ahead needs a policy.
    result = cli("keep-ahead", "games", "--now", 10 * DAY, code=1)
    assert "FAILED_PRECONDITION: index 'games' has no maintenance policy" in result.output
    client.set_maintenance(
        "games",
        pb.MaintenancePolicy(
            windows=[pb.RegularWindows(type=1, base=0, increment=DAY, duration=DAY)], horizon=DAY, certain_within=DAY
        ),
    )
    result = cli("keep-ahead", "games", "--now", 10 * DAY)
    assert result.output.splitlines() == [
        "added 2 windows",
        f"  key    4  type 1 [{10 * DAY}, {11 * DAY})",
        f"  key    5  type 1 [{11 * DAY}, {12 * DAY})",
    ]
    assert cli("keep-ahead", "games", "--now", 10 * DAY).output == "added 0 windows\n"

    assert cli("fill", "games").output.strip().endswith("every window is complete")
    assert cli("verify", "games").output.splitlines() == [
        "checked 2 records, 4 B-tree entries, 4 ranked-set elements and 3 ranked sets in 5 windows (28 batches)",
        "games: every window matches the records",
    ]
    assert cli("verify", "games", "--max-problems", "1").exit_code == 0

    # Damage the store behind the server's back: verify reports it and exits 1.
    layout = server.catalog.get("games").layout
    server.db.run(lambda tr: tr.clear_range_startswith(layout.primary))
    result = cli("verify", "games", "--max-problems", "2", code=1)
    assert "primary entry missing" in result.output
    assert result.output.splitlines()[-1] == "Error: 2 problem(s) found in games"


def test_errors_exit_non_zero_with_the_message(cli: Cli, client: LeaderboardClient, tmp_path) -> None:
    cli("index", "create", "game")
    cli("windows", "apply", "game", write(tmp_path / "ok.yaml", "high_score_first: true\n"))
    client.add_score("game", ("a",), 5, 100)
    before = client.list_windows("game")
    bad = {
        "unknown.yaml": ("high_score_first: true\nbogus: 1\n", "unknown key(s) in window-update file: bogus"),
        "syntax.yaml": ("high_score_first: [true\n", "not valid YAML"),
        "syntax.json": ('{"high_score_first": true', "not valid JSON"),
        "list.yaml": ("- 1\n- 2\n", "must hold a mapping"),
        "zone.yaml": (
            "high_score_first: true\ncalendar:\n  - {type: 1, period: daily, timezone: Mars/Olympus, count: 2}\n",
            "unknown time zone 'Mars/Olympus'",
        ),
        "period.yaml": (
            "high_score_first: true\ncalendar:\n  - {type: 1, period: fortnightly, count: 2}\n",
            "calendar period must be one of daily, iso-weekly, monthly, not 'fortnightly'",
        ),
        "typo.yaml": (
            "high_score_first: true\ncalendar:\n  - {type: 1, period: daily, timzone: Europe/Paris, count: 2}\n",
            "unknown key(s) in a calendar entry: timzone",
        ),
        "spec.yaml": (
            "high_score_first: true\nspecs:\n  - {type: 1, base: 0}\n",
            "a specs entry has no increment (how far apart windows start): {type: 1, base: 0}",
        ),
        "empty.yaml": (
            "high_score_first: true\nwindows:\n  - {type: 3, start: 10, end: 10}\n",
            "window type 3 [10, 10) must end after it starts",
        ),
        "flag.yaml": ("high_score_first: 'false'\n", "high_score_first must be true or false"),
        "levels.yaml": ("high_score_first: true\nnlevels: lots\n", "nlevels must be an integer between 2 and 8"),
        "never.yaml": (  # well formed, refused by the server
            "high_score_first: true\nrebuild: NEVER\nwindows:\n  - {type: 3, start: 0, end: 1000}\n",
            "FAILED_PRECONDITION: window type 3 [0, 1000) overlaps stored scores and must be filled, but rebuild=NEVER",
        ),
    }
    for name, (text, message) in bad.items():
        result = cli("windows", "apply", "game", write(tmp_path / name, text), code=1)
        assert result.output.startswith("Error: ") and message in result.output, (name, result.output)
    assert "No such file or directory" in cli("windows", "apply", "game", tmp_path / "missing.yaml", code=2).output
    assert client.list_windows("game") == before

    assert "NOT_FOUND: no index named 'nope'" in cli("windows", "show", "nope", code=1).output
    assert "NOT_FOUND: no index named 'nope'" in cli("verify", "nope", code=1).output
    assert "NOT_FOUND: no index named 'nope'" in cli("fill", "nope", code=1).output
    assert "NOT_FOUND: no index named 'nope'" in cli("expire", "nope", "--before", "5", code=1).output
    assert "Missing option '--before'" in cli("trim", "game", code=2).output


# -- the maintenance job over a simulated clock -------------------------------------------------


POLICY = pb.MaintenancePolicy(
    windows=[pb.RegularWindows(type=1, base=0, increment=DAY, duration=DAY)],
    horizon=2 * DAY,
    certain_within=DAY,
    retain=3 * DAY,
)


def test_maintain_advances_windows_day_by_day(cli: Cli, client: LeaderboardClient) -> None:
    client.create_index("game", high_score_first=True)
    client.set_maintenance("game", POLICY)  # (created with it, the index would get the real today's windows)
    client.create_index("plain")  # no policy: the job leaves it alone
    client.update_windows("game", high_score_first=True)
    # Ten simulated days, at various times of day (midnight makes the day after tomorrow's chance 0).
    offsets = [0, 6 * HOUR, 0, 12 * HOUR, 23 * HOUR, 0, HOUR, 0, 18 * HOUR, 0]
    for day, offset in enumerate(offsets):
        now = JAN_1_2026_UTC + day * DAY + offset
        today = now // DAY * DAY
        first = cli("maintain", "--once", "--now", now).output
        assert "plain" not in first and "filled" not in first
        if day >= 4:
            assert "game: expired 1 window" in first.splitlines() or offset > 0

        daily = windows_of(client, "game", 1)
        starts = {start for _, start, _ in daily}
        assert all(end - start == DAY and start % DAY == 0 for _, start, end in daily)
        # Today's and tomorrow's windows are certain; windows that ended by now - retain are gone.
        assert {today, today + DAY} <= starts
        assert all(end > now - POLICY.retain for _, _, end in daily)
        kept = {today - i * DAY for i in range(1, 4) if today - i * DAY >= JAN_1_2026_UTC}
        assert kept <= starts  # windows within the retention period are kept...
        assert starts <= kept | {today, today + DAY, today + 2 * DAY}  # ...and nothing else is there
        if offset == 0:
            assert today + 2 * DAY not in starts  # probability 0 exactly at the horizon
        assert not any(w.filling for w in client.list_windows("game").windows)

        # Scores written now are readable in today's window.
        client.add_score("game", ("alice",), day, now)
        client.add_score("game", ("p", day), 10 * day, now)
        top = [(e.pk, e.score, e.rank) for e in client.top("game", 10, 1, now)]
        if day == 0:
            assert top == [(("alice",), 0, 0), (("p", 0), 0, 0)]  # tied: same score, time and context
        else:
            assert top == [(("p", day), 10 * day, 0), (("alice",), day, 1)]
        assert client.count("game") == day + 2
        assert client.rank("game", ("alice",)) == day  # p1..p(day) scored 10, 20, ... more than alice's best

        # The same pass again: no window expires or fills again, no score changes; at most a
        # window beyond certain_within (probabilistic until then) may be added.
        state = (windows_of(client, "game"), [e.pk for e in client.top("game", 100)], client.top("game", 10, 1, now))
        second = cli("maintain", "--once", "--now", now).output
        after = windows_of(client, "game")
        assert set(state[0]) <= set(after)
        extra = set(after) - set(state[0])
        assert all(now + POLICY.certain_within < start <= now + POLICY.horizon for _, start, _ in extra)
        assert "expired" not in second and "filled" not in second
        if offset == 0:
            assert second == "nothing to do: 1 index with a maintenance policy checked\n" and after == state[0]
        assert [e.pk for e in client.top("game", 100)] == state[1]
        assert client.top("game", 10, 1, now) == state[2]

    assert client.verify("game") == []
    assert windows_of(client, "plain") == [(0, -(2**63), 2**63 - 1)]  # its all-time window only


def test_maintain_fills_a_window_added_over_stored_scores(cli: Cli, client: LeaderboardClient) -> None:
    """The job starts after scores for today arrived: today's window must be filled, not left unreadable."""
    client.create_index("game", high_score_first=True, maintenance=POLICY)
    client.update_windows("game", high_score_first=True)
    now = JAN_1_2026_UTC + 5 * DAY  # a midnight: exactly today's and tomorrow's windows are added
    client.add_score("game", ("early",), 3, now)
    client.add_score("game", ("yesterday",), 9, now - HOUR)
    output = cli("maintain", "--once", "--now", now).output
    assert output.splitlines() == ["game: added 2 windows", "game: filled windows from 2 records"]
    assert [(e.pk, e.score) for e in client.top("game", 5, 1, now)] == [(("early",), 3)]
    nothing = "nothing to do: 1 index with a maintenance policy checked\n"
    assert cli("maintain", "--once", "--now", now).output == nothing
    assert client.verify("game") == []


# -- window-update files --------------------------------------------------------------------------


NOW = dt.datetime(2026, 10, 20, 23, 30, tzinfo=dt.UTC)  # already the 21st in Paris


def test_parse_window_update_full_document() -> None:
    update = parse_window_update(
        {
            "index": "game",
            "high_score_first": False,
            "all_time": False,
            "delete_before": 25,
            "nlevels": 4,
            "rebuild": "ALWAYS",
            "update_timestamp": 7,
            "specs": [{"type": 1, "base": 0, "increment": 10, "duration": 20, "count": 2}],
            "windows": [{"type": 9, "start": 5, "end": 6}],
            "calendar": [{"type": 2, "period": "daily", "timezone": "UTC", "start": dt.date(2026, 1, 1), "count": 1}],
        },
        NOW,
    )
    assert update == WindowUpdate(
        update_timestamp=7,
        high_score_first=False,
        delete_before=25,
        all_time=False,
        specs=[WindowSpec(1, 0, 10, 20, 2)],
        windows=[(9, 5, 6), (2, JAN_1_2026_UTC, JAN_1_2026_UTC + DAY)],
        nlevels=4,
        rebuild=Rebuild.ALWAYS,
    )


def test_parse_window_update_defaults_and_today() -> None:
    update = parse_window_update(
        {
            "high_score_first": True,
            "calendar": [
                {"type": 1, "period": "daily", "timezone": "Europe/Paris", "count": 2},
                {"type": 2, "period": "daily", "count": 1, "start": "today"},  # UTC: still the 20th
                {"type": 3, "period": "iso-weekly", "timezone": "Europe/Paris", "count": 1},
                {"type": 4, "period": "monthly", "timezone": "Europe/Paris", "start": "2026-03-10", "count": 1},
            ],
        },
        NOW,
    )
    assert update.update_timestamp == int(NOW.timestamp())
    assert update.all_time is True and update.nlevels == 6 and update.rebuild is Rebuild.IF_OVERLAPPING_CHANGED
    assert update.delete_before is None and update.specs == []
    oct_21 = OCT_19 + 2 * DAY
    utc_oct_20 = int(dt.datetime(2026, 10, 20, tzinfo=dt.UTC).timestamp())
    march_1 = int(dt.datetime(2026, 3, 1, tzinfo=PARIS).timestamp())
    april_1 = int(dt.datetime(2026, 4, 1, tzinfo=PARIS).timestamp())
    assert update.windows == [
        (1, oct_21, oct_21 + DAY),
        (1, oct_21 + DAY, oct_21 + 2 * DAY),
        (2, utc_oct_20, utc_oct_20 + DAY),
        (3, OCT_19, OCT_19 + 7 * DAY + HOUR),
        (4, march_1, april_1),
    ]
    assert april_1 - march_1 == 31 * DAY - HOUR  # March in Paris loses an hour (2026-03-29)
    ms = parse_window_update(
        {
            "high_score_first": True,
            "timebase": "milliseconds",
            "calendar": [{"type": 1, "period": "daily", "timezone": "Europe/Paris", "start": "2026-03-29", "count": 1}],
        },
        NOW,
    )
    assert ms.update_timestamp == int(NOW.timestamp()) * 1000
    assert ms.windows == [(1, 1_774_738_800_000, 1_774_821_600_000)]  # a 23-hour day, in milliseconds


PARSE_ERRORS = [
    ({"high_score_first": True, "bogus": 1, "extra": 2}, "unknown key(s) in window-update file: bogus, extra"),
    ({"high_score_first": "yes"}, "high_score_first must be true or false, not 'yes'"),
    ({"high_score_first": True, "all_time": 1}, "all_time must be true or false"),
    ([1, 2], "must hold a mapping"),
    (None, "must hold a mapping"),
    ({"high_score_first": True, "timebase": "hours"}, "timebase must be seconds or milliseconds, not 'hours'"),
    ({"high_score_first": True, "rebuild": "SOMETIMES"}, "rebuild must be one of NEVER"),
    (
        {
            "high_score_first": True,
            "calendar": [{"type": 1, "period": "daily", "timezone": "Nowhere/Town", "count": 1}],
        },
        "unknown time zone 'Nowhere/Town'",
    ),
    (
        {
            "high_score_first": True,
            "calendar": [{"type": 1, "period": "daily", "timezone": "Nowhere/Town", "start": "2026-01-01", "count": 1}],
        },
        "unknown time zone 'Nowhere/Town'",
    ),
    (
        {"high_score_first": True, "calendar": [{"type": 1, "period": "weekly", "count": 1}]},
        "calendar period must be one of daily, iso-weekly, monthly, not 'weekly'",
    ),
    (
        {"high_score_first": True, "calendar": [{"type": 1, "period": "daily", "start": "Oct 5", "count": 1}]},
        "start 'Oct 5' is not a date: use YYYY-MM-DD (e.g. 2026-11-23) or today",
    ),
    (
        {"high_score_first": True, "calendar": [{"type": 1, "period": "daily", "count": 9999}]},
        "count must be between 0 and 2500",
    ),
    (
        {"high_score_first": True, "calendar": [{"type": 1, "period": "daily"}]},
        "a calendar entry has no count (how many periods, e.g. count: 7): {type: 1, period: daily}",
    ),
    (
        {"high_score_first": True, "calendar": [{"type": 1, "period": "daily", "count": 1, "zone": "UTC"}]},
        "unknown key(s) in a calendar entry: zone",
    ),
    (
        {"high_score_first": True, "specs": [{"type": 1, "base": 0, "increment": 1, "duration": 1}]},
        "a specs entry has no count (how many windows, e.g. count: 7)",
    ),
    (
        {"high_score_first": True, "specs": [{"type": 1, "base": 0, "increment": 1, "duration": 0, "count": 1}]},
        "duration must be positive",
    ),
    ({"high_score_first": True, "specs": "daily"}, "specs must be a list of mappings"),
    ({"high_score_first": True, "windows": [[1, 2, 3]]}, "windows must be a list of mappings"),
    ({"high_score_first": True, "windows": [{"type": 1, "start": 9, "end": 3}]}, "must end after it starts"),
    ({"high_score_first": True, "windows": [{"type": 0, "start": 1, "end": 3}]}, "window type must be between 1"),
    ({"high_score_first": True, "nlevels": 1}, "nlevels must be an integer between 2 and 8"),
    ({"high_score_first": True, "delete_before": "yesterday"}, "delete_before must be an integer"),
    ({"high_score_first": True, "update_timestamp": 1.5}, "update_timestamp must be an integer"),
]


@pytest.mark.parametrize(("document", "message"), PARSE_ERRORS, ids=[m.split(":")[0][:40] for _, m in PARSE_ERRORS])
def test_parse_window_update_errors(document: object, message: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        parse_window_update(document, NOW)  # type: ignore[arg-type]
    assert message in str(caught.value)


def test_load_window_update_files(tmp_path) -> None:
    yaml_file = write(tmp_path / "w.yaml", "high_score_first: true\nwindows:\n  - {type: 2, start: 1, end: 2}\n")
    json_file = write(
        tmp_path / "w.json", json.dumps({"high_score_first": True, "windows": [{"type": 2, "start": 1, "end": 2}]})
    )
    assert load_window_update(yaml_file, NOW) == load_window_update(json_file, NOW)
    assert load_window_update(yaml_file, NOW).windows == [(2, 1, 2)]
    with pytest.raises(InvalidArgument, match="not valid JSON"):
        load_window_update(write(tmp_path / "bad.json", "high_score_first: true"), NOW)
    with pytest.raises(InvalidArgument, match="not valid YAML"):
        load_window_update(write(tmp_path / "bad.yaml", "a: [1"), NOW)


# -- loading records ------------------------------------------------------------------------------


def test_load_records_from_json_lines(cli: Cli, client: LeaderboardClient, tmp_path) -> None:
    cli("index", "create", "game", "--high-score-first")
    cli("windows", "apply", "game", write(tmp_path / "w.yaml", "high_score_first: true\n"))
    rng = random.Random(3)
    best: dict[str, int] = {}
    lines = []
    pool = rng.sample(range(10**6), 4000)  # distinct scores: the board's order is by score alone
    for i in range(1234):
        pk = f"p{i}"
        scores = [pool.pop() for _ in range(rng.randint(1, 3))]
        best[pk] = max(scores)
        lines.append(json.dumps({"pk": [pk], "entries": [{"score": s, "timestamp": 100 + s} for s in scores]}))
    lines.insert(7, "")  # blank lines are skipped
    result = cli("load", "game", write(tmp_path / "r.jsonl", "\n".join(lines) + "\n"), "--batch", "200")
    assert "loaded 1,234 records into game" in result.output
    expected = sorted(best.items(), key=lambda kv: -kv[1])
    assert [(e.pk[0], e.score, e.rank) for e in client.top("game", 2000)] == [
        (pk, score, rank) for rank, (pk, score) in enumerate(expected)
    ]
    # From stdin, with a scalar pk: a record seen again is replaced.
    again = '{"pk": "p0", "entries": [{"score": 2000000, "timestamp": 5}]}\n'
    assert cli("load", "game", "-", input=again).output == "loaded 1 record into game\n"
    assert client.rank_and_entry("game", ("p0",)).score == 2_000_000
    assert client.verify("game") == []


def test_load_stops_at_a_bad_line_and_keeps_what_came_before(cli: Cli, client: LeaderboardClient, tmp_path) -> None:
    cli("index", "create", "game")
    cli("windows", "apply", "game", write(tmp_path / "w.yaml", "high_score_first: false\n"))
    good = [json.dumps({"pk": [f"p{i}"], "entries": [{"score": i, "timestamp": 1}]}) for i in range(700)]
    path = write(tmp_path / "r.jsonl", "\n".join([*good, '{"pk": ["x"], "entries": [{"score": "high"}]}', good[0]]))
    result = cli("load", "game", path, code=1)
    assert "line 701: an entry needs score and timestamp; the 700 records before it were saved" in result.output
    assert client.count("game") == 700 and client.verify("game") == []
    # A record the server refuses (a group on an index without groups) ends the load the same way.
    refused = write(tmp_path / "g.jsonl", '{"pk": ["y"], "entries": [{"score": 1, "timestamp": 1, "group": ["eu"]}]}\n')
    assert "INVALID_ARGUMENT" in cli("load", "game", refused, code=1).output
    assert "NOT_FOUND" in cli("load", "nope", path, code=1).output
    assert client.count("game") == 700


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{", "not JSON"),
        ("[1, 2]", 'an object with "pk" and "entries"'),
        ('{"pk": ["a"], "score": 1}', "an entry needs score and timestamp"),
        ('{"pk": ["a"], "entries": [], "score": 1}', "unknown record field(s) ['score']"),
        ('{"pk": "", "entries": []}', "pk is empty"),
        ('{"pk": [{"a": 1}], "entries": []}', "pk holds a dict"),
        ('{"pk": ["a"], "entries": {}}', "entries must be a list"),
        ('{"pk": ["a"], "entries": [[1, 2]]}', "an entry must be an object"),
        ('{"pk": ["a"], "entries": [{"score": 1, "timestamp": 2, "rank": 3}]}', "unknown entry field(s) ['rank']"),
        ('{"pk": ["a"], "entries": [{"score": true, "timestamp": 2}]}', "score must be a number"),
        ('{"pk": ["a"], "entries": [{"score": 1, "timestamp": 2.5}]}', "timestamp must be an integer"),
        ('{"pk": ["a"], "entries": [{"score": 1, "timestamp": 2, "group": "eu"}]}', "group must be a list"),
    ],
)
def test_records_file_errors(line: str, message: str) -> None:
    with pytest.raises(RecordsFileError) as caught:
        list(read_records(['{"pk": ["ok"], "entries": []}', "", line]))
    assert caught.value.line == 3
    assert str(caught.value).startswith("line 3: ") and message in str(caught.value)


def test_records_file_values() -> None:
    lines = [
        '{"pk": ["bob", 7], "entries": [{"score": 90.5, "timestamp": 3, "context": ["l3"], "group": ["eu", null]}]}',
        '{"pk": 5}',
    ]
    assert list(read_records(lines)) == [(("bob", 7), [(90.5, 3, ("l3",), ("eu", None))]), ((5,), [])]
