"""Dumps, restores and moves of indexes, between the embedded store and FoundationDB.

- A dump restored into either store (through a server: ``dump``, ``restore``) equals its source:
  ``verify`` finds it sound and every window ranks the same records the same way with the same
  scores, times and metadata (``compare_boards``); settings, policy, trim point, latest time
  and idempotency keys come along (a write sent again after the restore is applied once).
- In-process (``index.snapshot``, ``index.restore``) on every store: an index with groups and
  sub-directories comes back group by group.
- A damaged, cut or foreign file is refused whole before anything is written.
- A dump taken while writers run (through another server process on FoundationDB) is the index
  at one moment: the idempotency keys it holds are every write acknowledged before some instant
  and none sent after it (no write sent after a missing one's acknowledgement is in it).
- An index moved from the embedded store to another store while writers run: every write is
  acknowledged once, by one store or the other, and the moved index holds exactly those; the
  source then refuses writes, naming where the index went.
- The asyncio client dumps, restores and moves as the blocking one does (the copies compared).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from click.testing import CliRunner

from fdb_leaderboard import client
from fdb_leaderboard.cli import main
from fdb_leaderboard.client import AsyncLeaderboardClient, LeaderboardClient, compare_boards
from fdb_leaderboard.errors import NotFound
from fdb_leaderboard.index import Entry, IndexSettings, LeaderboardIndex, WindowSpec, WindowUpdate, tuplecodec
from fdb_leaderboard.index.dumpfile import read_dump, write_dump
from fdb_leaderboard.index.restore import Restorer, restore_parts
from fdb_leaderboard.index.snapshot import (
    APPLIED,
    FORMAT_VERSION,
    RECORDS,
    DumpError,
    dump_parts,
    issue_unit,
    rows_of,
    state_rows,
)
from fdb_leaderboard.proto import service_pb2 as pb
from fdb_leaderboard.service import served_dumps
from fdb_leaderboard.service.catalog import Catalog
from fdb_leaderboard.service.convert import maintenance_from_proto
from fdb_leaderboard.service.housekeeping import Housekeeping
from fdb_leaderboard.store import Database, open_database
from fdb_leaderboard.store.api import strinc
from tests.conftest import ServerPlace
from tests.support.replicated import Load, wait_for

pytestmark = pytest.mark.usefixtures("no_unexpected_server_errors")


@pytest.fixture
def places(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[ServerPlace, ServerPlace]]:
    """A place for the source's server and one for the target's, on the backends named."""
    source_backend, target_backend = request.param
    pair = ServerPlace(source_backend, tmp_path / "source"), ServerPlace(target_backend, tmp_path / "target")
    yield pair
    for place in pair:
        place.clear()


PAIRS = [("lmdb", "lmdb"), ("lmdb", "fdb"), ("fdb", "lmdb")]


def fill_source(lb: LeaderboardClient, name: str) -> dict[int, tuple[tuple, int]]:
    """A SUM index with windows of two types, metadata, keyed writes, a deleted record, a hidden
    one, a trim and windows left filling; returns each keyed write's arguments and answer by its number."""
    policy = pb.MaintenancePolicy(
        windows=[pb.RegularWindows(type=1, base=0, increment=100, duration=100)], horizon=500, retain=3600
    )
    lb.create_index(name, aggregation="SUM", context_size=1, dense_ranks=True, maintenance=policy)
    lb.update_windows(name, specs=[(1, 0, 100, 100, 10)])
    rng = random.Random(7)
    written = {}
    for i in range(240):
        arguments = (f"p{rng.randrange(60)}", rng.randrange(1, 50), rng.randrange(1000), (i,))
        metadata = {"name": f"n{i}"} if i % 10 == 0 else None
        written[i] = (arguments, lb.add_score(name, *arguments, metadata=metadata, idempotency_key=f"write-{i}"))
    assert lb.delete_record(name, "p3")
    assert lb.hide_record(name, "p5", "tests")  # a hidden record comes back hidden
    assert len(lb.expire(name, 200)) == 2
    assert lb.trim(name, 200) > 0  # SUM: entries before 200 folded into carried totals
    lb.update_windows(name, specs=[(2, 500, 250, 250, 2)])  # over stored scores: left filling (no maintenance)
    assert any(w.filling for w in lb.list_windows(name).windows)
    return written


@pytest.mark.parametrize("places", PAIRS, indirect=True)
def test_a_dump_restores_into_either_store_equal_to_its_source(
    places: tuple[ServerPlace, ServerPlace], tmp_path: Path
) -> None:
    source, target = places
    servers = source.start(), target.start()
    try:
        with LeaderboardClient(servers[0].address) as a, LeaderboardClient(servers[1].address) as b:
            written = fill_source(a, "game")
            path = tmp_path / "game.dump"
            end = write_dump(a.dump("game"), path)
            records = {arguments[0] for arguments, _ in written.values()} - {"p3"}
            assert end.records == len(records) and end.changes == 0 and end.pause_seconds == 0
            steps = list(b.restore(read_dump(path), "copy"))
            assert steps[-1].phase == "done" and steps[-1].index == "copy" and steps[-1].rows == end.rows
            assert b.verify("copy") == []
            assert b.hidden_records("copy") == a.hidden_records("game") != ([], None)
            a.fill("game")  # the source's windows left filling, as the restore filled them
            found = compare_boards(a, "game", b, "copy")
            assert found.differences == [] and found.windows == len(a.list_windows("game").windows) > 10
            assert found.entries > 100
            info = {i.name: i for i in a.list_indexes()}["game"]
            copied = {i.name: i for i in b.list_indexes()}["copy"]
            assert copied.options == info.options and copied.maintenance == info.maintenance
            ours, theirs = a.list_windows("game"), b.list_windows("copy")
            assert (theirs.trimmed_before, theirs.latest_timestamp) == (200, ours.latest_timestamp)
            assert [(w.key, w.type, w.start) for w in theirs.windows] == [
                (w.key, w.type, w.start) for w in ours.windows
            ]
            for pk in ("p1", "p7", "p3"):
                assert b.metadata("copy", pk) == a.metadata("game", pk)
            # A keyed write sent again to the copy answers the first answer and changes nothing.
            board = b.top("copy", 100)
            for i in (0, 17, 239):
                arguments, answer = written[i]
                assert (
                    b.add_score(
                        "copy",
                        *arguments,
                        metadata={"name": f"n{i}"} if i % 10 == 0 else None,
                        idempotency_key=f"write-{i}",
                    )
                    == answer
                )
            assert b.top("copy", 100) == board
            with pytest.raises(grpc.RpcError) as taken:
                list(b.restore(read_dump(path), "copy"))
            assert taken.value.code() is grpc.StatusCode.ALREADY_EXISTS
    finally:
        for server in servers:
            server.stop(grace=1)


def test_an_index_with_groups_comes_back_group_by_group(db: Database, prefix: bytes) -> None:
    settings = IndexSettings(aggregation="BEST", group_size=1, high_score_first=False)
    source = LeaderboardIndex.create(db, prefix + b"s", settings)
    source.update_windows(WindowUpdate(specs=[WindowSpec(1, 0, 50, 50, 4)]))
    source.save_sub_directory(("up",), True)  # this group ranks high scores first
    rng = random.Random(3)
    for i in range(150):
        group = rng.choice(["up", "down", "flat"])
        source.add_score((f"r{i % 40}",), rng.randrange(100), rng.randrange(200), group=(group,))
    header = pb.DumpHeader(index="grouped")
    restore_parts(db, prefix + b"t", dump_parts(db, source, header))
    copy = LeaderboardIndex.open(db, prefix + b"t")
    assert copy.check() == [] and copy.sub_directories() == {("up",): True}
    for window in source.directory().windows:
        at = None if window.type == 0 else window.start
        for group in (("up",), ("down",), ("flat",)):
            assert copy.top(100, window.type, at, group) == source.top(100, window.type, at, group)


def test_damaged_cut_and_foreign_files_are_refused_before_anything_is_written(
    server_place: ServerPlace, tmp_path: Path
) -> None:
    server = server_place.start()
    runner = CliRunner()

    def cli(*args: object, code: int = 0) -> str:
        result = runner.invoke(main, ["--server", server.address, *map(str, args)])
        assert result.exit_code == code, result.output
        return result.output

    try:
        with LeaderboardClient(server.address) as lb:
            lb.create_index("game")
            for i in range(50):
                lb.add_score("game", f"p{i}", i, 100)
            path = tmp_path / "game.dump"
            assert "dumped game to" in cli("dump", "game", path)
            data = path.read_bytes()
            damaged = tmp_path / "damaged.dump"
            damaged.write_bytes(data[:200] + bytes([data[200] ^ 1]) + data[201:])
            cut = tmp_path / "cut.dump"
            cut.write_bytes(data[: len(data) - 30])
            newer = tmp_path / "newer.dump"
            newer.write_bytes(data.replace(b"fdb-leaderboard dump 1\n", b"fdb-leaderboard dump 9\n", 1))
            foreign = tmp_path / "foreign.dump"
            foreign.write_bytes(b"name,score\nalice,3\n")
            for file, said in (
                (damaged, "is damaged"),
                (cut, "is cut short"),
                (newer, "format version 9; this version of fdb-leaderboard reads version 1"),
                (foreign, "is not an fdb-leaderboard dump"),
            ):
                output = cli("restore", file, "--index", "copy", code=1)
                assert said in output and len(output.strip().splitlines()) == 1, output
            assert [i.name for i in lb.list_indexes()] == ["game"]
            assert "ALREADY_EXISTS: index 'game' exists" in cli("restore", path, code=1)
            assert "NOT_FOUND" in cli("dump", "nothing", tmp_path / "nothing.dump", code=1)
            assert not list(tmp_path.glob("nothing.dump*"))  # no file, complete or not
            restored = cli("restore", path, "--index", "copy", "--json")
            assert '"index": "copy"' in restored
            assert compare_boards(lb, "game", lb, "copy").differences == []
    finally:
        server.stop(grace=1)


def applied_keys(url: str, root: bytes, name: str) -> set[str]:
    """The idempotency keys the index ``name`` holds (its writes applied), read from the store."""
    with open_database(url) as db:
        index = Catalog(db, root).get(name)
        begin = index.layout.applied
        keys: set[str] = set()
        position = begin
        while True:
            rows = db.read(lambda tr, at=position: tr.get_range(at, strinc(begin), 1000))
            keys.update(tuplecodec.unpack(key[len(begin) :])[0] for key, _ in rows)
            if len(rows) < 1000:
                return keys
            position = rows[-1][0] + b"\x00"


def test_a_dump_taken_while_writers_run_is_the_index_at_one_moment(server_place: ServerPlace, tmp_path: Path) -> None:
    source = server_place.start()
    # On FoundationDB the writes go through another server process: its writes note their changes too.
    writes_to = server_place.start() if server_place.backend == "fdb" else source
    target = ServerPlace("lmdb", tmp_path / "target")
    restored = target.start()
    indexes = {"live": "SUM"}
    try:
        with LeaderboardClient(source.address) as a, LeaderboardClient(restored.address) as b:
            a.create_index("live", aggregation="SUM")
            with Load(lambda: writes_to.address, indexes, writers=3, readers=0, records=200) as load:
                assert wait_for(lambda: len(load.acknowledged()) > 100, 30)
                path = tmp_path / "live.dump"
                for _ in range(20):  # until writes came during a dump (a busy machine may starve them)
                    end = write_dump(a.dump("live", catch_up_seconds=0.2), path)
                    if end.changes:
                        break
                dumped = time.monotonic()
                assert wait_for(lambda: load.first_write_after(dumped) is not None, 30)
            assert load.unexpected() == []
            assert end.changes > 0  # writes came during the dump, and were copied again
            list(b.restore(read_dump(path), "copy"))
            assert b.verify("copy") == []
            keys = applied_keys(target.url, target.root, "copy")
            mine = {write.key: write for write in load.writes}
            assert keys <= mine.keys()
            kept = [mine[key] for key in keys]
            missing = [write for write in load.acknowledged() if write.key not in keys]
            assert kept and missing
            # One moment: every write acknowledged before a write that the dump holds was sent is in it.
            assert min(w.acked_at for w in missing) >= max(w.sent_at for w in kept)  # type: ignore[type-var]
            totals: dict[str, int] = {}
            for write in kept:
                totals[write.pk] = totals.get(write.pk, 0) + write.value
            assert {e.pk[0]: e.score for e in b.top("copy", 300)} == totals
    finally:
        for server in {source, writes_to, restored}:
            server.stop(grace=1)
        target.clear()


@pytest.mark.parametrize("places", [("lmdb", "fdb")], indirect=True)
def test_the_asyncio_client_dumps_restores_and_moves_as_the_blocking_one(
    places: tuple[ServerPlace, ServerPlace],
) -> None:
    source, target = places
    servers = source.start(), target.start()

    async def session() -> tuple[pb.DumpEnd, pb.RestoreProgress, list[pb.RestoreProgress]]:
        async with AsyncLeaderboardClient(servers[0].address) as a, AsyncLeaderboardClient(servers[1].address) as b:
            copied = [step async for step in b.restore(a.dump("game"), "copy")]
            end, last = await a.move("game", b, "moved", moved_to="elsewhere")
            return end, last, copied

    try:
        with LeaderboardClient(servers[0].address) as a, LeaderboardClient(servers[1].address) as b:
            fill_source(a, "game")
            a.fill("game")
            end, last, copied = asyncio.run(session())
            assert copied[-1].phase == "done" and last.phase == "done" and last.rows == copied[-1].rows == end.rows
            for name in ("copy", "moved"):
                assert b.verify(name) == []
                assert compare_boards(a, "game", b, name).differences == []
            with (
                LeaderboardClient(servers[0].address, retry=None) as old,
                pytest.raises(client.Unavailable, match="moved to elsewhere"),
            ):
                old.add_score("game", "late", 1, 1, (0,))
    finally:
        for server in servers:
            server.stop(grace=1)


class MoveSteps:
    """A move's progress as seen when it paused the writes: the target's last progress and the
    dump's changes count at its last "caught up" mark."""

    def __init__(self) -> None:
        self.restored: pb.RestoreProgress | None = None
        self.caught_up: int | None = None
        self.at_pause: pb.RestoreProgress | None = None
        self.caught_up_at_pause: int | None = None

    def __call__(self, step: pb.DumpPart | pb.RestoreProgress) -> None:
        if isinstance(step, pb.RestoreProgress):
            self.restored = step
        elif step.progress.phase == "caught up":
            self.caught_up = step.progress.changes
        elif step.progress.phase == "paused" and self.at_pause is None:
            self.at_pause, self.caught_up_at_pause = self.restored, self.caught_up


@pytest.mark.parametrize("target_backend", ["lmdb", "fdb"])
def test_moving_a_live_board_from_the_embedded_store_loses_and_doubles_nothing(
    target_backend: str, tmp_path: Path
) -> None:
    source = ServerPlace("lmdb", tmp_path / "source", durable=True)
    target = ServerPlace(target_backend, tmp_path / "target")
    servers = source.start(), target.start()
    current = [servers[0].address]
    indexes = {"board": "SUM"}
    try:
        with LeaderboardClient(servers[0].address) as a, LeaderboardClient(servers[1].address) as b:
            a.create_index("board", aggregation="SUM")
            with Load(lambda: current[0], indexes, writers=3, readers=1, records=100) as load:
                assert wait_for(lambda: len(load.acknowledged()) > 100, 30)
                seen = MoveSteps()
                # catch_up_seconds: writes never keep the target from catching up here; the limit is not reached.
                end, last = a.move("board", b, moved_to=servers[1].address, catch_up_seconds=60, progress=seen)
                current[0] = servers[1].address  # the writers are pointed at the new store
                moved = time.monotonic()
                assert wait_for(lambda: load.first_write_after(moved) is not None, 30)
            assert last.phase == "done" and seen.at_pause is not None
            # The writes were paused only once the target had rebuilt the board and applied every change
            # up to the dump's last "caught up" mark: the pause covered no ranking, only the changes after it.
            assert seen.at_pause.phase in ("built", "catching up"), seen.at_pause
            assert last.entries_ranked == seen.at_pause.entries_ranked
            assert seen.caught_up_at_pause is not None and seen.at_pause.changes >= seen.caught_up_at_pause
            assert last.changes == end.changes and end.pause_seconds > 0
            # The servers share this process (and its GIL) with the target's rebuild: a write may wait
            # past its deadline, and is sent again with its key like one refused.
            unexpected = [a for a in load.unexpected() if a.code != "DEADLINE_EXCEEDED"]
            assert unexpected == [], unexpected[:3]
            assert all(write.acked_at is not None for write in load.writes)
            assert {e.pk[0]: e.score for e in b.top("board", 200)} == load.expected_boards()["board"]
            assert b.verify("board") == []
            with LeaderboardClient(servers[0].address, retry=None) as old:
                with pytest.raises(grpc.RpcError) as refused:
                    old.add_score("board", "late", 1, 1)
                assert refused.value.code() is grpc.StatusCode.UNAVAILABLE
                assert f"moved to {servers[1].address}" in refused.value.details()
                assert old.top("board", 1)  # reads still answer
    finally:
        for server in servers:
            server.stop(grace=1)
        target.clear()


def test_writes_paused_and_resumed(client: LeaderboardClient, server) -> None:
    client.create_index("game", boards=["daily"])
    runner = CliRunner()
    result = runner.invoke(main, ["--server", server.address, "index", "pause", "game", "--reason", "maintenance"])
    assert result.exit_code == 0 and "refused until" in result.output
    listed = runner.invoke(main, ["--server", server.address, "index", "list"]).output
    assert listed.splitlines()[0].endswith("; writes refused: maintenance")
    # Maintenance leaves a paused index alone (it may have moved to another store).
    passed = runner.invoke(main, ["--server", server.address, "maintain", "--once"])
    assert passed.exit_code == 0 and "game" not in passed.output
    with LeaderboardClient(server.address, retry=None) as once:
        with pytest.raises(grpc.RpcError) as refused:
            once.add_score("game", "alice", 1, 1)
        assert refused.value.code() is grpc.StatusCode.UNAVAILABLE and "maintenance" in refused.value.details()
        assert once.top("game", 1) == []
        assert runner.invoke(main, ["--server", server.address, "index", "resume", "game"]).exit_code == 0
        assert once.add_score("game", "alice", 1, 1) == 1
    result = runner.invoke(main, ["--server", server.address, "index", "pause", "nothing"])
    assert result.exit_code == 1 and "NOT_FOUND" in result.output


def test_a_dump_nobody_reads_any_more_stops_capturing(server_place: ServerPlace) -> None:
    server = server_place.start()
    try:
        with LeaderboardClient(server.address) as lb:
            lb.create_index("game")
            lb.bulk_load("game", [((f"p{i}",), [(i, 1)]) for i in range(5000)])
            parts = lb.dump("game")
            assert next(parts).WhichOneof("part") == "header"
            entry = server.catalog.entry("game")
            assert len(entry.captures) == 1
            parts.close()  # the client goes away mid-dump
            assert wait_for(lambda: not server.catalog.entry("game").captures, 10)
            lb.add_score("game", "p1", 5, 2)  # writes carry on, noting nothing
    finally:
        server.stop(grace=1)


def test_a_dump_waiting_for_its_reader_keeps_its_capture(db: Database, prefix: bytes, monkeypatch) -> None:
    """A mover's target reads nothing while it rebuilds the board, so the dump waits in its
    stream: its capture is renewed meanwhile, and a write made past the capture's first lease is
    still noted and copied."""
    monkeypatch.setattr(served_dumps, "CAPTURE_LEASE", 2.0)
    monkeypatch.setattr(served_dumps, "RENEW_EVERY", 0.2)
    catalog = Catalog(db, prefix)
    catalog.create("game", IndexSettings(aggregation="BEST"))
    source = catalog.get("game")
    source.update_windows(WindowUpdate())
    source.write_batch([((f"p{i}",), [Entry(i, i)]) for i in range(20)])
    parts = served_dumps.ServedDump(catalog, pb.DumpRequest(index="game"), lambda: True).parts()
    taken = [next(parts)]
    while taken[-1].WhichOneof("part") != "copied":  # every row copied (the capture started before)
        taken.append(next(parts))
    time.sleep(2.5)  # the reader waits past the first lease (a target rebuilding the board)
    source.add_score(("p3",), 100, 50)  # a record copied already: only its capture notes this
    restore_parts(db, prefix + b"t", [*taken, *parts])
    copy = LeaderboardIndex.open(db, prefix + b"t")
    assert copy.check() == [] and copy.top(3) == source.top(3) and copy.top(1)[0].pk == ("p3",)
    # A capture that could not be renewed (its lease ran out, and a later dump cleared it): the
    # dump fails rather than miss the writes made since.
    dump = served_dumps.ServedDump(catalog, pb.DumpRequest(index="game"), lambda: True)
    parts = dump.parts()
    while next(parts).WhichOneof("part") != "copied":
        pass
    catalog.end_capture("game", dump.capture)
    time.sleep(0.5)  # a renewal comes meanwhile
    with pytest.raises(NotFound, match="lease ran out"):
        list(parts)


def test_changed_records_applied_to_a_copy_leave_it_the_source(db: Database, prefix: bytes) -> None:
    """A catch-up's changed units replace what the copy has: records deleted, given more entries,
    their entries replaced, idempotency keys; only the entries that differ are written, and a
    dump of the copy is then the source's, row for row."""
    source = LeaderboardIndex.create(db, prefix + b"s", IndexSettings(aggregation="SUM"))
    source.update_windows(WindowUpdate(specs=[WindowSpec(1, 0, 100, 100, 2)]))
    source.write_batch([((f"p{i}",), [Entry(i, i), Entry(1, i + 50)]) for i in range(30)])
    copy = Restorer(db, prefix + b"t", pb.DumpHeader(format_version=FORMAT_VERSION))
    dumped = list(dump_parts(db, source, pb.DumpHeader(index="x")))
    for part in dumped:
        if part.WhichOneof("part") == "rows":
            copy.write_rows(rows_of(part.rows))
    list(copy.build())
    source.delete_record(("p1",))
    source.write_record(("p2",), [Entry(7, 120), Entry(8, 150)], idempotency_key="k2")
    p2 = RECORDS + tuplecodec.pack((("p2",),))
    p2_then = db.read(lambda tr: issue_unit(tr, source.prefix, p2)())
    source.write_record(("p2",), [Entry(6, 160)], replace=True)  # the entries above are gone again
    source.write_record(("p3",), [Entry(9, 9)], replace=True)
    source.write_record(("p40",), [Entry(40, 40)], idempotency_key="k40")
    changed = [RECORDS + tuplecodec.pack(((pk,),)) for pk in ("p1", "p2", "p3", "p40")]
    changed += [APPLIED + tuplecodec.pack((key,)) for key in ("k2", "k40")]
    units = db.read(lambda tr: [(unit, issue_unit(tr, source.prefix, unit)()) for unit in changed])
    copy.apply_changes([(p2, p2_then), *units])  # p2 as it was, then as it is, in one part
    copy.apply_changes(units[2:])  # units sent again (as a later round would) change nothing more
    list(copy.apply_state(db.read(lambda tr: state_rows(tr, source.prefix))))
    restored = LeaderboardIndex.open(db, prefix + b"t")
    assert restored.check() == []

    def rows(index: LeaderboardIndex) -> list:
        return [
            part.rows for part in dump_parts(db, index, pb.DumpHeader(index="x")) if part.WhichOneof("part") == "rows"
        ]

    assert rows(restored) == rows(source)


def test_a_dump_out_of_order_is_refused(db: Database, prefix: bytes) -> None:
    source = LeaderboardIndex.create(db, prefix + b"s", IndexSettings())
    source.add_entries(("a",), [Entry(1, 1)])
    parts = list(dump_parts(db, source, pb.DumpHeader(index="x")))
    kinds = [part.WhichOneof("part") for part in parts]
    reordered = [parts[kinds.index("copied")], *parts]
    with pytest.raises(DumpError, match="does not start with its header"):
        restore_parts(db, prefix + b"t", reordered)
    with pytest.raises(DumpError, match="stops before its end"):
        restore_parts(db, prefix + b"u", parts[:-1])
    parts[-1].end.sha256 = b"\x00" * 32
    with pytest.raises(DumpError, match="checksum does not match"):
        restore_parts(db, prefix + b"v", parts)


def test_the_servers_maintenance_leaves_a_paused_index_alone(tmp_path: Path) -> None:

    with open_database(f"lmdb:{tmp_path / 's'}?durable=false") as db:
        catalog = Catalog(db)
        policy = pb.MaintenancePolicy(
            windows=[pb.RegularWindows(type=1, base=0, increment=100, duration=100)], horizon=300, certain_within=300
        )
        catalog.create("game", IndexSettings(), maintenance_from_proto(policy))
        catalog.set_writes_paused("game", -1, "moved to elsewhere:50051")
        upkeep = Housekeeping(catalog)
        assert upkeep.run_pass(1000.0) == []  # nothing added: the index is left alone
        assert [w.type for w in catalog.get("game").directory().windows] == [0]
        catalog.set_writes_paused("game", 0)
        assert upkeep.run_pass(1000.0) == ["game: added 4 window(s)"]
