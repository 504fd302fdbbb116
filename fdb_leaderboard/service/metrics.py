"""The server's Prometheus metrics: calls, store transactions, group commits, maintenance progress.

One :class:`Metrics` per :class:`~fdb_leaderboard.service.Server`, with its own registry (a
process may run several servers, as the tests do).  What it measures:

- every call, by transport (``grpc`` from the dispatcher in ``calls.py``, ``http`` from the HTTP
  layer, which calls the same servicer), method and status code: a counter and a latency
  histogram;
- every store transaction through :class:`MeasuredDatabase`: latency by kind (read/write) and
  outcome, attempts beyond the first (FoundationDB's retries on conflict);
- the embedded store's group commits: how many transactions each durable commit carried;
- what fills, trims, expiries, keep-ahead passes and bulk loads did, per index, read from the
  answers of the calls that did it, whichever transport carried them;
- at scrape time, windows (and windows still being filled) per index, the end of each window
  type's last window (when windows run out), the store's own counters where it keeps them
  (``Database.stats``: transactions, read rounds, conflicts; its retries are
  ``store_transaction_retries_total``, counted here by kind), and the embedded store's size
  against its map size;
- at scrape time too, the stored formats: the store's, each index's with its upgrade's progress,
  and the server processes on the store by release (``upgrades.py``);
- the build (``build_info``), and the HTTP door's open event streams (the live page's viewers);
- the process's CPU, memory, file descriptors and garbage collections.

No ``*_created`` series: one series per quantity.
"""

from __future__ import annotations

import bisect
import itertools
import platform
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import grpc
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from .. import formats
from ..index.directory import ALL_TIME
from ..rpcs import RPCS
from ..store.api import Database, WrappedDatabase
from .catalog import Catalog, timebase_scale
from .upgrades import Upgrades

T = TypeVar("T")

disable_created_metrics()  # a counter's creation time is not a quantity anyone watches

PREFIX = "fdb_leaderboard"
# Calls take from ~50 µs (a cached read) to seconds (a fill pass, a bulk load).
CALL_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
GROUP_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


class Metrics:
    """The metrics of one server, in their own registry."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        r = self.registry
        self.call_timings = _Timings(
            f"{PREFIX}_calls",
            f"{PREFIX}_call_seconds",
            "Calls answered, by transport, method and status code.",
            "Calls answered: latency, by transport, method and status code.",
            ("transport", "method", "code"),
            CALL_BUCKETS,
        )
        r.register(self.call_timings)
        self.http_requests, self.http_seconds = self._counted_and_timed(
            "http_requests",
            "http_request_seconds",
            "HTTP requests",
            "by route, HTTP method and status",
            ["route", "method", "status"],
        )
        self.transaction_timings = _Timings(
            None,
            f"{PREFIX}_store_transaction_seconds",
            "",
            "Store transactions (retries included), by kind (read/write) and outcome (ok/error).",
            ("kind", "outcome"),
            CALL_BUCKETS,
        )
        r.register(self.transaction_timings)
        self.transaction_retries = Counter(
            f"{PREFIX}_store_transaction_retries",
            "Attempts beyond a transaction's first (conflicts, retryable errors).",
            ["kind"],
            registry=r,
        )
        self.group_commit_size = Histogram(
            f"{PREFIX}_store_group_commit_transactions",
            "Write calls carried by each commit (the embedded store's durable group commits,"
            " FoundationDB's shared transactions of score writes).",
            buckets=GROUP_BUCKETS,
            registry=r,
        )
        self.fill_records = Counter(
            f"{PREFIX}_fill_records",
            "Records whose values went into new windows (fill phase 1).",
            ["index"],
            registry=r,
        )
        self.fill_entries_ranked = Counter(
            f"{PREFIX}_fill_entries_ranked", "Entries appended to ranked sets (fill phase 2).", ["index"], registry=r
        )
        self.trimmed_entries = Counter(
            f"{PREFIX}_trim_entries_removed", "Entries removed by trims.", ["index"], registry=r
        )
        self.windows_expired = Counter(f"{PREFIX}_windows_expired", "Windows deleted by expiry.", ["index"], registry=r)
        self.windows_added = Counter(
            f"{PREFIX}_windows_added", "Windows added by window updates and keep-ahead.", ["index"], registry=r
        )
        self.bulk_loaded = Counter(
            f"{PREFIX}_bulk_load_records", "Records written by bulk loads.", ["index"], registry=r
        )
        self.rule_refusals = Counter(
            f"{PREFIX}_score_rule_refusals",
            "Writes an index's score rules refused, by method and rule.",
            ["method", "rule"],
            registry=r,
        )
        self.idempotency_keys_expired = Counter(
            f"{PREFIX}_idempotency_keys_expired",
            "Idempotency keys of writes forgotten after their retention.",
            ["index"],
            registry=r,
        )
        self.last_maintenance = Gauge(
            f"{PREFIX}_maintenance_last_pass_timestamp_seconds",
            "When the server's background maintenance last went over every index (Unix time).",
            registry=r,
        )
        self.rank_watchers = Gauge(
            f"{PREFIX}_rank_watchers", "Records' ranks watched now (WatchRank streams and their events).", registry=r
        )
        self.window_ends_noticed = Counter(
            f"{PREFIX}_window_ends_noticed",
            "Ended windows noticed (each once, by one process): their events were written.",
            ["index"],
            registry=r,
        )
        self.webhook_deliveries = Counter(
            f"{PREFIX}_webhook_deliveries",
            "Webhook POSTs of window-end events by result: delivered (2xx), failed (tried again "
            "later), dropped (failing past the events' age limit).",
            ["result"],
            registry=r,
        )
        self.window_end_streams = Gauge(
            f"{PREFIX}_window_end_streams", "Window-end event streams open now (WatchWindowEnds and SSE).", registry=r
        )
        Gauge(
            f"{PREFIX}_build_info",
            "The running build: the package's version and Python's (always 1).",
            ["version", "python"],
            registry=r,
        ).labels(formats.RELEASE, platform.python_version()).set(1)
        self.calls_in_flight = Gauge(
            f"{PREFIX}_grpc_calls_in_flight",
            "gRPC calls of the service being answered now (health and reflection aside), against grpc_max_calls.",
            registry=r,
        )
        self.max_calls = Gauge(
            f"{PREFIX}_grpc_max_calls",
            "The server's cap on concurrent gRPC calls (serve --max-calls): gRPC refuses calls beyond it with "
            "RESOURCE_EXHAUSTED before the service sees them.",
            registry=r,
        )
        self.event_streams = Gauge(
            f"{PREFIX}_http_event_streams", "Open event streams of the HTTP door (live pages watching).", registry=r
        )

    def _counted_and_timed(
        self, count_name: str, seconds_name: str, what: str, by: str, labels: list[str]
    ) -> tuple[Counter, Histogram]:
        """A counter and a latency histogram with the same labels."""
        return (
            Counter(f"{PREFIX}_{count_name}", f"{what}, {by}.", labels, registry=self.registry),
            Histogram(
                f"{PREFIX}_{seconds_name}",
                f"{what}: latency, {by}.",
                labels,
                buckets=CALL_BUCKETS,
                registry=self.registry,
            ),
        )

    def watch_catalog(self, catalog: Catalog) -> None:
        """Report windows per index of ``catalog`` and the stored formats at each scrape."""
        self.registry.register(_WindowCollector(catalog))
        self.registry.register(_FormatCollector(Upgrades(catalog)))

    def watch_store_stats(self, db: Database) -> None:
        """Report the store's own counters at each scrape, if it keeps them (a ``stats`` object
        whose ``snapshot()`` maps names such as ``transactions``, ``read_rounds``, ``retries``,
        ``conflicts`` to counts)."""
        stats = getattr(db, "stats", None)
        if stats is not None and callable(getattr(stats, "snapshot", None)):
            self.registry.register(_StoreStatsCollector(stats))
        if all(hasattr(db, name) for name in ("disk_usage", "map_size", "closed")):  # the embedded store
            self.registry.register(_StoreSizeCollector(db))

    def exposition(self) -> bytes:
        """The registry in Prometheus's text format."""
        return generate_latest(self.registry)

    def observe_call(self, transport: str, method: str, code: grpc.StatusCode, seconds: float) -> None:
        self.call_timings.observe((transport, method, code.name), seconds)

    def observe_transaction(self, kind: str, outcome: str, seconds: float, attempts: int) -> None:
        self.transaction_timings.observe((kind, outcome), seconds)
        if attempts > 1:
            self.transaction_retries.labels(kind).inc(attempts - 1)

    def maintenance_passed(self, clock: float) -> None:
        self.last_maintenance.set(clock)

    def observe_refusal(self, method: str, trailing: tuple[tuple[str, str], ...]) -> None:
        """Count a call a score rule refused (its trailing metadata names the rule)."""
        for key, value in trailing:
            if key == "rule":
                self.rule_refusals.labels(method, value).inc()

    def observe_result(self, method: str, request: Any, response: Any) -> None:
        """Count what a successful maintenance call did (its answer says)."""
        rpc = RPCS.get(method)
        if rpc is None or not rpc.counted:  # its answer says nothing to count
            return
        index = getattr(request, "index", "")
        if method == "Fill":
            self.fill_records.labels(index).inc(response.records_processed)
            self.fill_entries_ranked.labels(index).inc(response.entries_ranked)
        elif method == "Trim":
            self.trimmed_entries.labels(index).inc(response.entries_removed)
        elif method == "Expire":
            self.windows_expired.labels(index).inc(len(response.deleted))
        elif method == "UpdateWindows":
            self.windows_added.labels(index).inc(len(response.added))
            self.windows_expired.labels(index).inc(len(response.deleted))
        elif method in ("KeepAhead", "CreateIndex"):
            self.windows_added.labels(index or request.name).inc(len(response.added))
        elif method == "BulkLoad":
            self.bulk_loaded.labels(index).inc(response.records_written)


class _Timings(Collector):
    """Latencies by label values, as a Prometheus histogram (``seconds_name``) and, if
    ``count_name`` is given, a counter of them too: what prometheus-client's Counter and Histogram
    children would report, kept in plain lists under one lock.  Those cost three locks and a
    scan of the buckets per observation, together a tenth of a point read's own work."""

    def __init__(
        self,
        count_name: str | None,
        seconds_name: str,
        count_help: str,
        seconds_help: str,
        labels: tuple[str, ...],
        buckets: tuple[float, ...],
    ) -> None:
        self.count_name = count_name
        self.seconds_name = seconds_name
        self.count_help = count_help
        self.seconds_help = seconds_help
        self.labels = labels
        self.bounds = buckets
        self.bucket_names = [floatToGoString(bound) for bound in buckets] + ["+Inf"]
        self._lock = threading.Lock()
        self._series: dict[tuple[str, ...], list] = {}  # label values -> [count of each bucket..., sum]

    def observe(self, values: tuple[str, ...], seconds: float) -> None:
        bucket = bisect.bisect_left(self.bounds, seconds)  # the first bound at or above it
        with self._lock:
            series = self._series.get(values)
            if series is None:
                series = self._series[values] = [0] * len(self.bucket_names) + [0.0]
            series[bucket] += 1
            series[-1] += seconds

    def describe(self) -> Iterator[Metric]:
        return self._families()

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            taken = [(values, list(series)) for values, series in self._series.items()]
        return self._families(taken)

    def _families(self, taken: list[tuple[tuple[str, ...], list]] = ()) -> Iterator[Metric]:  # type: ignore[assignment]
        labels = list(self.labels)
        histogram = HistogramMetricFamily(self.seconds_name, self.seconds_help, labels=labels)
        counter = CounterMetricFamily(self.count_name, self.count_help, labels=labels) if self.count_name else None
        for values, series in taken:
            cumulative = list(itertools.accumulate(series[:-1]))
            histogram.add_metric(list(values), list(zip(self.bucket_names, cumulative, strict=True)), series[-1])
            if counter is not None:
                counter.add_metric(list(values), cumulative[-1])
        yield histogram
        if counter is not None:
            yield counter


class _WindowCollector(Collector):
    """Windows per index, read from the store at scrape time (one read per index)."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    def describe(self) -> list:
        return []  # collected from the store: not at registration

    def collect(self) -> Iterator[GaugeMetricFamily]:
        windows = GaugeMetricFamily(f"{PREFIX}_windows", "Windows in the index's directory.", labels=["index"])
        filling = GaugeMetricFamily(f"{PREFIX}_windows_filling", "Windows still being filled.", labels=["index"])
        last_end = GaugeMetricFamily(
            f"{PREFIX}_windows_last_end_timestamp_seconds",
            "When the last window of a type ends (Unix time): scores after it land in no window of the type.",
            labels=["index", "type"],
        )
        fill_ratio = GaugeMetricFamily(
            f"{PREFIX}_window_fill_ratio",
            "How much of a filling window's fill is done, 0 to 1 (phase 1, records put in: the first half; "
            "phase 2, entries ranked: the second), while it fills; by index, type and start (in the index's "
            "timebase). Absent in phase 1 where the index's record count is unknown (an index with groups).",
            labels=["index", "type", "start"],
        )
        for name, entry in self.catalog.list():
            index = self.catalog.get(name)
            directory = index.directory()
            found = directory.windows if directory is not None else []
            windows.add_metric([name], len(found))
            filling.add_metric([name], sum(1 for w in found if w.filling))
            if any(w.filling for w in found):  # one more read, while a fill runs
                for window, state in index.fill_states():
                    if state.ratio is not None:
                        fill_ratio.add_metric([name, str(window.type), str(window.start)], state.ratio)
            scale = timebase_scale(entry.maintenance if entry.HasField("maintenance") else None)
            ends: dict[int, int] = {}
            for window in found:
                if window.type != ALL_TIME:
                    ends[window.type] = max(ends.get(window.type, window.end), window.end)
            for window_type, end in sorted(ends.items()):
                last_end.add_metric([name, str(window_type)], end / scale)
        yield windows
        yield filling
        yield last_end
        yield fill_ratio


class _FormatCollector(Collector):
    """The store's and each index's stored format, upgrades under way, processes by release: one read."""

    def __init__(self, upgrades: Upgrades) -> None:
        self.upgrades = upgrades

    def describe(self) -> list:
        return []  # collected from the store: not at registration

    def collect(self) -> Iterator[GaugeMetricFamily]:
        status = self.upgrades.status()
        store = GaugeMetricFamily(
            f"{PREFIX}_store_format",
            f"The store's stored format (this server writes {formats.NEWEST_STORE}; not recorded reads as "
            f"{formats.UNRECORDED_STORE}).",
            labels=["recorded"],
        )
        store.add_metric([str(status.store.recorded).lower()], status.store.version)
        index = GaugeMetricFamily(
            f"{PREFIX}_index_format",
            f"Each index's stored format (this server writes {formats.NEWEST_INDEX}).",
            labels=["index"],
        )
        upgrading = GaugeMetricFamily(
            f"{PREFIX}_index_upgrade_records_done",
            "Records the upgrade of an index's data has gone over, while one runs; by index and the format it "
            "upgrades to.",
            labels=["index", "to_format"],
        )
        for state in status.indexes:
            index.add_metric([state.name], state.version)
            if state.upgrade is not None:
                upgrading.add_metric([state.name, str(state.upgrade.to_format)], state.upgrade.records_done)
        processes = GaugeMetricFamily(
            f"{PREFIX}_store_processes",
            "Live server processes on the store (those that reported within a minute), by release.",
            labels=["release"],
        )
        releases: dict[str, int] = {}
        for release in status.live_releases():
            releases[release] = releases.get(release, 0) + 1
        for release, count in sorted(releases.items()):
            processes.add_metric([release], count)
        yield store
        yield index
        yield upgrading
        yield processes


class _StoreStatsCollector(Collector):
    """The store's counters, as ``fdb_leaderboard_store_<name>_total``."""

    def __init__(self, stats: Any) -> None:
        self.stats = stats

    def describe(self) -> list:
        return []

    def collect(self) -> Iterator[CounterMetricFamily]:
        for name, count in sorted(self.stats.snapshot().items()):
            if name == "retries":  # store_transaction_retries_total counts them, by kind
                continue
            yield CounterMetricFamily(
                f"{PREFIX}_store_{name}", f"The store's own count of {name.replace('_', ' ')}.", count
            )


class _StoreSizeCollector(Collector):
    """The embedded store's file against its map size (writes fail once it is full)."""

    def __init__(self, db: Any) -> None:
        self.db = db

    def describe(self) -> list:
        return []

    def collect(self) -> Iterator[GaugeMetricFamily]:
        if self.db.closed:  # a server stopping: nothing to measure
            return
        yield GaugeMetricFamily(
            f"{PREFIX}_store_size_bytes", "Bytes of the embedded store's data file in use.", self.db.disk_usage()
        )
        yield GaugeMetricFamily(
            f"{PREFIX}_store_size_limit_bytes", "The embedded store's map size: its largest size.", self.db.map_size()
        )


def remember_first(messages: Iterator[Any], first: list[Any]) -> Iterator[Any]:
    """``messages``, passed through; the first is kept in ``first`` (a stream's index name)."""
    for message in messages:
        if not first:
            first.append(message)
        yield message


class MeasuredDatabase(WrappedDatabase):
    """A store whose transactions are timed and whose retries are counted; anything else is the
    store's own (``commits``, ``durable``... are read through)."""

    def __init__(self, inner: Database, metrics: Metrics) -> None:
        super().__init__(inner)
        self._metrics = metrics
        metrics.watch_store_stats(inner)
        if hasattr(inner, "on_commit"):  # both stores tell how many write calls each commit carried
            inner.on_commit = metrics.group_commit_size.observe

    def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return self._measured("write", self.inner.run, fn, args, kwargs)

    def read(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return self._measured("read", self.inner.read, fn, args, kwargs)

    def _measured(self, kind: str, transact: Callable[..., T], fn: Callable[..., T], args: tuple, kwargs: dict) -> T:
        attempts = 0

        def attempt(tr: Any, *a: Any, **k: Any) -> T:
            nonlocal attempts
            attempts += 1
            return fn(tr, *a, **k)

        started = time.perf_counter()
        outcome = "error"
        try:
            result = transact(attempt, *args, **kwargs)
            outcome = "ok"
            return result
        finally:
            self._metrics.observe_transaction(kind, outcome, time.perf_counter() - started, attempts)
