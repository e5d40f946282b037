"""A stateless ``tools/call`` of one of the service's own tools, answered directly."""

import logging

from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_runtime.contract.served_tool import ContractTool
from mcp_runtime.sdk import MCPServer, served_tools
from mcp_runtime.sdk.direct import DirectCalls
from mcp_runtime.serving.front.answers import respond_raw
from mcp_runtime.serving.front.posted import Posted
from mcp_runtime.serving.invalid_params import ParamsErrors
from mcp_runtime.tasks.protocol import TaskRouting

__all__ = ["DirectAnswers"]

logger = logging.getLogger(__name__)


class DirectAnswers:
    """Answers a ``tools/call`` of a tool the gate built, in either era, through
    :class:`~mcp_runtime.sdk.direct.DirectCalls`: the same answer the SDK's server gives,
    without its request machinery (two thirds of a short call's cost). Everything else,
    and any request the SDK would refuse, passes on to the SDK.

    It sees only the requests :class:`AnswerForm` chose to answer one JSON body, which
    in the 2025 revisions are those of a stateless endpoint. Tools whose input schema
    declares ``Mcp-Param`` headers, and task tools, are left to the SDK. Under
    ``MCP_AUTH=oauth`` the front has verified the request's token before this part, and
    ``hosts_checked``: its Host and Origin (:class:`HostCheck`, by the SDK's rules).
    """

    def __init__(
        self, app: ASGIApp, *, server: MCPServer, path: str, hosts_checked: bool = False
    ) -> None:
        self.app = app
        self.path = path
        callers = {
            tool.name: tool
            for tool in served_tools(server)
            if isinstance(tool, ContractTool) and tool.task is None
        }
        self.direct = DirectCalls(
            server, callers, passed_by=(ParamsErrors, TaskRouting), hosts_checked=hosts_checked
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] == self.path:
            posted = Posted.of(scope)
            call = await self.direct.take(scope, posted.message, posted.access, posted.modern)
            if call is not None:
                logger.debug("a tools/call answered directly")
                status, body = await self.direct.answer(call)
                await respond_raw(send, status, body)
                return
        await self.app(scope, receive, send)
