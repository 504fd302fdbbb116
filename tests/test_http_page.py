"""The live page in a real headless browser (Debian's chromium through chromium-driver and
selenium) against a running server with data: the board's rows, the window picker, a record's
rank and neighbours, a live update, ``tools/screenshot_page.py``'s PNG, and a foreign page's
attempts to write to the server.

Skipped, with the reason, where chromium or chromium-driver is not installed
(``apt-get install chromium chromium-driver``), unless FDB_LEADERBOARD_REQUIRE_BROWSER is set
(CI sets it): then they fail.
"""

from __future__ import annotations

import http.server as http_server
import importlib.util
import pathlib
import threading
from collections.abc import Iterator

import pytest
from conftest import ServerPlace, skip_unless_required
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select, WebDriverWait

from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.http import HttpServer
from fdb_leaderboard.service import Server, ServerSettings

_TOOL = pathlib.Path(__file__).resolve().parent.parent / "tools" / "screenshot_page.py"
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


def shown(driver: WebDriver, table: str) -> list[list[str]]:
    """Rank, record and score of each row (read at once: the page redraws rows as events come)."""
    return [row[:3] for row in screenshot_page.table_rows(driver, table)]


def expected(entries: list) -> list[list[str]]:
    return [[str(e.rank + 1), e.pk[0], str(e.score)] for e in entries]


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
    assert shown(browser, "top")[:2] == [["1", "newcomer", "10000"], ["2", "player-07", "9000"]]
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


def test_the_page_reports_an_index_without_windows(board, browser: WebDriver) -> None:
    _, http, lb = board
    lb.create_index("empty", all_time=False)  # no windows at all
    browser.get(f"{http.url}/#index=empty")
    WebDriverWait(browser, 10).until(lambda d: d.find_element(By.ID, "board-title").text == "No windows yet")
    assert shown(browser, "top") == []


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
