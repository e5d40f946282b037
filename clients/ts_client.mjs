// The official TypeScript SDK client against a rendered service over streamable HTTP.
//
// The SDK checks every structuredContent against the tool's outputSchema itself
// (and throws when it does not validate), so each successful call here has been
// validated by a client nobody in this project wrote.
//
// Usage: node ts_client.mjs URL
// The service must accept the demo token: serve it with DEMO_TOKENS=demo-token=demo-user
// (check_service.py does).
// Exit status 0 when every check passes; otherwise 1, each failure naming the tool.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { deepStrictEqual } from "node:assert/strict";

const url = new URL(process.argv[2]);
const failures = [];

async function connect(headers = {}) {
  const client = new Client({ name: "ts-sdk-check", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
  return client;
}

async function check(tool, what, body) {
  try {
    await body();
    console.log(`ok   ts-sdk client: ${tool}: ${what}`);
  } catch (error) {
    failures.push(`ts-sdk client: ${tool}: ${what}: ${error.message}`);
    console.log(`FAIL ts-sdk client: ${tool}: ${what}: ${error.message}`);
  }
}

function textOf(result) {
  if (result.content.length !== 1 || result.content[0].type !== "text") {
    throw new Error(`expected one text block, got ${JSON.stringify(result.content)}`);
  }
  return result.content[0].text;
}

function expectPayload(result, expected, isError = false) {
  deepStrictEqual(result.isError ?? false, isError, "isError");
  deepStrictEqual(result.structuredContent, expected, "structuredContent");
  deepStrictEqual(JSON.parse(textOf(result)), expected, "the text block");
}

const client = await connect({ "x-demo-token": "demo-token" });
const anonymous = await connect();

const { tools } = await client.listTools();
const names = tools.map((tool) => tool.name).sort();
await check("tools/list", "lists hello and whoami", async () => {
  deepStrictEqual(names, ["hello", "whoami"]);
});
for (const tool of tools) {
  await check(tool.name, "advertises an object outputSchema", async () => {
    deepStrictEqual(tool.outputSchema?.type, "object");
  });
}

await check("hello", "a valid result", async () => {
  const result = await client.callTool({ name: "hello", arguments: { name: "Ada" } });
  expectPayload(result, { message: "Hello, Ada!", greeting: "Hello, Ada!" });
});
await check("hello", "unicode and control characters round-trip", async () => {
  const name = "Zoë 🌍 \u0007";
  const result = await client.callTool({ name: "hello", arguments: { name } });
  expectPayload(result, { message: `Hello, ${name.trim()}!`, greeting: `Hello, ${name.trim()}!` });
});
await check("hello", "a returned ToolError", async () => {
  const result = await client.callTool({ name: "hello", arguments: { name: " " } });
  expectPayload(
    result,
    {
      error: "invalid_argument",
      detail: 'The name is blank: pass the name of the person to greet, such as "Ada".',
    },
    true,
  );
});
await check("hello", "a missing argument", async () => {
  const result = await client.callTool({ name: "hello", arguments: {} });
  deepStrictEqual(result.isError, true, "isError");
  deepStrictEqual(result.structuredContent, undefined, "structuredContent");
  deepStrictEqual(textOf(result), "Invalid arguments for tool 'hello': name: Field required");
});
await check("hello", "an argument of the wrong type", async () => {
  const result = await client.callTool({ name: "hello", arguments: { name: 42 } });
  deepStrictEqual(result.isError, true, "isError");
  deepStrictEqual(textOf(result), "Invalid arguments for tool 'hello': name: Input should be a valid string");
});
await check("whoami", "with its header", async () => {
  const result = await client.callTool({ name: "whoami", arguments: {} });
  expectPayload(result, {
    message: "The credential belongs to account demo-user.",
    account: "demo-user",
  });
});
await check("whoami", "without its header", async () => {
  const result = await anonymous.callTool({ name: "whoami", arguments: {} });
  deepStrictEqual(result.isError, true, "isError");
  deepStrictEqual(result.structuredContent, undefined, "structuredContent");
  if (!textOf(result).includes("x-demo-token")) throw new Error("the message does not name the header");
});
await check("no_such_tool", "an unknown tool", async () => {
  const result = await client.callTool({ name: "no_such_tool", arguments: {} });
  deepStrictEqual(result.isError, true, "isError");
  deepStrictEqual(textOf(result), "Unknown tool: no_such_tool");
});

await client.close();
await anonymous.close();
if (failures.length > 0) {
  console.error(`${failures.length} check(s) failed:\n${failures.join("\n")}`);
  process.exit(1);
}
console.log(`ts-sdk client: ${tools.length} tools, every check passed`);
