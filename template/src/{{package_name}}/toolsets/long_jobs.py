"""The long-jobs toolset: a long job that clients may run as an MCP task.

``prepare_report`` takes a while (a second a section here; in a real service, a
retrieval that waits in a data store's queue), and says how far it has come with
``report_progress``. Declared ``task="optional"``, it runs as a task for a client that
asks for one: the client gets a task id at once, and polls it for the status message
(the last progress report) and, at the end, the typed result. A client that does not
ask calls it as any other tool, within ``MCP_CALL_TIMEOUT``. See docs/long-calls.md.
"""

import asyncio
from typing import Annotated, NotRequired

from langchain_core.tools import tool
from pydantic import Field

from mcp_runtime import ToolError, ToolResult, report_progress, tool_metadata

SECONDS_PER_SECTION = 1.0


# A line of a report: bounded, as the report's lines are, so that its result always fits
# in a streamed answer, which a client that asks for progress reads (docs/long-calls.md).
Section = Annotated[str, Field(max_length=200)]


class ReportResult(ToolResult):
    """A report on a topic, one line a section."""

    sections: NotRequired[Annotated[list[Section], Field(max_length=20)]]


@tool_metadata(title="Prepare a report", read_only=True, open_world=False, task="optional")
@tool
async def prepare_report(
    topic: Annotated[str, Field(description="What the report is about.")],
    sections: Annotated[int, Field(ge=1, le=20, description="How many sections to write.")] = 3,
) -> ReportResult | ToolError:
    """Prepare a report on a topic, section by section.

    It takes about a second a section: call it as a task when your client can.
    """
    cleaned = topic.strip()
    if not cleaned:
        return ToolError(
            error="invalid_argument",
            detail='The topic is blank: pass what the report is about, such as "rainfall".',
        )
    written = []
    for number in range(1, sections + 1):
        await asyncio.sleep(SECONDS_PER_SECTION)
        written.append(f"Section {number} on {cleaned}.")
        report_progress(number, sections, f"section {number} of {sections} written")
    return ReportResult(message=f"A report on {cleaned} in {sections} sections.", sections=written)


TOOLS = [prepare_report]
