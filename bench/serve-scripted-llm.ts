import { ScriptedLlm } from "../test/support/scripted-llm/scripted-llm.js";
import { serveParent } from "./server-process.js";

/**
 * The tests' scripted OpenAI-compatible server with no added latency and its default script, in its own process so
 * that answering the LLM calls costs neither Axon's event loop nor the load generator's.
 */
export interface ScriptedLlmReady {
  /** OPENAI_API_KEY and OPENAI_BASE_URL, as Axon reads them. */
  env: Record<string, string>;
}

/** Sent with every sample: the requests received since the previous one, the first few of them whole. */
export interface ScriptedLlmTraffic {
  received: number;
  first: { body: Record<string, unknown>; status: number }[];
}

const llm = await ScriptedLlm.start("openai", { latencyMs: 0 });

serveParent(
  { env: llm.env } satisfies ScriptedLlmReady,
  () => llm.close(),
  // Emptying the record on each sample keeps a long run from growing this process's heap.
  (): ScriptedLlmTraffic => {
    const recorded = llm.requests.splice(0);
    return { received: recorded.length, first: recorded.slice(0, 8).map(({ body, status }) => ({ body, status })) };
  },
);
