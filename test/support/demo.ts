/**
 * `npm run demo`: Axon serving the example networks against the scripted test LLM (no key, no network),
 * so every chat works and can be watched end to end. The start-up line says DEMO MODE.
 */
import { ScriptedLlm } from "./scripted-llm/scripted-llm.js";

const openai = await ScriptedLlm.start("openai");
const anthropic = await ScriptedLlm.start("anthropic");
Object.assign(process.env, openai.env, anthropic.env, { AXON_DEMO: "1" });
await import("../../src/main.js");
