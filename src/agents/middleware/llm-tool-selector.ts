import type { JsonObject } from "@bufbuild/protobuf";
import type { LlmResponse } from "../../llm/llm.js";
import type { AgentRun, Middleware, ModelHandler, ModelRequest } from "../middleware-chain.js";
import { integer, optional, string, stringList, type PrebuiltMiddleware } from "./middleware-args.js";

const defaultPrompt = "Choose the tools that are most relevant to the user's request. Call select_tools with their names.";

/**
 * LangChain's LLMToolSelectorMiddleware: before each model call, a (smaller) model picks the tools relevant to the
 * user's last message, at most `max_tools` of them; `always_include` ones are offered whatever it picks.
 */
class LlmToolSelector implements Middleware {
  readonly name = "LLMToolSelectorMiddleware";

  constructor(
    private readonly model: string | undefined,
    private readonly systemPrompt: string,
    private readonly maxTools: number | undefined,
    private readonly alwaysInclude: string[],
  ) {}

  async wrapModelCall(request: ModelRequest, handler: ModelHandler, run: AgentRun): Promise<LlmResponse> {
    const candidates = request.tools.filter((tool) => !this.alwaysInclude.includes(tool.name));
    if (candidates.length === 0) return handler(request);
    const question = request.messages.findLast((message) => message.role === "user")?.content ?? "";
    const llm = this.model === undefined ? request.llm : run.modelFor(this.model);
    const names = candidates.map((tool) => tool.name);
    const selection = await llm.complete({
      messages: [
        { role: "system", content: `${this.systemPrompt}\n\nThe tools:\n${candidates.map((tool) => `- ${tool.name}: ${tool.description}`).join("\n")}` },
        { role: "user", content: question },
      ],
      tools: [
        {
          name: "select_tools",
          description: "The tools relevant to the request, most relevant first.",
          parameters: { type: "object", properties: { tools: { type: "array", items: { type: "string", enum: names } } }, required: ["tools"] },
        },
      ],
      signal: run.session.signal,
    });
    run.session.addUsage(selection.usage);
    const chosen = selectedNames(selection).filter((name) => names.includes(name));
    const kept = new Set(this.maxTools === undefined ? chosen : chosen.slice(0, this.maxTools));
    return handler({ ...request, tools: request.tools.filter((tool) => kept.has(tool.name) || this.alwaysInclude.includes(tool.name)) });
  }
}

/** The names the selecting model chose: its select_tools call, or the same object written as its text. */
function selectedNames(selection: LlmResponse): string[] {
  let answer: JsonObject | undefined = selection.toolCalls.find((call) => call.name === "select_tools")?.arguments;
  if (answer === undefined) {
    try {
      answer = JSON.parse(selection.text) as JsonObject;
    } catch {
      return [];
    }
  }
  const tools = answer?.["tools"];
  return Array.isArray(tools) ? tools.filter((name): name is string => typeof name === "string") : [];
}

export const llmToolSelectorMiddleware: PrebuiltMiddleware = {
  args: { model: optional(string), system_prompt: string, max_tools: optional(integer(1)), always_include: optional(stringList) },
  make: (args) =>
    new LlmToolSelector(
      (args["model"] as string | null | undefined) ?? undefined,
      (args["system_prompt"] as string | undefined) ?? defaultPrompt,
      (args["max_tools"] as number | null | undefined) ?? undefined,
      (args["always_include"] as string[] | null | undefined) ?? [],
    ),
};
