import { fromJson, toJson, type JsonObject } from "@bufbuild/protobuf";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import * as z from "zod";
import type { ChatRunner } from "../agents/chat-runner.js";
import type { AgentRegistry, McpListing } from "../agents/registry.js";
import { AxonError } from "../errors.js";
import { ChatRequestSchema, type ChatRequest } from "../gen/neuro_san/api/grpc/agent_pb.js";
import { ChatContextSchema, ChatMessage_ChatMessageType as MessageType, type ChatMessage } from "../gen/neuro_san/api/grpc/chat_pb.js";
import type { Logger } from "../logger.js";
import { sanitizeProviderText } from "../operations/sanitize.js";
import { SchemaCollector } from "../server/rest/openapi-schemas.js";
import { defineTool, errorResult, toolErrorOf, type ToolDefinition, type ToolError } from "./tool-results.js";

export interface NetworkToolsContext {
  registry: Pick<AgentRegistry, "get">;
  chats: ChatRunner;
  logger: Logger;
  /** Whether the calling client may see this network (AXON_NETWORK_ACCESS_FILE). */
  allowed(network: string): boolean;
  /** The authenticated caller, if any. */
  clientId?: string;
}

const maxChatTextLength = 100_000;
const jsonObject = z.record(z.string(), z.unknown());

// neuro-san's ChatRequest, checked field by field by its descriptor below; `text` is the shape Axon took first.
const chatInput = z.strictObject({
  user_message: jsonObject.optional(),
  sly_data: jsonObject.optional(),
  chat_context: jsonObject.optional(),
  chat_filter: jsonObject.optional(),
  text: z.string().optional(),
});

const chatOutput = z.strictObject({
  text: z.string(),
  chat_context: jsonObject.describe("The conversation so far: send it back as chat_context to continue it."),
  sly_data: jsonObject.optional(),
  structure: jsonObject.optional(),
});

/**
 * A public agent network as a tool, as neuro-san offers it: arguments shaped like a ChatRequest, one synchronous turn
 * through the chat runner, answered with the network's final (AGENT_FRAMEWORK) message. Unlike `agent_chat` this holds
 * the call open for the whole chat and creates no operation.
 */
export function networkTool(toolName: string, listing: McpListing, context: NetworkToolsContext): ToolDefinition {
  const { registry, chats, logger, allowed } = context;
  return defineTool({
    name: toolName,
    title: listing.agentName,
    description: listing.description || `Chat with the ${listing.agentName} agent network.`,
    input: chatInput,
    listedInputSchema: chatRequestJsonSchema(),
    output: chatOutput,
    annotations: { openWorldHint: true },
    async call(args, signal) {
      const request = chatRequestOf(args);
      if ("code" in request) return errorResult(request);
      // A reload may have stopped serving it since the tools were listed.
      const network = allowed(listing.agentName) ? registry.get(listing.agentName) : undefined;
      if (!network) return errorResult({ code: "agent_not_found", message: "the agent network is no longer served" });
      try {
        const messages = await chats.start({
          network,
          text: request.userMessage?.text ?? "",
          mimeData: request.userMessage?.mimeData ?? [],
          slyData: request.slyData ?? {},
          chatContext: request.chatContext,
          metadata: {},
          signal,
          ...(context.clientId === undefined ? {} : { clientId: context.clientId }),
        });
        for await (const message of messages) {
          if (message.type === MessageType.AGENT_FRAMEWORK) return answerOf(message);
        }
        return errorResult({ code: "agent_chat_failed", message: "the chat ended without an answer" });
      } catch (error) {
        if (error instanceof AxonError) return errorResult(toolErrorOf(error, logger));
        // LLM SDKs and coded tools say what they like: it passes the sanitizer, as for agent.chat operations.
        logger.warn({ err: error, network: listing.agentName }, "MCP network chat failed");
        const message = error instanceof Error ? sanitizeProviderText(error.message) : "";
        return errorResult({ code: "agent_chat_failed", message: message || "the chat failed" });
      }
    },
  });
}

/** The arguments as the ChatRequest they stand for, or what is wrong with them. */
function chatRequestOf(args: z.output<typeof chatInput>): ChatRequest | ToolError {
  const { text, ...neuroSan } = args;
  if (text !== undefined && neuroSan.user_message !== undefined) return invalid("text", "give user_message or text, not both");
  let request: ChatRequest;
  try {
    request = fromJson(ChatRequestSchema, (text === undefined ? neuroSan : { ...neuroSan, user_message: { text } }) as JsonObject);
  } catch (error) {
    return { code: "invalid_argument", message: `the arguments are not a ChatRequest: ${(error as Error).message}` };
  }
  const said = request.userMessage?.text ?? "";
  if (said === "") return invalid("user_message.text", "say something: the text is required");
  if (said.length > maxChatTextLength) return invalid("user_message.text", `at most ${maxChatTextLength} characters`);
  return request;
}

function invalid(field: string, description: string): ToolError {
  return { code: "invalid_argument", message: "the arguments do not match the tool's input schema", field_violations: [{ field, description }] };
}

let chatRequestSchema: Tool["inputSchema"] | undefined;

/**
 * What neuro-san lists as a network tool's input: its ChatRequest schema, with the messages it refers to under
 * `components.schemas`, derived from the same descriptors as the REST API's OpenAPI document and named by message
 * (`ChatMessage`, not the full protobuf name) as neuro-san names them. neuro-san's root is a `$ref` to ChatRequest;
 * here ChatRequest itself is the root (the same schema), since LLMs and many clients read only root `properties`.
 * `agent_name` is left out: the tool names the network.
 */
export function chatRequestJsonSchema(): Tool["inputSchema"] {
  if (chatRequestSchema) return chatRequestSchema;
  const collector = new SchemaCollector();
  collector.messageSchema(ChatRequestSchema);
  // Message names start with a capital, package segments do not.
  const shortName = (typeName: string) => typeName.split(".").filter((segment) => /^[A-Z]/.test(segment)).join(".");
  const rename = (json: string) => json.replace(/"#\/components\/schemas\/([^"]+)"/g, (_, name: string) => JSON.stringify(`#/components/schemas/${shortName(name)}`));
  const schemas = Object.fromEntries(
    Object.entries(collector.schemas).map(([name, schema]) => [shortName(name), JSON.parse(rename(JSON.stringify(schema))) as object]),
  ) as Record<string, { properties?: Record<string, object> } & Record<string, unknown>>;
  const { agent_name: _unused, ...properties } = schemas.ChatRequest!.properties ?? {};
  const chatRequest = { type: "object" as const, properties, required: ["user_message"], additionalProperties: false };
  schemas.ChatRequest = chatRequest;
  chatRequestSchema = { ...chatRequest, components: { schemas } };
  return chatRequestSchema;
}

function answerOf(message: ChatMessage) {
  const structured = {
    text: message.text,
    chat_context: message.chatContext ? (toJson(ChatContextSchema, message.chatContext) as JsonObject) : {},
    ...(message.slyData === undefined ? {} : { sly_data: message.slyData }),
    ...(message.structure === undefined ? {} : { structure: message.structure }),
  };
  return { isError: false, structuredContent: structured, content: [{ type: "text" as const, text: message.text }] };
}
