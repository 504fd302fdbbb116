"""Fixtures of the service's tests: a small paged board on a server over an embedded store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.service import Server
from tests.support.servers import serve


@pytest.fixture
def board(tmp_path: Path) -> Iterator[tuple[Server, LeaderboardClient]]:
    running = serve(tmp_path / "s", max_page=5, receive_timeout=0.5, stream_idle_timeout=0.5, max_workers=2)
    with LeaderboardClient(running.address) as lb:
        lb.create_index("game", high_score_first=True)
        lb.update_windows("game", high_score_first=True)
        lb.write_batch("game", [((f"p{i:02d}",), [(100 - i, i)]) for i in range(12)])
        yield running, lb
    running.stop(grace=1)
