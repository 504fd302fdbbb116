"""Workloads 1-6 end to end: the product's gRPC server in its own process, called with ``LeaderboardClient``.

The server (:class:`bench.processes.ServerProcess`) runs over the store under test's URL,
durable (the redo log), on a free local port; a second one later runs over the same store opened
with ``redo_log=false`` (pages synced).  Each client thread has its own client (channel), though gRPC may share one
connection between them.

- Reads: ``GetRank``, ``Top``, ``AroundMe``, one client (:func:`bench.reads.time_reads`).
- Submissions: ``AddScore``, one client, then ``--threads`` concurrent clients.
- Fill: another new window, filled by ``Fill`` RPCs of one 200-record batch each until done;
  records/s, latency per RPC.
- Load: the N records into a new, empty index through one ``BulkLoad`` stream (the client's
  ``bulk_load``: messages of 500 records, transactions of ``--load-batch``, ranked sets built
  at the end).  One call: only its throughput is reported.
"""

from __future__ import annotations

from typing import Any

from fdb_leaderboard.client import LeaderboardClient

from .data import (
    AROUND,
    DAILY,
    FILL_BATCH,
    FILL_END,
    FILL_START,
    FILL_TYPE_GRPC,
    GRPC_LOAD_INDEX,
    INDEX_NAME,
    NOW,
    TOP_N,
    WEEKLY,
)
from .reads import ReadCall, time_reads
from .stores import StoreUnderTest
from .submissions import one_then_many
from .suite import Run
from .timing import BatchClock, Sample, expect, log


def client_calls(lb: LeaderboardClient) -> dict[str, ReadCall]:
    """The reads through the service."""
    return {
        "rank_day": lambda pk: lb.rank(INDEX_NAME, (pk,), DAILY, NOW),
        "rank_all": lambda pk: lb.rank(INDEX_NAME, (pk,)),
        "top_week": lambda _: lb.top(INDEX_NAME, TOP_N, WEEKLY, NOW),
        "around": lambda pk: lb.around(INDEX_NAME, (pk,), AROUND, AROUND),
    }


def reads_and_submissions(run: Run, address: str, store: StoreUnderTest | None = None) -> None:
    """Reads, then submissions (S3, S4), through the durable server at ``address`` over ``store``
    (default: the embedded store under test)."""
    log(f"  gRPC server at {address}: reads ({run.args.ops:,} each)")
    with LeaderboardClient(address) as lb:
        time_reads(run, "gRPC", run.system("grpc", store), run.label("grpc", store), client_calls(lb))
    submissions(run, address, "grpc", ("S3", "S4"), store)


def synced(run: Run, address: str) -> None:
    """Submissions (L3, L4) and a load through the server on the ``redo_log=false`` URL."""
    submissions(run, address, "grpc_synced", ("L3", "L4"))
    with LeaderboardClient(address, timeout=120) as lb:
        load(run, lb, "grpc_synced", GRPC_LOAD_INDEX + "-synced")


def submissions(run: Run, address: str, mode: str, sets: tuple[str, str], store: StoreUnderTest | None = None) -> None:
    """Submissions through the server at ``address``: 1 client, then ``--threads`` clients."""
    threads = run.args.threads
    log(f"  gRPC submissions ({run.label(mode, store)}): 1 client, then {threads} concurrent clients")
    clients = [LeaderboardClient(address) for _ in range(threads)]
    try:
        calls = [lambda s, c=c: c.add_score(INDEX_NAME, (s.pk,), s.score, s.ts) for c in clients]
        one_then_many(run, run.system(mode, store), run.label(mode, store), calls[0], calls, sets)
    finally:
        for client in clients:
            client.close()


def fill_and_load(run: Run, address: str) -> None:
    """A new window filled by Fill RPCs, then a load into a new index, through the durable server."""
    total = len(run.data.records)
    with LeaderboardClient(address, timeout=120) as lb:
        log(f"  gRPC fill: a new window over {total:,} records, Fill RPCs of one {FILL_BATCH}-record batch")
        lb.update_windows(
            INDEX_NAME, windows=[*run.windows, (FILL_TYPE_GRPC, FILL_START, FILL_END)], high_score_first=True
        )
        clock = BatchClock("fill (gRPC)", total)
        processed = 0
        while True:
            response = lb.fill(INDEX_NAME, max_records=FILL_BATCH, max_batches=1)
            processed += response.records_processed
            clock.tick(processed)
            if response.done:
                break
        expect("gRPC fill", processed, total)
        run.record_ours("fill", "grpc", clock.sample(total), label=run.label("grpc") + ", Fill RPCs")
        load(run, lb, "grpc", GRPC_LOAD_INDEX)


def load(run: Run, lb: Any, mode: str, name: str) -> None:
    """The N records into a new index ``name`` through client ``lb``: one BulkLoad stream."""
    data = run.data
    total = len(data.records)
    log(f"  gRPC load ({run.label(mode)}): {total:,} records into a new index, BulkLoad stream")
    lb.create_index(name, aggregation=run.aggregation, high_score_first=True)
    lb.update_windows(name, windows=run.windows, high_score_first=True)
    records = (((pk,), [record]) for pk, record in enumerate(data.records))
    sent = BatchClock(f"load ({run.system(mode)}, records saved)", total)
    written = lb.bulk_load(name, records, run.args.load_batch, progress=sent.tick)
    expect("gRPC load", written, total)
    # One call: its latency is the whole load, so only the throughput is reported.
    sample = Sample(total, sent.seconds())
    run.record_ours("load", mode, sample, label=run.label(mode) + ", one BulkLoad stream")
    expect("gRPC-loaded index size", lb.count(name), total)
