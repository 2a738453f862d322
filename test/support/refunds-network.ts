import path from "node:path";
import type { ScriptedLlm } from "./scripted-llm/scripted-llm.js";
import { projectRoot } from "./server.js";

/**
 * The `refunds` network of test/fixtures/middleware/approvals: its Clerk's Refund tool is interrupted by
 * HumanInTheLoopMiddleware (approve, edit, reject), so every refund waits for an operator.
 */
export const refundsNetwork = {
  AGENT_MANIFEST_FILE: path.join(projectRoot, "test/fixtures/middleware/approvals/manifest.hocon"),
  AGENT_TOOL_PATH: path.join(projectRoot, "test/fixtures/middleware/coded_tools"),
};

/** The front man calls Refund for Ada with the amount in the user's text, then answers with the tool's result. */
export function scriptRefunds(llm: ScriptedLlm): void {
  llm.script((request) => {
    const last = request.messages.at(-1)!;
    if (last.role === "user") return { toolCalls: [{ name: "Refund", arguments: { customer: "Ada", amount: Number(last.content.match(/\d+/)?.[0] ?? 0) } }] };
    return { text: `Done: ${last.content}` };
  });
}
