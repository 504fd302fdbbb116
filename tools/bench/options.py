"""Options: the command-line options benchmarks share, parsed one way.

:func:`parser` starts a benchmark's parser from its module docstring; :func:`add_store`,
:func:`add_sizes` and :func:`add_output` add the options many take (``--store``; ``--records``,
``--calls``, ``--rounds``; ``--markdown``, ``--json``) with one spelling and one help text each;
:func:`integers` is the type of a comma-separated list of whole numbers (``--threads 1,8``);
:func:`require_positive` refuses sizes below 1 with argparse's usage error (exit 2).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence


def parser(doc: str, whole: bool = False) -> argparse.ArgumentParser:
    """A parser described by ``doc``'s first paragraph, or all of it (kept as written) if ``whole``."""
    if whole:
        return argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    return argparse.ArgumentParser(description=doc.strip().split("\n\n")[0])


def add_store(parser: argparse.ArgumentParser, default: str = "a temporary embedded store, durable=false") -> None:
    """``--store URL``; without it the benchmark makes the store ``default`` describes."""
    parser.add_argument("--store", default=None, help=f"store URL (default: {default})")


def add_sizes(
    parser: argparse.ArgumentParser, records: int, calls: int | None = None, rounds: int | None = None
) -> None:
    """``--records``, and ``--calls`` and ``--rounds`` where given a default."""
    parser.add_argument("--records", type=int, default=records, help="records per index (default: %(default)s)")
    if calls is not None:
        parser.add_argument("--calls", type=int, default=calls, help="calls per round (default: %(default)s)")
    if rounds is not None:
        parser.add_argument("--rounds", type=int, default=rounds, help="rounds, taking turns (default: %(default)s)")


def add_output(parser: argparse.ArgumentParser) -> None:
    """``--markdown`` (a pipe table instead of plain text) and ``--json PATH`` (every figure)."""
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("--json", metavar="PATH", help="also write every figure as JSON to PATH")


def integers(text: str) -> list[int]:
    """An argparse type: ``"1,8"`` as ``[1, 8]``."""
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"comma-separated integers, not {text!r}") from None


def require_positive(parser: argparse.ArgumentParser, args: argparse.Namespace, names: Sequence[str]) -> None:
    """Exit with a usage error if any option ``names`` (dest names; a list's every item) is below 1."""
    for name in names:
        value = getattr(args, name)
        if (min(value) if isinstance(value, list) else value) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
