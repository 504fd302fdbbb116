"""What the HTTP front end allows beyond the server's own settings: :class:`HttpLimits`.

The server's settings apply to HTTP as to gRPC: a request (its head and its body) must arrive
within ``receive_timeout``, each line of an NDJSON upload within ``stream_idle_timeout``, a body
is at most ``max_message_bytes``.  These limits are HTTP's own: connections, the keep-alive,
Server-Sent Events streams, and which host names the server answers to.
"""

from __future__ import annotations

import dataclasses
import resource

from ..access import is_loopback
from ..service.settings import StartupError

# Loopback names a browser may send as Host for a server on a loopback address.  Any other name
# resolving to it is DNS rebinding: a foreign page reaching the server as if it were its own.
LOOPBACK_HOSTS = ("localhost", "*.localhost", "127.0.0.1", "[::1]")
# Connections the kernel queues for the server, and the most its event loop accepts at once.
ACCEPT_BACKLOG = 32
# Descriptors of connections accepted but not yet refused: a refused connection's descriptor is
# freed a few event-loop iterations after its accept, each of which may accept a backlog more.
IN_FLIGHT_ACCEPTS = 4 * ACCEPT_BACKLOG


@dataclasses.dataclass(frozen=True)
class HttpLimits:
    """Limits of the HTTP front end (every field has a safe default).

    - ``max_connections``: open connections.  A connection waiting for its next request makes
      room for a new one at the limit (the oldest goes); with none waiting, new ones are closed.
      At most half of the process's file descriptors, so gRPC and the store always have theirs.
    - ``keep_alive``: seconds an idle kept-alive connection stays open.
    - ``max_event_streams``: open Server-Sent Events streams; beyond it, RESOURCE_EXHAUSTED (429).
      At most half the connections allowed: a stream holds its connection, and the other half
      stays for requests (streams filling every connection would shut the door to them).
    - ``max_event_rows``: rows of one stream's top (its ``n``).
    - ``hosts``: the host names (``Host`` header) answered; ``*.example.com`` matches its
      sub-domains, ``*`` any.  None: the loopback names on a loopback address, any otherwise
      (where tokens guard the door).
    """

    max_connections: int = 1000
    keep_alive: float = 5.0
    max_event_streams: int = 500
    max_event_rows: int = 100
    hosts: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        for name in ("max_connections", "max_event_streams", "max_event_rows"):
            if getattr(self, name) < 1:
                raise StartupError(f"{name} must be at least 1")
        if not self.keep_alive > 0:
            raise StartupError("keep_alive must be a positive number of seconds")
        for host in self.hosts or ():
            if not host or "*" in host[1:] or (host.startswith("*") and host != "*" and not host.startswith("*.")):
                raise StartupError(f"host {host!r} is not a host name, '*.DOMAIN' or '*'")

    def allowed_hosts(self, address: str) -> list[str]:
        """The host names answered on ``address`` (its own host always among them)."""
        if self.hosts is not None:
            return list(self.hosts)
        if not is_loopback(address):
            return ["*"]
        host = address.rsplit(":", 1)[0]
        return [*LOOPBACK_HOSTS, host] if host not in LOOPBACK_HOSTS else list(LOOPBACK_HOSTS)

    def connection_budget(self) -> int:
        """Connections allowed: ``max_connections``, within half the file descriptors (those
        being accepted included)."""
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft == resource.RLIM_INFINITY:
            return self.max_connections
        return max(1, min(self.max_connections, soft // 2 - IN_FLIGHT_ACCEPTS))

    def event_stream_budget(self) -> int:
        """Event streams allowed: ``max_event_streams``, within half the connections allowed."""
        return max(1, min(self.max_event_streams, self.connection_budget() // 2))
