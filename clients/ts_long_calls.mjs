// Long calls through the official TypeScript clients: progress and cancellation.
//
// Against a service serving the long-calls toolset that check_service.py adds:
// count_up(steps) reports progress (i, steps, "step i") for each step, and
// wait_for_cancel() leaves the file `started` in LONG_CALLS_DIR when it runs and
// `cancelled` there when it is cancelled.
//
// - count_up with an onprogress handler: the SDK client asks for progress itself
//   (a progressToken in the call's _meta), and every report arrives, in order,
//   before the result;
// - wait_for_cancel with an AbortSignal, aborted once the tool runs: the SDK client
//   sends notifications/cancelled itself and rejects the call; the tool is stopped,
//   and the service's log (SERVE_LOG) has the call's outcome `cancelled`, while this
//   client stays connected: the cancel stopped the call, not a disconnect.
//
// - big_result: 5 and 20 MB results arrive whole, at once, after 16 s (past the 15 s
//   after which a 2026-07-28 answer could turn into a stream) and from a call that
//   reports progress nobody asked for; a call that reports progress to this client,
//   which asked for it, streams, and its 5 MB result answers result_too_large.
// - big_file: 5 and 20 MB kept for the caller and linked, from a call that reports
//   progress to this client: the link's data reads back whole with readResource.
//
// MCP_TS_CLIENT says which client: "sdk-1", the 1.x SDK (2025 revisions: it cancels by
// posting notifications/cancelled), "legacy", the 2.x client negotiating with
// initialize (it cancels the same way), or "2026-07-28", the 2.x client pinned to
// that revision (it cancels by closing the call's response stream).
//
// Usage: MCP_TS_CLIENT=FLAVOUR [MCP_CHECKS=calls|big] LONG_CALLS_DIR=FOLDER SERVE_LOG=FILE node ts_long_calls.mjs URL
// Exit status 0 when every check passes; otherwise 1, each failure printed as a FAIL line.

import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { deepStrictEqual } from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";

const flavour = process.env.MCP_TS_CLIENT ?? "sdk-1";
if (!["sdk-1", "legacy", "2026-07-28"].includes(flavour)) throw new Error(`unknown MCP_TS_CLIENT ${flavour}`);
const modern = flavour === "2026-07-28";
const v2 = flavour !== "sdk-1";
const { Client, StreamableHTTPClientTransport } = v2
  ? await import("@modelcontextprotocol/client")
  : {
      ...(await import("@modelcontextprotocol/sdk/client/index.js")),
      ...(await import("@modelcontextprotocol/sdk/client/streamableHttp.js")),
    };
const label = `ts client (${flavour})`;

const url = new URL(process.argv[2]);
const folder = process.env.LONG_CALLS_DIR;
const WAIT_MS = 10_000;
const CANCEL_REASON = "the ts-sdk check no longer needs it";
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

// A call with request options: the 2.x client takes them second, the 1.x SDK third.
function callTool(params, options) {
  return v2 ? client.callTool(params, options) : client.callTool(params, undefined, options);
}

async function eventually(holds, what) {
  const deadline = Date.now() + WAIT_MS;
  while (!holds()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${WAIT_MS / 1000} s`);
    await sleep(20);
  }
}

const appears = (name, what) => eventually(() => existsSync(join(folder, name)), what);
// Only what the service logs from now on: an earlier client's calls are in the log too.
const logStart = readFileSync(process.env.SERVE_LOG).length;
const logged = (line, what) =>
  eventually(() => readFileSync(process.env.SERVE_LOG).subarray(logStart).toString("utf8").includes(line), what);

const options = v2 ? { versionNegotiation: { mode: modern ? { pin: flavour } : "legacy" } } : {};
const client = new Client({ name: "ts-long-calls-check", version: "1.0.0" }, options);
await client.connect(new StreamableHTTPClientTransport(url));
if (modern) deepStrictEqual(client.getNegotiatedProtocolVersion(), flavour, "the revision spoken");
const errors = [];
client.onerror = (error) => errors.push(error.message);

// MCP_CHECKS says which: "calls" (count_up and wait_for_cancel, the default) or "big"
// (big_result), so that the long waits of each client's big results run beside the rest.
const checks = process.env.MCP_CHECKS ?? "calls";
if (!["calls", "big"].includes(checks)) throw new Error(`unknown MCP_CHECKS ${checks}`);

if (checks === "calls") await check("count_up", "every progress report, in order, before the result", async () => {
  const reports = [];
  const result = await callTool(
    { name: "count_up", arguments: { steps: 3 } },
    { onprogress: (report) => reports.push(report) },
  );
  const beforeResult = [...reports];
  deepStrictEqual(
    beforeResult,
    [
      { progress: 1, total: 3, message: "step 1" },
      { progress: 2, total: 3, message: "step 2" },
      { progress: 3, total: 3, message: "step 3" },
    ],
    "the progress reports received before the result",
  );
  deepStrictEqual(result.isError ?? false, false, "isError");
  deepStrictEqual(result.structuredContent, { message: "counted 3 steps", steps: 3 }, "structuredContent");
  await sleep(200); // a report sent after the result would reach onerror as an unknown token
  deepStrictEqual(errors, [], "the client's protocol errors");
});

if (checks === "calls") await check("wait_for_cancel", "an aborted call is cancelled on the server", async () => {
  const controller = new AbortController();
  const call = callTool({ name: "wait_for_cancel", arguments: {} }, { signal: controller.signal });
  const settled = call.then(
    () => "answered",
    (error) => error,
  );
  await appears("started", "the tool started");
  await sleep(300);
  controller.abort(CANCEL_REASON);
  const outcome = await settled;
  if (outcome === "answered") throw new Error("the call answered instead of rejecting");
  // Still connected: only the client's cancel (its notifications/cancelled, or from
  // 2026-07-28 the closed response stream of this one call) can have stopped the tool.
  await appears("cancelled", "the tool's cancellation cleanup ran");
  await logged("tool=wait_for_cancel outcome=cancelled", "the serve log has the outcome cancelled");
});

const MB = 1_000_000;
const LONG = { timeout: 60_000 };
async function bigResult(megabytes, seconds, steps, options) {
  const result = await callTool({ name: "big_result", arguments: { megabytes, seconds, steps } }, options);
  deepStrictEqual(result.isError ?? false, false, `isError: ${JSON.stringify(result).slice(0, 300)}`);
  deepStrictEqual(result.structuredContent.message, `${megabytes} MB`, "message");
  deepStrictEqual(result.structuredContent.data.length, megabytes * MB, "the data's length");
}

if (checks === "big") await check("big_result", "5 and 20 MB results, at once, after 16 s and reporting progress", async () => {
  await Promise.all(
    [5, 20].flatMap((megabytes) => [
      bigResult(megabytes, 0, 0, LONG),
      bigResult(megabytes, 16, 0, LONG),
      bigResult(megabytes, 0, 3, LONG),
    ]),
  );
});

if (checks === "big") await check("big_result", "a streamed answer too large for clients answers result_too_large", async () => {
  const reports = [];
  const result = await callTool(
    { name: "big_result", arguments: { megabytes: 5, steps: 2 } },
    { ...LONG, onprogress: (report) => reports.push(report.progress) },
  );
  deepStrictEqual(reports, [1, 2], "the progress reports");
  deepStrictEqual(result.isError, true, "isError");
  deepStrictEqual(result.structuredContent.error, "result_too_large", "the ToolError's kind");
  if (!result.structuredContent.detail.includes("MCP_MAX_STREAMED_RESULT_BYTES")) {
    throw new Error(`the detail names no setting: ${result.structuredContent.detail}`);
  }
});

// big_file keeps what it is asked for and links it: the link reads back whole.
function pattern(megabytes) {
  const size = megabytes * MB;
  const data = Buffer.alloc(size);
  for (let i = 0; i < size; i += 1) data[i] = i % 256;
  return data;
}

if (checks === "big") await check("big_file", "5 and 20 MB kept as links, reporting progress, read back whole", async () => {
  await Promise.all(
    [5, 20].map(async (megabytes) => {
      const reports = [];
      const result = await callTool(
        { name: "big_file", arguments: { megabytes, steps: 2 } },
        { ...LONG, onprogress: (report) => reports.push(report.progress) },
      );
      deepStrictEqual(reports, [1, 2], "the progress reports");
      deepStrictEqual(result.isError ?? false, false, `isError: ${JSON.stringify(result).slice(0, 300)}`);
      const { file } = result.structuredContent;
      deepStrictEqual(
        result.content.filter((item) => item.type === "resource_link").map((item) => item.uri),
        [file.uri],
        "the resource links",
      );
      if (!result.content[0].text.includes(`${megabytes}mb.bin is ${megabytes}.0 MB`)) {
        throw new Error(`the text does not say what the data is: ${result.content[0].text.slice(0, 300)}`);
      }
      const read = await client.readResource({ uri: file.uri }, LONG);
      const data = Buffer.from(read.contents[0].blob, "base64");
      deepStrictEqual(data.equals(pattern(megabytes)), true, "the data read back is the data kept");
    }),
  );
});

await client.close();
if (failures.length > 0) {
  console.error(`${failures.length} check(s) failed:\n${failures.join("\n")}`);
  process.exit(1);
}
console.log(`${label}: long calls, every check passed`);
