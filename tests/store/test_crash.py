"""Crashes: a writer process SIGKILLed at random moments loses no acknowledged write.

The child (``reliability_workers.py crash``) opens the store durable: LMDB either with the
default settings (every commit's writes logged and synced, the data file synced by checkpoints;
the parent's reopen then recovers from the log), or with ``redo_log=false`` (every commit's pages
fsynced), or FoundationDB (a client killed with its commit in flight: the cluster applies it
whole or not at all; a third of the cycles, as each costs more round trips).  In the
``redo-log, 2 processes`` variant two children share the store's log: one (maybe the one making
the checkpoints) is killed first, the other goes on writing for a while (taking the checkpoints
over) and is killed next.  Each child
submits scores, adds windows over stored data (so they must be filled), runs fill steps and
expires windows, logging each submission's
intent before the call and its acknowledgement (fsynced) after it returns.  The parent
kills it 0.2-1.5 s after it is ready, reopens the store and checks:

- every acknowledged entry is stored exactly once, and is counted in its record's totals;
- an unacknowledged call (the one in flight at the kill) is either entirely there or
  entirely absent, never in part; no entry exists that was not submitted;
- the index is consistent (``index.check()`` == []): no record's entries and window values
  disagree, no ranked set is half-updated;
- a fill interrupted by the kill resumes from its stored cursor (the next step moves it
  forward) and completes; on alternate cycles the next child resumes it instead.
"""

from __future__ import annotations

import collections
import os
import random
import select
import signal
import subprocess
import sys
from pathlib import Path

import fdb.tuple
import pytest

from fdb_leaderboard.index import Entry, LeaderboardIndex
from fdb_leaderboard.index.directory import WindowSpec, WindowUpdate
from fdb_leaderboard.store import open_database
from tests.conftest import fdb_url, private_prefix
from tests.support import reliability_workers
from tests.support.reliability_workers import CRASH_PKS, CRASH_TS_END, PREFIX, SETTINGS

CYCLES = 12
WORKER = reliability_workers.__file__


def fill_position(cursor):
    """A fill cursor as an ordered position: records phase, then ranked-set phase (None: not begun)."""
    if cursor is None:
        return None
    return (cursor.records_done, cursor.records_through, cursor.ranked_through)


def stored_entries(index: LeaderboardIndex) -> dict[str, list[tuple[int, int, str]]]:
    """Every record's entries as (score, ts, operation id)."""
    out = {}
    for pk in CRASH_PKS:
        rows = index.read(lambda ops, pk=pk: ops.txn.read_entries(fdb.tuple.pack(((pk,),))))
        out[pk] = [(score, ts, context[0]) for ts, _seq, (_group, score, context) in rows]
    return out


def parse_log(path: Path) -> tuple[dict[str, tuple[str, int, int]], set[str], list[list[str]], collections.Counter]:
    """Intents (op -> pk, score, ts), acknowledged ops, each cycle's unacknowledged ops, events."""
    intents: dict[str, tuple[str, int, int]] = {}
    acked: set[str] = set()
    cycles: list[list[str]] = []
    events: collections.Counter[str] = collections.Counter()
    for line in path.read_text().splitlines():
        kind, *rest = line.split()
        if kind == "S":
            cycles.append([])
        elif kind == "I":
            op, pk, score, ts = rest
            intents[op] = (pk, int(score), int(ts))
            cycles[-1].append(op)
        elif kind == "A":
            acked.add(rest[0])
        else:
            events[f"{kind} {rest[0]}" if kind in "FW" else kind] += 1
    pending = [[op for op in ops if op not in acked] for ops in cycles]
    return intents, acked, pending, events


def wait_ready(child: subprocess.Popen, timeout: float = 60) -> None:
    readable, _, _ = select.select([child.stdout], [], [], timeout)
    line = child.stdout.readline() if readable else ""  # type: ignore[union-attr]
    if line.strip() != "ready":
        child.kill()
        raise AssertionError(f"the child did not start: {child.stderr.read()}")  # type: ignore[union-attr]


def _kill(child: subprocess.Popen) -> None:
    try:
        assert child.poll() is None, f"the child stopped on its own: {child.stderr.read()}"  # type: ignore[union-attr]
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()
        child.stdout.close()  # type: ignore[union-attr]
        child.stderr.close()  # type: ignore[union-attr]
    assert child.returncode == -signal.SIGKILL


@pytest.mark.slow
@pytest.mark.parametrize("store", ["synced", "redo-log", "redo-log, 2 processes", "fdb"])
def test_sigkill_at_random_moments_loses_no_acknowledged_write(tmp_path: Path, store: str) -> None:
    """With the redo log, the parent's plain reopen (and each next child) recovers from the log."""
    writers = 2 if "2 processes" in store else 1
    if store == "fdb":
        url = child_url = fdb_url()
        prefix, cycles = private_prefix(), CYCLES // 3
    else:
        url = f"lmdb:{tmp_path / 'store'}"
        # Small log segments, so segment switches and recycled segments happen within a cycle.
        options = {"synced": "?redo_log=false"}.get(store, "?checkpoint_seconds=0.2&log_segment_bytes=65536")
        child_url = url + options
        prefix, cycles = PREFIX, CYCLES if writers == 1 else CYCLES // 2
    log_paths = [tmp_path / f"ops.{w}.log" for w in range(writers)]
    rng = random.Random(20240611)

    db = open_database(url)
    assert getattr(db, "durable", True)
    index = LeaderboardIndex.create(db, prefix, SETTINGS)
    index.update_windows(WindowUpdate(specs=[WindowSpec(1, 0, 10_000, 10_000, CRASH_TS_END // 10_000)]))
    seeded = {}
    for i, pk in enumerate(CRASH_PKS):
        seeded[f"seed:{i}"] = (pk, rng.randrange(1, 10_000), rng.randrange(CRASH_TS_END))
    index.bulk_load(((pk,), [Entry(score, ts, (op,))]) for op, (pk, score, ts) in seeded.items())
    db.close()

    durable: set[str] = set(seeded)  # ops known to be stored (acknowledged, or landed in flight)
    lost: set[str] = set()  # unacknowledged ops found absent: must never appear later
    kills = landed_in_flight = interrupted_fills = resumed_by_parent = resumed_by_child = 0
    left_for_child: dict[int, bytes | None] = {}
    for cycle in range(cycles):
        children = []
        for w, log_path in enumerate(log_paths):
            children.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        WORKER,
                        "crash",
                        child_url,
                        str(log_path),
                        str(1000 + cycle * 10 + w),
                        prefix.hex(),
                    ],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
            wait_ready(children[-1])
        rng.shuffle(children)  # the first to be killed may be the one making the checkpoints, or not
        for position, child in enumerate(children):
            select.select([], [], [], rng.uniform(0.2, 1.5) if position == 0 else rng.uniform(0.3, 0.8))
            _kill(child)
            kills += 1

        intents, acked, in_flight_calls = dict(seeded), set(), []
        for log_path in log_paths:
            child_intents, child_acked, pending, _ = parse_log(log_path)
            intents.update(child_intents)
            acked |= child_acked
            # Only the call in flight at the kill can be unacknowledged (add_entries: up to 3 ops).
            assert len(pending[-1]) <= 3, pending[-1]
            in_flight_calls.append(set(pending[-1]))

        db = open_database(url)
        index = LeaderboardIndex.open(db, prefix)
        try:
            stored = stored_entries(index)
            seen = collections.Counter(op for rows in stored.values() for _, _, op in rows)
            assert max(seen.values()) == 1, "an entry is stored twice"
            for pk, rows in stored.items():
                for score, ts, op in rows:
                    assert intents.get(op) == (pk, score, ts), f"{pk} holds an entry nobody submitted: {op}"
            missing = (acked | durable) - set(seen)
            assert not missing, f"acknowledged writes lost: {sorted(missing)[:10]}"
            landed = set()
            for in_flight in in_flight_calls:
                landed_here = in_flight & set(seen)
                assert landed_here in (set(), in_flight), f"a call was half-applied: {landed_here} of {in_flight}"
                landed |= landed_here
                lost |= in_flight - landed_here
            assert not (lost & set(seen)), "a write found absent after a crash reappeared"
            landed_in_flight += len(landed)
            durable |= acked | landed

            # Totals: the all-time SUM of each record is exactly its durable entries' scores.
            expected_total: collections.Counter[str] = collections.Counter()
            for op in durable:
                pk, score, _ = intents[op]
                expected_total[pk] += score
            for pk in CRASH_PKS:
                assert index.rank_and_entry((pk,)).score == expected_total[pk], pk
            assert index.count() == len(CRASH_PKS)
            assert index.check() == []

            directory = index.directory()
            filling = directory.filling() if directory is not None else []
            cursors = index.read(lambda ops, ws=filling: {w.lb_key: fill_position(ops.txn.cursor(w)) for w in ws})
            for key, before in left_for_child.items():  # a fill the last child was to resume
                if directory is None or directory.by_key(key) is None:
                    continue  # expired meanwhile
                if key not in cursors:
                    resumed_by_child += 1  # completed
                else:
                    assert before is None or (cursors[key] is not None and cursors[key] >= before)
                    resumed_by_child += cursors[key] != before
            left_for_child = {}
            if filling:
                interrupted_fills += 1
                if cycle % 2 == 1 and cycle != cycles - 1:
                    left_for_child = cursors  # the next child resumes it
                else:
                    step = index.fill_step(max_records=2)
                    if not step.done:
                        after = index.read(
                            lambda ops, ws=filling: {w.lb_key: fill_position(ops.txn.cursor(w)) for w in ws}
                        )
                        # No cursor moves back, and the one furthest behind moves forward.
                        for key, before in cursors.items():
                            assert after[key] is not None and (before is None or after[key] >= before)
                        behind = [c for c in cursors.values() if c is not None]
                        lowest = None if len(behind) < len(cursors) else min(behind)
                        assert lowest is None or min(after.values()) > lowest
                    index.fill()
                    directory = index.directory()
                    assert directory is not None and directory.filling() == []
                    assert index.check() == []
                    resumed_by_parent += 1
        finally:
            if store == "fdb" and cycle == cycles - 1:  # the cluster is shared: leave nothing behind
                db.run(lambda tr: tr.clear_range_startswith(prefix))
            db.close()

    events: collections.Counter[str] = collections.Counter()
    for log_path in log_paths:
        events += parse_log(log_path)[3]
    verified = len(durable) - len(seeded)
    assert verified > 50, verified
    assert events["W filling"] > 0 and events["F step"] > 0, events
    print(
        f"\ncrash: {kills} SIGKILLs, {verified} acknowledged/durable submissions verified "
        f"({landed_in_flight} in-flight ones landed whole, {len(lost)} absent whole), "
        f"{interrupted_fills} cycles with an interrupted fill ({resumed_by_parent} resumed and completed by the "
        f"parent, {resumed_by_child} advanced by the next child), child events {dict(events)}"
    )
