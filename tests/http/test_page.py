"""The live page in a real headless browser (Debian's chromium through chromium-driver and
selenium) against a running server with data: the board's rows, the window picker, a record's
rank and neighbours, a live update, ``tools/dev/screenshot_page.py``'s PNG, and a foreign page's
attempts to write to the server.

Skipped, with the reason, where chromium or chromium-driver is not installed
(``apt-get install chromium chromium-driver``), unless FDB_LEADERBOARD_REQUIRE_BROWSER is set
(CI sets it): then they fail.
"""

from __future__ import annotations

import datetime
import http.server as http_server
import importlib.util
import pathlib
import threading
import zoneinfo
from collections.abc import Iterator

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select, WebDriverWait

from fdb_leaderboard.access import Tokens
from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.http import HttpServer
from fdb_leaderboard.proto import service_pb2 as pb
from fdb_leaderboard.service import Server, ServerSettings
from tests.conftest import ServerPlace, skip_unless_required

_TOOL = pathlib.Path(__file__).resolve().parents[2] / "tools" / "dev" / "screenshot_page.py"
_spec = importlib.util.spec_from_file_location("screenshot_page", _TOOL)
assert _spec is not None and _spec.loader is not None
screenshot_page = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(screenshot_page)

pytestmark = pytest.mark.usefixtures("no_unexpected_server_errors")
BROWSER_SWITCH = "FDB_LEADERBOARD_REQUIRE_BROWSER"


@pytest.fixture(autouse=True)
def chromium() -> None:
    """Skip where chromium or its driver is missing, or fail when the browser tests are required."""
    if screenshot_page.chromium_paths() is None:
        skip_unless_required("needs chromium and chromium-driver (Debian packages)", BROWSER_SWITCH, "browser")


DAY = 86_400
T0 = 1_795_420_000
D0 = T0 - T0 % DAY


@pytest.fixture
def board(tmp_path) -> Iterator[tuple[Server, HttpServer, LeaderboardClient]]:
    # No reader process: the clock pinned below is this process's catalog's, and the page's
    # boards are otherwise read on a reader process, with a catalog (and a clock) of its own.
    server = ServerPlace("lmdb", tmp_path / "s").start(ServerSettings(maintain_every=0, read_processes=0))
    http = HttpServer(server, "127.0.0.1:0").start()
    lb = LeaderboardClient(server.address, timeout=20)
    lb.create_index("game", high_score_first=True)
    lb.update_windows("game", high_score_first=True, specs=[(1, D0, DAY, DAY, 2)])
    # Yesterday's scores are on the all-time board only; today's on both.
    for i in range(30):
        lb.add_score("game", (f"player-{i:02d}",), (i * 37) % 41 * 10, D0 - DAY + 100 + i)
    for i in range(0, 30, 2):
        lb.add_score("game", (f"player-{i:02d}",), 500 + (i * 13) % 17 * 20, T0 + i)
    server.catalog.get("game").clock = lambda: T0 + 60  # the server's "now": today is D0's day
    yield server, http, lb
    lb.close()
    server.stop(grace=1)


@pytest.fixture
def browser() -> Iterator[WebDriver]:
    driver = screenshot_page.browser()
    yield driver
    driver.quit()


# A desktop and two phone widths (the page must not scroll sideways from 360 px up).
VIEWPORTS = {"desktop": (1280, 900), "phone-390": (390, 844), "phone-360": (360, 740)}


@pytest.fixture(params=list(VIEWPORTS))
def sized_browser(request: pytest.FixtureRequest) -> Iterator[WebDriver]:
    width, height = VIEWPORTS[request.param]
    driver = screenshot_page.browser()
    # A phone's screen, as Chrome's device mode makes it (a window is at least 500 px wide).
    metrics = {"width": width, "height": height, "deviceScaleFactor": 1 if width > 500 else 3, "mobile": width < 500}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    driver.viewport_width = width  # type: ignore[attr-defined]
    yield driver
    driver.quit()


def assert_fits(driver: WebDriver) -> None:
    """Nothing wider than the screen: no sideways scrolling."""
    scroll, inner = driver.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
    assert scroll <= inner, f"the page is {scroll} px wide in a {inner} px window"
    # On a phone, a page wider than the screen widens the viewport (shown zoomed out) instead.
    assert inner == getattr(driver, "viewport_width", inner)


def text_of(driver: WebDriver, element: str) -> str:
    return driver.find_element(By.ID, element).text


def shown(driver: WebDriver, table: str) -> list[list[str]]:
    """Rank, record and score of each row (read at once: the page redraws rows as events come)."""
    return [row[:3] for row in screenshot_page.table_rows(driver, table)]


def expected(entries: list) -> list[list[str]]:
    """The rows people read: ``#1`` for rank 0, the record (its display name first, if any), the score."""
    return [[f"#{e.rank + 1}", record_text(e), str(e.score)] for e in entries]


def record_text(entry) -> str:
    name = (entry.metadata or {}).get("name", "")
    return f"{name} {entry.pk[0]}" if name else entry.pk[0]


def until(driver: WebDriver, table: str, rows: list[list[str]], timeout: float = 15) -> None:
    try:
        WebDriverWait(driver, timeout).until(lambda d: shown(d, table) == rows)
    except Exception:
        assert shown(driver, table) == rows  # the difference, if it never showed
        raise


def test_the_page_shows_the_boards_a_record_and_live_updates(board, browser: WebDriver) -> None:
    _, http, lb = board
    latest = T0 + 28
    browser.get(f"{http.url}/#index=game")
    # Today's board first (the window holding the server's clock), then all time.
    until(browser, "top", expected(lb.top("game", 10, 1, latest)))
    picker = Select(browser.find_element(By.ID, "window"))
    assert [o.text for o in picker.options] == ["Today", "All time"]
    assert browser.find_element(By.ID, "count").text == f"{lb.count('game', 1, latest)} records"
    assert_fits(browser)
    picker.select_by_visible_text("All time")
    until(browser, "top", expected(lb.top("game", 10)))
    assert "type=0" in browser.current_url
    # A record's rank and the records around it (two above, two below).
    field = browser.find_element(By.ID, "record")
    field.send_keys("player-07")
    browser.find_element(By.CSS_SELECTOR, "#find button").click()
    mine = lb.rank_and_entry("game", ("player-07",))
    WebDriverWait(browser, 10).until(
        lambda d: d.find_element(By.ID, "rank").text == f"player-07 is #{mine.rank + 1} with {mine.score}"
    )
    until(browser, "around", expected(lb.around("game", ("player-07",), 2, 2)))
    highlighted = browser.find_elements(By.CSS_SELECTOR, "#around tr.me td")
    assert highlighted[1].text == "player-07"
    # A new best score appears at the top without reloading; player-07's panel follows it.
    lb.add_score("game", ("newcomer",), 10_000, latest)
    lb.add_score("game", ("player-07",), 9_000, latest)
    until(browser, "top", expected(lb.top("game", 10)))
    assert shown(browser, "top")[:2] == [["#1", "newcomer", "10000"], ["#2", "player-07", "9000"]]
    WebDriverWait(browser, 10).until(lambda d: d.find_element(By.ID, "rank").text == "player-07 is #2 with 9000")
    # A record without a score in the window says so.
    browser.get(f"{http.url}/#index=game&type=1&record=player-01")
    WebDriverWait(browser, 10).until(
        lambda d: d.find_element(By.ID, "rank").text == "player-01 has no score in this window."
    )


def test_the_page_shows_a_known_index_for_an_unknown_one_and_says_when_its_index_is_gone(
    board, browser: WebDriver
) -> None:
    _, http, lb = board
    browser.get(f"{http.url}/#index=nope")  # a stale link: the first index instead
    until(browser, "top", expected(lb.top("game", 10, 1, T0 + 28)))
    assert Select(browser.find_element(By.ID, "index")).first_selected_option.text == "game"
    assert "index=game" in browser.current_url
    lb.drop_index("game")  # the live board's index goes: the stream's next check is a problem
    WebDriverWait(browser, 15).until(lambda d: d.find_element(By.ID, "error").text == "no index named 'game'")


def test_the_page_says_what_to_do_for_an_index_without_windows(board, sized_browser: WebDriver) -> None:
    _, http, lb = board
    lb.create_index("empty", all_time=False)  # no windows at all
    sized_browser.get(f"{http.url}/#index=empty")
    WebDriverWait(sized_browser, 10).until(lambda d: text_of(d, "board-title") == "No windows yet")
    assert text_of(sized_browser, "status") == "no windows: nothing to show"
    assert "fdb-leaderboard windows apply empty FILE" in text_of(sized_browser, "error")
    assert shown(sized_browser, "top") == []
    assert_fits(sized_browser)


def test_the_screenshot_tool_writes_a_png(tmp_path) -> None:
    out = tmp_path / "page.png"
    assert screenshot_page.main(["--out", str(out), "--players", "40"]) == 0
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


ATTACK = """<!doctype html>
<title>attacking</title>
<script>
  // What any web page can send without asking the server first (no preflight): text/plain and
  // untyped bodies, with mode no-cors (the answers are opaque, the requests still go out).
  const target = "TARGET";
  const send = (path, body, type) => fetch(target + path, {
    method: "POST", mode: "no-cors", body, headers: type ? {"Content-Type": type} : {},
  }).catch(() => null);
  (async () => {
    await send("/v1/CreateIndex", '{"name": "planted"}', "text/plain");
    await send("/v1/CreateIndex", new Blob(['{"name": "untyped"}']));
    await send("/v1/indexes/game/scores", '{"pk": "eve", "score": 99999}', "text/plain");
    await send("/v1/DropIndex", '{"index": "game"}', "text/plain");
    document.title = "sent";
  })();
</script>
"""


def test_a_foreign_page_cannot_write_to_the_server(board, browser: WebDriver) -> None:
    server, http, lb = board
    page = ATTACK.replace("TARGET", http.url).encode()

    class Foreign(http_server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args: object) -> None:
            pass

    foreign = http_server.ThreadingHTTPServer(("127.0.0.1", 0), Foreign)
    threading.Thread(target=foreign.serve_forever, daemon=True).start()
    try:
        browser.get(f"http://127.0.0.1:{foreign.server_address[1]}/")  # another origin: another port
        WebDriverWait(browser, 15).until(lambda d: d.title == "sent")
    finally:
        foreign.shutdown()
    assert [i.name for i in lb.list_indexes()] == ["game"] and lb.rank_and_entry("game", ("eve",)) is None
    # The four requests came, and were refused before any route (so none is named).
    refused = server.metrics.http_requests.labels("unmatched", "POST", "403")._value.get()  # type: ignore[attr-defined]
    assert refused == 4
    # The server's own page may write (its requests carry its own origin and JSON).
    browser.get(http.url + "/")
    created = browser.execute_async_script(
        """const done = arguments[arguments.length - 1];
        fetch("/v1/CreateIndex", {method: "POST", headers: {"Content-Type": "application/json"},
                                  body: '{"name": "own"}'}).then((r) => done(r.status));"""
    )
    assert created == 200 and "own" in [i.name for i in lb.list_indexes()]


PARIS = "Europe/Paris"


def day_text(moment: int, zone: str) -> str:
    """A date as the page shows it (en-US, medium): ``Nov 23, 2026``."""
    local = datetime.datetime.fromtimestamp(moment, zoneinfo.ZoneInfo(zone))
    return f"{local:%b} {local.day}, {local.year}"


@pytest.fixture
def calendar_board(board) -> tuple[Server, HttpServer, LeaderboardClient]:
    """An index of Paris days and ISO weeks (its maintenance policy's calendar), some records named."""
    server, http, lb = board
    calendar = [
        pb.CalendarWindows(type=1, period="daily", timezone=PARIS),
        pb.CalendarWindows(type=2, period="iso-weekly", timezone=PARIS),
    ]
    policy = pb.MaintenancePolicy(calendar=calendar, horizon=DAY, certain_within=DAY)
    lb.create_index("cup", maintenance=policy)
    lb.keep_ahead("cup", now=T0)
    lb.add_score("cup", ("ana",), 300, T0, metadata={"name": "Ana Lima"})
    lb.add_score("cup", ("bo",), 200, T0 + 1)
    lb.add_score("cup", ("cy",), 100, T0 - 3 * DAY, metadata={"name": "Cy"})  # an earlier week
    server.catalog.get("cup").clock = lambda: T0 + 60
    return server, http, lb


def test_current_boards_show_their_dates_time_zone_and_display_names(calendar_board, sized_browser) -> None:
    _, http, lb = calendar_board
    sized_browser.get(f"{http.url}/#index=cup")
    today = lb.top("cup", 10, 1, T0)
    until(sized_browser, "top", expected(today))
    assert shown(sized_browser, "top")[0] == ["#1", "Ana Lima ana", "300"]  # the metadata's name, then the key
    picker = Select(sized_browser.find_element(By.ID, "window"))
    assert [o.text for o in picker.options] == ["Today", "This week", "All time"]
    # Today is the Paris day holding the server's clock; its window's dates are named with the zone.
    assert text_of(sized_browser, "window-dates") == f"{day_text(T0, PARIS)} ({PARIS})"
    assert text_of(sized_browser, "count") == "2 records"
    assert_fits(sized_browser)
    picker.select_by_visible_text("This week")
    week = lb.list_windows("cup").windows
    monday = next(w for w in week if w.type == 2 and w.start <= T0 < w.end)
    WebDriverWait(sized_browser, 10).until(
        lambda d: (
            text_of(d, "window-dates")
            == f"{day_text(monday.start, PARIS)} \u2013 {day_text(monday.end - 1, PARIS)} ({PARIS})"
        )
    )
    until(sized_browser, "top", expected(lb.top("cup", 10, 2, T0)))
    assert_fits(sized_browser)
    # One record: "1 record"; a record's rank reads #N and names it.
    lb.create_index("solo", maintenance=pb.MaintenancePolicy(calendar=calendar_board_days(), horizon=DAY))
    lb.keep_ahead("solo", now=T0)
    calendar_board[0].catalog.get("solo").clock = lambda: T0 + 60
    lb.add_score("solo", ("zed",), 5, T0, metadata={"name": "Zed"})
    sized_browser.get(f"{http.url}/#index=solo&type=1&record=zed")
    WebDriverWait(sized_browser, 10).until(lambda d: text_of(d, "count") == "1 record")
    WebDriverWait(sized_browser, 10).until(lambda d: text_of(d, "rank") == "zed (Zed) is #1 with 5")
    assert_fits(sized_browser)


def calendar_board_days() -> list[pb.CalendarWindows]:
    return [pb.CalendarWindows(type=1, period="daily", timezone=PARIS)]


def test_a_grouped_index_offers_its_groups_and_does_not_retry_a_refusal(board, sized_browser) -> None:
    _, http, lb = board
    lb.create_index("leagues", group_size=1)
    lb.update_windows("leagues", high_score_first=True)
    for group in ("eu", "us"):
        lb.save_sub_directory("leagues", (group,), True)
    for i in range(4):
        lb.add_score("leagues", (f"eu-{i}",), 10 * i, T0, group=("eu",))
        lb.add_score("leagues", (f"us-{i}",), 7 * i, T0, group=("us",))
    sized_browser.get(f"{http.url}/#index=leagues")
    # The saved groups are offered; the first is shown.
    until(sized_browser, "top", expected(lb.top("leagues", 10, group=("eu",))))
    offered = sized_browser.execute_script(
        "return [...document.querySelectorAll('#groups option')].map((o) => o.value)"
    )
    assert offered == ["eu", "us"]
    assert sized_browser.find_element(By.ID, "group-choice").is_displayed()
    assert "group=eu" in sized_browser.current_url
    assert_fits(sized_browser)
    field = sized_browser.find_element(By.ID, "group")
    field.clear()
    field.send_keys("us", Keys.ENTER)  # Enter changes the group (the page stays)
    until(sized_browser, "top", expected(lb.top("leagues", 10, group=("us",))))
    # A group of the wrong size is refused by the server: said once, not retried.
    sized_browser.get(f"{http.url}/#index=leagues&type=0&group=" + '["eu",1]')
    WebDriverWait(sized_browser, 10).until(lambda d: "groups by 1 element" in text_of(d, "error"))
    assert text_of(sized_browser, "status") == "not live: see below"
    assert_fits(sized_browser)


def test_a_grouped_index_without_scores_asks_for_a_group(board, browser: WebDriver) -> None:
    _, http, lb = board
    lb.create_index("leagues", group_size=1)
    lb.update_windows("leagues", high_score_first=True)
    browser.get(f"{http.url}/#index=leagues")
    WebDriverWait(browser, 10).until(lambda d: text_of(d, "status") == "choose a group")
    assert "no group has scores in this window: type a group above" in text_of(browser, "error")
    lb.add_score("leagues", ("ann",), 10, T0, group=("eu",))
    field = browser.find_element(By.ID, "group")
    field.send_keys("eu", Keys.TAB)
    until(browser, "top", expected(lb.top("leagues", 10, group=("eu",))))


def offered_groups(driver: WebDriver) -> list[str]:
    return driver.execute_script("return [...document.querySelectorAll('#groups option')].map((o) => o.value)")


def test_the_group_picker_offers_the_groups_with_scores_in_the_window_shown(board, sized_browser) -> None:
    server, http, lb = board
    lb.create_index("leagues", group_size=1)
    lb.update_windows("leagues", high_score_first=True, specs=[(1, D0 - DAY, DAY, DAY, 2)])
    lb.save_sub_directory("leagues", ("asia",), True)  # saved, but no scores: not offered
    for i in range(3):
        lb.add_score("leagues", (f"eu-{i}",), 10 * i, T0, group=("eu",))
        lb.add_score("leagues", (f"us-{i}",), 7 * i, T0, group=("us",))
    lb.add_score("leagues", ("num",), 3, T0, group=(7,))
    lb.add_score("leagues", ("old",), 5, D0 - DAY + 5, group=("af",))  # yesterday only
    server.catalog.get("leagues").clock = lambda: T0 + 60
    sized_browser.get(f"{http.url}/#index=leagues&type=1")
    # Today's groups (the oracle: the client's listing, and the groups written today), the first shown.
    today = ["eu", "us", "[7]"]
    assert list(lb.all_groups("leagues", 1, T0)) == [("eu",), ("us",), (7,)]
    WebDriverWait(sized_browser, 10).until(lambda d: offered_groups(d) == today)
    until(sized_browser, "top", expected(lb.top("leagues", 10, 1, T0, group=("eu",))))
    assert "group=eu" in sized_browser.current_url
    assert_fits(sized_browser)
    # Yesterday's: only af scored then.
    Select(sized_browser.find_element(By.ID, "period")).select_by_visible_text("Yesterday")
    WebDriverWait(sized_browser, 10).until(lambda d: offered_groups(d) == ["af"])
    # All time: every group with a score.
    Select(sized_browser.find_element(By.ID, "window")).select_by_value("0")
    WebDriverWait(sized_browser, 10).until(lambda d: offered_groups(d) == ["af", "eu", "us", "[7]"])
    field = sized_browser.find_element(By.ID, "group")
    field.clear()
    field.send_keys("[7]", Keys.ENTER)
    until(sized_browser, "top", expected(lb.top("leagues", 10, group=(7,))))
    assert_fits(sized_browser)


def test_a_server_with_tokens_asks_for_one(tmp_path, sized_browser) -> None:
    reader = "r" * 24
    settings = ServerSettings(tokens=Tokens.parse(f"read:{reader} admin:{'a' * 24}"), read_processes=0)
    server = ServerPlace("lmdb", tmp_path / "s").start(settings)
    try:
        http = HttpServer(server, "127.0.0.1:0").start()
        with LeaderboardClient(server.address, timeout=20, token="a" * 24) as lb:
            lb.create_index("game")
            lb.update_windows("game", high_score_first=True)
            lb.add_score("game", ("ann",), 10, T0)
            sized_browser.get(f"{http.url}/")
            WebDriverWait(sized_browser, 10).until(lambda d: text_of(d, "status") == "a token is needed")
            assert "needs a bearer token" in text_of(sized_browser, "error")
            assert_fits(sized_browser)
            sized_browser.find_element(By.ID, "token").send_keys(reader, Keys.ENTER)
            until(sized_browser, "top", expected(lb.top("game", 10)))
            assert text_of(sized_browser, "error") == ""
    finally:
        server.stop(grace=1)


def test_the_page_has_a_favicon_and_loads_without_errors(board, browser: WebDriver) -> None:
    _, http, lb = board
    browser.get(f"{http.url}/#index=game")
    until(browser, "top", expected(lb.top("game", 10, 1, T0 + 28)))
    icon = browser.find_element(By.CSS_SELECTOR, "link[rel=icon]").get_attribute("href")
    answer = httpx.get(icon)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("image/svg+xml")
    assert b"<svg" in answer.content
    problems = [entry["message"] for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert problems == []


def movement_text(change: int | None) -> str:
    if change is None:
        return "new"
    return f"\u25b2{change}" if change > 0 else f"\u25bc{-change}" if change < 0 else "="


def test_past_windows_and_movement(board, sized_browser) -> None:
    server, http, lb = board
    lb.create_index("days")
    lb.update_windows("days", high_score_first=True, specs=[(1, D0 - 2 * DAY, DAY, DAY, 4)])  # to tomorrow
    for i, pk in enumerate(("ann", "bob", "cat", "dan")):
        lb.add_score("days", (pk,), 10 * (i + 1), D0 - DAY + 10)  # yesterday: dan, cat, bob, ann
    for pk, score in (("ann", 100), ("cat", 50), ("eve", 45), ("dan", 20)):
        lb.add_score("days", (pk,), score, T0)  # today: ann up 3, cat =, eve new, dan down 3
    server.catalog.get("days").clock = lambda: T0 + 60
    sized_browser.get(f"{http.url}/#index=days&type=1")
    until(sized_browser, "top", expected(lb.top("days", 10, 1, T0)))
    moves = [movement_text(lb.movement("days", (pk,), 1, T0).change) for pk in ("ann", "cat", "eve", "dan")]
    assert moves == ["\u25b23", "=", "new", "\u25bc3"]  # the oracle, by hand
    WebDriverWait(sized_browser, 10).until(lambda d: [row[4] for row in screenshot_page.table_rows(d, "top")] == moves)
    zone = text_of(sized_browser, "window-dates").rsplit("(", 1)[1].rstrip(")")  # the reader's own
    periods = Select(sized_browser.find_element(By.ID, "period"))
    # Today, yesterday, then the day before by its date; tomorrow's window is not offered.
    assert [o.text for o in periods.options] == ["Today", "Yesterday", day_text(D0 - 2 * DAY, zone)]
    assert_fits(sized_browser)
    periods.select_by_visible_text("Yesterday")
    until(sized_browser, "top", expected(lb.top("days", 10, 1, D0 - DAY)))
    assert f"at={D0 - DAY}" in sized_browser.current_url
    assert text_of(sized_browser, "window-dates") == f"{day_text(D0 - DAY, zone)} ({zone})"
    WebDriverWait(sized_browser, 10).until(  # the day before yesterday had no scores
        lambda d: [row[4] for row in screenshot_page.table_rows(d, "top")] == ["new"] * 4
    )
    # A record's rank follows the period shown.
    sized_browser.get(f"{http.url}/#index=days&type=1&at={D0 - DAY}&record=ann")
    WebDriverWait(sized_browser, 10).until(lambda d: text_of(d, "rank") == "ann is #4 with 10")
    assert_fits(sized_browser)


def test_the_servers_own_documentation_page(board, sized_browser) -> None:
    """/docs renders /openapi.json with the server's own script: every operation, offline."""
    _, http, _ = board
    document = httpx.get(f"{http.url}/openapi.json").json()
    operations = [op["operationId"] for item in document["paths"].values() for op in item.values()]
    sized_browser.get(f"{http.url}/docs")
    shown_ids = lambda d: d.execute_script("return [...document.querySelectorAll('section.operation')].map(s => s.id)")  # noqa: E731
    WebDriverWait(sized_browser, 10).until(lambda d: shown_ids(d) == operations)
    assert "GetRankHistory" in operations and "readyz" in operations
    history = document["paths"]["/v1/indexes/{index}/records/{pk}/history"]["get"]["operationId"]
    sized_browser.find_element(By.ID, "filter").send_keys("/records/{pk}/history")
    visible = sized_browser.execute_script(
        "return [...document.querySelectorAll('section.operation')].filter(s => !s.hidden).map(s => s.id)"
    )
    assert visible == [history]
    assert_fits(sized_browser)


def test_a_board_without_a_current_window_says_so_and_offers_the_past_ones(board, sized_browser) -> None:
    server, http, lb = board
    lb.create_index("old")
    lb.update_windows("old", high_score_first=True, specs=[(1, D0 - 3 * DAY, DAY, DAY, 2)])  # ended yesterday
    lb.add_score("old", ("ann",), 7, D0 - 2 * DAY + 5)
    server.catalog.get("old").clock = lambda: T0 + 60
    sized_browser.get(f"{http.url}/#index=old&type=1")
    WebDriverWait(sized_browser, 10).until(lambda d: "No window of this type holds" in text_of(d, "error"))
    assert text_of(sized_browser, "status") == "not live: see below"  # not retried
    assert_fits(sized_browser)
    periods = Select(sized_browser.find_element(By.ID, "period"))
    offered = [o.get_attribute("value") for o in periods.options]
    assert offered == ["", str(D0 - 2 * DAY), str(D0 - 3 * DAY)]  # the stored windows, latest first
    periods.select_by_value(str(D0 - 2 * DAY))
    until(sized_browser, "top", expected(lb.top("old", 10, 1, D0 - 2 * DAY)))
    assert text_of(sized_browser, "error") == ""


def test_one_time_zone_stated_once_titles_that_name_the_period_and_long_names(calendar_board, sized_browser) -> None:
    """The reader is in New York; the board's days are Paris's: its dates and its rows' times are
    Paris's, and the zone is named once.  A past period's title names it; a long key wraps."""
    _, http, lb = calendar_board
    sized_browser.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": "America/New_York"})
    sized_browser.get(f"{http.url}/#index=cup&type=1")
    until(sized_browser, "top", expected(lb.top("cup", 10, 1, T0)))
    when = screenshot_page.table_rows(sized_browser, "top")[0][3]
    assert "08:46:40" in when and "02:46:40" not in when  # T0 is 08:46:40 in Paris, 02:46:40 in New York
    page = sized_browser.find_element(By.TAG_NAME, "body").text
    assert page.count(PARIS) == 1 and "New_York" not in page
    assert text_of(sized_browser, "board-title") == "Today"
    # All time: the same zone, named once.
    Select(sized_browser.find_element(By.ID, "window")).select_by_visible_text("All time")
    WebDriverWait(sized_browser, 10).until(
        lambda d: text_of(d, "window-dates") == f"every score ever submitted (times in {PARIS})"
    )
    until(sized_browser, "top", expected(lb.top("cup", 10)))
    assert "08:46:40" in screenshot_page.table_rows(sized_browser, "top")[0][3]
    # A long unbroken key, looked up: its sentence wraps on a phone.
    long_key = "k" * 90
    lb.add_score("cup", (long_key,), 1, T0)
    sized_browser.get(f"{http.url}/#index=cup&type=1&record={long_key}")
    WebDriverWait(sized_browser, 10).until(lambda d: text_of(d, "rank").startswith(long_key))
    assert_fits(sized_browser)


def test_a_past_period_s_title_names_it_and_yesterday_is_only_the_day_before(board, sized_browser) -> None:
    server, http, lb = board
    lb.create_index("gaps")
    # Today, and days three and four days ago: no window for yesterday or the day before.
    lb.update_windows(
        "gaps",
        high_score_first=True,
        windows=[(1, D0 - 4 * DAY, D0 - 3 * DAY), (1, D0 - 3 * DAY, D0 - 2 * DAY), (1, D0, D0 + DAY)],
    )
    lb.add_score("gaps", ("ann",), 7, D0 - 3 * DAY + 5)
    lb.add_score("gaps", ("bob",), 9, T0)
    server.catalog.get("gaps").clock = lambda: T0 + 60
    sized_browser.get(f"{http.url}/#index=gaps&type=1")
    until(sized_browser, "top", expected(lb.top("gaps", 10, 1, T0)))
    zone = text_of(sized_browser, "window-dates").rsplit("(", 1)[1].rstrip(")")
    periods = Select(sized_browser.find_element(By.ID, "period"))
    WebDriverWait(sized_browser, 10).until(lambda d: len(periods.options) == 3)
    older = [day_text(D0 - 3 * DAY, zone), day_text(D0 - 4 * DAY, zone)]
    assert [o.text for o in periods.options] == ["Today", *older]  # no "Yesterday": there is none
    assert text_of(sized_browser, "board-title") == "Today"
    periods.select_by_visible_text(older[0])
    until(sized_browser, "top", expected(lb.top("gaps", 10, 1, D0 - 3 * DAY)))
    assert text_of(sized_browser, "board-title") == older[0]  # the title names the period shown
    # Linked to, a past period's title names it too.
    sized_browser.get(f"{http.url}/#index=gaps&type=1&at={D0 - 4 * DAY}")
    WebDriverWait(sized_browser, 10).until(lambda d: text_of(d, "board-title") == older[1])
    assert_fits(sized_browser)
