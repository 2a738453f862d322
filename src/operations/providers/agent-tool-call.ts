import type { JsonObject } from "@bufbuild/protobuf";
import type { ToolCallHolds } from "../../agents/tool-call-holds.js";
import type { FieldViolation } from "../../errors.js";
import { isJsonObject } from "../../json.js";
import type { NativeCalls } from "../native-calls.js";
import { nativeProvider } from "./native.js";
import type { Provider } from "./provider.js";
import { printable, truncate } from "./transcript-text.js";

export const AGENT_TOOL_CALL = "agent.tool_call";

/**
 * `agent.tool_call`: a tool call an agent's HumanInTheLoopMiddleware interrupts, held for an operator. Its target is
 * `{network, agent, tool}` (what policy rules and window grants match); its detail the call's `arguments`, the
 * `allowed_decisions` and the `description` the middleware gives.
 */
export const agentToolCallProvider: Provider = nativeProvider({
  operation: AGENT_TOOL_CALL,
  validateTarget(target) {
    const violations: FieldViolation[] = [];
    for (const key of ["network", "agent", "tool"]) {
      const value = target[key];
      if (typeof value !== "string" || value === "") violations.push({ field: `target.${key}`, description: `is required: the ${key} the tool call belongs to` });
    }
    for (const key of Object.keys(target)) if (!["network", "agent", "tool"].includes(key)) violations.push({ field: `target.${key}`, description: "unknown field" });
    return violations;
  },
  present(target, detail) {
    const tool = printable(target["tool"]) || "a tool";
    const where = `${printable(target["agent"])} in ${printable(target["network"])}`;
    const description = typeof detail["description"] === "string" ? detail["description"] : "";
    return { title: truncate(`Run ${tool} for ${where}`, 160), summary: truncate(description || `Arguments: ${JSON.stringify(detail["arguments"] ?? {})}`, 500) };
  },
});

/**
 * Held tool calls, decided by the native-call path: policy, window grants, an operator's approval, admission.
 * `native` is read at each call: the broker exists once the database has opened.
 */
export function toolCallHolds(native: () => Pick<NativeCalls, "hold">): ToolCallHolds {
  return {
    async hold(call, signal, onHeld) {
      const decided = await native().hold(
        {
          clientId: call.clientId,
          operation: AGENT_TOOL_CALL,
          target: { network: call.network, agent: call.agent, tool: call.tool },
          detail: { arguments: call.arguments, allowed_decisions: call.allowedDecisions, description: call.description },
          summary: truncate(`${call.agent} calls ${call.tool} in ${call.network}`, 160),
        },
        { signal, onHeld },
      );
      if (decided.effect === "refused") {
        return { approved: false, code: decided.code, message: decided.message, ...(decided.reason === undefined ? {} : { reason: decided.reason }) };
      }
      // An operator's edit replaces the detail's arguments (only where the call allowed it).
      const edited = decided.arguments["arguments"];
      return {
        approved: true,
        arguments: isJsonObject(edited) ? (edited as JsonObject) : call.arguments,
        finish: (outcome) => void decided.finish(outcome.ok ? { ok: true } : { ok: false, code: "tool_failed", message: outcome.message }),
      };
    },
  };
}
