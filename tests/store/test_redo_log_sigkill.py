"""The embedded store's default durable mode against the brute-force model: writer processes
SIGKILLed right after acknowledged submissions lose none of them.

Each child opens the store with the default URL (the redo log: its commits are logged and synced,
the data file synced only by checkpoints) and submits a stream of scores drawn from a seed the
parent shares, writing each one's number to its stdout once ``add_score`` returned.  The parent
kills it (SIGKILL) the moment it has read a chosen number of acknowledgements, so the kill lands
right after an acknowledged commit (or while the next one is in flight), then reopens the store
(recovering from the log) and compares every board with :class:`model.Model` fed exactly the
acknowledged submissions, plus the one in flight if it landed (whole).  Variants:

- one writer; two writers sharing the log session (the first killed may be the one making the
  checkpoints; the other goes on logging after it died, and is killed next);
- a torn tail: after the kill, the newest segment gets, after its last valid record, a prefix of
  a record (as a write interrupted by a power loss would leave), garbage, or its file cut short;
  recovery reads up to the last valid record and the model still agrees.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import fdb.tuple
import pytest

from fdb_leaderboard.index import IndexSettings, LeaderboardIndex, RankMode
from fdb_leaderboard.index.directory import WindowSpec, WindowUpdate
from fdb_leaderboard.store import open_database
from fdb_leaderboard.store import redo_format as fmt
from tests.support.model import Listed, Model

pytestmark = pytest.mark.slow

PREFIX = b"\x15\x47"
SETTINGS = IndexSettings(aggregation="SUM", context_size=1, high_score_first=False)
PKS = [f"p{i}" for i in range(8)]
WINDOWS = [(1, start, start + 100) for start in range(0, 400, 100)]
# Small segments and frequent checkpoints: segment switches, recycled segments and checkpoints
# happen within a run.
OPTIONS = "?checkpoint_seconds=0.1&log_segment_bytes=65536"
SEED = 4747  # of the writers' streams

CHILD = r"""
import sys
from fdb_leaderboard.index import LeaderboardIndex
from fdb_leaderboard.store import open_database
url, prefix, writer, seed = sys.argv[1], bytes.fromhex(sys.argv[2]), sys.argv[3], int(sys.argv[4])
sys.path.insert(0, sys.argv[5])  # the tests' directory: the stream of submissions
from test_redo_log_sigkill import submissions
db = open_database(url)
assert db.redo_log is not None, "the default durable mode is the redo log"
index = LeaderboardIndex.open(db, prefix)
print("ready", flush=True)
for number, (pk, score, ts) in enumerate(submissions(writer, seed)):
    index.add_score((pk,), score, ts, context=(f"{writer}:{number}",))
    sys.stdout.write(f"{number}\n")
    sys.stdout.flush()
"""


def submissions(writer: str, seed: int):
    """The endless stream of (pk, score, ts) a writer submits."""
    rng = random.Random(f"{writer}/{seed}")
    while True:
        yield rng.choice(PKS), rng.randrange(-50, 50), rng.randrange(400)


def start_writer(url: str, writer: str, seed: int) -> subprocess.Popen:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, url, PREFIX.hex(), writer, str(seed), str(Path(__file__).parent)],
        cwd=Path(__file__).resolve().parents[2],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
    )
    assert child.stdout is not None
    if child.stdout.readline().strip() != "ready":
        child.kill()
        raise AssertionError(f"the writer did not start: {child.communicate()[1]}")
    return child


def kill_after(child: subprocess.Popen, acks: int) -> int:
    """SIGKILL ``child`` as soon as it has acknowledged ``acks`` submissions; how many it had."""
    assert child.stdout is not None
    seen = 0
    while seen < acks:
        line = child.stdout.readline()
        assert line, f"the writer stopped: {child.stderr.read()}"  # type: ignore[union-attr]
        assert int(line) == seen
        seen += 1
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    seen += sum(1 for line in child.stdout.read().splitlines() if line.strip())  # written before the kill
    child.stdout.close()
    child.stderr.close()  # type: ignore[union-attr]
    assert child.returncode == -signal.SIGKILL
    return seen


def tear_tail(store: Path, how: str, rng: random.Random) -> str:
    """Damage the log's tail, after its last valid record (where the head says the next record
    was to go: the session's shared page survives a SIGKILL); what was done."""
    checkpoint = fmt.Checkpoint.load(str(store))
    assert checkpoint is not None, "the kill left a session to recover"
    head = fmt.Head(str(store))
    try:
        cursor = head.cursor()
    finally:
        head.close()
    number = cursor.segment
    path = store / fmt.segment_name(number)
    records, end = fmt.read_records(path.read_bytes(), fmt.segment_seed(checkpoint.session, number))
    # Past the head's end: the record of a commit in flight at the kill (logged, committed or not).
    assert end >= cursor.end, (end, cursor.end)
    last = records[-1][0] if records else checkpoint.txnid
    with open(path, "r+b") as f:
        if how == "torn record" and end > cursor.end:  # that record torn: its tail never reached the disk
            cut = rng.randrange(cursor.end + 1, end)
            f.seek(cut)
            f.write(bytes(end - cut))
            return f"the in-flight record torn at {cut - cursor.end} of {end - cursor.end} bytes, segment {number}"
        if how == "torn record":
            record = fmt.encode_record(
                fmt.segment_seed(checkpoint.session, number), last + 1, [(fmt.SET, b"torn", b"x" * 200)]
            )
            f.seek(end)
            f.write(record[: rng.randrange(1, len(record))])
        elif how == "garbage":
            f.seek(end)
            f.write(rng.randbytes(rng.randrange(1, 300)))
        else:
            f.truncate(end + rng.randrange(0, fmt.RECORD.size))
    return f"{how} after record {len(records)} of segment {number}"


def check_against_model(url: str, known: dict[str, int], acked: dict[str, int]) -> dict[str, int]:
    """Every board equals the model's of what is known stored (``known``: a writer's first n
    submissions) and of the acknowledged submissions (``acked``: the writer's next one was in
    flight at the kill, and must be whole or absent); returns the writers' submissions now known."""
    db = open_database(url)
    try:
        index = LeaderboardIndex.open(db, PREFIX)
        stored, commit_order = {}, {}
        for pk in PKS:
            rows = index.read(lambda ops, pk=pk: ops.txn.read_entries(fdb.tuple.pack(((pk,),))))
            for ts, seq, (_group, score, context) in rows:
                assert context[0] not in stored, f"an entry stored twice: {context[0]}"
                stored[context[0]] = (pk, score, ts)
                commit_order[context[0]] = seq
        now, found = {}, []
        for writer, count in {**known, **acked}.items():
            stream = submissions(writer, SEED)
            in_flight = writer in acked
            for number in range(count + in_flight):
                pk, score, ts = next(stream)
                op = f"{writer}:{number}"
                if number == count:  # in flight at the kill: whole or absent
                    if op not in stored:
                        break
                    count += 1
                assert stored.pop(op, None) == (pk, score, ts), f"acknowledged submission {op} lost"
                found.append((pk, score, ts, op))
            now[writer] = count
        assert stored == {}, f"entries nobody submitted (or lost in flight, then found): {sorted(stored)[:5]}"
        # Writers' submissions interleave: the model takes them in the order they committed (which
        # only breaks ties of a SUM's latest timestamp, the context it shows).
        model = Model("SUM", high_score_first=False)
        model.update_windows(False, WINDOWS)
        for pk, score, ts, op in sorted(found, key=lambda sub: (sub[0], commit_order[sub[3]])):
            model.add((pk,), [((), score, ts, (op,))])

        for window_type, ts in [(0, None), *[(1, start) for _, start, _ in WINDOWS]]:
            where = {"window_type": window_type, "timestamp": ts}
            size = model.count(window_type, ts, ())
            assert index.count(**where) == size
            got = [
                Listed(tuple(e.pk), e.score, e.timestamp, tuple(e.context), tuple(e.group), e.rank)
                for e in index.top(size + 1, mode=RankMode.COMPETITION, **where)
            ]
            expected = model.top(size + 1, window_type, ts, (), "COMPETITION")
            assert got == expected, (window_type, ts)
            for pk in PKS:
                assert index.rank((pk,), mode=RankMode.ORDINAL, **where) == model.rank(
                    (pk,), window_type, ts, (), "ORDINAL"
                )
        assert index.check() == []
        return now
    finally:
        db.close()


CYCLES = 3


@pytest.mark.parametrize(
    "writers, tear",
    [(1, None), (2, None), (1, "torn record"), (1, "garbage"), (2, "cut short")],
    ids=["1 writer", "2 writers", "torn record", "garbage", "2 writers, cut short"],
)
def test_sigkill_right_after_acknowledged_writes_loses_none(tmp_path: Path, writers: int, tear: str | None) -> None:
    store = tmp_path / "store"
    url = f"lmdb:{store}"
    with open_database(url) as db:
        index = LeaderboardIndex.create(db, PREFIX, SETTINGS)
        index.update_windows(WindowUpdate(specs=[WindowSpec(1, 0, 100, 100, len(WINDOWS))]))
    rng = random.Random(f"{writers}/{tear}")
    known: dict[str, int] = {}
    torn = []
    for cycle in range(CYCLES):
        names = [f"c{cycle}w{w}" for w in range(writers)]
        children = {name: start_writer(url + OPTIONS, name, SEED) for name in names}
        acked = {}
        for name in rng.sample(names, len(names)):  # the checkpointer may die first, or not
            acked[name] = kill_after(children[name], rng.randrange(30, 300))
        if tear:
            torn.append(tear_tail(store, tear, rng))
        before = sum(known.values()) + sum(acked.values())
        known = check_against_model(url, known, acked)
        landed = sum(known.values()) - before
        assert 0 <= landed <= writers
    print(f"\n{CYCLES * writers} SIGKILLs, {sum(known.values())} submissions checked against the model; {torn}")
