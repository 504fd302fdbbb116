"""The comparison: the same workloads on Redis sorted sets, one per window.

Debian's ``redis-server`` (:class:`bench.processes.RedisServer`) on a free port in a temporary
directory, once with ``--save '' --appendonly no`` (load, reads, submissions, fill) and once
more with ``--appendonly yes --appendfsync always`` (the durable variant: load and
submissions).  One sorted set per window (``lb:TYPE:START``, the windows of the benchmark's
directory), members ``str(player_id)``.  A submission is one pipeline (no MULTI) of ``ZADD GT``
(BEST) or ``ZINCRBY`` (SUM) to its 4 sets; rank is ``ZREVRANK``; top 10 ``ZREVRANGE 0 9
WITHSCORES``; around me ``ZREVRANK`` (with ``ZCARD`` in the same pipeline, to shift the range
near either end as ours does) then ``ZREVRANGE r-5 r+5 WITHSCORES``; the load sends the same
commands in pipelines of ``--load-batch`` records; the fill replays the loaded records in the
new window into a new set, 200 records per pipeline (Redis keeps no entries to rebuild from,
so the client must hold them).  Clients are redis-py with hiredis; the concurrent run uses one
connection per thread.  Redis gets the same records and the same submissions, in the same
order, as the in-process run (the durable instance those of the gRPC run); it does not store
the entries, the record heads or timestamp tie-breaks (equal scores are ordered by member, not
by who reached them first), so it does less work.  After the in-process submissions the
all-time and daily counts and the weekly top-10 scores are compared with Redis's as a sanity
check.  Storage: Redis's ``used_memory`` growth during its load, per record per window.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fdb_leaderboard.index.directory import ALL_TIME

from .data import (
    AROUND,
    DAILY,
    DAY,
    FILL_BATCH,
    FILL_END,
    FILL_START,
    FILL_TYPE_INPROC,
    NOW,
    TOP_N,
    WEEKLY,
    WINDOWS_PER_SCORE,
    Submission,
)
from .processes import RedisServer
from .reads import ReadCall, time_reads
from .submissions import one_then_many
from .suite import REDIS_LABELS, Run
from .timing import BatchClock, Sample, log


class RedisBench:
    """The same work on Redis sorted sets, one per window."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.args = run.args
        self.data = run.data
        self.directory = run.directory
        self.sum = run.aggregation == "SUM"
        self._keys: dict[int, list[str]] = {}

    def keys(self, ts: int) -> list[str]:
        """The sets of the windows holding ``ts`` (cached per day: windows are whole days)."""
        day = ts - ts % DAY
        keys = self._keys.get(day)
        if keys is None:
            keys = self._keys[day] = [f"lb:{w.type}:{w.start}" for w in self.directory.containing(ts)]
            assert len(keys) == WINDOWS_PER_SCORE, keys
        return keys

    def key(self, window_type: int, ts: int) -> str:
        """The set a read of ``window_type`` at ``ts`` uses (the same window our index picks)."""
        window = self.directory.oldest(window_type, ts)
        assert window is not None
        return f"lb:{window.type}:{window.start}"

    def queue(self, pipe: Any, keys: Sequence[str], member: str, score: int) -> None:
        for key in keys:
            if self.sum:
                pipe.zincrby(key, score, member)
            else:
                pipe.zadd(key, {member: score}, gt=True)

    def submit(self, client: Any, s: Submission) -> None:
        pipe = client.pipeline(transaction=False)
        self.queue(pipe, self.keys(s.ts), str(s.pk), s.score)
        pipe.execute()

    def apply(self, client: Any, submissions: Sequence[Submission], batch: int = 500) -> None:
        """Untimed: the submissions another phase made on our side, to keep the data equal."""
        for i in range(0, len(submissions), batch):
            pipe = client.pipeline(transaction=False)
            for s in submissions[i : i + batch]:
                self.queue(pipe, self.keys(s.ts), str(s.pk), s.score)
            pipe.execute()

    def load(self, client: Any, what: str) -> Sample:
        records, batch = self.data.records, self.args.load_batch
        clock = BatchClock(what, len(records))
        for i in range(0, len(records), batch):
            pipe = client.pipeline(transaction=False)
            for pk in range(i, min(i + batch, len(records))):
                score, ts = records[pk]
                self.queue(pipe, self.keys(ts), str(pk), score)
            pipe.execute()
            clock.tick(min(i + batch, len(records)))
        return clock.sample(len(records))

    def submissions(self, server: RedisServer, system: str, sets: tuple[str, str]) -> None:
        client = server.client()
        clients = [server.client() for _ in range(self.args.threads)]
        calls = [lambda s, c=c: self.submit(c, s) for c in clients]
        one_then_many(self.run, system, REDIS_LABELS[system], lambda s: self.submit(client, s), calls, sets)
        for c in [client, *clients]:
            c.close()

    def reads(self, client: Any) -> dict[str, ReadCall]:
        day_key, week_key, all_key = self.key(DAILY, NOW), self.key(WEEKLY, NOW), self.key(ALL_TIME, NOW)

        def around(pk: int) -> list[Any]:
            # Near either end the window shifts to keep 11 rows, as ours does: the set's size
            # comes with the rank in the same round trip.
            pipe = client.pipeline(transaction=False)
            pipe.zrevrank(all_key, str(pk))
            pipe.zcard(all_key)
            rank, size = pipe.execute()
            start = max(0, min(rank - AROUND, size - 2 * AROUND - 1))
            return client.zrevrange(all_key, start, start + 2 * AROUND, withscores=True)

        return {
            "rank_day": lambda pk: client.zrevrank(day_key, str(pk)),
            "rank_all": lambda pk: client.zrevrank(all_key, str(pk)),
            "top_week": lambda _: client.zrevrange(week_key, 0, TOP_N - 1, withscores=True),
            "around": around,
        }

    def measure(self) -> None:
        binary = self.args.redis_server
        run, data = self.run, self.data
        log("  Redis (no persistence): load, reads, submissions, fill")
        with RedisServer(binary, ["--save", "", "--appendonly", "no"]) as server:
            client = server.client()
            run.environment["redis_server"] = client.info("server")["redis_version"]
            run.environment["redis_command"] = server.command
            before = client.info("memory")["used_memory"]
            run.record("load", "redis", REDIS_LABELS["redis"] + ", pipelined", self.load(client, "load"))
            used = client.info("memory")["used_memory"] - before
            run.storage["redis"] = {
                "used_memory_bytes": used,
                "bytes_per_record_window": used / (len(data.records) * WINDOWS_PER_SCORE),
            }
            self.apply(client, data.submissions["S0"])
            time_reads(run, "Redis", "redis", REDIS_LABELS["redis"], self.reads(client))
            self.submissions(server, "redis", ("S1", "S2"))
            day_key, week_key, all_key = self.key(DAILY, NOW), self.key(WEEKLY, NOW), self.key(ALL_TIME, NOW)
            check_against_redis(
                run,
                client.zcard(all_key),
                client.zcard(day_key),
                [int(score) for _, score in client.zrevrange(week_key, 0, TOP_N - 1, withscores=True)],
            )
            run.record(
                "fill",
                "redis",
                REDIS_LABELS["redis"] + ", replay of the records",
                self.fill(client),
                "Redis keeps no entries: the records are replayed from the client's copy",
            )
            client.close()
        log("  Redis (AOF, appendfsync always): load, submissions")
        with RedisServer(binary, ["--save", "", "--appendonly", "yes", "--appendfsync", "always"]) as server:
            client = server.client()
            run.environment["redis_aof_command"] = server.command
            run.record("load", "redis_aof", REDIS_LABELS["redis_aof"] + ", pipelined", self.load(client, "load (AOF)"))
            self.apply(client, data.submissions["S0"])
            self.submissions(server, "redis_aof", ("S3", "S4"))
            client.close()

    def fill(self, client: Any) -> Sample:
        key = f"lb:{FILL_TYPE_INPROC}:{FILL_START}"
        rows = [(pk, score) for pk, (score, ts) in enumerate(self.data.records) if FILL_START <= ts < FILL_END]
        clock = BatchClock("fill (Redis)", len(rows))
        for i in range(0, len(rows), FILL_BATCH):
            pipe = client.pipeline(transaction=False)
            for pk, score in rows[i : i + FILL_BATCH]:
                self.queue(pipe, [key], str(pk), score)
            pipe.execute()
            clock.tick(min(i + FILL_BATCH, len(rows)))
        return clock.sample(len(rows))


def check_against_redis(run: Run, all_count: int, day_count: int, week_scores: list[int]) -> None:
    """Ours and Redis after the same submissions: all-time and daily counts, weekly top-10 scores."""
    ours = run.snapshot
    theirs = {"all_time_count": all_count, "day_count": day_count, "week_top_scores": week_scores}
    if not ours:
        return
    same = ours == theirs
    run.checks = {"same_as_redis": same, "ours": ours, "redis": theirs}
    if not same:
        run.notes.append(f"SANITY CHECK FAILED: ours {ours} != Redis {theirs}")
        log(f"  WARNING: ours and Redis differ after the same submissions: {ours} vs {theirs}")
