"""The consistency check (``verify``) in bounded batches and in parts: each kind of damage found, writes
between batches tolerated, a large set's structure checked in bounded batches, the same findings
as one whole check, resumed only from its own continuation, and through every door."""

from __future__ import annotations

import asyncio
import itertools
import sys
import threading
from pathlib import Path

import grpc
import httpx
import pytest

from fdb_leaderboard.client import AsyncLeaderboardClient, LeaderboardClient
from fdb_leaderboard.errors import InvalidArgument
from fdb_leaderboard.http import HttpServer
from fdb_leaderboard.index import (
    CheckReport,
    Entry,
    IndexSettings,
    LeaderboardIndex,
    WindowSpec,
    WindowUpdate,
    tuplecodec,
)
from fdb_leaderboard.proto import service_pb2 as pb
from fdb_leaderboard.service import ServerSettings
from fdb_leaderboard.store import open_database
from tests.support.servers import _cli

Code = grpc.StatusCode
DAY = 86_400
CLI = str(Path(sys.executable).parent / "fdb-leaderboard")


# -- verify in bounded batches --------------------------------------------------------------------


def _verified_index(db: object, prefix: bytes = b"\x15\x02") -> LeaderboardIndex:
    index = LeaderboardIndex.create(db, prefix, IndexSettings(group_size=1))  # type: ignore[arg-type]
    index.update_windows(WindowUpdate(specs=[WindowSpec(1, 0, DAY, DAY, 2)]))
    index.write_batch([((f"p{i}",), [Entry(i % 17, i * 300, (), (f"g{i % 3}",))]) for i in range(300)])
    return index


def test_verify_checks_in_small_batches_and_finds_each_kind_of_damage(tmp_path: Path) -> None:
    with open_database(f"lmdb:{tmp_path / 'v'}?durable=false") as db:
        index = _verified_index(db)
        seen: list[int] = []
        report = index.check_report(batch_keys=7, progress=lambda r: seen.append(r.batches))
        assert report.problems == [] and report.complete
        assert report.records == 300 and report.windows == 3
        assert report.entries == 600  # every record in all-time and in its day
        assert report.ranked_sets == 9 and report.batches > 300 // 7 and seen == list(range(1, report.batches + 1))
        layout, space = index.layout, index
        window = index.directory().windows[0]
        group = tuplecodec.pack(("g0",))
        ranked = space.ranked_set(window, group)
        stray = tuplecodec.pack((99, 1))
        db.run(lambda tr: ranked.add(tr, stray))  # an element no record has
        assert any("holds (99, 1) that no record has" in p for p in index.check_report(batch_keys=7).problems)
        db.run(lambda tr: ranked.remove(tr, stray))
        key = layout.primary + window.key_bytes + group + stray + tuplecodec.pack(("ghost",))
        db.run(lambda tr: tr.set(key, b""))  # a B-tree entry no record has
        problems = index.check_report(batch_keys=7).problems
        assert any("holds (99, 1) for record ('ghost',), which the record's head does not have" in p for p in problems)
        assert any("ranked set counts (99, 1) 0 time(s), the B-tree 1" in p for p in problems)
        db.run(lambda tr: tr.clear(key))
        assert index.check() == []
        report = index.check_report(keep_going=lambda: False)
        assert not report.complete and report.batches == 0


def test_verify_tolerates_writes_between_its_batches(tmp_path: Path) -> None:
    with open_database(f"lmdb:{tmp_path / 'v'}?durable=false") as db:
        index = _verified_index(db)
        stop = threading.Event()

        def write() -> None:
            i = 0
            while not stop.is_set():
                index.add_score((f"p{i % 400}",), 50 + i % 13, i * 200, group=(f"g{i % 3}",))
                i += 1

        writer = threading.Thread(target=write)
        writer.start()
        try:
            for _ in range(3):
                assert index.check_report(batch_keys=5).problems == []
        finally:
            stop.set()
            writer.join()
        assert index.check() == []


@pytest.mark.parametrize("count_duplicates", [False, True])
def test_verify_in_small_batches_over_many_ties_finds_what_one_batch_finds(db, prefix, count_duplicates: bool) -> None:
    """Records sharing an element (score and time): a batch's last element goes on past it, and
    the reads over a batch's elements (their entries, their counts in the ranked set) are cut
    short by ties or by stray elements between them, and go on for the rest."""
    settings = IndexSettings(count_duplicates=count_duplicates, dense_ranks=True)
    index = LeaderboardIndex.create(db, prefix, settings)
    index.update_windows(WindowUpdate())
    index.write_batch([((f"p{i}",), [Entry(i % 4 * 10, 100)]) for i in range(40)])  # 10 records per element
    report = index.check_report(batch_keys=3)
    assert report.problems == [] and (report.records, report.entries) == (40, 40)
    assert report.elements == 4 + 4  # the ranked set's elements and the distinct scores
    window = index.directory().windows[0]
    ranked, packed = index.ranked_set(window, b""), tuplecodec.pack
    # (Higher scores first: an element is (-score, time).)  Strays between (-20, 100) and (-10, 100).
    strays = [packed((-20, 101 + i)) for i in range(5)] + [packed((-15, 100))]
    db.run(lambda tr: [ranked.add(tr, stray) for stray in strays])
    ghost = index.layout.primary + window.key_bytes + packed((-10, 100)) + packed(("ghost",))
    db.run(lambda tr: tr.set(ghost, b""))
    whole = index.check_report(batch_keys=10_000).problems  # one batch a step: no read cut short
    assert [p for p in whole if "that no record has" in p] == [
        f"{window.describe()}: ranked set of group () holds {tuplecodec.unpack(s)} that no record has" for s in strays
    ]
    assert any("holds (-10, 100) for record ('ghost',), which the record's head does not have" in p for p in whole)
    counted = [p for p in whole if "ranked set counts" in p]
    assert counted == (
        [f"{window.describe()}: ranked set counts (-10, 100) 10 time(s), the B-tree 11"] if count_duplicates else []
    )
    assert index.check_report(batch_keys=3).problems == whole
    assert index.check_report(batch_keys=2).problems == whole


def _large_index(db: object, prefix: bytes) -> LeaderboardIndex:
    """An all-time window whose ranked set (600 elements) and distinct-score set (300 scores) are
    each many structure batches long at batch_keys=3 (48 node keys a batch)."""
    index = LeaderboardIndex.create(db, prefix, IndexSettings(dense_ranks=True))  # type: ignore[arg-type]
    index.update_windows(WindowUpdate())
    index.bulk_load((((f"p{i}",), [Entry(i * 7 % 300, i)]) for i in range(600)), batch_size=300)
    return index


def test_verify_checks_the_structure_of_large_sets_in_bounded_batches(db, prefix) -> None:
    index = _large_index(db, prefix)
    node_reads: list[int] = []
    report = index.check_report(batch_keys=3, progress=lambda r: node_reads.append(r.nodes))
    assert report.problems == [] and report.complete
    assert report.ranked_sets == 2 and report.windows == 1
    per_batch = [after - before for before, after in itertools.pairwise([0, *node_reads])]
    structure_batches = [n for n in per_batch if n]
    assert sum(structure_batches) == report.nodes > 2 * (600 + 300)  # every level of both sets
    assert len(structure_batches) > (600 + 300) // (3 * 16)  # many batches...
    assert max(structure_batches) <= 2 * 3 * 16 + 100  # ...each bounded (a sound set's spans are short)
    assert f"and 2 ranked sets ({report.nodes} nodes) in 1 windows" in report.describe()


@pytest.mark.parametrize("dense", [False, True])
def test_verify_finds_damage_to_a_large_sets_structure(db, prefix, dense: bool) -> None:
    index = _large_index(db, prefix)
    window = index.directory().windows[0]
    ranked = (index.dense_set if dense else index.ranked_set)(window, b"")
    level_1 = db.read(lambda tr: tr.get_range_startswith(ranked.prefix + tuplecodec.pack((1,))))
    node, _count = level_1[len(level_1) // 2]
    db.run(lambda tr: tr.set(node, (99).to_bytes(8, "little")))  # a wrong count, mid-set
    level_0 = db.read(lambda tr: tr.get_range_startswith(ranked.prefix + tuplecodec.pack((0,))))
    db.run(lambda tr: tr.set(level_0[-2][0], bytes(8)))  # a level-0 count of 0
    where = f"{window.describe()}, group (){', distinct scores' if dense else ''}"
    oracle = [f"{where}: {message}" for message in db.read(ranked.check_consistency)]
    assert any("level 1: node" in p and "counts 99" in p for p in oracle), oracle
    assert any("level 0:" in p and "has count 0" in p for p in oracle), oracle
    found = index.check_report(batch_keys=3).problems
    assert sorted(p for p in found if p.startswith(where + ": level ")) == sorted(oracle)


def test_verify_tolerates_writes_between_its_structure_batches(db, prefix) -> None:
    index = _large_index(db, prefix)
    writes = iter(range(10_000))
    checked = [0]

    def write(report: CheckReport) -> None:  # in its own transaction, after each structure batch
        if report.nodes == checked[0]:
            return
        checked[0] = report.nodes
        i = next(writes)
        if i % 3 == 0:
            index.add_score((f"new{i}",), 300 + i, i)  # an add, with a new distinct score
        elif i % 3 == 1:
            index.add_score((f"p{i * 13 % 600}",), 1000 + i, i)  # a move: a better score
        else:
            index.delete_record((f"p{i * 17 % 600}",))  # a remove
        index.add_score((f"p{i * 11 % 600}",), i % 300, i)  # a score no better: no change

    report = index.check_report(batch_keys=3, progress=write)
    assert report.problems == [] and report.ranked_sets == 2 and next(writes) > 20
    assert index.check() == []


# -- verify in parts ----------------------------------------------------------------------------------


def _damage(db: object, index: LeaderboardIndex) -> None:
    """A stray ranked-set element and a B-tree entry no record has, in the first window's group g0."""
    window = index.directory().windows[0]
    group = tuplecodec.pack(("g0",))
    db.run(lambda tr: index.ranked_set(window, group).add(tr, tuplecodec.pack((99, 1))))  # type: ignore[attr-defined]
    ghost = index.layout.primary + window.key_bytes + group + tuplecodec.pack((98, 1)) + tuplecodec.pack(("ghost",))
    db.run(lambda tr: tr.set(ghost, b""))  # type: ignore[attr-defined]


def _in_parts(index: LeaderboardIndex, batches: int, **options: object) -> tuple[CheckReport, list[str], int]:
    """A check in parts of ``batches`` batches each: the last part's report, every part's problems,
    and how many parts it took."""
    problems: list[str] = []
    continuation = None
    for parts in range(1, 10_001):  # a check that never ends fails here, not at the suite's timeout
        left = [batches]

        def keep_going(left: list[int] = left) -> bool:
            left[0] -= 1
            return left[0] >= 0

        report = index.check_report(keep_going=keep_going, continuation=continuation, **options)  # type: ignore[arg-type]
        problems += report.problems
        if report.complete:
            return report, problems, parts
        assert report.batches > 0 and report.continuation
        continuation = report.continuation
    raise AssertionError(f"the check did not end in {parts} parts")


def _counts(report: CheckReport) -> tuple[int, ...]:
    return (report.records, report.entries, report.elements, report.ranked_sets, report.nodes, report.windows)


def test_verify_in_parts_finds_what_one_check_finds(db, prefix) -> None:
    index = _verified_index(db, prefix)
    dense = _large_index(db, prefix[:-1] + bytes([prefix[-1] ^ 1]))  # every step: distinct-score sets too
    for checked in (index, dense):
        whole = checked.check_report(batch_keys=3)
        report, problems, parts = _in_parts(checked, 1, batch_keys=3)
        assert problems == whole.problems == [] and _counts(report) == _counts(whole)
        assert report.batches == whole.batches and parts == whole.batches  # a part per batch
    _damage(db, index)
    whole = index.check_report(batch_keys=3)
    assert len(whole.problems) == 3, whole.problems  # the stray element, the ghost entry and its count
    for batches in (1, 2, 5):
        report, problems, parts = _in_parts(index, batches, batch_keys=3)
        assert problems == whole.problems and _counts(report) == _counts(whole) and parts > 50 // batches
    # The problem limit holds over every part; reached, the check is over.
    report, problems, _ = _in_parts(index, 1, batch_keys=3, max_problems=2)
    assert problems == whole.problems[:2] and report.complete


def test_a_check_in_parts_resumes_within_hidden_records(db, prefix) -> None:
    """Hidden records' notes and a window's hidden B-tree are steps of their own: a check of one
    batch a part resumes inside them (it started the records over, for ever, when they were not)
    and finds what one check finds."""
    index = _verified_index(db, prefix)
    for i in range(0, 60, 4):
        assert index.hide_record((f"p{i}",), reason="cheat", actor="ops")
    whole = index.check_report(batch_keys=3)
    report, problems, parts = _in_parts(index, 1, batch_keys=3)
    assert problems == whole.problems == [] and _counts(report) == _counts(whole) and parts == whole.batches
    # A note for a record that is not hidden: found in parts as in one check.
    layout = index.layout
    note = layout.hidden_key(tuplecodec.pack((("p0",),)))
    assert db.read(lambda tr: tr.get(note)) is not None  # (the key form of a record's note)
    db.run(lambda tr: tr.set(layout.hidden_key(tuplecodec.pack((("p1",),))), db.read(lambda r: r.get(note))))  # type: ignore[attr-defined]
    whole = index.check_report(batch_keys=3)
    assert whole.problems == ["a note says record ('p1',) is hidden, but it is not hidden"]
    for batches in (1, 2):
        report, problems, _ = _in_parts(index, batches, batch_keys=3)
        assert problems == whole.problems and _counts(report) == _counts(whole)


def test_a_check_goes_on_only_from_its_own_index_continuation(db, prefix) -> None:
    index = _verified_index(db, prefix)
    other = _verified_index(db, prefix[:-1] + bytes([prefix[-1] ^ 1]))
    stopped = index.check_report(batch_keys=3, keep_going=iter([True] * 20 + [False]).__next__)
    token = stopped.continuation
    assert token and stopped.batches == 20
    with pytest.raises(InvalidArgument, match="belongs to another index"):
        other.check_report(continuation=token)
    middle = len(token) // 2
    for broken in (token[:-1], token[:10], token[:middle] + bytes([token[middle] ^ 1]) + token[middle + 1 :], b"x"):
        with pytest.raises(InvalidArgument, match="not one this server handed out"):
            index.check_report(continuation=broken)
    assert index.check_report(batch_keys=3, continuation=token).batches == index.check_report(batch_keys=3).batches


def test_verify_of_a_large_index_runs_in_parts_through_every_door(server_place, tmp_path: Path) -> None:
    """A server whose calls may take 1 ms: no check finishes in one call.  A whole check in one call
    is refused as unfinished; in parts (the client, the CLI, HTTP) the whole index is checked."""
    server = server_place.start()
    with LeaderboardClient(server.address, timeout=30) as lb:
        lb.create_index("game", group_size=1)
        lb.update_windows("game", specs=[(1, 0, DAY, DAY, 2)])
        lb.write_batch("game", [((f"p{i}",), [(i % 17, i * 300, (), (f"g{i % 3}",))]) for i in range(300)])
        # A part answers how far the check got and where it goes on, never complete before the end.
        part = lb.stub.Verify(pb.VerifyRequest(index="game", continuation=b"", max_batches=2), timeout=30)
        assert not part.complete and part.continuation and part.batches == 2 and not part.problems
        with pytest.raises(grpc.RpcError, match="max_batches is for a check in parts"):
            lb.stub.Verify(pb.VerifyRequest(index="game", max_batches=2), timeout=30)
    server.stop(grace=1)
    server = server_place.start(ServerSettings(default_deadline=0.001))
    try:
        with LeaderboardClient(server.address, timeout=30) as lb:
            index = server.catalog.get("game")
            whole = index.check_report()
            assert whole.problems == [] and whole.batches > 10
            _damage(server.db, index)
            found = index.check()
            assert len(found) == 3
            with pytest.raises(grpc.RpcError) as unfinished:
                lb.stub.Verify(pb.VerifyRequest(index="game"), timeout=30)
            assert unfinished.value.code() is Code.DEADLINE_EXCEEDED
            assert "stopped at the call's deadline after it checked" in unfinished.value.details()
            assert "check in parts" in unfinished.value.details()
            report = lb.verify_report("game")
            assert report.complete and list(report.problems) == found and report.records == 300
            assert lb.verify("game", max_problems=1) == found[:1]
            # In pieces over key ranges at once, on connections of their own: the same check.
            seen: list[int] = []
            pieces = lb.verify_report("game", parts=4, progress=lambda merged: seen.append(merged.records))
            assert sorted(pieces.problems) == sorted(found) and pieces.complete
            assert (pieces.records, pieces.entries, pieces.windows) == (300, report.entries, report.windows)
            assert seen == sorted(seen) and seen[-1] == 300
            assert len(lb.verify_plan("game", 4)) > 1

            async def in_pieces() -> pb.VerifyResponse:
                async with AsyncLeaderboardClient(server.address, timeout=30) as alb:
                    return await alb.verify_report("game", parts=3)

            async_pieces = asyncio.run(in_pieces())
            assert sorted(async_pieces.problems) == sorted(found) and async_pieces.records == 300
            with pytest.raises(grpc.RpcError, match="split must be 2 or more"):
                lb.stub.Verify(pb.VerifyRequest(index="game", split=1, continuation=b"x"), timeout=30)
            http = HttpServer(server, "127.0.0.1:0").start()
            with httpx.Client(base_url=http.url, timeout=30, headers={"content-type": "application/json"}) as web:
                assert web.post("/v1/Verify", json={"index": "game"}).status_code == 504
                body: dict = {"index": "game", "continuation": ""}
                problems = []
                while True:
                    answer = web.post("/v1/Verify", json=body).json()
                    problems += answer["problems"]
                    if answer["complete"]:
                        break
                    assert answer["continuation"]
                    body["continuation"] = answer["continuation"]
                assert problems == found
                plan = web.post("/v1/Verify", json={"index": "game", "split": 3}).json()["parts"]
                assert len(plan) > 1 and all(isinstance(token, str) for token in plan)
            done = _cli([CLI, "--server", server.address, "verify", "game", "--parts", "1"])
            assert done.returncode == 1 and done.stdout.splitlines()[:3] == found, done
            done = _cli([CLI, "--server", server.address, "verify", "game"])  # 4 pieces at once
            assert done.returncode == 1 and sorted(done.stdout.splitlines()[:3]) == sorted(found), done
            assert "checked 300 records" in done.stdout and "3 problem(s) found in game" in done.stderr
    finally:
        server.stop(grace=1)
