"""The servicer: :class:`LeaderboardService`, one handler per RPC, assembled from the groups of :mod:`.handlers`.

Each handler takes a parsed request and a :class:`CallContext` and runs on a worker thread
(``calls.py`` receives requests and sends answers).  Errors map to status codes by type (see
``status.py``) and leave as :class:`~.status.Answer`; anything unexpected is logged and answered
INTERNAL.  Score writes from concurrent clients reach the store's ``run`` from many server
threads at once, so the embedded store's group commit shares one durable commit among them.

Every call does bounded work: Top, AroundMe and Scan return at most ``max_page`` rows (more is
refused, naming the limit; a scan without a limit gets a page of ``max_page`` and a continuation).
"""

from __future__ import annotations

from typing import Any

from ..proto import service_pb2 as pb
from ..proto import service_pb2_grpc as pb_grpc
from .catalog import Catalog
from .handlers.calling import CallContext, ClientGone, answer_for, rule_trailing
from .handlers.events import EventHandlers
from .handlers.indexes import IndexHandlers
from .handlers.maintenance import MaintenanceHandlers
from .handlers.moderation import ModerationHandlers
from .handlers.moves import MoveHandlers
from .handlers.reads import ReadHandlers
from .handlers.writes import WriteHandlers
from .settings import DEFAULT_MAX_PAGE
from .upgrades import Upgrades
from .window_events import WindowEvents

__all__ = ["SERVICE_NAME", "CallContext", "ClientGone", "LeaderboardService", "answer_for", "rule_trailing"]

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["Leaderboard"].full_name


class LeaderboardService(
    IndexHandlers,
    MaintenanceHandlers,
    MoveHandlers,
    WriteHandlers,
    ModerationHandlers,
    ReadHandlers,
    EventHandlers,
    pb_grpc.LeaderboardServicer,
):
    def __init__(self, catalog: Catalog, max_page: int = DEFAULT_MAX_PAGE) -> None:
        self.catalog = catalog
        self.max_page = max_page
        self.housekeeping: Any = None  # woken when windows are left filling (the server's, if any)
        self.window_events = WindowEvents(catalog)
        self.delivery: Any = None  # woken when window-end events were written (the server's, if any)
        self.upgrades = Upgrades(catalog)
