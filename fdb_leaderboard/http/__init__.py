"""The HTTP front end: the gRPC service over HTTP/JSON, REST reads, a live page, metrics.

| module | concern |
|---|---|
| ``transcode.py`` | each RPC at ``POST /v1/<Method>``: JSON in and out, the servicer called, status codes as HTTP's |
| ``rest.py`` | resource-style routes (top, rank, around, count, scores) over the same RPCs |
| ``openapi.py`` | the OpenAPI document, generated from the protobuf descriptors and the routes |
| ``app.py`` | the Starlette application: routes, NDJSON bulk loads, Server-Sent Events, metrics per route |
| ``server.py`` | :class:`HttpServer`: uvicorn in the gRPC server's process, stopped with it |
| ``static/`` | the page (HTML, JavaScript, CSS; no build step, nothing fetched from elsewhere) |

Dependencies point down: this layer calls the service's servicer (so both front ends share
validation, errors and status codes) and its metrics; nothing below imports it.
"""

from .app import HttpApi
from .server import HttpServer

__all__ = ["HttpApi", "HttpServer"]
