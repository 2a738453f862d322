import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { ChatMessage_ChatMessageType as MessageType } from "../../gen/neuro_san/api/grpc/chat_pb.js";
import { isJsonObject } from "../../json.js";
import type { AgentRun, Middleware, ToolCallRequest, ToolHandler } from "../middleware-chain.js";
import { string, type ArgumentProblem, type ArgumentRule, type PrebuiltMiddleware } from "./middleware-args.js";

const DECISIONS = ["approve", "edit", "reject"];

interface Interrupt {
  allowedDecisions: string[];
  description?: string;
}

/**
 * LangChain's HumanInTheLoopMiddleware as an operator's approval: a call of a tool `interrupt_on` names waits, held as an
 * `agent.tool_call` request (the console's Operator tab, the CLI, the approval webhook), until an operator decides.
 * Approved, it runs (with the operator's arguments when edit is allowed); denied, the model gets the operator's reason
 * as the tool's result. The chat stream says it is waiting; a cancelled chat withdraws the request.
 */
class HumanInTheLoop implements Middleware {
  readonly name = "HumanInTheLoopMiddleware";

  constructor(
    private readonly interruptOn: ReadonlyMap<string, Interrupt>,
    private readonly descriptionPrefix: string,
  ) {}

  async wrapToolCall(request: ToolCallRequest, handler: ToolHandler, run: AgentRun): Promise<string> {
    const { toolCall, tool } = request;
    const interrupt = this.interruptOn.get(toolCall.name) ?? (tool === undefined ? undefined : this.interruptOn.get(tool.originName));
    if (interrupt === undefined || tool === undefined) return handler(request);
    const { session, spec, origin } = run;
    const holds = session.services.holds;
    if (holds === undefined) return `The tool call ${tool.originName} needs an operator's approval, and no operator can approve it here: it was not run.`;
    const description = interrupt.description ?? `${this.descriptionPrefix}\n\nTool: ${tool.originName}\nArgs: ${JSON.stringify(toolCall.arguments)}`;
    const decision = await holds.hold(
      {
        clientId: session.request.clientId,
        network: session.network.name,
        agent: spec.name,
        tool: tool.originName,
        arguments: toolCall.arguments,
        allowedDecisions: interrupt.allowedDecisions,
        description,
      },
      session.signal,
      (requestId) =>
        session.emit({
          type: MessageType.AGENT,
          origin,
          text: `Waiting for an operator to approve the call of ${tool.originName} (request ${requestId}).`,
          structure: { approval_pending: true, request_id: requestId, tool: tool.originName, params: toolCall.arguments },
        }),
    );
    if (!decision.approved) {
      session.signal.throwIfAborted();
      return decision.reason ?? `The call of ${tool.originName} was not approved (${decision.code}): ${decision.message}`;
    }
    try {
      const result = await handler({ ...request, toolCall: { ...toolCall, arguments: decision.arguments } });
      decision.finish({ ok: true });
      return result;
    } catch (error) {
      decision.finish({ ok: false, message: error instanceof Error ? error.message : String(error) });
      throw error;
    }
  }
}

/** `interrupt_on`: tool name -> true (every decision), false (no interrupt), or `{allowed_decisions, description}`. */
function interruptsOf(value: JsonObject): Map<string, Interrupt> {
  const interrupts = new Map<string, Interrupt>();
  for (const [tool, setting] of Object.entries(value)) {
    if (setting === true) interrupts.set(tool, { allowedDecisions: DECISIONS });
    else if (isJsonObject(setting)) {
      const allowed = setting["allowed_decisions"];
      const description = setting["description"];
      interrupts.set(tool, { allowedDecisions: Array.isArray(allowed) ? (allowed as string[]) : DECISIONS, ...(typeof description === "string" ? { description } : {}) });
    }
  }
  return interrupts;
}

function interruptProblems(value: JsonValue): ArgumentProblem[] {
  if (!isJsonObject(value)) return [{ key: "interrupt_on", reason: "must be an object of tool name to true, false or {allowed_decisions, description}" }];
  return Object.entries(value).flatMap(([tool, setting]): ArgumentProblem[] => {
    if (typeof setting === "boolean") return [];
    if (!isJsonObject(setting)) return [{ key: `interrupt_on.${tool}`, reason: "must be true, false or {allowed_decisions, description}" }];
    const problems: ArgumentProblem[] = [];
    for (const key of Object.keys(setting)) {
      if (!["allowed_decisions", "description", "args_schema"].includes(key)) problems.push({ key: `interrupt_on.${tool}.${key}`, reason: "is not a setting of an interrupt: allowed_decisions, description, args_schema are" });
    }
    const allowed = setting["allowed_decisions"];
    if (allowed !== undefined && !(Array.isArray(allowed) && allowed.length > 0 && allowed.every((decision) => typeof decision === "string" && DECISIONS.includes(decision)))) {
      problems.push({ key: `interrupt_on.${tool}.allowed_decisions`, reason: `must be a list of ${DECISIONS.join(", ")}` });
    }
    if (setting["description"] !== undefined && typeof setting["description"] !== "string") problems.push({ key: `interrupt_on.${tool}.description`, reason: "must be a string" });
    return problems;
  });
}

const interruptOn: ArgumentRule = { check: (value) => (isJsonObject(value) ? undefined : "must be an object of tool name to true, false or {allowed_decisions, description}"), required: true };

export const humanInTheLoopMiddleware: PrebuiltMiddleware = {
  args: { interrupt_on: interruptOn, description_prefix: string },
  check: (args) => interruptProblems(args["interrupt_on"]!),
  make: (args) => new HumanInTheLoop(interruptsOf(args["interrupt_on"] as JsonObject), (args["description_prefix"] as string | undefined) ?? "Tool execution requires approval"),
};
