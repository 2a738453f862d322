import type { JsonObject } from "@bufbuild/protobuf";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import type { ChatSession } from "../chat-session.js";
import type { AgentSpec } from "../agent-network.js";
import { runReported } from "../run-reported.js";
import type { Activation, OfferedTool, ToolCall } from "../tool-call.js";
import { safeToolName } from "../tool-names.js";
import { resultText } from "./mcp-connections.js";

/**
 * An MCP server's tools as an agent offers them to its LLM: those its `{url, tools}` entry allows (else those the MCP
 * info file allows, else all), renamed where providers refuse the name. A server that cannot be listed is offered as
 * one tool, named like the reference, whose calls say why: the LLM gets a clear tool error, not silence.
 */
export async function offeredMcpTools(session: ChatSession, agent: AgentSpec, url: string, nameIfUnreachable: string): Promise<OfferedTool[]> {
  let tools: Tool[];
  try {
    tools = await session.mcp.listTools(url, session.signal);
  } catch (error) {
    session.signal.throwIfAborted();
    const reason = error instanceof Error ? error.message : String(error);
    session.services.logger.warn({ url, reason, network: session.network.name }, "MCP server could not be listed");
    return [unreachable(url, nameIfUnreachable, reason)];
  }
  const allowed = agent.mcpServers?.find((server) => server.url === url)?.allowedTools ?? session.mcp.infoOf(url)?.tools;
  if (allowed !== undefined) {
    const known = new Set(tools.flatMap((tool) => [tool.name, safeToolName(tool.name)]));
    const unknown = allowed.filter((name) => !known.has(name));
    if (unknown.length > 0) {
      session.services.logger.warn({ url, unknown, offered: tools.map((tool) => tool.name), agent: agent.name }, "MCP server lacks tools the network allows");
    }
  }
  return tools
    .filter((tool) => allowed === undefined || allowed.includes(tool.name) || allowed.includes(safeToolName(tool.name)))
    .map((tool) => {
      const name = safeToolName(tool.name);
      return {
        name,
        originName: name,
        description: tool.description ?? tool.title ?? name,
        parameters: tool.inputSchema as JsonObject,
        activation: new McpToolActivation(session, url, tool.name),
      };
    });
}

/** One call of an MCP server's tool: the server is called by the tool's own name; its error result is a tool error. */
class McpToolActivation implements Activation {
  constructor(
    private readonly session: ChatSession,
    private readonly url: string,
    private readonly toolName: string,
  ) {}

  invoke(args: JsonObject, { origin }: ToolCall): Promise<string> {
    const { session, url, toolName } = this;
    return runReported(session, origin, args, async () => {
      let result;
      try {
        result = await session.mcp.callTool(url, toolName, args, session.signal);
      } catch (error) {
        session.signal.throwIfAborted();
        throw new Error(`the MCP server ${url} could not be reached: ${error instanceof Error ? error.message : String(error)}`);
      }
      const text = resultText(result);
      if (result.isError) throw new Error(text || `the MCP tool ${toolName} failed`);
      return text;
    });
  }
}

function unreachable(url: string, name: string, reason: string): OfferedTool {
  return {
    name,
    originName: name,
    description: `The tools of the MCP server ${url}, which could not be reached.`,
    parameters: { type: "object", properties: {} },
    activation: {
      invoke: () => Promise.reject(new Error(`the MCP server ${url} could not be reached: ${reason}`)),
    },
  };
}
