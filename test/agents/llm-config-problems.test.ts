import { describe, expect, it } from "vitest";
import type { JsonObject } from "../../src/agents/hocon.js";
import { llmConfigProblems } from "../../src/agents/llm-config-problems.js";
import { buildNetwork } from "../../src/agents/network.js";
import { DEFAULT_TOOLBOX } from "../../src/agents/toolbox/default-toolbox.js";

const FILE = "/networks/thinker.hocon";

function problemsOf(raw: JsonObject) {
  return llmConfigProblems(buildNetwork({ name: "thinker", file: FILE, public: true, mcp: true, raw, toolbox: DEFAULT_TOOLBOX }));
}

describe("llm_config problems found at load", () => {
  it("names the key where the file writes it: the network's llm_config, an agent's, a fallback's", () => {
    const problems = problemsOf({
      llm_config: { model_name: "gpt-4o", fallbacks: [{ model_name: "claude-haiku-4-5", verbosity: "low" }] },
      tools: [
        { name: "Front", instructions: "Ask.", tools: ["Helper"] },
        { name: "Helper", function: { description: "Helps." }, instructions: "Help.", llm_config: { model_name: "llama3.1", num_ctx: 4096 } },
      ],
    });
    expect(problems.map((problem) => [problem.file, problem.key])).toEqual([
      [FILE, "llm_config.fallbacks[0].verbosity"],
      [FILE, "tools[1].llm_config.num_ctx"],
    ]);
    expect(problems[0]?.reason).toMatch(/network thinker is not served$/);
  });

  it("an option the network's llm_config gives an agent's model is the network's to fix", () => {
    const problems = problemsOf({
      llm_config: { model_name: "gpt-4o", logit_bias: { "1": 1 } },
      tools: [{ name: "Front", instructions: "Hi.", llm_config: { model_name: "claude-sonnet-4-5" } }],
    });
    expect(problems.map((problem) => problem.key)).toEqual(["llm_config.logit_bias"]);
  });

  it("an unknown class is no load problem: a chat refuses it, and a fallback chain may skip it", () => {
    expect(problemsOf({ llm_config: { model_name: "x", class: "langchain_mystery.ChatMystery" }, tools: [{ name: "Front", instructions: "Hi." }] })).toEqual([]);
  });

  it("a valid config has none", () => {
    expect(problemsOf({ llm_config: { model_name: "claude-sonnet-4-5", thinking: { type: "enabled", budget_tokens: 2000 } }, tools: [{ name: "Front", instructions: "Hi." }] })).toEqual([]);
  });
});
