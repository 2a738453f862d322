import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAxonProcess, type AxonProcess } from "../support/axon-process.js";
import { OtlpReceiver, type ReceivedSpan } from "../support/otlp-receiver.js";
import { ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";
import { ScriptedMcpServer } from "../support/scripted-mcp.js";
import { projectRoot } from "../support/server.js";
import { writeRegistry } from "../support/traced-chat.js";
import { until } from "../support/wait.js";

const stops: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  await Promise.all(stops.splice(0).map((stop) => stop()));
});

const aliceSecret = randomBytes(32).toString("base64url");
let receiver: OtlpReceiver;
let llm: ScriptedLlm;
let mcp: ScriptedMcpServer;
/** Serves `greet_net` (one LLM agent) and `mcp_net` (an agent using the scripted MCP server's tools). */
let env: Record<string, string>;

beforeAll(async () => {
  [receiver, llm, mcp] = await Promise.all([OtlpReceiver.start(), ScriptedLlm.start("openai"), ScriptedMcpServer.start()]);
  stops.push(() => receiver.close(), () => llm.close(), () => mcp.close());
  const manifest = await writeRegistry({
    greet_net: `{ llm_config { model_name: "gpt-4o-mini" }, tools: [ { name: "Greeter", instructions: "Greet." } ] }`,
    mcp_net: `{ llm_config { model_name: "gpt-4o-mini" }, tools: [ { name: "Operator", instructions: "Use the MCP tools.", tools: [${JSON.stringify(mcp.url)}] } ] }`,
  });
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "axon-tracing-mcp-"));
  stops.push(() => rm(path.dirname(manifest), { recursive: true, force: true }), () => rm(dataDir, { recursive: true, force: true }));
  const clientsFile = path.join(dataDir, "clients");
  await writeFile(clientsFile, `alice = ${aliceSecret}\n`, { mode: 0o600 });
  env = { ...llm.env, AGENT_MANIFEST_FILE: manifest, AXON_CLIENTS_FILE: clientsFile, AXON_DATA_DIR: dataDir };
});

/** A W3C traceparent naming a client's span, with fresh ids. */
function clientSpan(): { traceId: string; spanId: string; traceparent: string } {
  const traceId = randomBytes(16).toString("hex");
  const spanId = randomBytes(8).toString("hex");
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
}

async function callTool(client: Client, name: string, args: Record<string, unknown>, meta?: Record<string, string>): Promise<CallToolResult> {
  const result = (await client.callTool({ name, arguments: args, ...(meta && { _meta: meta }) }, undefined, { timeout: 60_000 })) as CallToolResult;
  expect(result.isError ?? false, JSON.stringify(result.content)).toBe(false);
  return result;
}

const spanIn = (traceId: string, name: string) => () => receiver.spans.find((span) => span.traceId === traceId && span.name === name);

/** The chat a network tool ran is under the MCP call's span, its agent's model call under that. */
/** The network's chat under the call, with its front man's agent span and that agent's model call under it. */
async function expectChatUnder(call: ReceivedSpan, network: string): Promise<void> {
  const chat = await until(() => receiver.children(call).find((span) => span.name === `invoke_agent ${network}`), `the ${network} chat's span`);
  const frontMan = await until(() => receiver.children(chat).find((span) => span.name.startsWith("invoke_agent ")), `the ${network} front man's span`);
  await until(() => receiver.children(frontMan).find((span) => span.name.startsWith("chat ")), `the ${network} front man's model call`);
}

describe("trace context over MCP", () => {
  it("on stdio (`axon mcp`), a tools/call whose params._meta carries a traceparent continues that trace", async () => {
    const client = new Client({ name: "traced-host", version: "1" });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: ["bin/axon.mjs", "mcp"],
        cwd: projectRoot,
        env: { PATH: process.env.PATH ?? "", LOG_LEVEL: "silent", ...env, ...receiver.env(), OTEL_SERVICE_NAME: "axon-stdio", AXON_MCP_TOKEN: aliceSecret },
        stderr: "pipe",
      }),
    );
    stops.push(() => client.close());
    const host = clientSpan();
    await callTool(client, "greet_net", { text: "hello" }, { traceparent: host.traceparent, tracestate: "host=1" });

    const call = await until(spanIn(host.traceId, "tools/call greet_net"), "the stdio call's span");
    expect(call).toMatchObject({ service: "axon-stdio", parentSpanId: host.spanId, kind: 2, traceState: "host=1" });
    expect(call.attributes).toMatchObject({
      "mcp.method.name": "tools/call",
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "greet_net",
      "network.transport": "pipe",
      "jsonrpc.request.id": expect.any(String),
    });
    await expectChatUnder(call, "greet_net");
  }, 60_000);

  describe("over HTTP at /mcp", () => {
    let axon: AxonProcess;
    beforeAll(async () => {
      axon = await startAxonProcess({ ...env, ...receiver.env("http/json"), OTEL_SERVICE_NAME: "axon-http" });
      stops.push(() => axon.stop());
    });

    async function connect(headers: Record<string, string> = {}): Promise<Client> {
      const client = new Client({ name: "traced-host", version: "1" });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${axon.url}/mcp`), { requestInit: { headers } }));
      stops.push(() => client.close());
      return client;
    }

    it("without trace headers, params._meta's traceparent is the parent", async () => {
      const host = clientSpan();
      await callTool(await connect(), "greet_net", { text: "hello" }, { traceparent: host.traceparent });
      const call = await until(spanIn(host.traceId, "tools/call greet_net"), "the call's span");
      expect(call).toMatchObject({ service: "axon-http", parentSpanId: host.spanId, kind: 2 });
      expect(call.attributes["network.transport"]).toBe("tcp");
      await expectChatUnder(call, "greet_net");
    });

    it("with a traceparent header, the header is the parent and params._meta's is ignored", async () => {
      const [header, meta] = [clientSpan(), clientSpan()];
      const client = await connect({ traceparent: header.traceparent });
      const listed = await client.listTools({ _meta: { traceparent: meta.traceparent } });
      expect(listed.tools.map((tool) => tool.name)).toContain("greet_net");
      const list = await until(spanIn(header.traceId, "tools/list"), "the listing's span");
      expect(list.parentSpanId).toBe(header.spanId);
      expect(receiver.spans.filter((span) => span.traceId === meta.traceId)).toEqual([]);
    });

    it("a call answered with an error result is marked tool_error; a tool that does not exist does not name the span", async () => {
      const host = clientSpan();
      const result = (await (await connect()).callTool({ name: "no_such_tool", arguments: {}, _meta: { traceparent: host.traceparent } })) as CallToolResult;
      expect(result.isError).toBe(true);
      const call = await until(() => receiver.trace(host.traceId)[0], "the call's span");
      expect(call).toMatchObject({ name: "tools/call", parentSpanId: host.spanId, statusCode: 2 });
      expect(call.attributes).toMatchObject({ "mcp.method.name": "tools/call", "error.type": "tool_error" });
      expect(call.attributes["gen_ai.tool.name"]).toBeUndefined();
    });

    it("Axon calling an MCP server's tool sends the tool span's context in params._meta, beside the headers", async () => {
      llm.reset();
      mcp.reset();
      const host = clientSpan();
      const response = await fetch(`${axon.url}/api/v1/mcp_net/streaming_chat`, {
        method: "POST",
        headers: { "content-type": "application/json", traceparent: host.traceparent },
        body: JSON.stringify({ user_message: { text: "2 and 3" } }),
      });
      expect(await response.text()).toContain("Answer: 5");
      const tool = await until(spanIn(host.traceId, "execute_tool add"), "the MCP tool's span");
      expect(tool.attributes["gen_ai.tool.type"]).toBe("mcp");
      const [call] = mcp.calls;
      expect(call).toMatchObject({ tool: "add", meta: { traceparent: `00-${host.traceId}-${tool.spanId}-01` } });
      expect(call!.headers.traceparent).toBe(call!.meta!.traceparent);
    });

    it("a network of another Axon called through its /mcp joins the caller's trace with its agents and model calls", async () => {
      llm.reset();
      const manifest = await writeRegistry({
        via_mcp: `{ llm_config { model_name: "gpt-4o-mini" }, tools: [ { name: "Asker", instructions: "Ask greet_net.", tools: [${JSON.stringify(`${axon.url}/mcp`)}] } ] }`,
      });
      stops.push(() => rm(path.dirname(manifest), { recursive: true, force: true }));
      const caller = await startAxonProcess({ ...env, ...receiver.env("http/json"), OTEL_SERVICE_NAME: "axon-caller", AGENT_MANIFEST_FILE: manifest });
      stops.push(() => caller.stop());
      llm.script((request) =>
        request.system === "Ask greet_net." && request.messages.at(-1)?.role === "user"
          ? { toolCalls: [{ name: "greet_net", arguments: { text: "hello" } }] }
          : { text: `Answer: ${request.messages.at(-1)?.content ?? ""}` },
      );
      const host = clientSpan();
      const response = await fetch(`${caller.url}/api/v1/via_mcp/streaming_chat`, {
        method: "POST",
        headers: { "content-type": "application/json", traceparent: host.traceparent },
        body: JSON.stringify({ user_message: { text: "say hello" } }),
      });
      expect(response.status).toBe(200);
      await response.text();
      const tool = await until(spanIn(host.traceId, "execute_tool greet_net"), "the caller's MCP tool span");
      const call = await until(spanIn(host.traceId, "tools/call greet_net"), "the callee's tools/call span");
      expect(call).toMatchObject({ service: "axon-http", parentSpanId: tool.spanId });
      await expectChatUnder(call, "greet_net");
    });
  });
});
