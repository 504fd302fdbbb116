"""Ranked-set operations as steps: each issues its reads, yields before waiting on them and
returns its result, so several run in lockstep cost the read rounds of the longest.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

# A ranked-set operation as steps: it issues reads, yields before waiting on them, and returns
# its result (see run_together).
Steps = Generator[None, None, T]


def run_together(operations: Sequence[Steps[Any]]) -> list[Any]:
    """Run operations given as steps in lockstep; returns their results in order.

    Each round, every operation issues its reads and yields; then each resumes and waits for
    what it issued, so the operations cost as many read rounds as the longest one, not the
    sum.  They must not depend on each other's writes (e.g. updates of different sets).
    """
    results: list[Any] = [None] * len(operations)
    active = list(enumerate(operations))
    while active:
        waiting = []
        for i, operation in active:
            try:
                next(operation)
            except StopIteration as done:
                results[i] = done.value
            else:
                waiting.append((i, operation))
        active = waiting
    return results


def run_alone(operation: Steps[T]) -> T:
    """Run one operation given as steps."""
    while True:
        try:
            next(operation)
        except StopIteration as done:
            return done.value
