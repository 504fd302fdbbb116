#!/usr/bin/env python3
"""A PNG of the live leaderboard page, taken by Debian's headless chromium (through selenium and
chromium-driver: ``apt-get install chromium chromium-driver``).

Without ``--url`` it starts a server (gRPC and HTTP) on a temporary embedded store, creates an
index ``game`` with today's, this week's and the all-time windows, submits scores for
``--players`` players and shows ``--record``'s rank and neighbours:

    .venv/bin/python tools/dev/screenshot_page.py --out docs/page.png

With ``--url`` it shoots a page already served, e.g. ``fdb-leaderboard demo``'s:

    .venv/bin/python tools/dev/screenshot_page.py --url 'http://127.0.0.1:8080/#index=demo&type=1&record=player-00003'
"""

from __future__ import annotations

import argparse
import contextlib
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

DAY = 86_400


def chromium_paths() -> tuple[str, str] | None:
    """(chromium, chromedriver), or None when either is missing."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


def browser(width: int = 1100, height: int = 760) -> WebDriver:
    """A headless chromium driven through chromedriver (no network fetch: both are Debian's)."""
    paths = chromium_paths()
    if paths is None:
        raise RuntimeError("needs Debian's chromium and chromium-driver: apt-get install chromium chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = paths[0]
    flags = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars")
    for flag in (*flags, "--lang=en-US"):  # dates as the tests read them
        options.add_argument(flag)
    options.add_argument(f"--window-size={width},{height}")
    return webdriver.Chrome(options=options, service=Service(executable_path=paths[1]))


def table_rows(driver: WebDriver, table: str) -> list[list[str]]:
    """The cell texts of each row of a table of the page, read at once (the page redraws rows)."""
    return driver.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map((r) => [...r.cells].map((c) => c.textContent))",
        f"#{table} tbody tr",
    )


def wait_for_rows(driver: WebDriver, table: str = "top", timeout: float = 15) -> list[list[str]]:
    """The rows of a table of the page once it shows some."""
    return WebDriverWait(driver, timeout).until(lambda d: table_rows(d, table) or False)


@contextlib.contextmanager
def sample_server(players: int) -> Iterator[str]:
    """A server with a sample board; yields the page's URL."""
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2]))
    from fdb_leaderboard.client import LeaderboardClient
    from fdb_leaderboard.http import HttpServer
    from fdb_leaderboard.service import Server

    with tempfile.TemporaryDirectory(prefix="fdb-leaderboard-page-") as path:
        server = Server(f"lmdb:{path}?durable=false", "127.0.0.1:0").start()
        try:
            http = HttpServer(server, "127.0.0.1:0").start()
            now = int(time.time())
            today = now - now % DAY
            monday = today - (today // DAY - 4) % 7 * DAY  # 1970-01-05 was a Monday
            with LeaderboardClient(server.address) as lb:
                lb.create_index("game", high_score_first=True)
                lb.update_windows(
                    "game",
                    high_score_first=True,
                    specs=[(1, today, DAY, DAY, 2), (2, monday, 7 * DAY, 7 * DAY, 1)],
                )
                rng = random.Random(26)
                records = [
                    ((f"player-{i:05d}",), [(int(rng.gauss(1000, 250)), today + rng.randrange(now - today + 1))])
                    for i in range(players)
                ]
                lb.write_batch("game", records)
            yield f"{http.url}/#index=game&type=1"
        finally:
            server.stop(grace=1)


def shoot(url: str, out: str, record: str | None) -> list[list[str]]:
    """Save a PNG of the page at ``url`` once its board shows; returns the board's rows."""
    driver = browser()
    try:
        if record:
            url += ("&" if "#" in url else "#") + f"record={record}"
        driver.get(url)
        rows = wait_for_rows(driver)
        if record:
            wait_for_rows(driver, "around")
        time.sleep(1.5)  # let the rows' change highlight fade
        driver.save_screenshot(out)
        return rows
    finally:
        driver.quit()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="a page already served (default: a sample server of our own)")
    parser.add_argument("--out", default="page.png", help="the PNG to write (default page.png)")
    parser.add_argument("--record", default="player-00003", help="the record to look up ('' for none)")
    parser.add_argument("--players", type=int, default=200, help="players on the sample board")
    args = parser.parse_args(argv)
    if args.url:
        rows = shoot(args.url, args.out, args.record or None)
    else:
        with sample_server(args.players) as url:
            rows = shoot(url, args.out, args.record or None)
    print(f"{args.out}: the board shows {len(rows)} rows, first {rows[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
