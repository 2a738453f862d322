import { toJson, type JsonObject } from "@bufbuild/protobuf";
import * as z from "zod";
import type { ChatRunner } from "../agents/chat-runner.js";
import type { AgentRegistry } from "../agents/registry.js";
import { AxonError } from "../errors.js";
import { ChatContextSchema, ChatMessage_ChatMessageType as MessageType, type ChatMessage } from "../gen/neuro_san/api/grpc/chat_pb.js";
import type { Logger } from "../logger.js";
import { sanitizeProviderText } from "../operations/sanitize.js";
import { defineTool, errorResult, toolErrorOf, type ToolDefinition } from "./tool-results.js";

export interface NetworkToolsContext {
  registry: Pick<AgentRegistry, "get">;
  chats: ChatRunner;
  logger: Logger;
  /** Whether the calling client may see this network (AXON_NETWORK_ACCESS_FILE). */
  allowed(network: string): boolean;
}

const maxChatTextLength = 100_000;
const jsonObject = z.record(z.string(), z.unknown());

const chatInput = z.strictObject({
  text: z.string().min(1).max(maxChatTextLength).describe("What to say to the network."),
  sly_data: jsonObject.optional().describe("Private data for the network's tools; never shown to its LLMs."),
});

const chatOutput = z.strictObject({
  text: z.string(),
  chat_context: jsonObject.describe("The conversation so far, as the network's final message carried it."),
  sly_data: jsonObject.optional(),
  structure: jsonObject.optional(),
});

/**
 * A public agent network as a tool: one synchronous turn through the chat runner, answered with the network's final
 * (AGENT_FRAMEWORK) message. Unlike `agent_chat` this holds the call open for the whole chat and creates no operation.
 */
export function networkTool(toolName: string, listing: { agentName: string; description: string }, context: NetworkToolsContext): ToolDefinition {
  const { registry, chats, logger, allowed } = context;
  return defineTool({
    name: toolName,
    title: listing.agentName,
    description: listing.description || `Chat with the ${listing.agentName} agent network.`,
    input: chatInput,
    output: chatOutput,
    annotations: { openWorldHint: true },
    async call({ text, sly_data }, signal) {
      // A reload may have stopped serving it since the tools were listed.
      const network = allowed(listing.agentName) ? registry.get(listing.agentName) : undefined;
      if (!network) return errorResult({ code: "agent_not_found", message: "the agent network is no longer served" });
      try {
        const messages = await chats.start({
          network,
          text,
          mimeData: [],
          slyData: (sly_data ?? {}) as JsonObject,
          chatContext: undefined,
          metadata: {},
          signal,
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

function answerOf(message: ChatMessage) {
  const structured = {
    text: message.text,
    chat_context: message.chatContext ? (toJson(ChatContextSchema, message.chatContext) as JsonObject) : {},
    ...(message.slyData === undefined ? {} : { sly_data: message.slyData }),
    ...(message.structure === undefined ? {} : { structure: message.structure }),
  };
  return { structuredContent: structured, content: [{ type: "text" as const, text: message.text }] };
}
