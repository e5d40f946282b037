// The official TypeScript SDK clients against a rendered service over streamable HTTP.
//
// The SDK checks every structuredContent against the tool's outputSchema itself
// (and throws when it does not validate), so each successful call here has been
// validated by a client nobody in this project wrote.
//
// Usage: MCP_TS_CLIENT=FLAVOUR MCP_CLIENT_CHECK=JSON node ts_client.mjs URL
// MCP_TS_CLIENT: "sdk-1", the 1.x SDK (@modelcontextprotocol/sdk, the 2025 revisions);
// or the 2.x client (@modelcontextprotocol/client) negotiating as "legacy" (initialize),
// "auto" (server/discover, else initialize) or "2026-07-28" (pinned: discover must offer it).
// MCP_CLIENT_CHECK says how the service at URL authenticates and what to send
// (check_service.py sets it): {"auth": "oauth" | "demo-header" | "none", "headers": the
// credential, "account": what whoami answers with it (or null), "issuer" (under oauth),
// "setups": the JSON setups of deploy/clients/, resolved: [{"name", "url", "headers"}]}.
// Exit status 0 when every check passes; otherwise 1, each failure naming the tool.

import { deepStrictEqual } from "node:assert/strict";

const flavour = process.env.MCP_TS_CLIENT ?? "sdk-1";
const REVISIONS = { "sdk-1": "2025-11-25", legacy: "2025-11-25", auto: "2026-07-28", "2026-07-28": "2026-07-28" };
if (!(flavour in REVISIONS)) throw new Error(`unknown MCP_TS_CLIENT ${flavour}`);
const { Client, StreamableHTTPClientTransport } =
  flavour === "sdk-1"
    ? {
        ...(await import("@modelcontextprotocol/sdk/client/index.js")),
        ...(await import("@modelcontextprotocol/sdk/client/streamableHttp.js")),
      }
    : await import("@modelcontextprotocol/client");
const negotiation = flavour === "2026-07-28" ? { pin: flavour } : flavour;
const options = flavour === "sdk-1" ? {} : { versionNegotiation: { mode: negotiation } };
const label = `ts client (${flavour})`;

const url = new URL(process.argv[2]);
const setup = JSON.parse(process.env.MCP_CLIENT_CHECK);
const failures = [];

// The HTTP status a client error carries: the 2.x client's `status`, the 1.x SDK's `code`.
function statusOf(error) {
  return error.status ?? error.code;
}

function newClient(name) {
  return new Client({ name, version: "1.0.0" }, options);
}

async function connect(headers = {}) {
  const client = newClient("ts-sdk-check");
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
  return client;
}

async function check(tool, what, body) {
  try {
    await body();
    console.log(`ok   ${label}: ${tool}: ${what}`);
  } catch (error) {
    failures.push(`${label}: ${tool}: ${what}: ${error.message}`);
    console.log(`FAIL ${label}: ${tool}: ${what}: ${error.message}`);
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

const client = await connect(setup.headers);
const anonymous = setup.auth === "oauth" ? null : await connect();

await check("connect", `speaks ${REVISIONS[flavour]}`, async () => {
  if (flavour !== "sdk-1") deepStrictEqual(client.getNegotiatedProtocolVersion(), REVISIONS[flavour]);
});
const { tools } = await client.listTools();
const names = tools.map((tool) => tool.name).sort();
await check("tools/list", "lists hello, prepare_report, read_data, retrieve_records and whoami", async () => {
  deepStrictEqual(names, ["hello", "prepare_report", "read_data", "retrieve_records", "whoami"]);
});
for (const tool of tools) {
  await check(tool.name, "advertises an object outputSchema", async () => {
    deepStrictEqual(tool.outputSchema?.type, "object");
  });
  await check(tool.name, "advertises a title and its annotations", async () => {
    if (typeof tool.title !== "string" || tool.title.trim() === "") throw new Error("no title");
    for (const hint of ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"]) {
      deepStrictEqual(typeof tool.annotations?.[hint], "boolean", `annotations.${hint}`);
    }
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
await check("hello", "a missing argument: a ToolError naming it", async () => {
  const result = await client.callTool({ name: "hello", arguments: {} });
  expectPayload(
    result,
    { error: "invalid_argument", detail: "Invalid arguments for tool 'hello': name: Field required" },
    true,
  );
});
await check("hello", "an argument of the wrong type: a ToolError naming it", async () => {
  const result = await client.callTool({ name: "hello", arguments: { name: 42 } });
  expectPayload(
    result,
    {
      error: "invalid_argument",
      detail: "Invalid arguments for tool 'hello': name: Input should be a valid string",
    },
    true,
  );
});
await check("hello", "a lone surrogate in an argument: a JSON-RPC error answering this call", async () => {
  let answered = null;
  try {
    await client.callTool({ name: "hello", arguments: { name: "Ada \ud800" } });
  } catch (error) {
    answered = error;
  }
  if (answered === null) throw new Error("the call succeeded");
  // -32602 is the JSON-RPC error the service sent for this request, matched by its id; an
  // error the client could not match would carry the HTTP status (400) instead.
  deepStrictEqual(answered.code, -32602, `the error ${answered.message}`);
  if (!answered.message.includes("`arguments.name` holds a lone UTF-16 surrogate")) {
    throw new Error(`the message does not name the field: ${answered.message}`);
  }
});
if (setup.account !== null) {
  await check("whoami", "with the credential", async () => {
    const result = await client.callTool({ name: "whoami", arguments: {} });
    deepStrictEqual(result.isError ?? false, false, "isError");
    deepStrictEqual(result.structuredContent?.account, setup.account, "the account");
  });
}
if (setup.auth === "demo-header") {
  await check("whoami", "without its header", async () => {
    const result = await anonymous.callTool({ name: "whoami", arguments: {} });
    deepStrictEqual(result.isError, true, "isError");
    deepStrictEqual(result.structuredContent, undefined, "structuredContent");
    if (!textOf(result).includes("x-demo-token")) throw new Error("the message does not name the header");
  });
}
if (setup.auth === "oauth") {
  await check("initialize", "without a token: 401, pointing at the resource metadata", async () => {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "probe", version: "1" } },
      }),
    });
    deepStrictEqual(response.status, 401, "status");
    const challenge = response.headers.get("www-authenticate") ?? "";
    const found = /^Bearer .*resource_metadata="([^"]+)"/.exec(challenge);
    if (!found) throw new Error(`WWW-Authenticate names no resource_metadata: ${challenge}`);
    const metadata = await (await fetch(found[1])).json();
    deepStrictEqual(metadata.resource, url.href, "the metadata's resource");
    const servers = (metadata.authorization_servers ?? []).map((server) => String(server).replace(/\/$/, ""));
    deepStrictEqual(servers, [setup.issuer], "its authorization servers");
  });
  await check("initialize", "without a token: the SDK client refuses to go on", async () => {
    let connected = false;
    try {
      await (await connect()).close();
      connected = true;
    } catch (error) {
      // expected: the service answered 401, and this client has no way to sign in
      deepStrictEqual(statusOf(error), 401, `the error ${error.message}`);
    }
    if (connected) throw new Error("connected without a token");
  });
}
for (const snippet of setup.setups ?? []) {
  await check(snippet.name, "the setup, resolved as its client does, reaches the service", async () => {
    const sent = new StreamableHTTPClientTransport(new URL(snippet.url), {
      requestInit: { headers: snippet.headers },
    });
    const viaSetup = newClient("ts-sdk-setup-check");
    const signsIn = setup.auth === "oauth" && Object.keys(snippet.headers).length === 0;
    try {
      await viaSetup.connect(sent);
    } catch (error) {
      if (signsIn && statusOf(error) === 401) return; // answered 401: the client signs in itself
      throw error;
    }
    try {
      if (signsIn) throw new Error("connected without signing in");
      if (setup.account !== null && Object.keys(snippet.headers).length > 0) {
        const result = await viaSetup.callTool({ name: "whoami", arguments: {} });
        deepStrictEqual(result.structuredContent?.account, setup.account, "the account");
      } else {
        await viaSetup.listTools();
      }
    } finally {
      await viaSetup.close();
    }
  });
}
await check("no_such_tool", "an unknown tool", async () => {
  const result = await client.callTool({ name: "no_such_tool", arguments: {} });
  deepStrictEqual(result.isError, true, "isError");
  deepStrictEqual(textOf(result), "Unknown tool: no_such_tool");
});

await client.close();
await anonymous?.close();
if (failures.length > 0) {
  console.error(`${failures.length} check(s) failed:\n${failures.join("\n")}`);
  process.exit(1);
}
console.log(`${label}: ${tools.length} tools, every check passed`);
