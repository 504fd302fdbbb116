#!/usr/bin/env python3
"""Compare two ``tools/bench.py --json`` runs of different sizes: does the cost per operation hold?

For each in-process workload present in both runs (same aggregation), prints the mean cost
per operation (microseconds; per record for loads and fills), p50 and p99 of each run, and the
ratio large / small of the mean cost.  The cost holds when that ratio is at most 1.5
between 1,000,000 and 10,000,000 records.  Storage per record per window is compared too.
The comparison is ``bench/scaling.py``.

    python tools/bench_scaling.py /tmp/b1m.json /tmp/b10m.json [--markdown]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

# tools/ (this script's directory) is on sys.path when run as a script, so ``bench`` is the
# package tools/bench/.
from bench import scaling


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("small", type=Path)
    parser.add_argument("large", type=Path)
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    return scaling.main(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
