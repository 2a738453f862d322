import type { JsonObject } from "@bufbuild/protobuf";
import { ChatMessage_ChatMessageType as MessageType } from "../gen/neuro_san/api/grpc/chat_pb.js";
import type { AgentSpec } from "./agent-network.js";
import type { ChatSession } from "./chat-session.js";
import { offeredMcpTools } from "./mcp-client/mcp-tools.js";
import { DEFAULT_DISPLAY_AS, externalTargetOf, isMcpServerUrl } from "./network.js";
import type { Activation, Caller } from "./tool-call.js";
import { safeToolName } from "./tool-names.js";
import { traceTool } from "../telemetry/genai-spans.js";

/**
 * A tool calling another of its network by name, as neuro-san's `BranchActivation.use_tool` does (a Python coded tool
 * deriving from it, or a TypeScript one through its context): an agent, coded tool or external network of the network
 * (`/name` and URLs need not be listed, so `use_reservation`'s `/<reservation id>` reaches a temporary network), or a
 * tool of one of its MCP servers. It runs as if the caller's LLM had called it: the same origins and MAXIMAL messages,
 * the same bound on the depth of a chain of calls, cancelled with the chat. Resolves with the answer text; a tool that
 * fails rejects, for the calling code to handle.
 */
export async function useTool(session: ChatSession, caller: Caller, toolName: string, args: JsonObject): Promise<string> {
  const maxSteps = caller.spec.limits?.maxSteps ?? session.network.limits.maxSteps;
  if (caller.origin.length >= maxSteps) throw new Error(`the chain of calls is deeper than max_steps (${maxSteps})`);
  const { activation, originName, kind } = await toolNamed(session, caller.spec, toolName);
  session.emit({ type: MessageType.AGENT, origin: caller.origin, structure: { invoking_start: true, invoked_agent_name: originName, params: args } });
  const origin = session.originOf(caller.origin, originName);
  const text = await traceTool(originName, kind, args, () => activation.invoke(args, { caller, origin }));
  session.emit({ type: MessageType.AGENT_TOOL_RESULT, origin: caller.origin, toolResultOrigin: origin, text });
  return text;
}

async function toolNamed(session: ChatSession, callerSpec: AgentSpec, name: string): Promise<{ activation: Activation; originName: string; kind: string }> {
  const { network, services } = session;
  const node = network.nodes.get(name);
  if (node !== undefined && node.kind !== "mcp_server") {
    return { activation: services.activationOf(session, node), originName: name, kind: node.kind };
  }
  const external = isMcpServerUrl(name) ? undefined : externalTargetOf(name);
  if (external !== undefined) {
    const spec: AgentSpec = { name, kind: "external_agent", tools: [], displayAs: DEFAULT_DISPLAY_AS.external_agent, structureFormats: [], middleware: [], external, raw: {} };
    return { activation: services.activationOf(session, spec), originName: name, kind: "external_agent" };
  }
  const wanted = safeToolName(name);
  for (const server of network.nodes.values()) {
    if (server.kind !== "mcp_server") continue;
    const tool = (await offeredMcpTools(session, callerSpec, server.name, server.name)).find((offered) => offered.name === wanted);
    if (tool !== undefined) return { activation: tool.activation, originName: tool.originName, kind: "mcp" };
  }
  throw new Error(`network ${network.name} has no tool named ${name}`);
}
