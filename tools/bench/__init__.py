"""The benchmarks behind ``tools/bench*.py``: one shared harness, one module per workload family.

The scripts in ``tools/`` parse their arguments and call a module here; each module's
docstring says what it measures and how.

Harness:

- :mod:`bench.timing`: samples, percentiles, the timed loops (one caller, chunks, threads),
  per-batch clocks, profiling;
- :mod:`bench.output`: plain-text and Markdown tables, number formats, JSON, the machine;
- :mod:`bench.stores`: store URLs and the stores under test (the name results are keyed by),
  scratch directories;
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

The others: :mod:`bench.rankedset` (``tools/bench_rankedset.py``), :mod:`bench.floors`
(``tools/bench_floor.py``), :mod:`bench.scaling` (``tools/bench_scaling.py``), :mod:`bench.cpu`
(``tools/bench_cpu.py``: CPU per index operation, client and fdbserver, against another
revision), :mod:`bench.fdb_floor` (``tools/bench_fdb_floor.py``: what the ``fdb`` binding and
the store layer cost per read, write and commit) and :mod:`bench.served` (``tools/bench_served.py``:
the served path of two revisions side by side).
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    import fdb_leaderboard  # noqa: F401
except ModuleNotFoundError:  # run from a checkout without installing the project
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))
