"""Timing: samples, percentiles and the timed loops every benchmark uses.

A :class:`Sample` is ``ops`` operations in ``seconds`` of wall time, with one latency per timed
call when the loop keeps them, this process's CPU time over the loop and the store's counters
over it when the loop was given them.  Throughput is ``ops / seconds``; percentiles are
nearest-rank over the per-call latencies (``time.perf_counter_ns``).  The loops:

- :func:`time_each`: one caller, every call timed (CPU and, given a snapshot, store counters);
- :func:`time_until`: one caller, every call timed, until told to stop (its thread's CPU);
- :func:`time_chunks`: one call per chunk of items (a transaction of many operations), the
  whole loop timed, no per-call latencies;
- :func:`time_concurrent`: items split round-robin over threads released together, every call
  timed, throughput over the wall time from the release to the end of the last thread;
- :class:`BatchClock`: per-batch latencies taken from progress callbacks of a call that runs
  many batches itself (a bulk load, a fill), with a progress line on stderr now and then;
- :class:`Span`: wall, CPU and store counters over a block that is not a loop of calls (a
  server holding streams, delivering events, idling).

Rounds: :func:`turns` is the order compared things (indexes, servers, revisions) take in a
round, changing every round so a neighbour's burst of load falls on each alike; :func:`spread`
is the median round and the range over rounds.
"""

from __future__ import annotations

import contextlib
import cProfile
import io
import math
import os
import pstats
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")


def log(message: str) -> None:
    """Progress goes to stderr, so stdout holds only the report."""
    print(message, file=sys.stderr, flush=True)


def expect(what: str, got: int, wanted: int) -> None:
    """Stop the benchmark when a workload did not do what it was asked (a bug, not a figure)."""
    if got != wanted:
        raise SystemExit(f"benchmark bug: {what}: {got} succeeded, expected {wanted}")


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far, every thread (Linux ``/proc/PID/stat``)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    # After the command name: state is field 3, utime field 14 and stime field 15 (1-based).
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile of ``values`` (``share`` 0.99 for p99); NaN for none."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = math.ceil(share * len(ordered) - 1e-9)  # the smallest value with ``share`` of them at or below it
    return ordered[min(len(ordered) - 1, max(0, rank - 1))]


@dataclass
class Sample:
    """``ops`` operations took ``seconds``; ``latencies_ns`` holds one entry per timed call, if kept;
    ``cpu_seconds`` this process's CPU over them and ``counters`` the store's counters' growth,
    where the loop measured them."""

    ops: int
    seconds: float
    latencies_ns: list[int] = field(default_factory=list)
    cpu_seconds: float | None = None
    counters: dict[str, float] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.ops / self.seconds if self.seconds else float("inf")

    @property
    def us_per_op(self) -> float:
        return self.seconds * 1e6 / self.ops if self.ops else float("nan")

    @property
    def cpu_us_per_op(self) -> float:
        return self.cpu_seconds * 1e6 / self.ops if self.ops and self.cpu_seconds is not None else float("nan")

    def per_op(self, counter: str) -> float:
        """The store counter ``counter`` per operation (0 where it did not move)."""
        return self.counters.get(counter, 0) / self.ops if self.ops else float("nan")

    def percentile_us(self, pct: float) -> float:
        """Nearest-rank percentile of the per-call latencies, in microseconds."""
        return percentile(self.latencies_ns, pct / 100) / 1000

    def to_json(self, durable: bool | None = None) -> dict[str, Any]:
        """Rounded figures; ``durable`` is written when given, p50/p99 when latencies were kept."""
        out: dict[str, Any] = {
            "ops": self.ops,
            "seconds": round(self.seconds, 6),
            "ops_per_s": round(self.rate, 1),
            "us_per_op": round(self.us_per_op, 3),
        }
        if durable is not None:
            out["durable"] = durable
        if self.latencies_ns:
            out["p50_us"] = round(self.percentile_us(50), 2)
            out["p99_us"] = round(self.percentile_us(99), 2)
        return out


def merge(samples: Sequence[Sample]) -> Sample:
    """One sample for several rounds of the same measurement (latencies pooled, CPU and counters summed)."""
    cpu = [s.cpu_seconds for s in samples]
    counters: dict[str, float] = {}
    for s in samples:
        for name, value in s.counters.items():
            counters[name] = counters.get(name, 0) + value
    return Sample(
        sum(s.ops for s in samples),
        sum(s.seconds for s in samples),
        [lat for s in samples for lat in s.latencies_ns],
        None if None in cpu else sum(cpu),  # type: ignore[arg-type]
        counters,
    )


def median_sample(samples: Sequence[Sample]) -> Sample:
    """The round with the median per-op cost."""
    return sorted(samples, key=lambda s: s.us_per_op)[len(samples) // 2]


def turns(names: Sequence[T], round_number: int) -> list[T]:
    """The order ``names`` take their turns in round ``round_number`` (from 0): rotated by one a
    round, so with two the first to go alternates."""
    shift = round_number % len(names) if names else 0
    return [*names[shift:], *names[:shift]]


def spread(values: Sequence[float]) -> tuple[float, float, float]:
    """The median of ``values`` (one per round) and their range: (median, lowest, highest)."""
    return statistics.median(values), min(values), max(values)


def counter_growth(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """How much each counter of a snapshot grew (``Database.stats.snapshot()``)."""
    return {name: after[name] - before.get(name, 0) for name in after}


def time_each(
    call: Callable[[T], object], items: Sequence[T], counters: Callable[[], dict[str, float]] | None = None
) -> tuple[Sample, list[object]]:
    """Call ``call(item)`` for each item, timing every call and this process's CPU over them all;
    ``counters`` (e.g. ``db.stats.snapshot``) is read before and after, its growth kept in the
    sample.  Returns the sample and the results."""
    latencies: list[int] = []
    results: list[object] = []
    clock = time.perf_counter_ns
    before = counters() if counters else {}
    cpu = time.process_time()
    start = clock()
    for item in items:
        t0 = clock()
        results.append(call(item))
        latencies.append(clock() - t0)
    seconds = (clock() - start) / 1e9
    cpu = time.process_time() - cpu
    grown = counter_growth(before, counters()) if counters else {}
    return Sample(len(items), seconds, latencies, cpu, grown), results


def time_until(
    call: Callable[[int], object],
    until: Callable[[], bool],
    failures: list[BaseException] | None = None,
    pause: float = 0.0,
) -> Sample:
    """Call ``call(n)`` for n = 0, 1, ... until ``until()`` is true, timing every call (a load that
    runs beside the measured work, or for a while, rather than a fixed number of calls); the
    sample's CPU is this thread's.  With ``failures``, a call that raises is kept there and not
    counted (neither an operation nor a latency).  ``pause`` seconds pass between calls, untimed
    (a steady caller rather than a flood)."""
    latencies: list[int] = []
    clock = time.perf_counter_ns
    cpu = time.thread_time()
    start = clock()
    n = 0
    while not until():
        t0 = clock()
        try:
            call(n)
        except Exception as exc:
            if failures is None:
                raise
            failures.append(exc)
        else:
            latencies.append(clock() - t0)
        n += 1
        if pause:
            time.sleep(pause)
    return Sample(len(latencies), (clock() - start) / 1e9, latencies, time.thread_time() - cpu)


def chunks(items: Sequence[T], size: int) -> list[Sequence[T]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def time_chunks(call: Callable[[Sequence[T]], int], items: Sequence[T], size: int) -> tuple[Sample, int]:
    """Call ``call(chunk)`` on ``size``-item chunks; ``call`` returns how many items succeeded."""
    parts = chunks(items, size)
    done = 0
    start = time.perf_counter()
    for part in parts:
        done += call(part)
    return Sample(len(items), time.perf_counter() - start), done


def time_concurrent(
    calls: Sequence[Callable[[T], object]], items: Sequence[T], counters: Callable[[], dict[str, float]] | None = None
) -> tuple[Sample, list[object]]:
    """Split ``items`` round-robin over ``len(calls)`` threads; thread i calls ``calls[i]``.

    Latencies are per call; throughput is every item over the wall time from the moment all
    threads are released together to the end of the last one, the process's CPU (every thread)
    and ``counters``' growth over the same span.
    """
    threads = len(calls)
    parts = [items[i::threads] for i in range(threads)]
    latencies: list[list[int]] = [[] for _ in range(threads)]
    results: list[list[object]] = [[] for _ in range(threads)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(threads + 1)
    clock = time.perf_counter_ns

    def worker(i: int) -> None:
        call, lat, res = calls[i], latencies[i], results[i]
        barrier.wait()
        try:
            for item in parts[i]:
                t0 = clock()
                res.append(call(item))
                lat.append(clock() - t0)
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=worker, args=(i,), name=f"bench-{i}") for i in range(threads)]
    for thread in workers:
        thread.start()
    before = counters() if counters else {}
    cpu = time.process_time()
    barrier.wait()
    start = clock()
    for thread in workers:
        thread.join()
    seconds = (clock() - start) / 1e9
    cpu = time.process_time() - cpu
    if errors:
        raise errors[0]
    grown = counter_growth(before, counters()) if counters else {}
    sample = Sample(len(items), seconds, [x for lat in latencies for x in lat], cpu, grown)
    return sample, [x for r in results for x in r]


def time_callers(
    calls: Sequence[Callable[[T], object]], items: Sequence[T], counters: Callable[[], dict[str, float]] | None = None
) -> Sample:
    """:func:`time_each` with one call, :func:`time_concurrent` (a thread per call) with several."""
    if len(calls) == 1:
        return time_each(calls[0], items, counters)[0]
    return time_concurrent(calls, items, counters)[0]


class Span:
    """A ``with`` block's wall time, this process's CPU (every thread) and the growth of
    ``counters`` (e.g. ``db.stats.snapshot``) over it: for what runs by itself (a server's
    streams, its background rounds) rather than call by call."""

    def __init__(self, counters: Callable[[], dict[str, float]] | None = None) -> None:
        self._counters = counters
        self.seconds = 0.0
        self.cpu_seconds = 0.0
        self.counters: dict[str, float] = {}

    def __enter__(self) -> Span:
        self._before = self._counters() if self._counters else {}
        self._cpu = time.process_time()
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self._start
        self.cpu_seconds = time.process_time() - self._cpu
        self.counters = counter_growth(self._before, self._counters()) if self._counters else {}

    def sample(self, ops: int, latencies_ns: Sequence[int] = ()) -> Sample:
        """The block as ``ops`` operations (its latencies, if known elsewhere)."""
        return Sample(ops, self.seconds, list(latencies_ns), self.cpu_seconds, self.counters)


class BatchClock:
    """Per-batch latencies from progress callbacks (or explicit ticks) during a timed loop."""

    def __init__(self, what: str, total: int, unit: str = "records") -> None:
        self.what = what
        self.total = total
        self.unit = unit
        self.latencies: list[int] = []
        self.start = self.last = time.perf_counter_ns()
        self.logged = self.start
        self.finished = False

    def tick(self, done: int) -> None:
        now = time.perf_counter_ns()
        self.latencies.append(now - self.last)
        self.last = now
        if now - self.logged > 15e9 or (done >= self.total and not self.finished):
            self.logged = now
            self.finished = done >= self.total
            seconds = (now - self.start) / 1e9
            log(
                f"    {self.what}: {done:>10,} / {self.total:,} {self.unit}, {seconds:6.1f} s, {done / seconds:8,.0f}/s"
            )

    def seconds(self) -> float:
        """Wall time since the clock started."""
        return (time.perf_counter_ns() - self.start) / 1e9

    def sample(self, done: int) -> Sample:
        """``done`` operations since the start, with the per-batch latencies."""
        return Sample(done, self.seconds(), self.latencies)


@contextlib.contextmanager
def profiled(enabled: bool, what: str) -> Iterator[None]:
    """With ``--profile``: cProfile the block and print its top 15 functions by tottime."""
    if not enabled:
        yield
        return
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        yield
    finally:
        profiler.disable()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(15)
        log(f"\n--- cProfile: {what} (top 15 by tottime; timings of this phase are inflated) ---")
        log(out.getvalue())
