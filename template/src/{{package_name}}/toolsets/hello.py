"""The hello toolset: the smallest tool that keeps the typed-return contract."""

from typing import Annotated, NotRequired

from langchain_core.tools import tool
from pydantic import Field

from mcp_runtime import ToolError, ToolResult, tool_metadata


class HelloResult(ToolResult):
    """A greeting for the named person, also stated in the message."""

    greeting: NotRequired[str]


@tool_metadata(title="Greet a person", read_only=True, idempotent=True, open_world=False)
@tool
def hello(
    name: Annotated[str, Field(description="The name of the person to greet.")],
) -> HelloResult | ToolError:
    """Greet a person by name.

    Use it when the user asks to be greeted; pass the name they gave.
    """
    cleaned = name.strip()
    if not cleaned:
        return ToolError(
            error="invalid_argument",
            detail='The name is blank: pass the name of the person to greet, such as "Ada".',
        )
    greeting = f"Hello, {cleaned}!"
    return HelloResult(message=greeting, greeting=greeting)


TOOLS = [hello]
