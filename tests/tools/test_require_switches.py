"""The switches that turn a skipped test into a failed one: a test that needs FoundationDB or a
browser this machine lacks skips, saying why, unless its switch is set (CI sets both, see
``.ci/run``), so it cannot vanish from a CI run unnoticed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The interpreter's directory (.venv/bin) only: neither chromium nor chromedriver is on this PATH.
BARE_PATH = str(Path(sys.executable).parent)


def run_pytest(test: str, **environment: str) -> subprocess.CompletedProcess:
    """``test`` in a pytest of its own, without a browser or a cluster, and without either switch."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FDB_LEADERBOARD_REQUIRE_")}
    env.pop("FDB_CLUSTER_FILE", None)
    env.update(PATH=BARE_PATH, **environment)
    return subprocess.run(
        [sys.executable, "-m", "pytest", test, "-q", "-p", "no:cacheprovider", "-o", "addopts=-ra"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize(
    ("test", "switch"),
    [
        ("tests/http/test_page.py::test_the_screenshot_tool_writes_a_png", "FDB_LEADERBOARD_REQUIRE_BROWSER"),
        (
            "tests/store/test_conformance.py::test_tuple_keys_come_back_in_tuple_order[fdb]",
            "FDB_LEADERBOARD_REQUIRE_FDB",
        ),
    ],
)
def test_a_test_that_cannot_run_here_fails_when_required(test: str, switch: str) -> None:
    """(Without the switch it skips, saying why: as wherever the suite runs without either.)"""
    failed = run_pytest(test, **{switch: "1"})
    assert failed.returncode == 1 and "1 error" in failed.stdout, failed.stdout + failed.stderr  # in its fixture
    assert f"{switch} is set" in failed.stdout
