// Tasks through the official TypeScript clients, against a service serving the
// long-jobs toolset (prepare_report: a task when asked for, one progress report a
// section) and the tasks fixtures (failing_job: only a task, answers a ToolError;
// slow_compute: a task when asked for, sleeps `seconds`).
//
// In each client:
// - prepare_report as a task: a task is created, its status message becomes the tool's
//   progress report, and its result is typed and exact;
// - failing_job: the task completes with the tool's ToolError, typed, as isError;
// - slow_compute cancelled while it runs: the task ends cancelled.
//
// MCP_TS_CLIENT says which client:
// - "ext-tasks": the 2.x client (@modelcontextprotocol/client) negotiating `auto`, so
//   2026-07-28, with @modelcontextprotocol/ext-tasks, which opts in to the
//   io.modelcontextprotocol/tasks extension on each request. Its 2026-07-28 tasks go
//   through a request path the host supplies (`rawDispatch`: the 2.x client's own
//   decoder refuses a task answer), as the package's documentation asks: below, one
//   fetch per request, with the revision's headers;
// - "ext-tasks-legacy": the same with the 2.x client's default negotiation, `legacy`, so
//   2025-11-25 experimental tasks (`params.task`, tasks/get, tasks/result), for tools
//   whose execution.taskSupport allows it, with the preference "prefer";
// - "sdk-1": the 1.x SDK's client.experimental.tasks.callToolStream (2025-11-25).
//
// With MCP_TASK_CHECKS=rolling, only slow_compute of ROLLING_SECONDS as a task, read to
// its result while the service's processes are replaced one after the other.
//
// Usage: MCP_TS_CLIENT=FLAVOUR node ts_tasks.mjs URL STORE
// STORE names where the service keeps its tasks, for the report. Exit status 0 when
// every check passes; otherwise 1, each failure printed as a FAIL line.

import { deepStrictEqual } from "node:assert/strict";

const flavour = process.env.MCP_TS_CLIENT ?? "ext-tasks";
if (!["ext-tasks", "ext-tasks-legacy", "sdk-1"].includes(flavour)) {
  throw new Error(`unknown MCP_TS_CLIENT ${flavour}`);
}
const url = new URL(process.argv[2]);
const label = `ts tasks client (${flavour}, ${process.argv[3] ?? "?"})`;
const SECTIONS = 3;
const REPORT = {
  message: `A report on rain in ${SECTIONS} sections.`,
  sections: ["Section 1 on rain.", "Section 2 on rain.", "Section 3 on rain."],
};
const FAILED_JOB = { error: "job_failed", detail: "The job failed, as it always does." };
// The progress reports that stand as the task's status message while it works, each for
// about a second. A client's poll loop shows the latest status it read when it looks, so a
// look that falls between two polls may skip one: seeing either is the check.
const PROGRESS = ["section 1 of 3 written", "section 2 of 3 written"];
const sawProgress = (messages) => PROGRESS.some((message) => messages.includes(message));
const ROLLING_SECONDS = 10;
const ROLLED = { message: `computed roll in ${ROLLING_SECONDS} s` };
const rolling = process.env.MCP_TASK_CHECKS === "rolling";
const failures = [];

async function check(tool, what, body) {
  try {
    await body();
    console.log(`ok   ${label}: ${tool}: ${what}`);
  } catch (error) {
    failures.push(`${label}: ${tool}: ${what}: ${error.message}`);
    console.log(`FAIL ${label}: ${tool}: ${what}: ${error.message}`);
  }
}

function expect(holds, what) {
  if (!holds) throw new Error(what);
}

// The 2.x client and ext-tasks ------------------------------------------------------------

async function extTasks(mode) {
  const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
  const { createTaskSessionFromClient } = await import("@modelcontextprotocol/ext-tasks/client");
  const clientInfo = { name: "ext-tasks-check", version: "1.0.0" };
  const clientCapabilities = {};
  const client = new Client(clientInfo, {
    capabilities: clientCapabilities,
    ...(mode === "auto" ? { versionNegotiation: { mode: "auto" } } : {}),
  });
  await client.connect(new StreamableHTTPClientTransport(url));
  const protocolVersion = client.getNegotiatedProtocolVersion();
  const wanted = mode === "auto" ? "2026-07-28" : "2025-11-25";
  expect(protocolVersion === wanted, `negotiated ${protocolVersion}, not ${wanted}`);
  let nextId = 1;
  // What ext-tasks asks of its host for 2026-07-28: one JSON-RPC request sent as is.
  async function rawDispatch(request, options = {}) {
    const id = nextId++;
    const headers = {
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      "MCP-Protocol-Version": protocolVersion,
      "Mcp-Method": request.method,
      ...(request.method === "tools/call" ? { "Mcp-Name": request.params.name } : {}),
      ...(options.context?.headers ?? {}), // Mcp-Name: <taskId> on tasks/*
    };
    const body = JSON.stringify({ jsonrpc: "2.0", id, ...request });
    const answer = await fetch(url, { method: "POST", headers, body, signal: options.signal });
    let message;
    if ((answer.headers.get("content-type") ?? "").includes("text/event-stream")) {
      for (const line of (await answer.text()).split("\n")) {
        if (line.startsWith("data:")) {
          const event = JSON.parse(line.slice(5));
          if (event.id === id) message = event;
        }
      }
    } else {
      message = await answer.json();
    }
    if (!message) throw new Error(`no JSON-RPC answer (HTTP ${answer.status})`);
    return message.error
      ? { kind: "error", error: message.error }
      : { kind: "result", result: message.result };
  }
  const session = createTaskSessionFromClient(client, {
    endpointId: url.href,
    ...(mode === "auto"
      ? { rawDispatch, v2RequestFraming: { protocolVersion, clientInfo, clientCapabilities } }
      : {}),
  });
  const preference = { task: { preference: "prefer" } };
  return {
    async report() {
      const args = { topic: "rain", sections: SECTIONS };
      const execution = await session.callTool("prepare_report", args, preference);
      expect(execution.kind === "task", `the call ran ${execution.kind}, not as a task`);
      const messages = new Set();
      const { outcome } = await execution.settle({
        onEvent: (event) => messages.add(event.task?.statusMessage),
      });
      expect(outcome.status === "completed", `the task ended ${outcome.status}`);
      const saw = [...messages];
      expect(sawProgress(saw), `no status message ${PROGRESS.join(" or ")}: saw ${saw}`);
      return outcome.result;
    },
    async failing() {
      const execution = await session.callTool("failing_job", {}, preference);
      expect(execution.kind === "task", `the call ran ${execution.kind}, not as a task`);
      const { outcome } = await execution.settle();
      expect(outcome.status === "completed", `the task ended ${outcome.status}`);
      return outcome.result;
    },
    async rolled() {
      const args = { seconds: ROLLING_SECONDS, label: "roll" };
      const execution = await session.callTool("slow_compute", args, { task: { preference: "require" } });
      expect(execution.kind === "task", `the call ran ${execution.kind}, not as a task`);
      const { outcome } = await execution.settle();
      expect(outcome.status === "completed", `the task ended ${outcome.status}`);
      return outcome.result;
    },
    async cancelled() {
      const execution = await session.callTool("slow_compute", { seconds: 30 }, { task: { preference: "require" } });
      await new Promise((resolve) => setTimeout(resolve, 500));
      await execution.cancel();
      const { outcome } = await execution.settle();
      return outcome.status;
    },
    async close() {
      await session.close();
      await client.close();
    },
  };
}

// The 1.x SDK's experimental tasks --------------------------------------------------------

async function sdk1() {
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
  const { CallToolResultSchema } = await import("@modelcontextprotocol/sdk/types.js");
  const client = new Client({ name: "sdk-1-tasks-check", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(url));
  await client.listTools(); // the tools' execution.taskSupport, which callToolStream reads
  async function stream(name, args, onTask) {
    const seen = { created: undefined, statuses: [], result: undefined, error: undefined };
    for await (const message of client.experimental.tasks.callToolStream(
      { name, arguments: args },
      CallToolResultSchema,
    )) {
      if (message.type === "taskCreated") {
        seen.created = message.task;
        await onTask?.(message.task);
      } else if (message.type === "taskStatus") seen.statuses.push(message.task);
      else if (message.type === "result") seen.result = message.result;
      else seen.error = message.error;
    }
    expect(seen.created, "no task was created");
    return seen;
  }
  return {
    async report() {
      const seen = await stream("prepare_report", { topic: "rain", sections: SECTIONS });
      const messages = seen.statuses.map((task) => task.statusMessage);
      expect(sawProgress(messages), `no status message ${PROGRESS.join(" or ")}: saw ${messages}`);
      expect(!seen.error, `the task failed: ${seen.error?.message}`);
      return seen.result;
    },
    async failing() {
      const seen = await stream("failing_job", {});
      expect(!seen.error, `the task failed: ${seen.error?.message}`);
      return seen.result;
    },
    async rolled() {
      const seen = await stream("slow_compute", { seconds: ROLLING_SECONDS, label: "roll" });
      expect(!seen.error, `the task failed: ${seen.error?.message}`);
      return seen.result;
    },
    async cancelled() {
      let taskId;
      const seen = await stream("slow_compute", { seconds: 30 }, async (task) => {
        taskId = task.taskId;
        await new Promise((resolve) => setTimeout(resolve, 500));
        const answer = await client.experimental.tasks.cancelTask(taskId);
        expect(answer.status === "cancelled", `tasks/cancel answered ${answer.status}`);
      });
      expect(seen.error?.message.includes("cancelled"), `the stream ended ${seen.error?.message}`);
      return (await client.experimental.tasks.getTask(taskId)).status;
    },
    close: () => client.close(),
  };
}

// The checks ------------------------------------------------------------------------------

const tasks = await (flavour === "sdk-1" ? sdk1() : extTasks(flavour === "ext-tasks" ? "auto" : "legacy"));
try {
  await Promise.all(rolling ? [
    check("slow_compute", "its result read across a rolling restart", async () => {
      const result = await tasks.rolled();
      deepStrictEqual(result.structuredContent, ROLLED);
    }),
  ] : [
    check("prepare_report", "a task: its progress the status message, its result typed", async () => {
      const result = await tasks.report();
      deepStrictEqual(result.structuredContent, REPORT);
      deepStrictEqual(JSON.parse(result.content[0].text), REPORT);
      expect(result.isError === false, "isError is not false");
    }),
    check("failing_job", "the task completes with the tool's ToolError, typed", async () => {
      const result = await tasks.failing();
      expect(result.isError === true, "isError is not true");
      deepStrictEqual(result.structuredContent, FAILED_JOB);
    }),
    check("slow_compute", "cancelled while it runs: the task ends cancelled", async () => {
      const status = await tasks.cancelled();
      expect(status === "cancelled", `the task ended ${status}`);
    }),
  ]);
} finally {
  await tasks.close();
}
process.exit(failures.length ? 1 : 0);
