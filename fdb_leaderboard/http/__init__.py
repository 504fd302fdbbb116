"""The HTTP front end: the gRPC service over HTTP/JSON, REST reads, a live page, metrics.

| module | concern |
|---|---|
| ``transcode.py`` | each RPC at ``POST /v1/<Method>``: JSON in and out, the servicer called, status codes as HTTP's |
| ``rest/`` | resource-style routes (top, rank, around, scores...) over the same RPCs: parameters, schemas, routes |
| ``openapi.py`` | the OpenAPI document, generated from the protobuf descriptors and the routes |
| ``app.py`` | the Starlette application: routes, NDJSON bulk loads, metrics per route; token before body |
| ``events.py`` | Server-Sent Events: one shared computation per board, streams capped |
| ``guard.py`` | what the door refuses first: foreign hosts, cross-site and non-JSON writes; the page's headers |
| ``limits.py`` | :class:`HttpLimits`: connections, keep-alive, event streams, host names answered |
| ``connections.py`` | uvicorn's h11 protocol with a cap on connections and a time limit on request heads |
| ``deadlines.py`` | :class:`Deadlines`: time limits of one length kept by one timer (request heads, bodies) |
| ``server.py`` | :class:`HttpServer`: uvicorn in the gRPC server's process, stopped with it |
| ``static/`` | the page (HTML, JavaScript, CSS; no build step, nothing fetched from elsewhere) |

Dependencies point down: this layer calls the service's servicer (so both front ends share
validation, errors and status codes) and its metrics; nothing below imports it.
"""

from .app import HttpApi
from .limits import HttpLimits
from .server import HttpServer

__all__ = ["HttpApi", "HttpLimits", "HttpServer"]
