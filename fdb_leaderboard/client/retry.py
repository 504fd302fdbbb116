"""How calls are sent again (:class:`RetryPolicy`) and the idempotency keys that make a write's
repeats safe.
"""

from __future__ import annotations

import dataclasses
import random
import uuid

import grpc

from .errors import error_from_rpc


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """How calls that may not have reached the server, or whose answer was lost, are sent again.

    ``attempts`` counts the first try (1: never again).  After try ``n`` fails the client waits
    ``b / 2`` plus a random part of ``b / 2`` seconds, ``b = min(max_backoff, initial_backoff *
    multiplier ** (n - 1))``: about 2-4 s over the default 5 tries, time for a server to restart
    or a connection to come back, and clients cut off together do not return together.  Writes
    are retried on ``write_codes``, reads on ``read_codes``; a write keeps its idempotency key.
    """

    attempts: int = 5
    initial_backoff: float = 0.25
    max_backoff: float = 4.0
    multiplier: float = 2.0
    write_codes: frozenset[grpc.StatusCode] = frozenset(
        {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED}
    )
    read_codes: frozenset[grpc.StatusCode] = frozenset({grpc.StatusCode.UNAVAILABLE})

    def __post_init__(self) -> None:
        if self.attempts < 1 or self.initial_backoff < 0 or self.max_backoff < 0 or self.multiplier < 1:
            raise ValueError("a retry policy needs attempts >= 1, backoffs >= 0 and a multiplier >= 1")

    def backoff(self, tries: int) -> float:
        """Seconds to wait after ``tries`` failed tries."""
        ceiling = min(self.max_backoff, self.initial_backoff * self.multiplier ** (tries - 1))
        return ceiling / 2 + random.uniform(0, ceiling / 2)

    def again(self, error: grpc.RpcError, codes: frozenset[grpc.StatusCode], tries: int) -> bool:
        """Whether a call that failed with ``error`` after ``tries`` tries is sent again."""
        return error.code() in codes and tries < self.attempts  # type: ignore[attr-defined]


def new_idempotency_key() -> str:
    """A key for one logical write (sent again with the write, never with another)."""
    return uuid.uuid4().hex


DEFAULT_RETRY = RetryPolicy()  # the clients' default (frozen: one shared instance is safe)


class Tries:
    """The tries of one call under a policy, blocking or awaiting alike: after each failure, how
    long to wait before the next, or the error to raise instead."""

    def __init__(self, policy: RetryPolicy, codes: frozenset[grpc.StatusCode]) -> None:
        self.policy = policy
        self.codes = codes
        self.count = 0

    def wait_after(self, error: grpc.RpcError) -> float:
        """Seconds to wait before sending the call again after ``error``; raises the error as a
        :class:`~fdb_leaderboard.client.CallError` when it is not sent again."""
        self.count += 1
        if not self.policy.again(error, self.codes, self.count):
            raise error_from_rpc(error) from None
        return self.policy.backoff(self.count)
