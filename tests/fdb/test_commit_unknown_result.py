"""Every write path stays exact when FoundationDB reports commit_unknown_result (1021).

FoundationDB may retry a transaction that in fact committed: after 1021 the client cannot
know.  ``UnknownResultDatabase`` (tests only) is the real FoundationDB backend whose commits
report 1021 on a schedule: after really committing ("committed") or without committing
("lost"), up to three times per call.  Each scenario runs the same calls on it and on the
plain backend (each in a private prefix) and requires the same results from every call, the
same stored bytes under the index's prefix, the brute-force model's boards and records
(``tests/support/model.py``) where it applies, and a clean ``LeaderboardIndex.check``.

Each scenario is also run with the backend's idempotency switched off (the call's marker key
is dropped from the commit, so a retry cannot see that its call committed) and must then
fail: that proves it exercises a retry that would double something.  Bulk loads replace
whole records, so they stay exact without the marker too (shown, not required).
"""

from __future__ import annotations

import collections
import functools
import random
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import fdb.tuple
import grpc
import pytest

from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.errors import RuleRefusal
from fdb_leaderboard.index import AuditTrail, Entry, IndexSettings, LeaderboardIndex, ScoreRules
from fdb_leaderboard.index.directory import Rebuild, WindowSpec, WindowUpdate
from fdb_leaderboard.proto import index_pb2
from fdb_leaderboard.service import Server, server
from fdb_leaderboard.service.catalog import Catalog
from fdb_leaderboard.store import Database, open_database
from fdb_leaderboard.store.fdb_backend import FdbDatabase
from tests.conftest import fdb_url, private_prefix
from tests.index.test_against_model import listed, run_index_machine
from tests.support.model import Model, ModelNoRecord

COMMIT_UNKNOWN_RESULT = 1021
MAX_FAULTS_PER_CALL = 3  # then the call commits normally: every call ends


class UnknownResultDatabase(FdbDatabase):
    """FoundationDB whose commits report commit_unknown_result (1021) on a seeded schedule.

    ``rate``: the chance that a commit attempt is faulted (at most MAX_FAULTS_PER_CALL per
    call); ``lost``: the share of faults where the commit is not applied.  ``idempotent=False``
    removes the call's marker key from each commit (the backend's idempotency, switched off).
    """

    def __init__(
        self, cluster_file: str, seed: int = 0, rate: float = 1.0, lost: float = 0.25, idempotent: bool = True
    ) -> None:
        super().__init__(cluster_file)
        self.rng = random.Random(seed)
        self.rate = rate
        self.lost = lost
        self.idempotent = idempotent
        self.injected: collections.Counter[str] = collections.Counter()
        self._call = threading.local()
        self._lock = threading.Lock()

    def _transact(self, writable: bool, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        self._call.faults = 0
        self._call.marker = None
        return super()._transact(writable, fn, args, kwargs)

    def _shared_transaction(self, *args: Any) -> Any:  # run_together's transactions: one call each here
        self._call.faults = 0
        self._call.marker = None
        return super()._shared_transaction(*args)

    def _marker_key(self) -> bytes:
        self._call.marker = super()._marker_key()
        return self._call.marker

    def _commit(self, tr: Any) -> None:
        if not self.idempotent:
            tr.clear(self._call.marker)
        with self._lock:
            fault = self._call.faults < MAX_FAULTS_PER_CALL and self.rng.random() < self.rate
            kind = ("lost" if self.rng.random() < self.lost else "committed") if fault else None
            if kind is not None:
                self.injected[kind] += 1
        if kind is None:
            super()._commit(tr)
            return
        self._call.faults += 1
        if kind == "committed":
            super()._commit(tr)
        raise self._fdb.FDBError(COMMIT_UNKNOWN_RESULT)


def cluster_file() -> str:
    return fdb_url().removeprefix("fdb:")


@pytest.fixture(scope="module")
def clean_db() -> Iterator[Database]:
    with open_database(fdb_url()) as database:
        yield database


@pytest.fixture
def prefixes(clean_db: Database) -> Iterator[tuple[bytes, bytes]]:
    """Private prefixes for the plain run and the faulted one."""
    pair = private_prefix(), private_prefix()
    yield pair
    for prefix in pair:
        clean_db.run(lambda tr, p=prefix: tr.clear_range_startswith(p))


def dump(db: Database, prefix: bytes) -> list[tuple[bytes, bytes]]:
    """Everything stored under ``prefix``, keys relative to it, ``prefix`` in values replaced
    by ``<prefix>`` (a catalog entry holds its index's prefix); read in bounded pages.  Audit
    events (keyed by their time) are compared by :func:`audit_of` instead."""
    rows: list[tuple[bytes, bytes]] = []
    begin = prefix
    events = prefix + fdb.tuple.pack(("audit",))
    while True:
        page = db.read(lambda tr, b=begin: tr.get_range(b, prefix + b"\xff", limit=2000))
        kept = [(key, without_time(key, value, prefix)) for key, value in page if not key.startswith(events)]
        rows.extend((key[len(prefix) :], value.replace(prefix, b"<prefix>")) for key, value in kept)
        if len(page) < 2000:
            return rows
        begin = page[-1][0] + b"\x00"


def without_time(key: bytes, value: bytes, prefix: bytes) -> bytes:
    """``value`` with the store format's time cleared: the two runs may create it in different seconds."""
    if key != prefix + fdb.tuple.pack(("format",)):
        return value
    record = index_pb2.StoreFormat.FromString(value)
    record.raised_at = 0
    return record.SerializeToString()


def audit_of(db: Database, prefix: bytes) -> list[tuple[str, str, str, dict[str, str]]]:
    """The audit trail under catalog root ``prefix``, in order, without times."""
    events, _ = db.read(lambda tr: AuditTrail(prefix).events(tr, limit=1000))
    return [(e.actor, e.action, e.index, e.details) for e in events]


def stored_entries(index: LeaderboardIndex, pk: tuple) -> list[tuple[int, int, tuple]]:
    """A record's stored entries as (ts, score, context), in stored order."""
    rows = index.read(lambda ops: ops.txn.read_entries(fdb.tuple.pack((pk,))))
    return [(ts, score, tuple(context)) for ts, _seq, (_group, score, context) in rows]


def assert_matches_model(index: LeaderboardIndex, model: Model) -> None:
    """Every ready window's board and every record's entries as the model has them; check clean."""
    for window, filling in (model.windows or {}).items():
        if filling:
            continue
        window_type, start, _ = window
        ts = None if window_type == 0 else start
        got = [listed(e) for e in index.top(1000, window_type, ts)]
        assert got == model.top(1000, window_type, ts, (), "ORDINAL"), window
    for pk, entries in model.records.items():
        assert stored_entries(index, pk) == [
            (e.ts, e.score, e.context) for e in sorted(entries, key=lambda e: (e.ts, e.seq))
        ], pk
    assert index.check() == []


# -- the scenarios: each returns what its calls returned ---------------------------------------------

WINDOWS = [(1, 0, 10), (1, 10, 20), (1, 20, 30), (2, 0, 20), (2, 20, 40)]
PKS = [(f"p{i}",) for i in range(8)]


def scores(aggregation: str) -> Callable[[Database, bytes], list]:
    def scenario(db: Database, prefix: bytes) -> list:
        """add_score, add_entries and save_record into every window (all-time, two types)."""
        rng = random.Random(11)
        index = LeaderboardIndex.create(db, prefix, IndexSettings(high_score_first=False, aggregation=aggregation))
        model = Model(aggregation)
        index.update_windows(WindowUpdate(windows=WINDOWS))
        model.update_windows(False, WINDOWS)
        results = []
        for i in range(40):
            pk = rng.choice(PKS)
            raws = [((), rng.randrange(6), rng.randrange(40), ()) for _ in range(rng.randrange(1, 3))]
            if i % 5 == 4:
                results.append(index.add_entries(pk, [Entry(s, ts) for _, s, ts, _ in raws]))
                model.add(pk, raws)
            elif i % 7 == 6:
                results.append(index.save_record(pk, [Entry(s, ts) for _, s, ts, _ in raws]))
                model.save(pk, raws)
            else:
                _, score, ts, _ = raws[0]
                results.append(index.add_score(pk, score, ts))
                model.add(pk, raws[:1])
        assert_matches_model(index, model)
        return results

    return scenario


def seeded(db: Database, prefix: bytes, aggregation: str = "SUM", count: int = 8) -> tuple[LeaderboardIndex, Model]:
    """An index with ``count`` records of two entries each, and no directory yet.  Saved by
    save_record, which replaces the record and so stays exact without idempotency: a
    scenario's failure without it comes from the path it tests."""
    settings = IndexSettings(high_score_first=False, aggregation=aggregation)
    index = LeaderboardIndex.create(db, prefix, settings, all_time=False)
    model = Model(aggregation)
    for i, pk in enumerate(PKS[:count]):
        raws = [((), i + 1, 3 * i, ()), ((), 2 * i + 1, 3 * i + 15, ())]
        index.save_record(pk, [Entry(s, ts) for _, s, ts, _ in raws])
        model.add(pk, raws)
    return index, model


def deletes(db: Database, prefix: bytes) -> list:
    """delete_record of present and absent records (it returns whether one was there)."""
    index, model = seeded(db, prefix)
    index.update_windows(WindowUpdate(windows=WINDOWS[:2]))
    model.update_windows(False, WINDOWS[:2])
    index.fill()
    model.finish_fill()
    results = []
    for pk in [PKS[1], PKS[3], PKS[1], ("absent",), PKS[0]]:
        results.append(index.delete_record(pk))
        assert results[-1] == model.delete(pk)
    assert_matches_model(index, model)
    return results


def window_updates(db: Database, prefix: bytes) -> list:
    """update_windows: added, filling, deleted (delete_before), a flip and a rebuild."""
    index, model = seeded(db, prefix)
    results = []
    steps: list[tuple[bool, list, dict]] = [
        (False, WINDOWS[:2], {}),
        (False, [*WINDOWS[:2], (3, 5, 25)], {}),
        (False, [(1, 40, 50)], {"delete_before": 20}),
        (True, [(1, 40, 50)], {"rebuild": "ALWAYS"}),
    ]
    for hsf, windows, options in steps:
        update = WindowUpdate(
            high_score_first=hsf,
            windows=windows,
            delete_before=options.get("delete_before"),
            rebuild=Rebuild(options.get("rebuild", "IF_OVERLAPPING_CHANGED")),
        )
        result = index.update_windows(update)
        added, deleted, filling = model.update_windows(hsf, windows, True, options.get("delete_before"))
        observed = [
            sorted((w.type, w.start, w.end) for w in ws) for ws in (result.added, result.deleted, result.filling)
        ]
        assert observed == [sorted(added), sorted(deleted), sorted(filling)]
        results.append(observed)
        index.fill()
        model.finish_fill()
    assert_matches_model(index, model)
    return results


def fill_steps(db: Database, prefix: bytes) -> list:
    """Both fill phases in small steps: each reports what it did."""
    index, model = seeded(db, prefix, count=8)
    index.update_windows(WindowUpdate(windows=WINDOWS))
    model.update_windows(False, WINDOWS)
    steps = []
    while True:
        step = index.fill_step(max_records=2, max_entries=3)
        steps.append((step.done, step.records_processed, step.entries_ranked))
        if step.done:
            break
    model.finish_fill()
    # The first phase reports every record once, per pass over the records.
    assert sum(records for _, records, _ in steps) == len(model.records)
    assert_matches_model(index, model)
    return steps


def trims(db: Database, prefix: bytes) -> list:
    """Trim in steps of two records (SUM folds trimmed entries into a carried total)."""
    index, model = seeded(db, prefix, count=8)
    index.update_windows(WindowUpdate(windows=[(1, 20, 40)]))
    model.update_windows(False, [(1, 20, 40)])
    index.fill()
    model.finish_fill()
    removed = index.trim(20, max_records=2)
    model.trim(20)
    # Every entry before 20 is outside every window but all-time (SUM keeps its total).
    assert removed == sum(e.ts < 20 for entries in model.records.values() for e in entries) > 0
    for pk, entries in model.records.items():  # the model keeps entries; the index folds them
        kept = [(e.ts, e.score, e.context) for e in entries if e.ts >= 20]
        assert stored_entries(index, pk) == kept, pk
        model.records[pk] = [e for e in entries if e.ts >= 20]
    for i, pk in enumerate(PKS[:8]):
        assert index.rank_and_entry(pk).score == (i + 1) + (2 * i + 1)
    assert index.check() == []
    return [removed]


def expiry(db: Database, prefix: bytes) -> list:
    """expire returns the windows it deleted, once."""
    index, model = seeded(db, prefix)
    index.update_windows(WindowUpdate(windows=WINDOWS))
    model.update_windows(False, WINDOWS)
    index.fill()
    model.finish_fill()
    results = []
    for before in (10, 10, 30, 45):
        gone = sorted((w.type, w.start, w.end) for w in index.expire(before))
        assert gone == sorted(model.expire(before))
        results.append(gone)
    assert_matches_model(index, model)
    return results


def keep_ahead(db: Database, prefix: bytes) -> list:
    """keep_ahead adds the next regular windows (the maintenance pass), once."""
    index, model = seeded(db, prefix)
    index.update_windows(WindowUpdate())
    model.update_windows(False, [])
    results = []
    for now in (0, 0, 25, 60):
        added = index.keep_ahead(now, [(1, 0, 10, 10), (2, 0, 20, 20)], horizon=30, certain_within=30)
        windows = [(w.type, w.start, w.end) for w in added]
        results.append(windows)
        model.update_windows(False, sorted(set(model.windows) - {(0, -(2**63), 2**63 - 1)}) + windows)
        index.fill()
        model.finish_fill()
    assert results[1] == [] and results[0] and results[2]
    assert_matches_model(index, model)
    return results


def catalog(db: Database, prefix: bytes) -> list:
    """Catalog create (it says whether it created the index) and a bulk load into it."""
    names = Catalog(db, prefix)
    results = []
    for name in ("a", "b", "a"):
        index, added = names.create(name, IndexSettings(high_score_first=False, aggregation="SUM"), all_time=False)
        results.append((name, added is not None))  # None: it existed
    assert results == [("a", True), ("b", True), ("a", False)]
    index = names.get("b")
    index.update_windows(WindowUpdate(windows=WINDOWS[:2]))
    model = Model("SUM")
    model.update_windows(False, WINDOWS[:2])
    records = [((f"r{i}",), [Entry(i % 5, i % 20), Entry(1, 3)]) for i in range(25)]
    results.append(index.bulk_load(records, batch_size=4))
    for pk, entries in records:
        model.save(pk, [((), e.score, e.timestamp, ()) for e in entries])
    assert_matches_model(index, model)
    results.append([name for name, _ in names.list()])
    return results


def bulk_load(db: Database, prefix: bytes) -> list:
    """A bulk load replaces whole records: retried batches change nothing."""
    index, model = seeded(db, prefix, aggregation="SUM", count=4)
    index.update_windows(WindowUpdate(windows=WINDOWS[:3]))
    model.update_windows(False, WINDOWS[:3])
    index.fill()
    model.finish_fill()
    records = [((f"r{i}",), [Entry(i % 7, i % 30), Entry(2, i % 11)]) for i in range(30)]
    records += [(PKS[0], [Entry(9, 1)])]  # replaces a seeded record
    written = index.bulk_load(records, batch_size=4)
    for pk, entries in records:
        model.save(pk, [((), e.score, e.timestamp, ()) for e in entries])
    assert_matches_model(index, model)
    return [written]


def writes_together(db: Database, prefix: bytes) -> list:
    """Batches of score writes run together (``Database.run_together``: on FoundationDB one
    shared transaction per batch, its commit faulted as any other): many records of one window,
    one record twice in a batch, entries in every window, hides, restores and deletes among
    them, keyed writes sent again (answered from the key) or with a key used for another write,
    and calls refused before writing (a score rule, a hide of no record).  Each call's outcome is
    the model's, a refused one fails alone, and the boards are the model's."""
    rng = random.Random(23)
    index = LeaderboardIndex.create(db, prefix, IndexSettings(high_score_first=False, aggregation="SUM"))
    index.update_windows(WindowUpdate(windows=WINDOWS))
    index.set_score_rules(ScoreRules(max_score=50))
    index.clock = lambda: 1_800_000_000.0  # keyed writes store when they were applied: both runs alike
    model = Model("SUM")
    model.update_windows(False, WINDOWS)
    keyed: list[tuple[str, tuple, int, int]] = []  # (key, pk, score, ts) of keyed writes sent
    results = []
    for _ in range(10):
        calls: list[Callable[[], object]] = []
        expected: list[str] = []  # what each call must end as: "ok" or the error's name
        for _ in range(rng.randint(4, 10)):
            pk, score, ts = rng.choice(PKS[:5]), rng.randrange(8), rng.randrange(40)
            kind = rng.choice(["add", "add", "add", "keyed", "again", "other", "rule", "save", "delete", "hide"])
            if kind in ("again", "other") and not keyed:
                kind = "add"
            if kind == "add":
                calls.append(functools.partial(index.add_score, pk, score, ts))
                model.add(pk, [((), score, ts, ())])
            elif kind == "keyed":
                key = f"k{len(keyed)}"
                keyed.append((key, pk, score, ts))
                calls.append(functools.partial(index.add_score, pk, score, ts, idempotency_key=key))
                model.add(pk, [((), score, ts, ())])
            elif kind == "again":  # the same write sent again: changes nothing, answers the same
                key, pk, score, ts = rng.choice(keyed)
                calls.append(functools.partial(index.add_score, pk, score, ts, idempotency_key=key))
            elif kind == "other":  # a key used for another write: refused
                key, pk, score, ts = rng.choice(keyed)
                calls.append(functools.partial(index.add_score, pk, score + 1, ts, idempotency_key=key))
                kind = "AlreadyExists"
            elif kind == "rule":  # over the score rule's maximum: refused before writing
                calls.append(functools.partial(index.add_score, pk, 51 + score, ts))
                kind = "RuleRefusal"
            elif kind == "save":
                raws = [((), rng.randrange(8), rng.randrange(40), ()) for _ in range(2)]
                calls.append(functools.partial(index.save_record, pk, [Entry(s, t) for _, s, t, _ in raws]))
                model.save(pk, raws)
            elif kind == "delete":
                calls.append(functools.partial(index.delete_record, pk))
                expected.append(f"ok:{model.delete(pk)}")
                continue
            else:
                hide = rng.random() < 0.6
                calls.append(functools.partial(index.hide_record if hide else index.restore_record, pk))
                try:
                    done = model.hide(pk) if hide else model.restore(pk)
                except ModelNoRecord:
                    expected.append("NotFound")
                    continue
                expected.append(f"ok:{done}")
                continue
            expected.append("ok" if kind in ("add", "keyed", "again", "save") else kind)
        outcomes = db.run_together(calls)
        shown = []
        for (result, error), want in zip(outcomes, expected, strict=True):
            got = "ok" if error is None else "RuleRefusal" if isinstance(error, RuleRefusal) else type(error).__name__
            if want.startswith("ok:"):
                got = f"ok:{result}" if error is None else got
            assert got == want, (outcomes, expected)
            shown.append((got, result))
        results.append(shown)
    assert_matches_model(index, model)
    return results


SCENARIOS: dict[str, Callable[[Database, bytes], list]] = {
    "writes_together": writes_together,
    "add_score-BEST": scores("BEST"),
    "add_score-SUM": scores("SUM"),
    "add_score-LATEST": scores("LATEST"),
    "delete_record": deletes,
    "update_windows": window_updates,
    "fill_step": fill_steps,
    "trim": trims,
    "expire": expiry,
    "keep_ahead": keep_ahead,
    "catalog": catalog,
    "bulk_load": bulk_load,
}
IDEMPOTENT_BY_CONSTRUCTION = {"bulk_load"}  # whole records replaced: no marker needed


def run_scenario(name: str, clean_db: Database, prefixes: tuple[bytes, bytes], faulty: UnknownResultDatabase) -> None:
    scenario = SCENARIOS[name]
    expected = scenario(clean_db, prefixes[0])
    assert scenario(faulty, prefixes[1]) == expected
    assert dump(faulty, prefixes[1]) == dump(clean_db, prefixes[0])
    assert audit_of(faulty, prefixes[1]) == audit_of(clean_db, prefixes[0])


@pytest.mark.parametrize("name", SCENARIOS)
def test_every_write_path_is_exact_under_commit_unknown_result(
    name: str, clean_db: Database, prefixes: tuple[bytes, bytes]
) -> None:
    faulty = UnknownResultDatabase(cluster_file(), seed=len(name))
    run_scenario(name, clean_db, prefixes, faulty)
    # Both kinds of unknown result happened: a retry after a commit, and after none.
    assert faulty.injected["committed"] > 0 and faulty.injected["lost"] > 0, faulty.injected


@pytest.mark.parametrize("name", SCENARIOS)
def test_without_idempotency_the_scenario_fails(name: str, clean_db: Database, prefixes: tuple[bytes, bytes]) -> None:
    """The scenarios can fail: without the marker, a retry redoes a committed call."""
    faulty = UnknownResultDatabase(cluster_file(), seed=len(name), lost=0.0, idempotent=False)
    if name in IDEMPOTENT_BY_CONSTRUCTION:
        run_scenario(name, clean_db, prefixes, faulty)
        return
    with pytest.raises(AssertionError):
        run_scenario(name, clean_db, prefixes, faulty)


def test_a_call_faulted_every_time_still_ends(clean_db: Database, prefixes: tuple[bytes, bytes]) -> None:
    """Every commit reports 1021 after committing: each call ends on its first retry, which
    finds its marker, and returns the committed attempt's result."""

    class AlwaysUnknown(UnknownResultDatabase):
        def _commit(self, tr: Any) -> None:
            FdbDatabase._commit(self, tr)
            self.injected["committed"] += 1
            raise self._fdb.FDBError(COMMIT_UNKNOWN_RESULT)

    faulty = AlwaysUnknown(cluster_file())
    index = LeaderboardIndex.create(faulty, prefixes[1], IndexSettings(high_score_first=False, aggregation="SUM"))
    index.update_windows(WindowUpdate(specs=[WindowSpec(1, 0, 10, 10, 3)]))
    for i in range(10):
        index.add_score(("p",), 1, i)
    assert index.rank_and_entry(("p",)).score == 10
    assert stored_entries(index, ("p",)) == [(i, 1, ()) for i in range(10)]
    assert faulty.injected["committed"] == 12 and faulty.stats.snapshot()["unknown_results"] == 12


@pytest.mark.parametrize(("aggregation", "high_score_first", "grouped"), [("SUM", False, True), ("BEST", True, False)])
def test_index_matches_model_under_commit_unknown_result(
    aggregation: str, high_score_first: bool, grouped: bool
) -> None:
    """The model test's state machine (every write, window, fill, trim and expiry rule) on
    FoundationDB with half of all commits reporting 1021, for a few examples."""
    faulty = UnknownResultDatabase(cluster_file(), seed=5, rate=0.5)
    run_index_machine(faulty, aggregation, high_score_first, grouped, examples=2, steps=15)
    assert faulty.injected["committed"] >= 10 and faulty.injected["lost"] >= 3, faulty.injected


def test_service_writes_under_commit_unknown_result(monkeypatch: pytest.MonkeyPatch) -> None:
    """Through gRPC: index creation, window updates, scores and a streamed bulk load on a
    server whose store reports 1021 after each first commit; the result is the model's."""
    faulty = UnknownResultDatabase(cluster_file(), seed=3, lost=0.3)
    monkeypatch.setattr(server, "open_database", lambda url: faulty)
    root = fdb.tuple.pack(("lb-test", uuid.uuid4().hex))
    running = Server(fdb_url(), "127.0.0.1:0", catalog_root=root).start()
    model = Model("SUM")
    try:
        with LeaderboardClient(running.address, timeout=30) as lb:
            assert lb.create_index("game", aggregation="SUM", high_score_first=False) is True
            assert lb.create_index("game", aggregation="SUM", high_score_first=False) is False
            lb.update_windows("game", windows=WINDOWS[:2])
            model.update_windows(False, WINDOWS[:2])
            records = [((f"r{i}",), [(i % 9, i % 20)]) for i in range(30)]
            assert lb.bulk_load("game", records, batch_size=4) == len(records)
            for pk, entries in records:
                model.save(pk, [((), s, t, ()) for s, t in entries])
            for i in range(20):
                pk, score, ts = (f"r{i % 6}",), i, (3 * i) % 20
                lb.add_score("game", pk, score, ts)
                model.add(pk, [((), score, ts, ())])
            for window_type, ts in [(0, None), (1, 0), (1, 10)]:
                got = [listed(e) for e in lb.top("game", 100, window_type=window_type, timestamp=ts)]
                assert got == model.top(100, window_type, ts, (), "ORDINAL")
            assert lb.verify("game") == []
    except grpc.RpcError as error:
        pytest.fail(f"an RPC failed: {error}")
    finally:
        running.stop(grace=1)
        with open_database(fdb_url()) as db:
            db.run(lambda tr: tr.clear_range_startswith(root))
    assert faulty.injected["committed"] > 10, faulty.injected


def test_admin_actions_record_one_event_each_even_when_a_committed_transaction_runs_again(
    prefixes: tuple[bytes, bytes],
) -> None:
    """Every commit reports 1021 after committing, and the backend's marker is switched off, so
    each admin action's transaction runs again after it committed: the event's key, chosen once
    per call, is written again (not a second event), and an action whose retry finds its change
    made writes none over it.  One event per action, as on the plain run."""
    faulty = UnknownResultDatabase(cluster_file(), rate=1.0, lost=0.0, idempotent=False)
    names = Catalog(faulty, prefixes[1])
    index, _ = names.create("game", IndexSettings(), actor="ann")
    index.add_score(("p",), 5, 10)
    index.update_windows(WindowUpdate(windows=WINDOWS[:2]), actor="ann")
    index.hide_record(("p",), "bot", actor="bob")
    index.restore_record(("p",), actor="bob")
    index.set_score_rules(ScoreRules(0, 100), actor="cy")
    names.set_maintenance("game", index_pb2.MaintenancePolicy(retain=100), actor="cy")
    names.set_audit_retention(3600, actor="cy")
    assert [event[:3] for event in audit_of(faulty, prefixes[1])] == [
        ("ann", "CreateIndex", "game"),
        ("ann", "UpdateWindows", "game"),
        ("bob", "HideRecord", "game"),
        ("bob", "RestoreRecord", "game"),
        ("cy", "SetScoreRules", "game"),
        ("cy", "SetMaintenancePolicy", "game"),
        ("cy", "SetAuditRetention", ""),
    ]
    assert faulty.injected["committed"] >= 8


def test_service_writes_together_answer_each_call_as_if_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Through gRPC, 8 callers at once on a server whose store reports 1021 on a third of its
    commits (after committing or not): score writes share transactions (batches of several calls
    are seen), a caller's bad request (a score over the rule's maximum, an unknown index, an
    idempotency key used for another write, an empty record name) gets its own answer and fails
    none of the others in its batch, writes sent again with their key are applied once, and the
    boards are the model's."""

    class Recording(UnknownResultDatabase):
        def run_together(self, calls: Any) -> Any:
            batches.append(len(calls))
            return super().run_together(calls)

    batches: list[int] = []
    faulty = Recording(cluster_file(), seed=9, rate=0.33, lost=0.4)
    monkeypatch.setattr(server, "open_database", lambda url: faulty)
    root = fdb.tuple.pack(("lb-test", uuid.uuid4().hex))
    running = Server(fdb_url(), "127.0.0.1:0", catalog_root=root).start()
    model = Model("SUM")
    answers: dict[tuple[int, int], str] = {}
    try:
        with LeaderboardClient(running.address, timeout=30) as admin:
            admin.create_index("game", aggregation="SUM", high_score_first=False)
            admin.update_windows("game", windows=WINDOWS[:2])
            admin.set_score_rules("game", ScoreRules(max_score=50))
        model.update_windows(False, WINDOWS[:2])

        def caller(number: int) -> None:
            with LeaderboardClient(running.address, timeout=30) as lb:
                for i in range(16):
                    pk, score, ts, key = (f"r{(number + i) % 6}",), number + i % 4, (number * 7 + i) % 20, None
                    args: tuple = ("game", pk, score, ts)
                    if i % 4 == 2:  # bad, in one of four ways
                        bad = (number + i // 4) % 4
                        args = [
                            ("game", pk, 51, ts),
                            ("no-such-index", pk, score, ts),
                            ("game", pk, score + 1, ts),  # key of call i - 1, another write
                            ("game", (), score, ts),
                        ][bad]
                        key = f"c{number}-{i - 1}" if bad == 2 else None
                    elif i % 4 == 1:
                        key = f"c{number}-{i}"
                    try:
                        lb.add_score(*args, idempotency_key=key)
                        if i % 4 == 1:  # sent again: answered from its key
                            lb.add_score(*args, idempotency_key=key)
                        answers[number, i] = "ok"
                    except grpc.RpcError as error:
                        answers[number, i] = type(error).__name__

        threads = [threading.Thread(target=caller, args=(number,)) for number in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        for number in range(8):
            for i in range(16):
                if i % 4 != 2:
                    model.add((f"r{(number + i) % 6}",), [((), number + i % 4, (number * 7 + i) % 20, ())])
        bad_answers = {
            (number, i): ["ScoreOutOfRange", "NotFound", "AlreadyExists", "InvalidArgument"][(number + i // 4) % 4]
            for number in range(8)
            for i in range(2, 16, 4)
        }
        assert {key: answer for key, answer in answers.items() if key[1] % 4 == 2} == bad_answers
        assert [key for key, answer in answers.items() if key[1] % 4 != 2 and answer != "ok"] == []
        assert len(answers) == 8 * 16
        assert max(batches) > 1, batches  # calls did share transactions
        with LeaderboardClient(running.address, timeout=30) as lb:
            for window_type, ts in [(0, None), (1, 0), (1, 10)]:
                got = [listed(e) for e in lb.top("game", 100, window_type=window_type, timestamp=ts)]
                assert got == model.top(100, window_type, ts, (), "ORDINAL")
            assert lb.verify("game") == []
    finally:
        running.stop(grace=1)
        with open_database(fdb_url()) as db:
            db.run(lambda tr: tr.clear_range_startswith(root))
    assert faulty.injected["committed"] > 3 and faulty.injected["lost"] > 3, faulty.injected
