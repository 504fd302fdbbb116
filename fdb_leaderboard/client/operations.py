"""The operations of the service, each written once for both clients as a generator that yields the
calls it needs: :class:`UnaryOps` gathers them, :func:`advance` runs one to its next call, and
:func:`signed_like` gives a client's method the operation's name, signature and documentation.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any, Generic

from .admin_ops import AdminOps
from .errors import CallError, InvalidArgument
from .messages import _T, Op, UnaryCall
from .reads_ops import ReadOps
from .records_ops import RecordOps


class UnaryOps(AdminOps, RecordOps, ReadOps):
    """Every unary operation of the service, written once for both clients.

    Each is a generator: it builds its requests (refusing what cannot be sent), yields a
    :class:`UnaryCall` per request, receives its answer and returns the Python result.  The clients
    wrap each one (:func:`_blocking`, :func:`_awaiting`) under the same name and signature.
    """


def advance(op: Op[_T], answer: Any) -> UnaryCall | OpDone[_T]:
    """Run ``op`` to its next call (or its end), given the answer to its last one.

    What the operation raises while building a request (a ``ValueError`` or ``TypeError`` of
    protobuf or of the values' checks) is the caller's argument: InvalidArgument.
    """
    try:
        return op.send(answer)
    except StopIteration as done:
        return OpDone(done.value)
    except CallError:
        raise
    except (ValueError, TypeError) as exc:
        raise InvalidArgument(" ".join(str(exc).split()) or type(exc).__name__) from exc


@dataclasses.dataclass(frozen=True, slots=True)
class OpDone(Generic[_T]):
    """An operation's result."""

    value: _T


def signed_like(
    method: Callable[..., Any], op: Callable[..., Any], owner: str, *more: inspect.Parameter
) -> Callable[..., Any]:
    """``method`` named, documented and signed as ``op``, with ``self``, the ``more`` parameters
    and the op's result type."""
    signature = inspect.signature(op)
    returns = signature.return_annotation
    if isinstance(returns, str) and returns.startswith("Op[") and returns.endswith("]"):
        returns = returns[3:-1]
    self = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    method.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[self, *signature.parameters.values(), *more], return_annotation=returns
    )
    method.__name__ = op.__name__
    method.__qualname__ = f"{owner}.{op.__name__}"
    method.__doc__ = op.__doc__
    return method


# Reads whose freshness a caller may bound (``max_staleness``): the server's bounded reads.
BOUNDED_READS = frozenset(
    {
        "rank", "rank_and_entry", "around", "top", "count", "score_for_rank", "rank_for_score", "ranks",
        "friends_board", "page", "cohort", "percentile", "score_for_percentile", "movement", "scan", "groups",
        "metadata", "list_windows", "sub_directories",
    }
)  # fmt: skip
STALENESS_PARAMETER = inspect.Parameter("max_staleness", inspect.Parameter.KEYWORD_ONLY, default=None)
