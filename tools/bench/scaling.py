"""Two ``tools/bench.py --json`` runs of different sizes: does the cost per operation hold?

Behind ``tools/bench scaling``.  For each in-process workload present in both runs (same
aggregation), the mean cost per operation (microseconds; per record for loads and fills), p50
and p99 of each run, and the ratio large / small of the mean cost.  The cost holds when that
ratio is at most 1.5 between 1,000,000 and 10,000,000 records.  Storage per record per
window is compared too.

As a command (``tools/bench scaling``):

For each in-process workload present in both runs (same aggregation), prints the mean cost
per operation (microseconds; per record for loads and fills), p50 and p99 of each run, and the
ratio large / small of the mean cost.  The cost holds when that ratio is at most 1.5
between 1,000,000 and 10,000,000 records.  Storage per record per window is compared too.
The comparison is ``bench/scaling.py``.

    python tools/bench scaling /tmp/b1m.json /tmp/b10m.json [--markdown]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .output import markdown, table

TARGET = 1.5


def _runs(figures: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {run["aggregation"]: run for run in figures["runs"]}


def rows(small: dict[str, Any], large: dict[str, Any]) -> list[list[str]]:
    out = []
    small_runs, large_runs = _runs(small), _runs(large)
    for aggregation in small_runs.keys() & large_runs.keys():
        a, b = small_runs[aggregation], large_runs[aggregation]
        for workload, systems in b["workloads"].items():
            for system, measured in systems.items():
                if not system.startswith("ours") or "grpc" in system:  # in-process rows only
                    continue
                before = a["workloads"].get(workload, {}).get(system)
                if before is None:
                    continue
                ratio = measured["us_per_op"] / before["us_per_op"]
                out.append(
                    [
                        f"{aggregation} {workload} ({measured['label']})",
                        f"{before['us_per_op']:,.1f}",
                        f"{measured['us_per_op']:,.1f}",
                        f"{before['p50_us']:,.0f} / {before['p99_us']:,.0f}",
                        f"{measured['p50_us']:,.0f} / {measured['p99_us']:,.0f}",
                        f"{ratio:.2f}x" + ("" if ratio <= TARGET else " (over 1.5x)"),
                    ]
                )
        size_a = a["storage"]["ours"]["bytes_per_record_window"]
        size_b = b["storage"]["ours"]["bytes_per_record_window"]
        out.append(
            [f"{aggregation} storage, bytes per record per window", f"{size_a:.1f}", f"{size_b:.1f}", "", "", ""]
        )
    return out


def benchmark(args: argparse.Namespace) -> int:
    """The comparison table of the two runs named by parsed ``args``."""
    small, large = json.loads(args.small.read_text()), json.loads(args.large.read_text())
    n_small, n_large = small["config"]["records"], large["config"]["records"]
    headers = [
        "workload",
        f"us/op at {n_small:,}",
        f"us/op at {n_large:,}",
        "p50 / p99 us (small)",
        "p50 / p99 us (large)",
        "large / small",
    ]
    print((markdown if args.markdown else table)(headers, rows(small, large)))
    return 0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("small", type=Path)
    parser.add_argument("large", type=Path)
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    return benchmark(parse_args(argv))
