"""The benchmark harness (tools/bench): its timed loops, turns, options and scratch stores."""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

from bench import options
from bench.stores import ScratchStore
from bench.timing import Span, merge, percentile, process_cpu, spread, time_each, time_until, turns

from fdb_leaderboard.index import IndexSettings, LeaderboardIndex, WindowUpdate


def test_turns_change_who_goes_first_every_round() -> None:
    assert [turns(["old", "new"], n) for n in range(3)] == [["old", "new"], ["new", "old"], ["old", "new"]]
    firsts = [turns(["a", "b", "c"], n)[0] for n in range(3)]
    assert sorted(firsts) == ["a", "b", "c"]
    assert all(sorted(turns(["a", "b", "c"], n)) == ["a", "b", "c"] for n in range(5))


def test_spread_and_percentile() -> None:
    assert spread([3.0, 1.0, 2.0]) == (2.0, 1.0, 3.0)
    values = list(range(1, 101))
    assert percentile(values, 0.5) == 50 and percentile(values, 0.99) == 99 and percentile(values, 1.0) == 100


def test_time_each_keeps_latencies_cpu_and_store_counters() -> None:
    counts = {"reads": 0}

    def call(n: int) -> int:
        counts["reads"] += n
        sum(range(20_000))  # some CPU
        return n * 2

    sample, results = time_each(call, [1, 2, 3], lambda: dict(counts))
    assert results == [2, 4, 6]
    assert sample.ops == 3 and len(sample.latencies_ns) == 3
    assert sample.counters == {"reads": 6} and sample.per_op("reads") == 2
    assert sample.cpu_seconds is not None and sample.cpu_seconds > 0
    assert sample.seconds * 1e9 >= sum(sample.latencies_ns)
    pooled = merge([sample, sample])
    assert pooled.ops == 6 and pooled.counters == {"reads": 12} and len(pooled.latencies_ns) == 6


def test_time_until_keeps_failures_apart_and_pauses_untimed() -> None:
    failures: list[BaseException] = []

    def call(n: int) -> None:
        if n % 2:
            raise ValueError(n)

    sample = time_until(call, lambda: len(failures) >= 3, failures, pause=0.01)
    assert [exc.args[0] for exc in failures] == [1, 3, 5]
    assert sample.ops == 3 == len(sample.latencies_ns)  # the calls that returned
    assert sample.seconds >= 0.05  # the pauses are in the span
    assert max(sample.latencies_ns) < 5e6  # but not in any call's latency
    stop = threading.Event()
    stop.set()
    assert time_until(call, stop.is_set).ops == 0
    with pytest.raises(ValueError):
        time_until(call, lambda: False)


def test_span_and_process_cpu() -> None:
    counts = {"commits": 1}
    with Span(lambda: dict(counts)) as span:
        counts["commits"] += 4
        time.sleep(0.02)
    assert span.seconds >= 0.02 and span.counters == {"commits": 4}
    assert span.sample(2).per_op("commits") == 2
    assert process_cpu(os.getpid()) >= 0


def test_options() -> None:
    parser = options.parser("One line.\n\nMore.")
    assert parser.description == "One line."
    options.add_sizes(parser, records=10, calls=5, rounds=2)
    options.add_output(parser)
    parser.add_argument("--threads", type=options.integers, default="1,8")
    args = parser.parse_args(["--calls", "7"])
    assert (args.records, args.calls, args.rounds, args.threads, args.markdown, args.json) == (
        10,
        7,
        2,
        [1, 8],
        False,
        None,
    )
    with pytest.raises(SystemExit):
        parser.parse_args(["--threads", "1,x"])
    with pytest.raises(SystemExit):
        options.require_positive(parser, parser.parse_args(["--threads", "2,0"]), ["threads"])
    options.require_positive(parser, args, ["records", "calls", "threads"])
    assert isinstance(options.integers("3"), list)
    with pytest.raises(argparse.ArgumentTypeError):
        options.integers("")


def make_index(scratch: ScratchStore) -> LeaderboardIndex:
    index = LeaderboardIndex.create(scratch.db, scratch.prefix(), IndexSettings())
    index.update_windows(WindowUpdate())
    index.add_score(("p",), 5, 1)
    return index


def test_a_temporary_scratch_store_is_removed() -> None:
    with ScratchStore(None, "test", durable=False) as scratch:
        directory = Path(scratch.url.removeprefix("lmdb:").split("?")[0]).parent
        assert "durable=false" in scratch.url and directory.is_dir()
        assert make_index(scratch).count() == 1
    assert not directory.exists()


def test_a_given_store_keeps_only_what_was_there(tmp_path: Path) -> None:
    url = f"lmdb:{tmp_path}/store?durable=false"
    with ScratchStore(url, "test") as scratch:
        make_index(scratch)
        assert scratch.db.read(lambda tr: tr.get_range(b"", b"\xff"))
    with ScratchStore(url, "test") as again:
        assert again.db.read(lambda tr: tr.get_range(b"", b"\xff")) == []
