"""Comparing two indexes' boards window by window, through two clients (:func:`compare_boards`)."""

from __future__ import annotations

import dataclasses
import itertools

from .blocking import LeaderboardClient


@dataclasses.dataclass
class Comparison:
    """What :func:`compare_boards` found: differences (empty: the same), windows and entries compared."""

    differences: list[str]
    windows: int
    entries: int


def compare_boards(
    first: LeaderboardClient, first_index: str, second: LeaderboardClient, second_index: str, page: int = 500
) -> Comparison:
    """Compare two indexes window by window: the same windows, and in each the same records in the
    same order with the same ranks, scores, times, contexts and metadata (the first difference of
    each window is reported).  For indexes without groups (groups cannot be listed)."""
    for lb, name in ((first, first_index), (second, second_index)):
        info = {i.name: i for i in lb.list_indexes()}.get(name)
        if info is None:
            raise ValueError(f"no index named {name!r}")
        if info.options.group_size:
            raise ValueError(f"index {name!r} has groups: its boards cannot be listed to compare")
    ours = {(w.type, w.start, w.end): w for w in first.list_windows(first_index).windows}
    theirs = {(w.type, w.start, w.end): w for w in second.list_windows(second_index).windows}
    differences = [
        f"window type {key[0]} [{key[1]}, {key[2]}) is only in {first_index if key in ours else second_index}"
        for key in sorted(ours.keys() ^ theirs.keys())
    ]
    entries = 0
    for key in sorted(ours.keys() & theirs.keys()):
        label = "all-time" if key[0] == 0 else f"type {key[0]} [{key[1]}, {key[2]})"
        if ours[key].filling or theirs[key].filling:
            differences.append(f"window {label} is still filling: fill both, then compare")
            continue
        at = {"window_type": key[0], "timestamp": None if key[0] == 0 else key[1]}
        left = first.scan_all(first_index, "BY_TIME_WINDOW", page=page, **at)
        right = second.scan_all(second_index, "BY_TIME_WINDOW", page=page, **at)
        for mine, other in itertools.zip_longest(left, right):
            if mine != other:
                differences.append(f"window {label}: {mine} in {first_index}, {other} in {second_index}")
                break
            entries += 1
    return Comparison(differences, len(ours.keys() & theirs.keys()), entries)
