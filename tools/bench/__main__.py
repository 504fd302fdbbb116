"""The benchmarks' one command: ``.venv/bin/python tools/bench NAME [OPTIONS]`` runs benchmark NAME.

``tools/bench --help`` lists them, ``tools/bench NAME --help`` gives one's options; the product
benchmark against Redis is ``tools/bench.py``.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

# Run as ``python tools/bench``, this directory is sys.path[0]: its modules would shadow
# top-level ones (and the package would not be ``bench``), so tools/ takes its place.
sys.path[0] = str(Path(__file__).resolve().parent.parent)

# name: (module, what it measures)
BENCHMARKS = {
    "conflicts": ("conflicts", "conflicts, retries and throughput of 1-8 writer processes, one board and several"),
    "cpu": ("cpu", "CPU per index operation (client and fdbserver), this checkout against another revision"),
    "dense": ("dense", "what dense ranks cost score writes and DENSE reads"),
    "dump": ("dump", "dump, restore and move a board between the embedded store and FoundationDB"),
    "durable": ("durable", "durable submissions: the embedded store's modes beside Redis's AOF and the fsync floor"),
    "failover": ("failover", "what losing one FoundationDB process costs: writes stopped, calls' p99"),
    "fair-play": ("fair_play", "what score rules and hidden records cost a submission"),
    "fdb-floor": ("fdb_floor", "what the fdb binding and the store layer cost per read, write and commit"),
    "floor": ("floors", "what the machine charges before our code runs: an empty gRPC call, fsyncs, bare loads"),
    "grpc-floor": ("grpc_floor", "what grpcio costs a server per call: the thread-pool server against grpc.aio"),
    "hostile": ("hostile", "a normal client's latency while hostile callers press the server"),
    "http": ("http_door", "the HTTP door against gRPC on one server, and what the metrics cost per call"),
    "idempotency": ("idempotency", "what an idempotency key costs a submission"),
    "instructions": ("instructions", "instructions per submission and read (callgrind), against another revision"),
    "leagues": ("leagues", "what leagues add to a submission"),
    "processes": ("serve_processes", "serve --processes 1 against N, 8 clients, side by side"),
    "rankedset": ("rankedset", "the ranked set on the embedded store, and the store beneath it"),
    "scale": ("scale", "a board of N records built, served, verified and moved"),
    "scaling": ("scaling", "two tools/bench.py runs of different sizes: does the cost per operation hold?"),
    "season": ("season", "seed 003's day replayed against a server"),
    "served": ("served", "the served path, one revision's server against another's"),
    "upgrade": ("upgrade", "an index's upgrade to format 3, timed"),
    "verify": ("verify", "verify on a ranked set too large for one transaction"),
    "watchers": ("watchers", "what watched ranks (WatchRank streams) cost the server"),
    "window-events": ("window_events", "what window-end events cost: noticing, webhook delivery, an idle server"),
}


def usage() -> str:
    width = max(map(len, BENCHMARKS))
    lines = [__doc__.splitlines()[0], "", "benchmarks:"]
    lines += [f"  {name:<{width}}  {what}" for name, (_, what) in BENCHMARKS.items()]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0
    if argv[0] not in BENCHMARKS:
        print(f"tools/bench: no benchmark named {argv[0]!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(f"bench.{BENCHMARKS[argv[0]][0]}")
    sys.argv = [f"tools/bench {argv[0]}", *argv[1:]]  # argparse names the command it parses
    return module.main() or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
