/**
 * The MCP server over stdio, for MCP hosts that spawn a command:
 *
 *   AXON_MCP_TOKEN=<client secret> tsx src/mcp/stdio.ts      (or --token <client secret>)
 *
 * It reads the same environment as `npm start` (AXON_DATA_DIR / DATABASE_URL, AXON_CLIENTS_FILE, policy, credentials,
 * LLM keys) and runs the operations lifecycle in this process over the same database, as one more replica would:
 * no server needs to be running, and compare-and-swap claims keep a running server and this process from executing
 * one operation twice. stdout carries only JSON-RPC; logs go to stderr.
 */
import { parseArgs } from "node:util";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { AgentRegistry } from "../agents/registry.js";
import { createAgentRuntime } from "../agents/configured-runtime.js";
import { loadConfig } from "../config.js";
import { createLogger } from "../logger.js";
import { startOperations } from "../operations/operations.js";
import { startTracing } from "../telemetry/start.js";
import { createMcpServer } from "./mcp-server.js";

const { values } = parseArgs({ options: { token: { type: "string" } }, strict: true });
const token = values.token ?? process.env.AXON_MCP_TOKEN;
if (!token) fail("a client secret is required: set AXON_MCP_TOKEN or pass --token");

const config = loadConfig();
const logger = createLogger(config.logLevel, process.stderr);
const env = process.env;
// The same OTEL_* variables as the server's; a call's `params._meta` carries its caller's trace (no headers here).
const stopTracing = await startTracing(env);

// The agent side of startAxon without its listeners: a CLI process must not take a port.
const registry = await AgentRegistry.load({ manifestFile: config.manifestFile, projectRoot: config.projectRoot, logger });
const chats = createAgentRuntime(config, registry, env, logger);
const operations = await startOperations(config, logger, { registry, chats, env });

const client = operations.principals.clients.authenticate(token);
if (!client) {
  await operations.close();
  fail(`the token is not a client secret in ${config.clientsFile}`);
}
// A database still late is waited for: the tools answer as in an outage until it opens.
operations.opened.then(
  () => void operations.worker.start(),
  (error: unknown) => fail(error instanceof Error ? error.message : String(error)),
);

const stopping = new AbortController();
const server = createMcpServer({ broker: operations.broker, operationsFor: operations.operationsFor, registry, access: operations.access, chats, logger }, { clientId: client.name, signal: stopping.signal });
const transport = new StdioServerTransport();
// Once, whoever asks first; a signal during the close waits for it (the spans still to export among what it ends).
let closing: Promise<void> | undefined;
const close = (): Promise<void> =>
  (closing ??= (async () => {
    stopping.abort();
    await server.close();
    await operations.close();
    await chats.close();
    registry.close();
    await stopTracing();
  })().catch((error: unknown) => logger.error({ err: error }, "closing failed")));
// The host ends the session by closing our stdin (or with a signal).
transport.onclose = () => void close();
process.stdin.on("end", () => void close());
for (const signal of ["SIGTERM", "SIGINT"] as const) process.on(signal, () => void close().finally(() => process.exit(0)));

await server.connect(transport);
logger.info({ client: client.name, tools: operations.operationsFor(client.name) }, "Axon MCP server on stdio");

function fail(message: string): never {
  process.stderr.write(`axon mcp: ${message}\n`);
  process.exit(2);
}
