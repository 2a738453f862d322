import type { JsonObject } from "@bufbuild/protobuf";
import { AxonError } from "../errors.js";
import { mergeLlmConfig, resolveLlmChain } from "../llm/config.js";
import type { LlmInfo } from "../llm/llm-info.js";
import type { AgentNetwork, AgentSpec } from "./agent-network.js";
import type { RegistryProblem } from "./problem.js";

/**
 * What is wrong with the `llm_config` of each LLM node of a network, found at load so that a network whose model
 * options Axon cannot honour is not served rather than served without them. Each problem names the key as the file
 * has it (the agent's own llm_config, else the network's) and the network. Keys and endpoints missing from the
 * environment are not problems here: they are the server's to set, and a chat names them.
 */
export function llmConfigProblems(network: AgentNetwork, llmInfo?: LlmInfo): RegistryProblem[] {
  const problems = new Map<string, RegistryProblem>();
  for (const spec of network.nodes.values()) {
    if (spec.kind !== "front_man" && spec.kind !== "llm_agent") continue;
    try {
      resolveLlmChain(mergeLlmConfig(network.llmConfig, spec.llmConfig), llmInfo);
    } catch (error) {
      // An unknown class is refused when a chat starts (LLM_PROVIDER_UNSUPPORTED): a fallback chain may skip it.
      if (!(error instanceof AxonError)) throw error;
      if (error.reason !== "LLM_CONFIG_INVALID") continue;
      const key = fileKeyOf(error.metadata["key"] ?? "llm_config", spec);
      const expected = error.metadata["expected"];
      const reason = `${error.message}${expected === undefined ? "" : `: must be ${expected}`}; network ${network.name} is not served`;
      problems.set(key, { file: network.file, key, reason });
    }
  }
  return [...problems.values()];
}

/** `llm_config.top_k` or `fallbacks[0].top_k`, as resolved, back to where the file says it. */
function fileKeyOf(resolvedKey: string, spec: AgentSpec): string {
  const [first = "", ...rest] = resolvedKey.split(".");
  const inherited = first === "llm_config" ? rest[0] ?? "" : "fallbacks";
  const own: JsonObject = spec.llmConfig ?? {};
  const path = first === "llm_config" ? rest.join(".") : resolvedKey;
  const prefix = inherited in own && spec.keyPath !== undefined ? `${spec.keyPath}.llm_config` : "llm_config";
  return path === "" ? prefix : `${prefix}.${path}`;
}
