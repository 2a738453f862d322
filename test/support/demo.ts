/**
 * `npm run demo`: Axon serving the example networks against the scripted demo model (no key, no network), so every
 * chat works and answers sensibly: math_guy's Calculator works out 6 × 7 = 42, hello_world greets in Welsh. The
 * start-up line says DEMO MODE; the answers themselves read as a real model's would.
 */
import { demoReply } from "./scripted-llm/demo-script.js";
import { ScriptedLlm } from "./scripted-llm/scripted-llm.js";

const openai = await ScriptedLlm.start("openai");
const anthropic = await ScriptedLlm.start("anthropic");
openai.script(demoReply);
anthropic.script(demoReply);
Object.assign(process.env, openai.env, anthropic.env, { AXON_DEMO: "1" });
await import("../../src/main.js");
