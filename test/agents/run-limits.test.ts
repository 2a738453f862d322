import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { MiddlewareNetworks } from "./middleware/harness.js";

/** neuro-san's max_attempts and max_steps, as an agent's runs meet them. */
function network(limits: string): string {
  return `{
    llm_config { model_name: "gpt-4o-mini", max_retries: 0 }
    ${limits}
    tools: [
      { name: "Front", function { description: "Answers." }, instructions: "Front.", tools: ["Helper"] }
      { name: "Helper", function { description: "Helps.", parameters { type: "object", properties { q { type: "string" } } } }, instructions: "Helper." }
    ]
  }`;
}

describe("max_attempts and max_steps", () => {
  let networks: MiddlewareNetworks;
  beforeAll(async () => {
    networks = await MiddlewareNetworks.start({
      twice: network("max_attempts: 2"),
      once: network("max_attempts: 1"),
      short: network("max_steps: 3"),
      deprecated: network("max_iterations: 1"),
    });
  });
  afterAll(() => networks.close());
  beforeEach(() => networks.llm.reset());

  it("a run whose model call failed for a reason that may pass is run again, up to max_attempts", async () => {
    networks.llm.failNext(503);
    networks.llm.script(() => ({ text: "second time" }));
    expect((await networks.chat("twice", "hi")).answer).toBe("second time");
    expect(networks.llm.requests).toHaveLength(2);
  });

  it("rate limits and timeouts are tried again; a refused key or request is not", async () => {
    networks.llm.failNext(429);
    networks.llm.script(() => ({ text: "after the rate limit" }));
    expect((await networks.chat("twice", "hi")).answer).toBe("after the rate limit");
    networks.llm.reset();
    networks.llm.failNext(401, 2);
    await expect(networks.chat("twice", "hi")).rejects.toThrow("the LLM did not answer");
    expect(networks.llm.requests).toHaveLength(1);
    networks.llm.reset();
    networks.llm.failNext(400, 2);
    await expect(networks.chat("twice", "hi")).rejects.toThrow("the LLM did not answer");
    expect(networks.llm.requests).toHaveLength(1);
  });

  it("max_attempts: 1 runs once", async () => {
    networks.llm.failNext(503);
    await expect(networks.chat("once", "hi")).rejects.toThrow("the LLM did not answer");
    expect(networks.llm.requests).toHaveLength(1);
  });

  it("a tool's failure is the model's to read, and no reason to run the agent again", async () => {
    networks.llm.script((request) => {
      if (request.system === "Helper.") return { text: "unused" };
      return request.messages.at(-1)!.role === "user" ? { toolCalls: [{ name: "Helper", arguments: "{not json" }] } : { text: `got: ${request.messages.at(-1)!.content}` };
    });
    expect((await networks.chat("twice", "hi")).answer).toMatch(/^got: .*not valid JSON/);
    expect(networks.llm.requests).toHaveLength(2);
  });

  it("max_steps bounds the model calls and tool rounds of a run: past it the agent says it stopped", async () => {
    networks.llm.script((request) => (request.system === "Front." ? { toolCalls: [{ name: "Helper", arguments: { q: "again" } }] } : { text: "helped" }));
    const chat = await networks.chat("short", "loop");
    expect(chat.answer).toBe("Front stopped after max_steps (3) without an answer.");
    // model, tools, model: the third step is the last.
    expect(networks.llm.requests.filter((recorded) => recorded.request.system === "Front.")).toHaveLength(2);
  });

  it("max_iterations is max_steps' older name", async () => {
    networks.llm.script(() => ({ toolCalls: [{ name: "Helper", arguments: { q: "x" } }] }));
    expect((await networks.chat("deprecated", "loop")).answer).toBe("Front stopped after max_steps (1) without an answer.");
  });
});
