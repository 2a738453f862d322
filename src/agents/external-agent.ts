import type { JsonObject } from "@bufbuild/protobuf";
import type { Activation, ToolCall } from "./activation.js";
import type { ChatSession, NetworkAnswer, NetworkInput } from "./chat-session.js";
import type { AgentSpec } from "./network.js";
import { filterSlyData } from "./sly-data.js";

/**
 * A call to another network: `/name` on this server (in process) or a URL on another Axon or neuro-san
 * server (over its json-lines HTTP API). The callee sees the arguments as a JSON block and a copy of
 * sly_data filtered by the caller's `to_downstream`; what it returns is filtered by `from_downstream`.
 */
export class ExternalAgentActivation implements Activation {
  constructor(
    private readonly session: ChatSession,
    private readonly spec: AgentSpec,
  ) {}

  async invoke(args: JsonObject, { caller }: ToolCall): Promise<string> {
    const { session, spec } = this;
    const input: NetworkInput = {
      text: "```json\n" + JSON.stringify(args) + "\n```",
      slyData: filterSlyData(session.slyData, caller.spec.allow?.toDownstream),
    };
    const target = spec.external!;
    let answer: NetworkAnswer;
    try {
      answer =
        target.kind === "same_server"
          ? await session.services.runNetwork(target.network, input, session)
          : await callRemoteNetwork(target.url, input, session.metadata, session.signal);
    } catch (error) {
      session.signal.throwIfAborted();
      // An unreachable or failing network is something the calling LLM can work around, not a crash.
      const reason = error instanceof Error ? error.message : String(error);
      session.services.logger.warn({ agent: spec.name, reason }, "external agent failed");
      return `Error: the agent network ${spec.name} could not answer (${reason}).`;
    }
    Object.assign(session.slyData, filterSlyData(answer.slyData, caller.spec.allow?.fromDownstream));
    return answer.text;
  }
}

/**
 * One MINIMAL StreamingChat turn with a network on another server, over neuro-san's HTTP API:
 * `http://host:port/name` -> POST http://host:port/api/v1/name/streaming_chat, json-lines back.
 */
export async function callRemoteNetwork(
  url: string,
  input: NetworkInput,
  metadata: Record<string, string>,
  signal: AbortSignal,
): Promise<NetworkAnswer> {
  const target = new URL(url);
  const segments = target.pathname.split("/").filter(Boolean);
  const network = segments.pop()!;
  const endpoint = new URL(`${segments.map((s) => `/${s}`).join("")}/api/v1/${encodeURIComponent(network)}/streaming_chat`, target);
  const response = await fetch(endpoint, {
    method: "POST",
    headers: { "content-type": "application/json", ...metadata },
    body: JSON.stringify({ user_message: { text: input.text }, sly_data: input.slyData }),
    signal,
  });
  const body = await response.text();
  if (!response.ok) throw new Error(`it answered HTTP ${response.status}`);
  type FinalMessage = { type?: string; text?: string; structure?: JsonObject; sly_data?: JsonObject };
  let final: FinalMessage | undefined;
  for (const line of body.split("\n")) {
    if (line.trim() === "") continue;
    const parsed = JSON.parse(line) as { response?: FinalMessage; code?: number };
    if (parsed.response?.type === "AGENT_FRAMEWORK") final = parsed.response;
    else if (parsed.code !== undefined) throw new Error(`it failed with code ${parsed.code}`);
  }
  if (!final) throw new Error("it sent no final answer");
  return { text: final.text ?? "", ...(final.structure ? { structure: final.structure } : {}), slyData: final.sly_data ?? {} };
}
