"""Sequential read rounds per operation, where reads cost a round trip.

On FoundationDB every read that waits costs a network round trip, so the index issues
independent reads together.  Each transaction counts its read rounds (``ReadRounds``); on
the backends whose reads are batched (FoundationDB, and the embedded store with
``batched_reads=true``, which takes the same code paths) the counts are the same, so these
tests hold the operations to their budgets:

    submission <= 3 read rounds (+ commit), rank <= 2, top 10 <= 2, around-me <= 3

and a deletion takes no more rounds where it checks whether the record held the latest timestamp
(index format 4) than where it does not (below it).

Ranks walk every level of the ranked set at once and fall back to one more round when more
than 64 nodes separate a level's predecessors (about 1.6% per level): a few reads may take
one round more, never two.  Answers are checked against a brute-force model as they go.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable

import pytest

from fdb_leaderboard import formats
from fdb_leaderboard.index import Entry, IndexSettings, LeaderboardIndex
from fdb_leaderboard.index.directory import WindowSpec, WindowUpdate
from fdb_leaderboard.store import Database

DAY, WEEK, MONTH = 1, 2, 3
WINDOWS = WindowUpdate(
    high_score_first=True,
    specs=[WindowSpec(DAY, 0, 100, 100, 10), WindowSpec(WEEK, 0, 700, 700, 2), WindowSpec(MONTH, 0, 1000, 1000, 1)],
)
RECORDS = 3000
NOW = 150  # a timestamp inside one window of every type


def rounds_of(db: Database, call: Callable[[], object]) -> tuple[int, object]:
    """The read rounds ``call`` took (one transaction), and its result."""
    before = db.stats.snapshot()
    result = call()
    after = db.stats.snapshot()
    assert after["transactions"] - before["transactions"] == 1
    return after["read_rounds"] - before["read_rounds"], result


@pytest.fixture
def loaded(db: Database, prefix: bytes) -> tuple[LeaderboardIndex, dict[str, int]]:
    if not db.batched_reads:
        pytest.skip("this store's reads cost no round trip, so it walks the ranked set level by level")
    index = LeaderboardIndex.create(db, prefix, IndexSettings(high_score_first=True))
    index.update_windows(WINDOWS)
    rng = random.Random(21)
    best = {f"p{i}": rng.randrange(1_000_000) for i in range(RECORDS)}
    items = list(best.items())
    for start in range(0, RECORDS, 500):
        index.write_batch([((pk,), [Entry(score, NOW)]) for pk, score in items[start : start + 500]])
    return index, best


def model_rank(best: dict[str, int], pk: str) -> int:
    """ORDINAL all-time rank among records that all share one timestamp: higher scores first."""
    return sum(1 for score in best.values() if score > best[pk])


def test_submissions_take_at_most_three_read_rounds(loaded: tuple[LeaderboardIndex, dict[str, int]]) -> None:
    index, best = loaded
    rng = random.Random(5)
    seen = Counter()
    for i in range(120):
        pk = f"p{rng.randrange(RECORDS)}" if i % 3 else f"new{i}"
        score = rng.randrange(1_000_000)
        rounds, changed = rounds_of(index.db, lambda: index.add_score((pk,), score, NOW))  # noqa: B023
        seen[rounds] += 1
        if score > best.get(pk, -1):
            best[pk] = score
            assert changed == 4  # the record's value moved (or appeared) in all four windows
    assert max(seen) <= 3, seen
    for pk in rng.sample(sorted(best), 20):
        assert index.rank((pk,)) == model_rank(best, pk)


def test_reads_take_at_most_two_read_rounds_and_around_three(
    loaded: tuple[LeaderboardIndex, dict[str, int]],
) -> None:
    index, best = loaded
    db = index.db
    ordered = sorted(best, key=lambda pk: (-best[pk], pk))
    rng = random.Random(7)
    rank_rounds, around_rounds = Counter(), Counter()
    for pk in rng.sample(ordered, 150):
        rounds, rank = rounds_of(db, lambda: index.rank((pk,)))  # noqa: B023
        assert rank == model_rank(best, pk)
        rank_rounds[rounds] += 1
        rounds, rows = rounds_of(db, lambda: index.around((pk,), 3, 3))  # noqa: B023
        around_rounds[rounds] += 1
        position = ordered.index(pk)
        start = max(0, min(position - 3, len(ordered) - 7))
        assert [row.pk[0] for row in rows] == ordered[start : start + 7]
    rounds, top = rounds_of(db, lambda: index.top(10, DAY, NOW))
    assert [row.pk[0] for row in top] == ordered[:10] and rounds <= 2
    rounds, size = rounds_of(db, lambda: index.count(WEEK, NOW))
    assert size == len(best) and rounds <= 2
    # A level walked at once needs a second look only when more than 64 nodes separate two of
    # its predecessors: rare, and one round at most.
    assert max(rank_rounds) <= 3 and rank_rounds[3] <= len(ordered) // 100, rank_rounds
    assert max(around_rounds) <= 4 and around_rounds[4] <= len(ordered) // 100, around_rounds
    assert rank_rounds[2] + rank_rounds[1] >= 140 and around_rounds[3] + around_rounds[2] >= 140


def test_a_keyed_submission_checks_its_key_within_its_read_rounds(db: Database, prefix: bytes) -> None:
    """The idempotency key is read with the write's first reads: every keyed write takes the read
    rounds of the same write unkeyed on an identical index, and so does its repeat."""
    if not db.batched_reads:
        pytest.skip("this store's reads cost no round trip")
    rng = random.Random(9)
    scores = [((f"p{i}",), [Entry(rng.randrange(1_000_000), NOW)]) for i in range(RECORDS)]
    twins = []
    for twin in (prefix + b"\x01", prefix + b"\x02"):
        index = LeaderboardIndex.create(db, twin, IndexSettings(high_score_first=True))
        index.update_windows(WINDOWS)
        for start in range(0, RECORDS, 500):
            index.write_batch(scores[start : start + 500])
        twins.append(index)
    plain, keyed = twins
    seen = Counter()
    for i in range(150):
        pk, score = (f"p{rng.randrange(RECORDS)}",), rng.randrange(1_000_000)
        rounds, changed = rounds_of(db, lambda: plain.add_score(pk, score, NOW))  # noqa: B023
        key = f"key-{i}"
        assert rounds_of(db, lambda: keyed.add_score(pk, score, NOW, idempotency_key=key)) == (rounds, changed)  # noqa: B023
        repeat_rounds, answer = rounds_of(db, lambda: keyed.add_score(pk, score, NOW, idempotency_key=key))  # noqa: B023
        assert answer == changed and repeat_rounds <= rounds  # the repeat writes nothing new: no more reads
        seen[rounds] += 1
    assert seen[1] and seen[2], seen  # writes that moved records and writes that changed nothing
    for pk in rng.sample([pk for pk, _ in scores], 20):
        assert keyed.rank(pk) == plain.rank(pk)


def test_a_deletion_checks_the_latest_timestamp_within_its_read_rounds(db: Database, prefix: bytes) -> None:
    """Deleting a record reads its latest entry and the latest timestamp's state in the round
    that reads its head: the same rounds, deletion by deletion, as on an index below format 4,
    which does not look (while none of them held the latest)."""
    if not db.batched_reads:
        pytest.skip("this store's reads cost no round trip")
    older = formats.LATEST_RECOMPUTED - 1
    indexes = [
        LeaderboardIndex.create(db, prefix + bytes([n]), IndexSettings(high_score_first=True), format=version)
        for n, version in enumerate((formats.NEWEST_INDEX, older))
    ]
    rng = random.Random(8)
    scores = {f"p{i}": rng.randrange(1_000_000) for i in range(500)}
    for index in indexes:
        index.update_windows(WINDOWS)
        index.write_batch([((pk,), [Entry(score, NOW - i % 50)]) for i, (pk, score) in enumerate(scores.items())])
        index.add_score(("latest",), 0, NOW + 1)  # the record holding the latest timestamp stays
    seen = Counter()
    for pk in rng.sample(sorted(scores), 60):
        rounds = [rounds_of(db, lambda i=index: i.delete_record((pk,)))[0] for index in indexes]  # noqa: B023
        assert rounds[0] == rounds[1], (pk, rounds)
        seen[rounds[0]] += 1
        del scores[pk]
    assert max(seen) <= 2, seen
    for index in indexes:
        assert index.count() == len(scores) + 1
        assert index.read(lambda ops: ops.txn.latest_timestamp()) == NOW + 1
