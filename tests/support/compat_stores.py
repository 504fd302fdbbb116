"""Stores as earlier releases wrote them (``tests/compat/``, made by ``tools/dev/compat_fixture.py``), loaded
into a store of any backend under any catalog root; and what is checked of them once served."""

from __future__ import annotations

import contextlib
import importlib.util
import pathlib
import subprocess
import tempfile
from collections.abc import Iterator

import fdb.tuple
import pytest

from fdb_leaderboard.client import LeaderboardClient, SubmissionLimited
from fdb_leaderboard.index import ScoreRules
from fdb_leaderboard.index import tuplecodec as tuples
from fdb_leaderboard.proto import index_pb2
from fdb_leaderboard.service.catalog import ROOT
from fdb_leaderboard.store import open_database
from tests.conftest import skip_unless_required

TOOLS = pathlib.Path(__file__).resolve().parents[2] / "tools" / "dev"
_spec = importlib.util.spec_from_file_location("compat_fixture", TOOLS / "compat_fixture.py")
assert _spec is not None and _spec.loader is not None
compat = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compat)


@contextlib.contextmanager
def release_tree(release: str) -> Iterator[str]:
    """A directory holding ``release``'s code, exported from its commit: run it with ``python -c``
    in that directory (its own package then comes first on ``sys.path``)."""
    commit = compat.RELEASES[release][0]
    with tempfile.TemporaryDirectory(prefix=f"rel-{commit}-") as tree:
        try:
            archive = subprocess.run(
                ["git", "-C", str(compat.ROOT), "archive", commit], check=True, capture_output=True
            ).stdout
        except (OSError, subprocess.CalledProcessError) as exc:
            skip_unless_required(f"release {release}'s commit {commit} is not in this checkout's history ({exc})")
        subprocess.run(["tar", "-x", "-C", tree], input=archive, check=True)
        yield tree


def rerooted(rows: list[tuple[bytes, bytes]], root: bytes) -> list[tuple[bytes, bytes]]:
    """The fixture's rows (under ``ROOT``) moved under ``root``: keys, the index prefixes some keys
    name (``("ends_noticed", prefix, type)``) and the catalog entries' prefixes."""
    if root == ROOT:
        return rows

    def move(value: bytes) -> bytes:
        return root + value[len(ROOT) :] if value.startswith(ROOT) else value

    out = []
    for key, value in rows:
        assert key.startswith(ROOT), key
        rest = key[len(ROOT) :]
        first = tuples.unpack(rest[: tuples.item_ends(rest, 1)[0]])[0]
        if isinstance(first, str):  # the catalog's own keys: tuples throughout
            items = fdb.tuple.unpack(rest)
            key = root + fdb.tuple.pack(tuple(move(i) if isinstance(i, bytes) else i for i in items))
            if first == "catalog":
                entry = index_pb2.CatalogEntry.FromString(value)
                entry.prefix = move(entry.prefix)
                value = entry.SerializeToString()
        else:
            key = move(key)
        out.append((key, value))
    return out


def load_into(url: str, root: bytes, fixture: dict) -> None:
    """Write the fixture's rows, under catalog root ``root``, into the store at ``url``."""
    rows = rerooted(compat.rows_of(fixture), root)
    with open_database(url) as db:
        for start in range(0, len(rows), 500):
            part = rows[start : start + 500]
            db.run(lambda tr, part=part: [tr.set(k, v) for k, v in part])


def verify_all(client: LeaderboardClient) -> dict[str, list[str]]:
    """Each index's problems, of those that have some."""
    found = {info.name: client.verify(info.name) for info in client.list_indexes()}
    return {name: problems for name, problems in found.items() if problems}


def limits_hold(client: LeaderboardClient, name: str, day: int) -> None:
    """With max_per_window 1, a record holding an entry in a day's window (whoever wrote it, and
    whether its head counted it or not) may submit no more there; one holding none, once."""
    at = compat.T0 + day * compat.DAY
    held = [tuple(e.pk) for e in client.top(name, 100, window_type=1, timestamp=at)]
    assert held
    client.set_score_rules(name, ScoreRules(max_per_window=1))
    try:
        for pk in held:
            with pytest.raises(SubmissionLimited, match="max_per_window"):
                client.add_score(name, pk, 1, at + 1)
        client.add_score(name, f"fresh on day {day}", 5, at + 2)
        with pytest.raises(SubmissionLimited):
            client.add_score(name, f"fresh on day {day}", 6, at + 3)
    finally:
        client.set_score_rules(name, ScoreRules())
