"""Python clients for the gRPC service (:mod:`.operations` holds them while they are split by job)."""

from typing import Any

from . import operations as _operations
from .operations import __all__ as __all__


def __getattr__(name: str) -> Any:
    return getattr(_operations, name)
