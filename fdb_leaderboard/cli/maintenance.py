"""One maintenance pass over every index of a server: keep windows ahead, fill, expire."""

from __future__ import annotations

import grpc

from ..client import LeaderboardClient


def maintenance_pass(client: LeaderboardClient, now: int) -> list[str]:
    """One pass over every index: keep ahead and expire per its policy, and finish any window
    still filling (whatever the policy).  Safe to run anywhere."""
    report = []
    for info in client.list_indexes():
        policy = info.maintenance
        try:
            if policy.windows:
                added = client.keep_ahead(info.name, now)
                if added:
                    report.append(f"{info.name}: added {len(added)} window(s)")
            # A window added over stored scores (e.g. today's, when the job was not running), or
            # one a crashed bulk load or fill left, is not served until filled: finish it.
            if any(window.filling for window in client.list_windows(info.name).windows):
                step = client.fill(info.name)
                state = "filled" if step.done else "still filling"
                report.append(f"{info.name}: {state} windows from {step.records_processed} record(s)")
            if policy.retain:
                gone = client.expire(info.name, now - policy.retain)
                if gone:
                    report.append(f"{info.name}: expired {len(gone)} window(s)")
        except grpc.RpcError as exc:
            report.append(f"{info.name}: {exc.code().name}: {exc.details()}")
    return report
