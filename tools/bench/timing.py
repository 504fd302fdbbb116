"""Timing: samples, percentiles and the timed loops every benchmark uses.

A :class:`Sample` is ``ops`` operations in ``seconds`` of wall time, with one latency per timed
call when the loop keeps them.  Throughput is ``ops / seconds``; percentiles are nearest-rank
over the per-call latencies (``time.perf_counter_ns``).  The loops:

- :func:`time_each`: one caller, every call timed;
- :func:`time_chunks`: one call per chunk of items (a transaction of many operations), the
  whole loop timed, no per-call latencies;
- :func:`time_concurrent`: items split round-robin over threads released together, every call
  timed, throughput over the wall time from the release to the end of the last thread;
- :class:`BatchClock`: per-batch latencies taken from progress callbacks of a call that runs
  many batches itself (a bulk load, a fill), with a progress line on stderr now and then.
"""

from __future__ import annotations

import contextlib
import cProfile
import io
import pstats
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


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile of ``values`` (``share`` 0.99 for p99); NaN for none."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered) + 0.5) - 1))]


@dataclass
class Sample:
    """``ops`` operations took ``seconds``; ``latencies_ns`` holds one entry per timed call, if kept."""

    ops: int
    seconds: float
    latencies_ns: list[int] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.ops / self.seconds if self.seconds else float("inf")

    @property
    def us_per_op(self) -> float:
        return self.seconds * 1e6 / self.ops if self.ops else float("nan")

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
    """One sample for several rounds of the same measurement (latencies pooled)."""
    return Sample(
        sum(s.ops for s in samples),
        sum(s.seconds for s in samples),
        [lat for s in samples for lat in s.latencies_ns],
    )


def median_sample(samples: Sequence[Sample]) -> Sample:
    """The round with the median per-op cost."""
    return sorted(samples, key=lambda s: s.us_per_op)[len(samples) // 2]


def time_each(call: Callable[[T], object], items: Sequence[T]) -> tuple[Sample, list[object]]:
    """Call ``call(item)`` for each item, timing every call; returns the sample and the results."""
    latencies: list[int] = []
    results: list[object] = []
    clock = time.perf_counter_ns
    start = clock()
    for item in items:
        t0 = clock()
        results.append(call(item))
        latencies.append(clock() - t0)
    return Sample(len(items), (clock() - start) / 1e9, latencies), results


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


def time_concurrent(calls: Sequence[Callable[[T], object]], items: Sequence[T]) -> tuple[Sample, list[object]]:
    """Split ``items`` round-robin over ``len(calls)`` threads; thread i calls ``calls[i]``.

    Latencies are per call; throughput is every item over the wall time from the moment all
    threads are released together to the end of the last one.
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
    barrier.wait()
    start = clock()
    for thread in workers:
        thread.join()
    seconds = (clock() - start) / 1e9
    if errors:
        raise errors[0]
    return Sample(len(items), seconds, [x for lat in latencies for x in lat]), [x for r in results for x in r]


def time_callers(calls: Sequence[Callable[[T], object]], items: Sequence[T]) -> Sample:
    """:func:`time_each` with one call, :func:`time_concurrent` (a thread per call) with several."""
    return time_each(calls[0], items)[0] if len(calls) == 1 else time_concurrent(calls, items)[0]


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
