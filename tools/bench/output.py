"""Output: plain-text and Markdown tables, number formats, JSON files, and the machine a run ran on."""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import platform
import statistics
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import lmdb

ROOT = Path(__file__).resolve().parent.parent.parent  # the checkout: tools/bench/ is two levels down


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain-text table: first column left-aligned, the others right-aligned."""
    widths = [max(len(str(row[i])) for row in [headers, *rows]) for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), rule, *(line(row) for row in rows)])


def markdown(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A pipe table: first column left-aligned (headings in bold), the others right-aligned."""

    def line(cells: Sequence[str]) -> str:
        first = cells[0].strip()
        if first and not any(cells[1:]):
            first = f"**{first}**"
        elif cells[0].startswith(" "):
            first = "&nbsp;&nbsp;" + first
        return "| " + " | ".join([first, *cells[1:]]).replace("\n", " ") + " |"

    align = "| --- | " + " | ".join("---:" for _ in headers[1:]) + " |"
    return "\n".join([line(headers), align, *(line(r) for r in rows)])


def fmt_rate(value: float) -> str:
    return f"{value:,.0f}"


def fmt_us(value: float) -> str:
    return f"{value:,.2f}"


def fmt_ms(us: float) -> str:
    """Microseconds as milliseconds, with precision where it matters."""
    ms = us / 1000
    if ms != ms:  # NaN
        return "-"
    if ms < 1:
        return f"{ms:.3f}"
    if ms < 100:
        return f"{ms:.2f}"
    return f"{ms:,.0f}"


def fmt_ratio(ours: float, theirs: float | None) -> str:
    return f"{ours / theirs:.2f}x" if theirs else ""


def fmt_range(values: Sequence[float], digits: int = 2) -> str:
    """The lowest and highest of ``values`` (one per round): ``low-high``."""
    return f"{min(values):,.{digits}f}-{max(values):,.{digits}f}"


def fmt_spread(values: Sequence[float], digits: int = 2) -> str:
    """The median of ``values`` (one per round) and their range: ``median (low-high)``."""
    return f"{statistics.median(values):,.{digits}f} ({fmt_range(values, digits)})"


def show(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    as_markdown: bool = False,
    json_path: str | Path | None = None,
    figures: dict[str, Any] | None = None,
) -> None:
    """Print a benchmark's table (plain text, or Markdown), and write ``figures`` as JSON to
    ``json_path`` when one is given (``--markdown``, ``--json``)."""
    emit(markdown(headers, rows) if as_markdown else table(headers, rows), json_path, figures)


def emit(report: str, json_path: str | Path | None = None, figures: dict[str, Any] | None = None) -> None:
    """Print a benchmark's report, and write ``figures`` as JSON to ``json_path`` when one is given."""
    print(report, flush=True)
    if json_path:
        write_json(json_path, figures or {})


def write_json(path: str | Path, figures: dict[str, Any]) -> None:
    """Every figure, indented, with a final newline."""
    Path(path).write_text(json.dumps(figures, indent=2) + "\n")


def source_version() -> str:
    """The checkout's commit, flagged when the library has uncommitted changes."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--", "fdb_leaderboard"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return f"{commit} with uncommitted library changes" if dirty else commit


def environment() -> dict[str, Any]:
    """The source, CPU, RAM, platform and package versions a report starts with."""
    cpu_model = platform.processor() or "unknown CPU"
    ram = 0.0
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                ram = int(line.split()[1]) / 2**20
                break
    packages = {}
    for name in ("fdb-leaderboard", "lmdb", "grpcio", "protobuf", "foundationdb", "redis", "hiredis"):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            packages[name] = importlib.metadata.version(name)
    return {
        "source": source_version(),
        "cpu_model": cpu_model,
        "cpus": os.cpu_count() or 0,
        "ram_gib": ram,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "lmdb": ".".join(map(str, lmdb.version())),
        "packages": packages,
    }
