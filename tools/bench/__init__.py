"""Every benchmark: one shared harness, one module per benchmark (or workload family of the product's).

``.venv/bin/python tools/bench NAME [OPTIONS]`` runs one (:mod:`bench.__main__` lists them, each
name with its module); the product benchmark against Redis is ``tools/bench.py``.  Each module's
docstring says what it measures and how.

Harness:

- :mod:`bench.timing`: samples (wall, CPU, latencies, store counters), percentiles, the timed
  loops (one caller, for a while, chunks, threads), spans and per-batch clocks, taking turns
  round by round, another process's CPU, profiling;
- :mod:`bench.output`: plain-text and Markdown tables (``show``: the table, and JSON with
  ``--json``), number formats, JSON, the machine;
- :mod:`bench.options`: the options benchmarks share (``--store``, sizes, ``--markdown``,
  ``--json``, comma-separated integers, positive sizes);
- :mod:`bench.stores`: store URLs and the stores under test (the name results are keyed by),
  scratch directories and scratch stores (a temporary store or the given one, each index under a
  prefix cleared afterwards);
- :mod:`bench.processes`: the product's gRPC server in its own process, ``redis-server``;
- :mod:`bench.counting`: store operations per operation (a counting proxy) and their cost model;
- :mod:`bench.rawstore`: the raw store's per-operation costs (store layer and py-lmdb).

The product benchmark (``tools/bench.py``, :mod:`bench.product`), on :mod:`bench.data`,
keeping its results in a :class:`bench.suite.Run`:

- :mod:`bench.submissions`: submitting scores in-process (durable=false, durable by the redo log,
  durable with synced pages);
- :mod:`bench.reads`: rank, top 10, around-me (the same reads for every system);
- :mod:`bench.bulk`: bulk load and fill in-process, and the storage a load takes;
- :mod:`bench.via_grpc`: the same workloads through the gRPC server;
- :mod:`bench.redis_sets`: the same workloads on Redis sorted sets;
- :mod:`bench.report`: its tables and ``docs/benchmarks.md``.

The others, each run as ``tools/bench NAME`` through its ``main()``:

- against another revision, side by side: :mod:`bench.served` (the served path),
  :mod:`bench.instructions` (callgrind), :mod:`bench.cpu` (CPU per index operation);
- the floors: :mod:`bench.floors` (the machine), :mod:`bench.grpc_floor` (grpcio),
  :mod:`bench.fdb_floor` (the ``fdb`` binding);
- the doors and the server: :mod:`bench.http_door`, :mod:`bench.serve_processes`,
  :mod:`bench.hostile`, :mod:`bench.season`, :mod:`bench.watchers`, :mod:`bench.window_events`;
- what a feature costs a submission: :mod:`bench.idempotency`, :mod:`bench.fair_play`,
  :mod:`bench.dense`, :mod:`bench.leagues`;
- stores and whole-index jobs: :mod:`bench.rankedset`, :mod:`bench.durable`, :mod:`bench.conflicts`,
  :mod:`bench.scale`, :mod:`bench.scaling`, :mod:`bench.dump`, :mod:`bench.upgrade`, :mod:`bench.verify`,
  :mod:`bench.failover`.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

# Found, not imported: a benchmark may first put another revision's package on sys.path.
if importlib.util.find_spec("fdb_leaderboard") is None:  # run from a checkout without installing the project
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))
