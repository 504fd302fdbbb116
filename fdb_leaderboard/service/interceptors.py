"""Access checked before a call is read: each call's bearer token against its method's role."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import grpc
from grpc import aio

from .. import access
from .grpc_service import SERVICE_NAME
from .log_lines import RateLimitedLog

HEALTH_PREFIX = "/grpc.health.v1.Health/"
REFLECTION_PREFIX = "/grpc.reflection."


class AccessInterceptor(aio.ServerInterceptor):
    """Checks each call's bearer token before its request is read: health is open, reflection
    needs the read role, each Leaderboard method the role its entry of :data:`fdb_leaderboard.rpcs.RPCS` names."""

    def __init__(self, tokens: access.Tokens) -> None:
        self.tokens = tokens
        self.refusals = RateLimitedLog()

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        method = handler_call_details.method
        if method.startswith(HEALTH_PREFIX):
            return await continuation(handler_call_details)
        header, headers = None, 0
        for key, value in handler_call_details.invocation_metadata or ():
            if key == "authorization":
                header = value if isinstance(value, str) else value.decode("latin-1")
                headers += 1
        if headers > 1:  # which one is the caller's is anyone's guess
            return _refusal(grpc.StatusCode.UNAUTHENTICATED, access.several_authorizations(headers))
        token = access.bearer_token(header)
        try:
            if method.startswith(REFLECTION_PREFIX):
                self.tokens.authenticate(token)
            elif method.startswith(f"/{SERVICE_NAME}/"):
                self.tokens.authorize(token, method)
            else:
                return await continuation(handler_call_details)  # no such service: UNIMPLEMENTED
        except access.Unauthenticated as exc:
            return _refusal(grpc.StatusCode.UNAUTHENTICATED, str(exc))
        except access.AccessError as exc:  # too low a role, or a method without a rule
            self.refusals.warning(f"refused {access.method_name(method)[:100]}: {exc}")
            return _refusal(grpc.StatusCode.PERMISSION_DENIED, str(exc))
        return await continuation(handler_call_details)


def _refusal(code: grpc.StatusCode, message: str) -> grpc.RpcMethodHandler:
    async def refuse(_requests: Any, context: aio.ServicerContext) -> None:
        context.set_code(code)  # set, not raised with abort: refusals may come in floods
        context.set_details(message)

    return grpc.stream_stream_rpc_method_handler(refuse)
