"""Windows built from sorted data (index/build.py), and what it stands on, on every store.

The oracles: a ranked set built in order holds exactly the bytes inserts in any order write; an
index whose windows a bulk load, a fill or a restore built holds exactly the keys and values
(B-trees, ranked sets, distinct-score sets, heads) of an index that took the same writes one
by one, whatever writes came during the build (noted, and redone as it ends); ``verify`` finds
nothing.  A build whose process stops renewing its hold is taken over, and its late writes are
refused by its fence.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fdb_leaderboard.index import Entry, IndexSettings, LeaderboardIndex, WindowUpdate, loading
from fdb_leaderboard.index.build import HOLD_SECONDS, BuildLost, WindowsBuild
from fdb_leaderboard.index.external_sort import ExternalSort
from fdb_leaderboard.index.layout import IndexLayout
from fdb_leaderboard.index.loading import BulkLoad
from fdb_leaderboard.index.restore import restore_parts
from fdb_leaderboard.index.snapshot import dump_parts
from fdb_leaderboard.proto import index_pb2
from fdb_leaderboard.proto import service_pb2 as pb
from fdb_leaderboard.rankedset import HashFunction, RankedSet, element_suffix
from fdb_leaderboard.service.catalog import Catalog
from fdb_leaderboard.service.housekeeping import Housekeeping
from fdb_leaderboard.store import Database, StoreFull, open_database, strinc
from fdb_leaderboard.store.api import FenceMoved

DAY = 86_400


# -- the pieces ------------------------------------------------------------------------------------


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    elements=st.lists(st.binary(min_size=1, max_size=3), max_size=400),
    count_duplicates=st.booleans(),
    hash_function=st.sampled_from(list(HashFunction)),
    nlevels=st.integers(2, 5),
)
def test_a_ranked_set_built_in_order_is_the_one_inserts_make(
    db: Database,
    prefix: bytes,
    elements: list[bytes],
    count_duplicates: bool,
    hash_function: HashFunction,
    nlevels: int,
) -> None:
    inserted = RankedSet(prefix + b"i", nlevels, hash_function, count_duplicates)
    built = RankedSet(prefix + b"j", nlevels, hash_function, count_duplicates)
    db.run(lambda tr: tr.clear_range(prefix, strinc(prefix)))
    shuffled = random.Random(len(elements)).sample(elements, len(elements))
    for start in range(0, len(shuffled), 100):
        db.run(lambda tr, part=shuffled[start : start + 100]: [inserted.add(tr, e) for e in part])
    writes: list[tuple[bytes, bytes]] = []
    builder = built.builder(lambda key, value: writes.append((key, value)))
    occurrences = 0
    for element in sorted(elements):
        occurrences += builder.add(element_suffix(element), built.element_hash(element))
    if elements:
        assert builder.finish() == occurrences
    assert len({key for key, _ in writes}) == len(writes)  # each node once
    db.run(lambda tr: tr.set_many(writes))

    def stored(ranked: RankedSet) -> list[tuple[bytes, bytes]]:
        rows = db.read(lambda tr: tr.get_range(ranked.prefix, strinc(ranked.prefix)))
        return [(key[len(ranked.prefix) :], value) for key, value in rows]

    assert stored(built) == stored(inserted)
    another = built.builder(lambda key, value: None)
    another.add(element_suffix(b"b"), 1)
    with pytest.raises(ValueError, match="ascending"):
        another.add(element_suffix(b"a"), 1)


@pytest.mark.parametrize("memory_items", [1, 7, 1000])
def test_an_external_sort_gives_every_item_in_order(tmp_path, memory_items: int) -> None:
    rng = random.Random(memory_items)
    items = [(rng.randbytes(rng.randrange(0, 6)), rng.randrange(3), (rng.randrange(9),)) for _ in range(500)]
    with ExternalSort(memory_items, str(tmp_path)) as sort:
        for item in items:
            sort.add(item)
        assert sort.runs == (0 if memory_items > len(items) else len(items) // memory_items)
        assert list(sort.sorted()) == sorted(items)
    assert list(tmp_path.iterdir()) == []  # the runs' files are gone (unlinked as opened)


def test_blind_writes_commit_every_chunk_and_stop_at_a_moved_fence(db: Database, prefix: bytes) -> None:
    fences = [prefix + b"fence-a", prefix + b"fence-b"]
    db.run(lambda tr: [tr.set(fence, b"mine") for fence in fences])
    keys = [prefix + b"k%06d" % i for i in range(30_000)]
    writes = db.blind_writes([(fence, b"mine") for fence in fences])
    for key in keys:
        writes.set(key, key[-3:])
    writes.flush()
    assert writes.keys == len(keys)
    stored = db.read(lambda tr: tr.get_range(prefix + b"k", prefix + b"l"))
    assert stored == [(key, key[-3:]) for key in keys]
    db.run(lambda tr: tr.set(fences[1], b"theirs"))  # another process took over one part
    late = db.blind_writes([(fence, b"mine") for fence in fences])
    with pytest.raises(FenceMoved):
        for key in keys:
            late.set(key + b"late", b"")
        late.flush()
    after = db.read(lambda tr: tr.get_range(prefix + b"k", prefix + b"l"))
    assert after == stored  # nothing of the late writes


# -- builds against the same writes one by one ------------------------------------------------------

SETTINGS = [
    IndexSettings(high_score_first=True),
    IndexSettings(aggregation="SUM", count_duplicates=True, dense_ranks=True),
    IndexSettings(aggregation="LATEST", group_size=1, context_size=1, dense_ranks=True, high_score_first=True),
]


def _windows() -> WindowUpdate:
    return WindowUpdate(
        high_score_first=True, windows=[(1, i * DAY, (i + 1) * DAY) for i in range(4)] + [(2, 0, 4 * DAY)]
    )


def _records(settings: IndexSettings, seed: int, count: int) -> list[tuple[tuple, list[Entry]]]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        group = (rng.choice(["x", "y"]),) if settings.group_size else ()
        context = (rng.randrange(3),) if settings.context_size else ()
        entries = [
            Entry(rng.randrange(30) * 5, rng.randrange(4 * DAY), context, group)
            for _ in range(rng.choice([1, 1, 1, 2, 3]))
        ]
        out.append(((i % 50,) if i % 11 == 0 else (i,), entries))  # a few records twice
    return out


def _meanwhile(index: LeaderboardIndex, rng: random.Random, count: int) -> None:
    """Writes of every kind, to loaded and other records."""
    for _ in range(25):
        pk = (rng.randrange(count + 20),)
        kind = rng.choice(["add", "save", "delete", "hide", "restore"])
        group = (rng.choice(["x", "y"]),) if index.settings.group_size else ()
        context = (1,) if index.settings.context_size else ()
        entry = Entry(rng.randrange(30) * 5, rng.randrange(4 * DAY), context, group)
        if kind == "add":
            index.add_entries(pk, [entry])
        elif kind == "save":
            index.save_record(pk, [entry, entry])
        elif kind == "delete":
            index.delete_record(pk)
        elif index.metadata(pk) is not None:
            (index.hide_record if kind == "hide" else index.restore_record)(pk)


def _contents(db: Database, prefix: bytes) -> list[tuple[bytes, bytes]]:
    """Everything the index stores but fill cursors and build notes; a head's states in one order
    (a write appends the states it changes, a fill those it fills: the order is the history's)."""
    layout = IndexLayout(prefix)
    rows = db.read(lambda tr: list(tr.iter_range(prefix, strinc(prefix))))
    out = []
    for key, value in rows:
        if key.startswith((layout.cursors, layout.builds)):
            continue
        if key.startswith(layout.records):
            head = index_pb2.RecordHead.FromString(value)
            states = sorted(head.windows, key=lambda state: (state.lb_key, state.group))
            del head.windows[:]
            head.windows.extend(states)
            value = head.SerializeToString()
        out.append((key[len(prefix) :], value))
    return out


@pytest.mark.parametrize("which", range(len(SETTINGS)))
def test_a_bulk_load_builds_what_writes_one_by_one_make(db: Database, prefix: bytes, which: int) -> None:
    """The built index against one that took the same writes one by one (``defer_ranks=False``):
    the same bytes, with writes of every kind between the load's batches and after its last one."""
    settings = SETTINGS[which]
    records = _records(settings, which, 300)
    built = LeaderboardIndex.create(db, prefix + b"b", settings)
    plain = LeaderboardIndex.create(db, prefix + b"p", settings)
    for index in (built, plain):
        index.clock = lambda: 1_800_000_000.0  # hidden records' notes say when
        index.update_windows(_windows())
        grouped = {"group": ("x",), "context": (0,)} if settings.group_size else {}
        index.add_score(("early",), 5, DAY + 1, **grouped)  # the windows holding it are not built
    loader = BulkLoad(built, 40, None, True, None, None)
    rng_built, rng_plain = random.Random(7), random.Random(7)
    for number in range(0, len(records), 40):
        loader._start(number // 40)
        loader.save(records[number : number + 40], number // 40)
        plain.write_batch(records[number : number + 40], limited=False)
        _meanwhile(built, rng_built, len(records))
        _meanwhile(plain, rng_plain, len(records))
    assert loader.build is not None and len(loader.build.windows) == 3  # not those holding "early"
    loader.build.finish()
    assert loader.build.counts.redone > 0
    assert built.check() == []
    assert built.directory().filling_windows == ()
    assert _contents(db, built.prefix) == _contents(db, plain.prefix)


@pytest.mark.parametrize("which", range(len(SETTINGS)))
def test_a_fill_built_from_sorted_data_is_the_one_steps_make(db: Database, prefix: bytes, which: int) -> None:
    settings = SETTINGS[which]
    records = _records(settings, 10 + which, 200)
    built = LeaderboardIndex.create(db, prefix + b"b", settings)
    stepped = LeaderboardIndex.create(db, prefix + b"p", settings)
    for index in (built, stepped):
        index.clock = lambda: 1_800_000_000.0
        index.bulk_load(records, 50)
        index.update_windows(_windows())  # over stored scores: filling
    build = WindowsBuild.start(built, lambda ops: ops.filler.unheld_windows(int(built.clock())), True, memory_items=30)
    assert build is not None and len(build.windows) == 5
    rng_built, rng_stepped = random.Random(3), random.Random(3)
    while not build.read_records(17, 60):
        _meanwhile(built, rng_built, len(records))
        _meanwhile(stepped, rng_stepped, len(records))
    build.finish()
    stepped.fill(max_records=13, build=False)
    assert built.check() == []
    assert _contents(db, built.prefix) == _contents(db, stepped.prefix)


def test_a_build_whose_process_died_is_taken_over_and_its_late_writes_refused(db: Database, prefix: bytes) -> None:
    index = LeaderboardIndex.create(db, prefix, IndexSettings())
    clock = [1_000_000.0]
    index.clock = lambda: clock[0]
    index.bulk_load([((i,), [Entry(i, 5)]) for i in range(50)], 10)
    index.update_windows(WindowUpdate(windows=[(1, 0, 100)]))
    build = WindowsBuild.start(index, lambda ops: ops.filler.unheld_windows(int(clock[0])), True)
    assert build is not None
    build.read_records(20, 100)
    build.close()  # its process stops: nothing renews the hold
    assert index.fill_step(max_records=100).done  # held: nothing another fill may do
    assert index.directory().filling_windows
    clock[0] += HOLD_SECONDS + 1
    index.fill(max_records=7, build=False)  # started over from the first record
    assert not index.directory().filling_windows and index.count(1, 5) == 50
    with pytest.raises(BuildLost):
        build.finish()  # were it to go on: its fence moved, it writes nothing
    assert index.check() == []


@pytest.mark.parametrize("expiring", [(1, 0, 10), (2, 0, 10)])
def test_a_build_stops_writing_once_any_of_its_windows_is_taken(
    db: Database, prefix: bytes, expiring: tuple[int, int, int]
) -> None:
    """An expiry takes one of a build's windows between its reads and its writes: the build
    writes nothing more (into that window's cleared keys least of all) and fails; the window left
    is filled as steps fill it (the oracle: an index filled by steps, then expired)."""
    lasting = (3 - expiring[0], 0, 100)
    built = LeaderboardIndex.create(db, prefix + b"b", IndexSettings())
    stepped = LeaderboardIndex.create(db, prefix + b"p", IndexSettings())
    for index in (built, stepped):
        index.clock = lambda: 1_000_000.0
        index.bulk_load([((i,), [Entry(i, 5)]) for i in range(3)], 10)
        index.update_windows(WindowUpdate(windows=[expiring, lasting]))  # over stored scores: filling
    build = WindowsBuild.start(built, lambda ops: ops.filler.unheld_windows(1_000_000), True)
    assert build is not None and len(build.windows) == 2
    assert build.read_records(100, 100)
    stepped.fill(max_records=2, build=False)  # the same heads (their states of both windows)
    for index in (built, stepped):
        assert [(w.type, w.start, w.end) for w in index.expire(10)] == [expiring]
    with pytest.raises(BuildLost):
        build.finish()
    built.fill(max_records=2, build=False)
    assert built.check() == []
    assert _contents(db, built.prefix) == _contents(db, stepped.prefix)


# -- room on the embedded store -----------------------------------------------------------------


def test_a_full_map_says_what_map_size_to_reopen_with(tmp_path) -> None:
    db = open_database(f"lmdb:{tmp_path / 'small'}?durable=false&map_size={1 << 20}")
    try:
        assert db.room()[1].startswith("the map size of 1,048,576 bytes")
        with pytest.raises(StoreFull, match=f"map_size={2 << 20}"):
            for start in range(0, 100_000, 1000):
                db.run(lambda tr, s=start: tr.set_many([(b"k%08d" % i, bytes(64)) for i in range(s, s + 1000)]))
    finally:
        db.close()


@pytest.mark.parametrize("records", [20_000, 60_000])
def test_a_load_stops_before_the_store_fills(tmp_path, monkeypatch, records: int) -> None:
    """A bulk load checks the room left as it goes, and its build before it writes: a load the
    store has room for but not its windows stops at its build, one too large as it goes; either
    raises StoreFull naming what bounds the store, the records saved before stay, verify passes."""
    monkeypatch.setattr(loading, "ROOM_SECONDS", 0.0)
    monkeypatch.setattr(loading, "ROOM_RESERVE", 1 << 20)
    db = open_database(f"lmdb:{tmp_path / 'small'}?durable=false&map_size={8 << 20}")
    try:
        index = LeaderboardIndex.create(db, b"\x15\x01", IndexSettings())
        index.update_windows(_windows())
        with pytest.raises(StoreFull, match="map size") as stopped:
            index.bulk_load(((i,), [Entry(i % 97, i % (4 * DAY))]) for i in range(records))
        assert ("a load (after" in str(stopped.value)) == (records == 60_000), stopped.value
        assert index.read(lambda ops: ops.tr.get_range(*_heads(index), 1))  # records saved
        assert index.directory().filling_windows  # given back: a fill builds them once there is room
        assert index.check() == []
    finally:
        db.close()


def _heads(index: LeaderboardIndex) -> tuple[bytes, bytes]:
    return index.layout.records, strinc(index.layout.records)


def test_an_expired_window_is_cleared_in_bounded_steps(db: Database, prefix: bytes) -> None:
    """An expiry takes the window out of the directory at once and clears its data as the store
    allows: on the embedded store in bounded transactions, resumed by any later expiry."""
    index = LeaderboardIndex.create(db, prefix, IndexSettings(dense_ranks=True))
    index.update_windows(_windows())
    index.bulk_load([((i,), [Entry(i % 300, i % (4 * DAY))]) for i in range(3000)], 500)
    day0 = index.directory().find(1, 0, DAY)
    ranges = index.layout.window_ranges(day0.key_bytes)

    def left() -> int:
        return sum(len(db.read(lambda tr, r=r: tr.get_range(*r))) for r in ranges)

    assert left() > 1500
    gone = index.run(lambda ops: ops.windows.expire(DAY))  # the expiry's own transaction alone
    assert [(w.type, w.start) for w in gone] == [(1, 0)]
    assert index.directory().find(1, 0, DAY) is None
    if not db.batched_reads:  # the embedded store: left to clear, noted
        assert left() > 1500
        assert not index.run(lambda ops: ops.windows.clear_retired(100))
        assert left() > 1000
    index.expire(0)  # nothing more to expire: it clears what is left
    assert left() == 0
    assert db.read(lambda tr: tr.get_range(index.layout.retired, strinc(index.layout.retired))) == []
    assert index.check() == [] and index.count() == 3000


# -- below index format 4: the forms release 0.2.0 reads ------------------------------------------------


def _format_4_forms(index: LeaderboardIndex) -> list[bytes]:
    """The keys of index format 4's forms the index holds: builds' tokens and notes (``S + (16,
    ...)``), deleted windows' notes (``S + (17, ...)``), fill cursors saying ``sorted_build``."""
    layout = index.layout

    def read(tr) -> list[bytes]:
        noted = tr.get_range(layout.builds, strinc(layout.builds)) + tr.get_range(
            layout.retired, strinc(layout.retired)
        )
        cursors = tr.get_range(layout.cursors, strinc(layout.cursors))
        return [key for key, _ in noted] + [
            key for key, value in cursors if index_pb2.FillCursor.FromString(value).sorted_build
        ]

    return index.db.read(read)


def test_below_format_4_a_load_defers_its_windows_as_release_0_2_0_does(db: Database, prefix: bytes) -> None:
    """At index format 3 a load writes no build's keys: its empty windows' primary B-trees as it
    goes, their ranked sets by a fill's second phase at its end, with writes of every kind between
    its batches; the index is then the one the same writes one by one make."""
    settings = SETTINGS[2]
    records = _records(settings, 5, 300)
    built = LeaderboardIndex.create(db, prefix + b"b", settings, format=3)
    plain = LeaderboardIndex.create(db, prefix + b"p", settings, format=3)
    for index in (built, plain):
        index.clock = lambda: 1_800_000_000.0
        index.update_windows(_windows())
    loader = BulkLoad(built, 40, None, True, None, None)
    rng_built, rng_plain = random.Random(9), random.Random(9)
    for number in range(0, len(records), 40):
        loader._start(number // 40)
        loader.save(records[number : number + 40], number // 40)
        plain.write_batch(records[number : number + 40], limited=False)
        assert _format_4_forms(built) == []
        _meanwhile(built, rng_built, len(records))
        _meanwhile(plain, rng_plain, len(records))
    assert loader.build is None and len(loader.deferred) == 6  # every window held nothing
    assert {w.lb_key for w in built.directory().filling_windows} == {w.lb_key for w in loader.deferred}
    built.fill(max_records=40, build=False)  # what the load's end does
    assert built.check() == [] and built.directory().filling_windows == ()
    assert _format_4_forms(built) == []
    assert _contents(db, built.prefix) == _contents(db, plain.prefix)


@pytest.mark.parametrize("index_format", [3, 4])
def test_only_format_4_holds_builds_and_deleted_windows_notes(db: Database, prefix: bytes, index_format: int) -> None:
    """A load, a fill over stored records, a restore and an expiry, watched as they go: at index
    format 4 they build from sorted data (a build's token, notes, cursors) and leave deleted
    windows' data to bounded steps where the store clears key by key; at 3 none of that is
    ever stored, and each ends with the same board."""
    seen: list[bytes] = []
    index = LeaderboardIndex.create(db, prefix + b"s", IndexSettings(dense_ranks=True), format=index_format)
    index.update_windows(_windows())
    records = [((i,), [Entry(i % 300, i % (4 * DAY))]) for i in range(3000)]
    index.bulk_load(records, 500, progress=lambda _: seen.extend(_format_4_forms(index)))
    assert index.directory().filling_windows == () and index.check() == []
    index.update_windows(WindowUpdate(high_score_first=True, windows=[(3, 0, 4 * DAY)]))  # over stored scores
    index.fill(max_records=500, build=True, progress=lambda _: seen.extend(_format_4_forms(index)))
    assert index.directory().filling_windows == () and index.count(3, 0) == 3000
    steps = []
    restored = restore_parts(
        db, prefix + b"t", dump_parts(db, index, pb.DumpHeader(index="x")), lambda counts: steps.append(counts.phase)
    )
    copy = LeaderboardIndex.open(db, prefix + b"t")
    assert restored is not None and copy.format == index_format and "ranking" in steps
    assert copy.check() == [] and copy.top(5) == index.top(5) and copy.count(3, 0) == 3000
    day0 = index.directory().find(1, 0, DAY)
    index.run(lambda ops: ops.windows.expire(DAY))  # the first day's window goes
    seen.extend(_format_4_forms(index))
    left = sum(len(db.read(lambda tr, r=r: tr.get_range(*r))) for r in index.layout.window_ranges(day0.key_bytes))
    assert left == 0 or (index_format == 4 and not db.read(lambda tr: tr.clears_ranges_at_once))
    index.expire(0)
    assert _format_4_forms(index) == _format_4_forms(copy) == [] and index.check() == []
    retired = [key for key in seen if key.startswith(index.layout.retired)]
    assert bool(seen) == (index_format == 4)
    at_once = db.read(lambda tr: tr.clears_ranges_at_once)  # FoundationDB: a window's data in one clear
    assert bool(retired) == (index_format == 4 and not at_once)


def test_what_an_expiry_leaves_to_clear_the_maintenance_clears(db: Database, prefix: bytes) -> None:
    """A served expiry stops clearing as its deadline nears (``keep_going``); the server's next
    maintenance pass clears the rest, for an index with no expiry policy too, and the board reads
    the same meanwhile."""
    catalog = Catalog(db, prefix)
    index, _ = catalog.create("g", IndexSettings(dense_ranks=True))
    index.update_windows(_windows())
    index.bulk_load([((i,), [Entry(i % 300, i % (4 * DAY))]) for i in range(3000)], 500)
    ranges = index.layout.window_ranges(index.directory().find(1, 0, DAY).key_bytes)

    def left() -> int:
        return sum(len(db.read(lambda tr, r=r: tr.get_range(*r))) for r in ranges)

    top = index.top(10)
    gone = index.run(lambda ops: ops.windows.expire(DAY))
    assert [(w.type, w.start) for w in gone] == [(1, 0)]
    at_once = db.read(lambda tr: tr.clears_ranges_at_once)
    assert index.clear_retired(max_keys=100, keep_going=lambda: False) == at_once  # one step, then stopped
    assert (left() > 0) != at_once and index.check() == [] and index.top(10) == top
    Housekeeping(catalog).run_pass(1_800_000_000.0)
    assert left() == 0 and _format_4_forms(index) == [] and index.check() == []
