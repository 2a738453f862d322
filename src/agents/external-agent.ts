import { fromJson, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { ChatMessageSchema, type ChatMessage } from "../gen/neuro_san/api/grpc/chat_pb.js";
import type { ChatSession, NetworkAnswer, NetworkInput } from "./chat-session.js";
import type { AgentSpec } from "./agent-network.js";
import { streamingChatEndpoint, urlReferenceOf } from "./external-urls.js";
import { filterSlyData } from "./sly-data.js";
import type { Activation, ToolCall } from "./tool-call.js";

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
    const messagesFrom = caller.spec.allow?.messagesFrom;
    const input: NetworkInput = {
      text: "```json\n" + JSON.stringify(args) + "\n```",
      slyData: filterSlyData(session.slyData, caller.spec.allow?.toDownstream),
      forwardMessages: messagesFrom === true || (messagesFrom?.includes(spec.name) ?? false),
    };
    const target = spec.external!;
    let answer: NetworkAnswer;
    try {
      answer =
        target.kind === "same_server"
          ? await session.services.runNetwork(target.network, input, session)
          : await callRemoteNetwork(target.url, input, session.metadata, session.signal, input.forwardMessages ? (message) => session.emit(message) : undefined);
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
 * One StreamingChat turn with a network on another server, over neuro-san's HTTP API: `https://host/deep/name` ->
 * POST https://host:443/api/v1/deep%2Fname/streaming_chat (see `urlReferenceOf`), json-lines back. MINIMAL, unless its
 * messages are to be forwarded (`onMessage`): then MAXIMAL, and each message but the final one goes there.
 */
export async function callRemoteNetwork(
  url: string,
  input: NetworkInput,
  metadata: Record<string, string>,
  signal: AbortSignal,
  onMessage?: (message: ChatMessage) => void,
): Promise<NetworkAnswer> {
  const target = urlReferenceOf(url);
  if (target?.kind !== "other_server") throw new Error(`${url} names no network on another server`);
  const endpoint = streamingChatEndpoint(target);
  const response = await fetch(endpoint, {
    method: "POST",
    headers: { "content-type": "application/json", ...metadata },
    body: JSON.stringify({
      user_message: { text: input.text },
      sly_data: input.slyData,
      ...(onMessage ? { chat_filter: { chat_filter_type: "MAXIMAL" } } : {}),
    }),
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
    else if (parsed.response && onMessage) onMessage(fromJson(ChatMessageSchema, parsed.response as JsonValue, { ignoreUnknownFields: true }));
  }
  if (!final) throw new Error("it sent no final answer");
  return { text: final.text ?? "", ...(final.structure ? { structure: final.structure } : {}), slyData: final.sly_data ?? {} };
}
