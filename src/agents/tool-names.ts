/** What LLM providers (and so MCP clients) accept as a tool name. */
export const SAFE_TOOL_NAME = /^[A-Za-z0-9_-]+$/;

/**
 * A name made into a tool name as neuro-san makes it: `/` becomes `__`, anything else providers refuse `_`
 * (`deep/math_guy` -> `deep__math_guy`, `Agent.1` -> `Agent_1`).
 */
export function safeToolName(name: string): string {
  return name.replaceAll("/", "__").replace(/[^A-Za-z0-9_-]/g, "_");
}
