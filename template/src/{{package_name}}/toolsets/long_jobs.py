"""The long-jobs toolset: long jobs that clients may run as MCP tasks.

Declared ``task="optional"``, a tool runs as a task for a client that asks for one: the
client gets a task id at once, and polls it for the status message (the last progress
report) and, at the end, the typed result. A client that does not ask calls it as any
other tool, within ``MCP_CALL_TIMEOUT``. A task outlives the process that took it: when
that process stops (a deploy, a crash), another one runs the task again, and the tool
goes on from its last checkpoint (``save_checkpoint``). See docs/long-calls.md.

- ``prepare_report`` writes a report section by section (a second a section here),
  and checkpoints each section it has written: a run that takes the task over writes
  only the sections after them.
- ``retrieve_records`` shows the pattern of a data store that queues requests: reserve
  the size of the file the request will answer (a request too large is refused at once,
  not after hours in the queue), submit the request, checkpoint the store's request id,
  poll it until it is ready, and stream the file it answers into kept data as it comes
  (``keep_data_async``: the service holds a few chunks of it at a time, whatever its
  size). A run that takes the task over polls the request already submitted instead of
  submitting it again, and loses no place in the store's queue. The result links the
  file, and the caller reads it apart (docs/large-results.md).
"""

import asyncio
import hashlib
import time
from collections.abc import AsyncIterator
from typing import Annotated, NotRequired, TypedDict

from langchain_core.tools import tool
from pydantic import Field

from mcp_runtime import (
    DataLink,
    ToolError,
    ToolResult,
    keep_data_async,
    last_checkpoint,
    report_progress,
    reserve_data_async,
    save_checkpoint,
    tool_metadata,
)

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
    # The sections an earlier run of this task wrote, when this run takes it over.
    written: list[str] = (last_checkpoint() or {}).get("written", [])
    for number in range(len(written) + 1, sections + 1):
        await asyncio.sleep(SECONDS_PER_SECTION)
        written.append(f"Section {number} on {cleaned}.")
        save_checkpoint({"written": written})
        report_progress(number, sections, f"section {number} of {sections} written")
    return ReportResult(message=f"A report on {cleaned} in {sections} sections.", sections=written)


class DemoStore:
    """A stand-in for a data store that queues retrievals, as scientific archives do:
    ``submit`` queues a request and answers its id, ``waiting`` says how many seconds it
    still waits, ``download`` answers its file a chunk at a time once it is ready, and
    ``expected_size`` says how large that file will be before any of it. Replace it with
    your store's client. (Here a request's id carries its query and when it is ready, so
    any process can poll it.)"""

    SECONDS_IN_QUEUE = 3.0
    ROWS_AT_ONCE = 10_000
    submitted = 0  # requests submitted so far, by this process

    def expected_size(self, dataset: str, count: int) -> int:
        return len("record,value\n") + count * (len(str(count)) + 18)

    def submit(self, dataset: str, count: int) -> str:
        DemoStore.submitted += 1
        ready_at = time.time() + self.SECONDS_IN_QUEUE
        return f"{dataset}:{count}:{ready_at:.3f}"

    def waiting(self, request_id: str) -> float:
        return max(0.0, float(request_id.rsplit(":", 1)[1]) - time.time())

    async def download(self, request_id: str) -> AsyncIterator[bytes]:
        """The file of a request's records (CSV), as the store answers it: in chunks."""
        dataset, count, _ = request_id.rsplit(":", 2)
        yield b"record,value\n"
        for first in range(1, int(count) + 1, self.ROWS_AT_ONCE):
            last = min(first + self.ROWS_AT_ONCE, int(count) + 1)
            yield self._rows(dataset, first, last).encode()

    def fetch(self, request_id: str) -> str:
        """The whole file of a request's records, at once (for tests)."""
        dataset, count, _ = request_id.rsplit(":", 2)
        return "record,value\n" + self._rows(dataset, 1, int(count) + 1)

    @staticmethod
    def _rows(dataset: str, first: int, last: int) -> str:
        return "".join(
            f"{n},{hashlib.sha256(f'{dataset}{n}'.encode()).hexdigest()[:16]}\n"
            for n in range(first, last)
        )


store = DemoStore()
POLL_SECONDS = 1.0


class RecordsRequest(TypedDict):
    """What ``retrieve_records`` checkpoints: the data store's id of its request."""

    request_id: str


class RecordsResult(ToolResult):
    """The records a data store answered to one request: the file it answered, kept for
    the caller (its size is any, so it is linked, not inline)."""

    request_id: NotRequired[Annotated[str, Field(max_length=200)]]
    count: NotRequired[int]
    file: NotRequired[DataLink]


@tool_metadata(title="Retrieve records", read_only=True, task="optional")
@tool
async def retrieve_records(
    dataset: Annotated[str, Field(description="The dataset to retrieve from, such as 'rainfall'.")],
    count: Annotated[
        int, Field(ge=1, le=10_000_000, description="How many records to retrieve.")
    ] = 10,
) -> RecordsResult | ToolError:
    """Retrieve records of a dataset from the data store, which queues each request.

    A request waits in the store's queue before it is answered: call it as a task when
    your client can.
    """
    name = dataset.strip()
    if not name:
        return ToolError(
            error="invalid_argument",
            detail='The dataset is blank: name one, such as "rainfall".',
        )
    # A file larger than the service keeps is refused now, not after the wait in the queue.
    await reserve_data_async(store.expected_size(name, count))
    # Submit once: a run that takes the task over polls the request already submitted.
    checkpoint: RecordsRequest | None = last_checkpoint()
    if checkpoint is None:
        checkpoint = RecordsRequest(request_id=store.submit(name, count))
        save_checkpoint(checkpoint)
    request_id = checkpoint["request_id"]
    polls = 0
    while (waiting := store.waiting(request_id)) > 0:
        polls += 1
        # The status message is kept in clear: it says where the job is, not what it asked.
        report_progress(polls, None, f"waiting in the data store's queue ({waiting:.0f} s left)")
        await asyncio.sleep(min(POLL_SECONDS, waiting))
    # Streamed into kept data as it comes, whatever its size: linked from the result.
    file = await keep_data_async(
        store.download(request_id), name=f"{name}.csv", media_type="text/csv"
    )
    return RecordsResult(
        message=f"{count} records of {name} (request {request_id}), in the file "
        f"{file['name']} linked here ({file['size']} bytes).",
        request_id=request_id,
        count=count,
        file=file,
    )


TOOLS = [prepare_report, retrieve_records]
