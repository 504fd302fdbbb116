#!/usr/bin/env python3
"""Dump, restore and move a board of ``--records`` records between the embedded store and FoundationDB.

1. Builds the benchmark's board (tools/bench/data.py: one entry per record, skewed scores with many
   ties, 4 windows per score: all-time, UTC daily, ISO-weekly, monthly) on a new embedded store,
   with ``bulk_load``, as the named index ``board``; then serves it with ``fdb-leaderboard serve``.
2. ``dump``: the board to a file through that server (no writes meanwhile): time, file size.
3. ``restore``: the file into a server on FoundationDB (``--cluster-file``) and into one on a new
   embedded store: time of each, then ``verify`` of each, and with ``--compare`` every window of
   each compared with the source's, rank by rank (``compare_boards``).
4. ``move``: the board from the embedded store to FoundationDB (its restored copy there dropped
   first) while ``--writers`` threads add scores to 50 records (keyed, sent again after
   UNAVAILABLE, pointed at the new store once the move returns): time, records changed during the
   move and copied again, how long writes were refused; then that every acknowledged write is in
   the moved board.

Every server is a process of its own; times are wall-clock, on this machine (2 cores, shared).

    eval "$(../shared/fdb/fdb-local env)"
    .venv/bin/python tools/bench dump --records 1000000 --cluster-file /tmp/fdb/fdb.cluster
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "support"))

import grpc
from replicated import Load, ServeProcess, wait_for

from fdb_leaderboard.client import LeaderboardClient, compare_boards
from fdb_leaderboard.index import Entry, IndexSettings, WindowUpdate
from fdb_leaderboard.index.dumpfile import read_dump, write_dump
from fdb_leaderboard.proto import service_pb2 as pb
from fdb_leaderboard.service.catalog import Catalog
from fdb_leaderboard.store import open_database

from .data import FILL_END, FILL_START, bench_windows, make_data
from .timing import Span


def build(url: str, records: int, seed: int) -> float:
    """The board, bulk loaded into the store at ``url``; returns the seconds it took."""
    data = make_data(records, 0, seed)
    with Span() as took, open_database(url) as db:
        index, _ = Catalog(db).create("board", IndexSettings(aggregation="BEST"))
        index.update_windows(WindowUpdate(windows=bench_windows()))
        index.bulk_load(((pk,), [Entry(score, ts)]) for pk, (score, ts) in enumerate(data.records))
    return took.seconds


def timed(what: str, fn):  # type: ignore[no-untyped-def]
    """``fn()`` timed by the harness (wall), the time printed as it ends."""
    with Span() as took:
        result = fn()
    print(f"{what}: {took.seconds:.1f} s", flush=True)
    return result, took.seconds


def dump_and_restore(
    args: argparse.Namespace,
    where: Path,
    source: LeaderboardClient,
    on_fdb: LeaderboardClient,
    on_lmdb: LeaderboardClient,
) -> None:
    """Steps 2 and 3: the board dumped to a file, restored into each store, verified (and compared)."""
    path = where / "board.dump"
    end, dumped = timed("dump to a file", lambda: write_dump(source.dump("board"), path))
    size = path.stat().st_size
    print(
        f"  file {size / 1e6:,.1f} MB ({size / args.records:.1f} bytes per record), {end.rows:,} rows, "
        f"{end.records:,} records, {args.records / dumped:,.0f} records/s",
        flush=True,
    )
    for name, lb in (("FoundationDB", on_fdb), ("a new embedded store", on_lmdb)):
        _, seconds = timed(f"restore into {name}", lambda lb=lb: list(lb.restore(read_dump(path), "board")))
        print(f"  {args.records / seconds:,.0f} records/s", flush=True)
        report, _ = timed("  verify there", lambda lb=lb: lb.verify_report("board", timeout=7200))
        done = "" if report.complete else ", stopped by the server's deadline"
        print(f"  verify: {list(report.problems) or 'clean'} ({report.records:,} records{done})", flush=True)
        if args.compare:
            found, _ = timed("  compare every window", lambda lb=lb: compare_boards(source, "board", lb, "board"))
            print(f"  {found.windows} windows, {found.entries:,} entries: {found.differences or 'equal'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--cluster-file", required=True, help="A FoundationDB cluster to restore and move into.")
    parser.add_argument("--writers", type=int, default=2, help="Threads writing during the move.")
    parser.add_argument("--compare", action="store_true", help="Compare every window of each copy with the source.")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--move-only", action="store_true", help="Only the move (step 4).")
    parser.add_argument("--no-move", action="store_true", help="Steps 1-3 only, not the move.")
    parser.add_argument("--dir", default=None, help="Where the stores and the dump go (default: a temporary one).")
    args = parser.parse_args()
    fdb_url = f"fdb:{args.cluster_file}"
    with tempfile.TemporaryDirectory(prefix="bench-dump.", dir=args.dir) as directory:
        where = Path(directory)
        source_url = f"lmdb:{where / 'source'}?durable=false"
        print(f"board of {args.records:,} records, 4 windows per score, {FILL_START}..{FILL_END}", flush=True)
        print(f"build (bulk load, in process): {build(source_url, args.records, args.seed):.1f} s", flush=True)
        options = ("--maintain-every", "0", "--deadline", "7200")  # verify takes long on a large board
        servers = [ServeProcess(source_url.replace("?durable=false", ""), *options)]
        servers.append(ServeProcess(fdb_url, *options))
        servers.append(ServeProcess(f"lmdb:{where / 'copy'}", *options))
        source, on_fdb, on_lmdb = (LeaderboardClient(s.address, timeout=3600) for s in servers)
        try:
            for lb in (on_fdb, on_lmdb):
                if any(info.name == "board" for info in lb.list_indexes()):
                    raise SystemExit("the cluster already has an index named board: drop it first")
            if not args.move_only:
                dump_and_restore(args, where, source, on_fdb, on_lmdb)
            if args.no_move:
                return
            # The move: writers on the embedded store, pointed at FoundationDB once it returns (to
            # the same name: the restored copy there is dropped first).
            if not args.move_only:
                on_fdb.drop_index("board")
            current = [servers[0].address]
            with Load(lambda: current[0], {"board": "BEST"}, writers=args.writers, readers=0) as load:
                assert wait_for(lambda: len(load.acknowledged()) > 50, 60)
                seen: dict[str, float] = {}
                restored = [pb.RestoreProgress()]  # the target's last progress; then its progress at the pause

                marks = [-1]  # the dump's changes count at its last "caught up" mark
                sent = [0]  # the dump's changes count at its last progress part

                def progress(step: pb.DumpPart | pb.RestoreProgress) -> None:
                    if isinstance(step, pb.RestoreProgress):
                        restored[0] = step
                        if step.phase in ("built", "catching up") and "built" not in seen:
                            seen["built"] = time.monotonic()
                            seen["applied at built"], seen["sent at built"] = step.changes, sent[0]
                    elif step.progress.phase == "paused" and "paused" not in seen:
                        seen["paused"] = time.monotonic()
                        seen["at a mark"] = 0 <= marks[0] <= restored[0].changes
                        restored.append(restored[0])
                    elif step.WhichOneof("part") == "progress":
                        sent[0] = step.progress.changes
                        if step.progress.phase == "caught up":
                            marks[0] = step.progress.changes

                started = time.monotonic()
                (end, last) = source.move("board", on_fdb, "board", servers[1].address, 10.0, progress)
                current[0] = servers[1].address
                done = time.monotonic()
                assert wait_for(lambda: load.first_write_after(done) is not None, 60)
            refused = done - seen.get("paused", done)
            print(
                f"move to FoundationDB under {args.writers} writers: {done - started:.1f} s, {last.changes:,} records "
                f"copied again, writes refused for {refused:.2f} s (the source's last catch-up: "
                f"{end.pause_seconds:.2f} s), {len(load.acknowledged()):,} writes acknowledged",
                flush=True,
            )
            at_pause = restored[-1]
            if "built" in seen:
                after_build = seen.get("paused", done) - seen["built"]
                applied = at_pause.changes - seen["applied at built"]
                print(
                    f"  the target's rebuild ended {seen['built'] - started:.1f} s into the move, with "
                    f"{seen['sent at built']:,} changes sent so far; in the {after_build:.1f} s before the pause it "
                    f"applied {applied:,} changes ({applied / max(after_build, 1e-9):,.0f}/s)",
                    flush=True,
                )
            when = "at a 'caught up' mark" if seen.get("at a mark") else "at the --catch-up limit (10 s)"
            print(f"  the pause came {when if 'paused' in seen else 'never'}", flush=True)
            print(
                f"  the target at the pause: {at_pause.phase or 'not started'}, {at_pause.changes:,} changes applied, "
                f"{at_pause.entries_ranked:,} entries ranked; during the pause: {last.changes - at_pause.changes:,} "
                f"changes applied, {last.entries_ranked - at_pause.entries_ranked:,} entries ranked",
                flush=True,
            )
            expected = load.expected_boards()["board"]
            moved = {pk: on_fdb.rank_and_entry("board", pk).score for pk in expected}  # type: ignore[union-attr]
            wrong = {pk: (moved[pk], best) for pk, best in expected.items() if moved[pk] != best}
            print(f"  every acknowledged write in the moved board: {wrong or 'yes'}", flush=True)
            print(f"  unexpected answers: {load.unexpected()[:3] or 'none'}")
        finally:
            with contextlib.suppress(grpc.RpcError):
                on_fdb.drop_index("board")
            for lb in (source, on_fdb, on_lmdb):
                lb.close()
            for server in servers:
                server.stop()


if __name__ == "__main__":
    main()
