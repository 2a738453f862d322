import type { JsonObject } from "@bufbuild/protobuf";
import type { ChatRunner } from "../../agents/chat-runner.js";
import type { AgentNetwork } from "../../agents/agent-network.js";
import type { AgentRegistry } from "../../agents/registry.js";
import { NetworkAccess } from "../../auth/network-access.js";
import { AxonError, type FieldViolation } from "../../errors.js";
import { ChatMessage_ChatMessageType as MessageType, type ChatMessage } from "../../gen/neuro_san/api/grpc/chat_pb.js";
import { sanitizeProviderText } from "../sanitize.js";
import type { ExecutionContext, ExecutionOutcome, OperationToExecute, Presentation, Provider } from "./provider.js";
import { isJsonObject } from "../../json.js";
import { failed, fieldKey, printable, truncate } from "./transcript-text.js";

export interface AgentChatProviderOptions {
  /** The served networks; private ones are callable too, as over StreamingChat. */
  registry: Pick<AgentRegistry, "get">;
  /** Which networks each client may see: one it may not is answered as one that is not served. Default: all. */
  access?: Pick<NetworkAccess, "allows">;
  chats: ChatRunner;
  /** At most one progress report per this many milliseconds. Default 1000. */
  progressIntervalMs?: number;
  /** Milliseconds on any monotonic scale; injectable so throttling is tested without sleeping. */
  now?: () => number;
}

export const MAX_CHAT_TEXT_LENGTH = 100_000;
const SUMMARY_TEXT_LENGTH = 200;

/**
 * `agent.chat` (spec §8): one turn with a hosted agent network, run as a long-running operation.
 *
 * A chat has no outcome outside this process: the network's work lives in this turn, and whatever its tools did is
 * their own business, proven or not by their own means. So every end of a chat here is a proven one: an answer is
 * `succeeded`, an error (thrown before or during the stream) is `failed`, and execute never rejects as ambiguous.
 */
export class AgentChatProvider implements Provider {
  readonly operation = "agent.chat";
  private readonly progressIntervalMs: number;
  private readonly now: () => number;

  constructor(private readonly options: AgentChatProviderOptions) {
    this.progressIntervalMs = options.progressIntervalMs ?? 1000;
    this.now = options.now ?? (() => performance.now());
  }

  validate(target: JsonObject, args: JsonObject, clientId?: string): FieldViolation[] {
    const violations: FieldViolation[] = [];
    const violate = (field: string, description: string) => violations.push({ field, description });
    for (const key of Object.keys(target)) if (key !== "network") violate(`target.${fieldKey(key)}`, "unknown field");
    for (const key of Object.keys(args)) if (key !== "text" && key !== "sly_data" && key !== "metadata") violate(`arguments.${fieldKey(key)}`, "unknown field");

    const network = target["network"];
    if (typeof network !== "string" || network === "") violate("target.network", "is required: the name of an agent network");
    else if (this.networkFor(clientId, network) === undefined) violate("target.network", "no agent network by this name is served");

    const text = args["text"];
    if (typeof text !== "string" || text.length === 0 || text.length > MAX_CHAT_TEXT_LENGTH) {
      violate("arguments.text", `is required: 1 to ${MAX_CHAT_TEXT_LENGTH} characters`);
    }
    const slyData = args["sly_data"];
    if (slyData !== undefined && !isJsonObject(slyData)) violate("arguments.sly_data", "must be an object");
    const metadata = args["metadata"];
    if (metadata !== undefined && !(isJsonObject(metadata) && Object.values(metadata).every((value) => typeof value === "string"))) {
      violate("arguments.metadata", "must be an object of strings: the request metadata (neuro-san's faux headers, user_id say) the chat gets");
    }
    // Client API keys (neuro-san's sly_data.llm_config) would be stored with the operation's arguments.
    if (isJsonObject(slyData) && "llm_config" in slyData) {
      violate("arguments.sly_data.llm_config", "API keys are not accepted in an operation, whose arguments are stored; send them over StreamingChat");
    }
    return violations;
  }

  present(target: JsonObject, args: JsonObject): Presentation {
    const network = printable(target["network"]) || "an agent network";
    // The text is the requester's own words and safe to show; sly_data is never shown.
    return { title: truncate(`Chat with ${network}`, 160), summary: truncate(printable(args["text"]), SUMMARY_TEXT_LENGTH) };
  }

  async execute(operation: OperationToExecute, context: ExecutionContext): Promise<ExecutionOutcome> {
    const name = operation.target["network"];
    const network = typeof name === "string" ? this.networkFor(operation.clientId, name) : undefined;
    // Validated at submission; a reload may have stopped serving it since.
    if (network === undefined) return failed("agent_not_found", "the agent network is no longer served");
    const text = operation.arguments["text"];
    const slyData = operation.arguments["sly_data"];
    const metadata = operation.arguments["metadata"];

    const progress = this.progressReporter(context);
    try {
      const messages = await this.options.chats.start({
        network,
        text: typeof text === "string" ? text : "",
        mimeData: [],
        slyData: isJsonObject(slyData) ? slyData : {},
        chatContext: undefined,
        // The operation's id is the request's: what the chat's logs and tools name it by.
        metadata: { ...(isJsonObject(metadata) ? (metadata as Record<string, string>) : {}), request_id: operation.id },
        signal: context.signal,
        clientId: operation.clientId,
      });
      for await (const message of messages) {
        if (message.type === MessageType.AGENT_FRAMEWORK) return { state: "succeeded", result: resultOf(message) };
        if (message.type === MessageType.AI || message.type === MessageType.AGENT_PROGRESS) progress(message);
      }
    } catch (error) {
      return failureOf(error, context.signal);
    }
    return failed("agent_chat_failed", "the chat ended without an answer");
  }

  private networkFor(clientId: string | undefined, name: string): AgentNetwork | undefined {
    const access = this.options.access ?? NetworkAccess.open;
    return clientId === undefined || access.allows(clientId, name) ? this.options.registry.get(name) : undefined;
  }

  /** A chat cut by a crash did not finish, and running it again would be a new chat, not this one. */
  async reconcile(): Promise<ExecutionOutcome | undefined> {
    return failed("interrupted", "the chat was interrupted by a server restart and did not finish");
  }

  /**
   * Who is working, from the messages' origins: agent names come from the network definition, while message text
   * and progress structures may carry tool data or sly_data-derived values and are never shown. Heartbeats (no
   * origin) and repeats of the last summary are skipped; each report is a new revision of the operation.
   */
  private progressReporter(context: ExecutionContext): (message: ChatMessage) => void {
    // The first report waits an interval too: a chat answered within it has nothing worth a revision of its own, and
    // each report costs a write and a wake of every waiter on the serving loop.
    let lastAt = this.now();
    let lastSummary = "";
    return (message) => {
      const agent = printable(message.origin.at(-1)?.tool);
      if (agent === "") return;
      const summary = truncate(message.type === MessageType.AI ? `${agent} replied` : `${agent} is working`, 500);
      const now = this.now();
      if (summary === lastSummary || now - lastAt < this.progressIntervalMs) return;
      lastAt = now;
      lastSummary = summary;
      context.reportProgress(summary);
    };
  }
}

function resultOf(message: ChatMessage): JsonObject {
  return {
    text: message.text,
    ...(message.structure === undefined ? {} : { structure: message.structure }),
    ...(message.slyData === undefined ? {} : { sly_data: message.slyData }),
  };
}

function failureOf(error: unknown, signal: AbortSignal): ExecutionOutcome {
  if (error instanceof AxonError) {
    return failed(error.reason.toLowerCase(), sanitizeProviderText(error.message) || "the chat failed");
  }
  if (signal.aborted) return failed("interrupted", "execution stopped before the chat finished");
  // LLM SDKs and coded tools say what they like; it passes through the sanitizer like any provider text.
  const message = error instanceof Error ? sanitizeProviderText(error.message) : "";
  return failed("agent_chat_failed", message || "the chat failed");
}

