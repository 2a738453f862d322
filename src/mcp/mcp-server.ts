import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult, type Tool } from "@modelcontextprotocol/sdk/types.js";
import * as z from "zod";
import type { ChatRunner } from "../agents/chat-runner.js";
import type { AgentRegistry } from "../agents/registry.js";
import type { NetworkAccess } from "../auth/network-access.js";
import type { FieldViolation } from "../errors.js";
import type { Logger } from "../logger.js";
import type { OperationsBroker } from "../operations/broker.js";
import { findUnstorableJson } from "../operations/json-safety.js";
import { networkTool } from "./network-tools.js";
import { lifecycleToolNames, lifecycleTools, operationTool, operationToolName } from "./operation-tools.js";
import { errorResult, type ToolDefinition } from "./tool-results.js";

/** Everything the MCP projection reads; the same for Streamable HTTP and stdio. */
export interface McpDeps {
  broker: Pick<OperationsBroker, "submit" | "get" | "list" | "wait" | "cancel">;
  /** The operation types a client may use (the descriptor's list). */
  operationsFor(clientId: string): string[];
  registry: Pick<AgentRegistry, "get" | "listMcp">;
  /** The networks each client may see: the only ones offered (and callable) as tools. */
  access: Pick<NetworkAccess, "allows">;
  chats: ChatRunner;
  logger: Logger;
}

// MCP tool names (SEP-986): 1-128 of A-Z a-z 0-9 _ - .
const toolNamePattern = /^[A-Za-z0-9_.-]{1,128}$/;

const instructions =
  "Operation tools (agent_chat, http_request, ...) submit an operation and return at once; operation_wait follows it to its end. " +
  "Pass a request_id of your own to make a submission safe to retry: the same request_id and request return the same operation, " +
  "and operation_list with that request_id recovers it. Agent network tools answer in the same call. " +
  'A failed call is a result with isError and a JSON text {"code", "message"}.';

/**
 * The MCP server of one authenticated client: its operation tools, the lifecycle tools, and one tool per public agent
 * network. Built per HTTP request (stateless), or once per stdio process.
 *
 * This is the SDK's low-level Server rather than McpServer so that every failure, a schema violation or an unknown
 * tool included, reaches the model as the same error JSON (spec §9); McpServer answers those with its own plain text.
 */
export function createMcpServer(deps: McpDeps, session: { clientId: string; signal: AbortSignal }): Server {
  const tools = toolsFor(deps, session.clientId);
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  const server = new Server({ name: "axon", version: process.env.npm_package_version ?? "dev" }, { capabilities: { tools: {} }, instructions });

  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: tools.map(describeTool) }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const tool = byName.get(request.params.name);
    if (!tool) return errorResult({ code: "tool_not_found", message: "no tool by this name" });
    const input = request.params.arguments ?? {};
    // Before any tool's code (recursive, or writing to the database) sees them: too deep, NUL, Infinity, `__proto__`.
    let unstorable: FieldViolation | undefined;
    for (const [field, value] of Object.entries(input)) unstorable ??= findUnstorableJson(value, field);
    if (unstorable) return errorResult({ code: "invalid_argument", message: "the arguments hold a value that cannot be taken", field_violations: [unstorable] });
    const args = tool.input.safeParse(input);
    if (!args.success) {
      return errorResult({
        code: "invalid_argument",
        message: "the arguments do not match the tool's input schema",
        field_violations: args.error.issues.map((issue) => ({ field: issue.path.join("."), description: issue.message })),
      });
    }
    const result = await tool.call(args.data, AbortSignal.any([session.signal, extra.signal]));
    // Clients reject structuredContent that breaks the declared schema; a mismatch is our bug, caught here.
    if (!result.isError && !tool.output.safeParse(result.structuredContent).success) {
      deps.logger.error({ tool: tool.name }, "MCP tool answered outside its output schema");
      return errorResult({ code: "internal", message: "internal error" });
    }
    return result;
  });
  return server;
}

function toolsFor(deps: McpDeps, clientId: string): ToolDefinition[] {
  const operationContext = { clientId, broker: deps.broker, logger: deps.logger };
  const operations = deps.operationsFor(clientId);
  const tools = [...operations.map((operation) => operationTool(operation, operationContext)), ...lifecycleTools(operationContext)];

  const networkContext = { registry: deps.registry, chats: deps.chats, logger: deps.logger, allowed: (network: string) => deps.access.allows(clientId, network) };
  const taken = new Set<string>([...lifecycleToolNames, ...operations.map(operationToolName)]);
  for (const listing of deps.registry.listMcp().filter((listing) => networkContext.allowed(listing.agentName))) {
    const name = networkToolName(listing.agentName, taken);
    if (name === undefined) {
      deps.logger.warn({ network: listing.agentName }, "agent network not offered over MCP: no usable tool name");
      continue;
    }
    taken.add(name);
    tools.push(networkTool(name, listing, networkContext));
  }
  return tools;
}

/**
 * A network's tool is named after it, as neuro-san names it (`industry/macys` -> `industry__macys`, other characters
 * a tool name may not hold -> `_`); operation and lifecycle tools keep their names, so a network that collides with
 * one is offered as `network_<name>`. A name that is still no valid tool name, or still collides, is not offered at all.
 */
export function networkToolName(network: string, taken: ReadonlySet<string>): string | undefined {
  const safe = network.replaceAll("/", "__").replace(/[^A-Za-z0-9_.-]/g, "_");
  for (const candidate of [safe, `network_${safe}`]) {
    if (toolNamePattern.test(candidate) && !taken.has(candidate)) return candidate;
  }
  return undefined;
}

// The schemas are shared constants: convert each once. Draft-07, the dialect MCP clients' validators expect.
const jsonSchemas = { input: new WeakMap<z.ZodType, Record<string, unknown>>(), output: new WeakMap<z.ZodType, Record<string, unknown>>() };
function jsonSchemaOf(schema: z.ZodType, io: "input" | "output"): Tool["inputSchema"] {
  let json = jsonSchemas[io].get(schema);
  if (!json) {
    json = z.toJSONSchema(schema, { target: "draft-7", io }) as Record<string, unknown>;
    jsonSchemas[io].set(schema, json);
  }
  return json as Tool["inputSchema"];
}

function describeTool(tool: ToolDefinition): Tool {
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: jsonSchemaOf(tool.input, "input"),
    outputSchema: jsonSchemaOf(tool.output, "output"),
    ...(tool.annotations ? { annotations: tool.annotations } : {}),
  };
}
