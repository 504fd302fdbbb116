#!/usr/bin/env python3
"""Compatibility fixtures: a small store written by an earlier release's own code, and its answers.

    .venv/bin/python tools/dev/compat_fixture.py make 0.1.0   # release 0.1.0 (fb9afad)
    .venv/bin/python tools/dev/compat_fixture.py make 0.2.0   # release 0.2.0 (38c4218), over 0.1.0's store

``make`` exports the release's tree (``git archive`` of its commit, as ``git worktree add`` would
check it out) into a temporary directory and runs this script's ``write`` with ``PYTHONPATH``
pointing there and this checkout's ``.venv`` for the dependencies: the release's own code, its
optional C extensions unbuilt (it falls back to pure Python).  ``write`` starts that release's
server on a fresh embedded store (holding first, for a release that has a predecessor here, the
rows of that release's fixture: a store upgraded as an operator upgrades), makes indexes of every
kind the release supports and writes to them through its own client (with fixed timestamps and
a seeded random generator), records the answers its reads give, stops the server and saves every
row of the store (keys and values, base64) with those answers in ``tests/compat/RELEASE.json.gz``.

``tests/formats/test_earlier_releases.py`` loads each fixture into fresh stores of both backends and checks this
release against it.  What the fixtures hold, by release:

- 0.1.0: BEST daily and weekly boards with display metadata; SUM with groups, one of them low score
  first (a sub-directory), and a context; BEST low score first with a context; LATEST over doubles;
  dense ranks with ties; the Record Layer's layout (JDK hash, ties counted once); a trimmed board;
  a window added over stored scores and left half filled;
- 0.2.0, over 0.1.0's store: more scores into every 0.1.0 board (heads written before the
  submission counters, which 0.2.0 then counts short); multi-column scores; leagues with tiers;
  hidden records, score rules and idempotency keys (their answers, to send again); a group's
  records deleted; the audit trail with a retention; webhooks with events pending (delivery off);
  a window 0.2.0 left half filled.

The answers are plain JSON (:func:`plain`), the same whichever release's client gave them.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import os
import pathlib
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "compat"
# release: (commit, the release whose fixture its store starts from)
RELEASES = {"0.1.0": ("fb9afad", None), "0.2.0": ("38c4218", "0.1.0")}
T0 = 1_700_006_400  # 2023-11-15 00:00 UTC: day 0 of every board
DAY = 86_400
DAYS = 5


# -- answers as plain JSON -----------------------------------------------------------------------


def plain(value: Any) -> Any:
    """An answer as JSON values: entries, windows, rules, cohorts and listings by their fields."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes):
        return {"base64": base64.b64encode(value).decode()}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in sorted(value.items(), key=lambda item: str(item[0]))}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    kind = type(value).__name__
    if hasattr(value, "pk") and hasattr(value, "timestamp") and hasattr(value, "score"):  # a ranked entry
        return {
            "rank": value.rank,
            "pk": plain(value.pk),
            "score": plain(value.score),
            "timestamp": value.timestamp,
            "context": plain(value.context),
            "group": plain(value.group),
            "metadata": plain(getattr(value, "metadata", None) or {}),
        }
    if kind == "ListWindowsResponse":
        return {
            "exists": value.exists,
            "high_score_first": value.high_score_first,
            "windows": [plain(w) for w in value.windows],
            "latest_timestamp": value.latest_timestamp if value.HasField("latest_timestamp") else None,
            "trimmed_before": value.trimmed_before if value.HasField("trimmed_before") else None,
        }
    if kind == "Window":
        return {"type": value.type, "start": value.start, "end": value.end, "filling": value.filling}
    if kind == "Webhook":
        return {
            "index": value.index,
            "url": value.url,
            "window_types": list(value.window_types),
            "top": value.top,
            "pending": value.pending,
        }
    if kind == "IndexInfo":
        options = value.options
        return {
            "name": value.name,
            "aggregation": options.aggregation,
            "hash": options.hash_function,
            "group_size": options.group_size,
            "context_size": options.context_size,
            "high_score_first": options.high_score_first,
            "score_type": options.score_type,
            "dense_ranks": options.dense_ranks,
            "columns": list(getattr(options, "columns", [])),
        }
    if kind in ("ScoreRules", "HiddenRecord", "AuditEvent", "Cohort"):
        fields = value.__dataclass_fields__
        return {name: plain(getattr(value, name)) for name in fields if name != "hidden_at" and name != "at_us"}
    raise TypeError(f"no plain form for {kind}: {value!r}")


def rows_b64(rows: list[tuple[bytes, bytes]]) -> list[list[str]]:
    return [[base64.b64encode(k).decode(), base64.b64encode(v).decode()] for k, v in rows]


def rows_of(fixture: dict) -> list[tuple[bytes, bytes]]:
    return [(base64.b64decode(k), base64.b64decode(v)) for k, v in fixture["rows"]]


def load(release: str) -> dict:
    with gzip.open(FIXTURES / f"{release}.json.gz", "rt", encoding="utf-8") as file:
        return json.load(file)


# -- writing a store with a release's own code -----------------------------------------------------


class Recorder:
    """Calls through the release's client; reads' answers recorded to be asked again."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.queries: list[dict] = []
        self.keyed: list[dict] = []

    def has(self, op: str) -> bool:
        return hasattr(self.client, op)

    def ask(self, op: str, *args: Any, **kwargs: Any) -> Any:
        answer = getattr(self.client, op)(*args, **kwargs)
        self.queries.append({"op": op, "args": plain(args), "kwargs": plain(kwargs), "answer": plain(answer)})
        return answer

    def keyed_write(self, op: str, *args: Any, **kwargs: Any) -> Any:
        """A write with an idempotency key: sending it again must answer the same."""
        answer = getattr(self.client, op)(*args, **kwargs)
        self.keyed.append({"op": op, "args": plain(args), "kwargs": plain(kwargs), "answer": plain(answer)})
        return answer


def daily(client: Any, name: str, days: int = DAYS, weekly: bool = False) -> None:
    specs = [(1, T0, DAY, DAY, days)] + ([(2, T0, 7 * DAY, 7 * DAY, 1)] if weekly else [])
    client.update_windows(name, specs=specs, all_time=True)


def scores(
    rng: random.Random, records: int, most: int, score: Callable[[random.Random], Any], days: int = DAYS
) -> list[tuple[str, Any, int]]:
    """(pk, score, timestamp) for ``records`` records, 1 to ``most`` entries each, over ``days`` days."""
    out = []
    for number in range(records):
        for _ in range(rng.randint(1, most)):
            out.append((f"p{number:02d}", score(rng), T0 + rng.randrange(days * DAY)))
    rng.shuffle(out)
    return out


def write_release_0_1(client: Any, rng: random.Random) -> None:
    """The index kinds release 0.1.0 has (what release 0.2.0's store starts from, too)."""
    client.create_index("daily")
    daily(client, "daily", weekly=True)
    for pk, score, ts in scores(rng, 40, 6, lambda r: r.randrange(1000)):
        client.add_score("daily", pk, score, ts)
    for number in range(0, 40, 3):
        client.set_metadata("daily", f"p{number:02d}", {"name": f"Player {number}", "country": "FR"})

    client.create_index("sum_groups", aggregation="SUM", group_size=1, context_size=1)
    client.save_sub_directory("sum_groups", ("golf",), False)  # golf: the lowest total first
    daily(client, "sum_groups")
    for pk, score, ts in scores(rng, 30, 5, lambda r: r.randrange(1, 50)):
        client.add_score("sum_groups", pk, score, ts, context=(rng.choice(["a", "b"]),), group=(rng.choice(GROUPS),))

    client.create_index("low_context", high_score_first=False, context_size=1)
    daily(client, "low_context")
    for pk, score, ts in scores(rng, 30, 4, lambda r: r.randrange(20, 200)):
        client.add_score("low_context", pk, score, ts, context=(rng.randrange(3),))

    client.create_index("latest_double", aggregation="LATEST", score_type="DOUBLE")
    daily(client, "latest_double")
    for pk, score, ts in scores(rng, 25, 4, lambda r: round(r.uniform(-5, 5), 3)):
        client.add_score("latest_double", pk, score, ts)

    client.create_index("dense", dense_ranks=True)
    daily(client, "dense")
    for pk, score, ts in scores(rng, 30, 3, lambda r: r.randrange(8)):  # many ties
        client.add_score("dense", pk, score, ts)

    client.create_index("reference", reference_layout=True)
    daily(client, "reference")
    for pk, score, ts in scores(rng, 30, 3, lambda r: r.randrange(10)):
        client.add_score("reference", pk, score, ts)

    client.create_index("trimmed")
    daily(client, "trimmed")
    for pk, score, ts in scores(rng, 25, 6, lambda r: r.randrange(1000)):
        client.add_score("trimmed", pk, score, ts)
    client.trim("trimmed", T0 + 3 * DAY)

    filling("filling", client, rng)


GROUPS = ["eu", "us", "golf"]


def filling(name: str, client: Any, rng: random.Random) -> None:
    """An index whose daily windows were added over its scores and left half filled."""
    client.create_index(name)
    client.update_windows(name, all_time=True)
    for pk, score, ts in scores(rng, 40, 3, lambda r: r.randrange(1000)):
        client.add_score(name, pk, score, ts)
    daily(client, name)
    client.fill(name, max_records=15, max_batches=1)


def write_release_0_2(client: Recorder, rng: random.Random, raw: Any) -> None:
    """Over 0.1.0's store: more scores into its boards; then the index kinds 0.2.0 added."""
    for name, score in (
        ("daily", lambda r: r.randrange(1000)),
        ("low_context", lambda r: r.randrange(20, 200)),
        ("dense", lambda r: r.randrange(8)),
        ("reference", lambda r: r.randrange(10)),
        ("trimmed", lambda r: r.randrange(1000)),
    ):
        context = (1,) if name == "low_context" else ()
        for pk, value, ts in scores(rng, 45, 2, score)[:40]:
            raw.add_score(name, pk, value, ts, context=context)
    for pk, value, ts in scores(rng, 35, 2, lambda r: r.randrange(1, 50))[:30]:
        raw.add_score("sum_groups", pk, value, ts, context=("a",), group=(rng.choice(GROUPS),))
    for pk, value, ts in scores(rng, 30, 2, lambda r: round(r.uniform(-5, 5), 3))[:25]:
        raw.add_score("latest_double", pk, value, ts)
    client.keyed_write("add_score", "daily", "p01", 999, T0 + 10, idempotency_key="fixture-daily-1")

    raw.create_index("columns", columns=("HIGH", "LOW"))
    daily(raw, "columns")
    for pk, _, ts in scores(rng, 25, 4, lambda r: 0):
        raw.add_score("columns", pk, (rng.randrange(10), rng.randrange(100)), ts)

    from fdb_leaderboard.index import Leagues, ScoreRules  # this release's (run with its tree)

    raw.create_index("leagues", leagues=Leagues(1, 4, 3, 1, 1))
    daily(raw, "leagues")
    for day in range(3):  # tiers move from one day's cohorts to the next
        for number in range(14):
            raw.add_score("leagues", f"p{number:02d}", rng.randrange(100), T0 + day * DAY + rng.randrange(DAY))

    raw.create_index("fair", group_size=1)
    daily(raw, "fair")
    for pk, value, ts in scores(rng, 30, 4, lambda r: r.randrange(1000)):
        raw.add_score("fair", pk, value, ts, group=(rng.choice(["live", "old"]),))
    for number in (3, 7, 11):
        raw.hide_record("fair", f"p{number:02d}", reason=f"cheat {number}")
    raw.delete_records("fair", group=("old",))
    raw.set_score_rules("fair", ScoreRules(min_score=0, max_score=10_000, max_per_window=6, max_per_minute=1000))
    for number in range(5):
        client.keyed_write(
            "add_score",
            "fair",
            f"k{number}",
            100 + number,
            T0 + DAY + number,
            group=("live",),
            idempotency_key=f"fixture-fair-{number}",
        )
    client.keyed_write("hide_record", "fair", "k4", reason="keyed", idempotency_key="fixture-fair-hide")
    client.keyed_write(
        "save_record", "fair", "k9", [(500, T0 + 2 * DAY, (), ("live",))], idempotency_key="fixture-fair-save"
    )

    raw.set_audit_retention(30 * DAY)
    # Webhooks are told of windows ending after they were made: a window of type 9 ending in a
    # moment, on two boards without groups (a grouped one has no window ends).  Its events wait in
    # the outbox (delivery is off), as a stopped server's would.
    now = int(time.time())
    for name in ("daily", "columns"):
        raw.update_windows(name, windows=[(9, now - 60, now + 2)], all_time=True)
        raw.add_score(name, "p00", (1, 1) if name == "columns" else 1, now - 30)
        raw.add_webhook(name, f"https://hooks.example.com/{name}", secret="s" * 32, window_types=[9], top=3)
    time.sleep(max(0.0, now + 2.5 - time.time()))
    for name in ("daily", "columns"):
        raw.notice_window_ends(name)
    filling("filling2", raw, rng)


def queries(client: Recorder) -> None:
    """The reads whose answers the fixture keeps: every index's windows and boards, ranks and more."""
    client.ask("list_indexes")
    for info in client.client.list_indexes():
        name, options = info.name, info.options
        listing = client.ask("list_windows", name)
        client.ask("sub_directories", name)
        groups = [()] if not options.group_size else [(g,) for g in (*GROUPS, "live", "old")]
        modes = ["ORDINAL", "COMPETITION"] + (["DENSE"] if options.dense_ranks else [])
        pks = [f"p{n:02d}" for n in range(0, 45, 4)]
        for window in listing.windows:
            if window.filling:
                continue
            at = None if window.type == 0 else window.start
            for group in groups:
                place = {"window_type": window.type, "timestamp": at, "group": group}
                client.ask("top", name, 100, **place)
                client.ask("count", name, **place)
                for mode in modes:
                    for pk in pks:
                        client.ask("rank", name, pk, mode=mode, **place)
                client.ask("around", name, "p05", 2, 2, **place)
                client.ask("score_for_rank", name, 3, **place)
        for pk in pks:
            client.ask("metadata", name, pk)
        if client.has("hidden_records") and name == "fair":
            client.ask("hidden_records", name)
            client.ask("score_rules", name)
        if client.has("cohort") and options.HasField("leagues"):
            for pk in ("p00", "p05", "p13"):
                client.ask("cohort", name, pk, timestamp=T0 + 2 * DAY + 10)
        if client.has("webhooks"):
            client.ask("webhooks", name)
    if client.has("audit_events"):
        client.ask("audit_events", limit=1000)
        client.ask("audit_retention")


def dump_store(db: Any) -> list[tuple[bytes, bytes]]:
    rows: list[tuple[bytes, bytes]] = []
    begin = b""
    while True:
        batch = db.read(lambda tr, begin=begin: tr.get_range(begin, b"\xff", 1000))
        rows.extend((bytes(k), bytes(v)) for k, v in batch)
        if len(batch) < 1000:
            return rows
        begin = bytes(batch[-1][0]) + b"\x00"


def write(release: str, out: pathlib.Path) -> None:
    """Run under the release's own code (``make`` sets PYTHONPATH): write its fixture to ``out``."""
    import fdb_leaderboard
    from fdb_leaderboard.client import LeaderboardClient
    from fdb_leaderboard.service import Server, ServerSettings
    from fdb_leaderboard.store import open_database

    code = pathlib.Path(fdb_leaderboard.__file__).resolve().parent.parent
    assert code != ROOT, "run `make`: `write` runs under the release's own tree"
    commit, before = RELEASES[release]
    with tempfile.TemporaryDirectory() as directory:
        url = f"lmdb:{directory}/store?durable=false"
        if before is not None:
            with open_database(url) as db:
                rows = rows_of(load(before))
                for start in range(0, len(rows), 500):
                    db.run(lambda tr, part=rows[start : start + 500]: [tr.set(k, v) for k, v in part])
        known = ServerSettings.__dataclass_fields__
        options = {name: value for name, value in (("maintain_every", 0), ("webhooks", False)) if name in known}
        server = Server(url, "127.0.0.1:0", settings=ServerSettings(read_processes=0, **options)).start()
        try:
            with LeaderboardClient(server.address, timeout=60) as raw:
                client = Recorder(raw)
                rng = random.Random(f"compat {release}")
                if before is None:
                    write_release_0_1(raw, rng)
                else:
                    write_release_0_2(client, rng, raw)
                queries(client)
        finally:
            server.stop(grace=1)
        with open_database(url) as db:
            rows = dump_store(db)
    fixture = {
        "release": release,
        "commit": commit,
        "from": before,
        "made_by": "tools/dev/compat_fixture.py",
        "rows": rows_b64(rows),
        "queries": client.queries,
        "keyed_writes": client.keyed,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(out, "wt", encoding="utf-8", compresslevel=9) as file:
        json.dump(fixture, file, separators=(",", ":"))
    print(f"{out}: {len(rows)} rows, {len(client.queries)} answers, {len(client.keyed)} keyed writes")


def make(release: str) -> None:
    """Export the release's tree and run ``write`` under it."""
    commit, _ = RELEASES[release]
    with tempfile.TemporaryDirectory(prefix=f"rel-{commit}-") as tree:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tree], input=archive, check=True)
        env = {**os.environ, "PYTHONPATH": tree}
        out = FIXTURES / f"{release}.json.gz"
        script = pathlib.Path(__file__).resolve()
        subprocess.run([sys.executable, str(script), "write", release, str(out)], check=True, cwd=tree, env=env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    made = commands.add_parser("make", help="write a release's fixture with its own code")
    made.add_argument("release", choices=sorted(RELEASES))
    written = commands.add_parser("write", help="(run by make, under the release's code)")
    written.add_argument("release", choices=sorted(RELEASES))
    written.add_argument("out", type=pathlib.Path)
    args = parser.parse_args()
    if args.command == "make":
        make(args.release)
    else:
        write(args.release, args.out)


if __name__ == "__main__":
    main()
