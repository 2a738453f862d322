import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type CallToolRequest,
  type CallToolResult,
  type ServerNotification,
  type ServerRequest,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import * as z from "zod";
import type { ChatRunner } from "../agents/chat-runner.js";
import type { AgentRegistry } from "../agents/registry.js";
import type { NetworkAccess } from "../auth/network-access.js";
import type { FieldViolation } from "../errors.js";
import type { Logger } from "../logger.js";
import type { OperationsBroker } from "../operations/broker.js";
import { findUnstorableJson } from "../operations/json-safety.js";
import { tracedMcpRequest, type IncomingMcpRequest } from "../telemetry/mcp-spans.js";
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

const instructions =
  "Agent network tools (one per public network) take neuro-san's ChatRequest, {user_message: {text}, sly_data?, chat_context?}, " +
  "and answer in the same call; send the answer's chat_context back to continue the conversation. " +
  "Operation tools (agent_chat, http_request, ...) are listed to clients that authenticate: they submit an operation and return at once; " +
  "operation_wait follows it to its end. Pass a request_id of your own to make a submission safe to retry. " +
  'A failed call is a result with isError and a JSON text {"code", "message"}.';

/**
 * The MCP server of one caller: one tool per public agent network for anyone, and for an authenticated client its
 * operation tools and the lifecycle tools. Built per HTTP request (stateless), or once per stdio process.
 *
 * This is the SDK's low-level Server rather than McpServer so that every failure, a schema violation or an unknown
 * tool included, reaches the model as the same error JSON (spec §9); McpServer answers those with its own plain text.
 */
export function createMcpServer(deps: McpDeps, session: { clientId: string | undefined; signal: AbortSignal }): Server {
  const { tools, byNetworkName } = toolsFor(deps, session.clientId);
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  const server = new Server({ name: "axon", version: process.env.npm_package_version ?? "dev" }, { capabilities: { tools: {} }, instructions });

  // neuro-san also takes a network's own name (`deep/math_guy`), as clients written before the safe names send it.
  const toolNamed = (name: string) => byName.get(name) ?? byNetworkName.get(name);
  // Each request is a span under its caller's trace, on either transport; named by the tool only when there is one,
  // so that a client's made-up names do not become span names.
  server.setRequestHandler(ListToolsRequestSchema, (_request, extra) => tracedMcpRequest(incoming("tools/list", extra), async () => ({ tools: tools.map(describeTool) })));
  server.setRequestHandler(CallToolRequestSchema, (request, extra) =>
    tracedMcpRequest(incoming("tools/call", extra, toolNamed(request.params.name)?.name), () => callTool(request, extra.signal)),
  );

  async function callTool(request: CallToolRequest, signal: AbortSignal): Promise<CallToolResult> {
    const tool = toolNamed(request.params.name);
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
    const result = await tool.call(args.data, AbortSignal.any([session.signal, signal]));
    // Clients reject structuredContent that breaks the declared schema; a mismatch is our bug, caught here.
    if (!result.isError && !tool.output.safeParse(result.structuredContent).success) {
      deps.logger.error({ tool: tool.name }, "MCP tool answered outside its output schema");
      return errorResult({ code: "internal", message: "internal error" });
    }
    return result;
  }
  return server;
}

/** What the span of a request reads from the SDK's handler arguments; HTTP headers only when it came over HTTP. */
function incoming(method: string, extra: RequestHandlerExtra<ServerRequest, ServerNotification>, tool?: string): IncomingMcpRequest {
  return { method, tool, id: extra.requestId, meta: extra._meta, headers: extra.requestInfo?.headers };
}

function toolsFor(deps: McpDeps, clientId: string | undefined): { tools: ToolDefinition[]; byNetworkName: Map<string, ToolDefinition> } {
  const tools: ToolDefinition[] = [];
  const taken = new Set<string>();
  if (clientId !== undefined) {
    const operationContext = { clientId, broker: deps.broker, logger: deps.logger };
    const operations = deps.operationsFor(clientId);
    tools.push(...operations.map((operation) => operationTool(operation, operationContext)), ...lifecycleTools(operationContext));
    for (const name of [...lifecycleToolNames, ...operations.map(operationToolName)]) taken.add(name);
  }
  const byNetworkName = new Map<string, ToolDefinition>();
  for (const tool of networkTools(deps, clientId, taken)) {
    tools.push(tool);
    byNetworkName.set(tool.title, tool);
  }
  return { tools, byNetworkName };
}

/** Every network tool a caller sees (AXON_NETWORK_ACCESS_FILE decides which); each call of one goes through the tool this returns. */
function networkTools(deps: McpDeps, clientId: string | undefined, taken: ReadonlySet<string>): ToolDefinition[] {
  const allowed = (network: string) => deps.access.allows(clientId, network);
  const context = { registry: deps.registry, chats: deps.chats, logger: deps.logger, allowed, ...(clientId === undefined ? {} : { clientId }) };
  const tools: ToolDefinition[] = [];
  const used = new Set(taken);
  for (const listing of deps.registry.listMcp().filter((listing) => allowed(listing.agentName))) {
    const name = networkToolName(listing.toolName, used);
    if (name === undefined) {
      deps.logger.warn({ network: listing.agentName, tool: listing.toolName }, "agent network not offered over MCP: its tool name is taken");
      continue;
    }
    used.add(name);
    tools.push(networkTool(name, listing, context));
  }
  return tools;
}

/**
 * A network keeps the tool name the registry gave it (neuro-san's: `deep/math_guy` -> `deep__math_guy`, or the
 * manifest's `mcp_name`) unless an operation or lifecycle tool has it: then it is offered as `network_<name>`, or
 * not at all when that is taken too.
 */
export function networkToolName(toolName: string, taken: ReadonlySet<string>): string | undefined {
  return [toolName, `network_${toolName}`].find((candidate) => !taken.has(candidate));
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
    inputSchema: tool.listedInputSchema ?? jsonSchemaOf(tool.input, "input"),
    outputSchema: jsonSchemaOf(tool.output, "output"),
    ...(tool.annotations ? { annotations: tool.annotations } : {}),
  };
}
